"""The worker-process pool on its own: jobs, refusals, a start that fails, cancellation."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

import mast.judge.offload.loop as offload
from mast.judge.offload.loop import ProcessPool, off_loop, use_process_pool
from mast.privacy.redact import Redactor
from mast.traces.model import Step, Trace


def _fail(text: str) -> str:
    raise ValueError(f"bad input: {text}")


def _pid(_: object = None) -> int:
    return os.getpid()


def test_jobs_run_in_one_reused_process_and_results_match() -> None:
    trace = Trace(id="t", steps=[Step.make(0, "token=ghp_" + "a1B2" * 9 + " then more", agent="a")])
    redactor = Redactor()

    async def main() -> tuple[list[tuple[bool, object]], ProcessPool]:
        pool = ProcessPool(1)
        try:
            assert await pool.run(_pid, (), {}) == (False, None)  # not ready yet: a thread
            await pool.start()
            got = [await pool.run(_pid, (), {}) for _ in range(3)]
            got.append(await pool.run(redactor.redact_trace, (trace,), {}))
            return got, pool
        finally:
            await pool.aclose()

    got, pool = asyncio.run(main())
    pids = {value for _, value in got[:3]}
    assert len(pids) == 1 and os.getpid() not in pids and pool.started == 1
    assert got[3] == (True, redactor.redact_trace(trace))


def test_a_job_that_raises_is_handed_back_and_the_error_comes_from_the_thread() -> None:
    async def main() -> tuple[tuple[bool, object], str, ProcessPool]:
        pool = ProcessPool(1)
        try:
            await pool.start()
            refused = await pool.run(_fail, ("x",), {})
            with use_process_pool(pool), pytest.raises(ValueError, match="bad input") as info:
                await off_loop(offload.OFF_LOOP_CHARS, _fail, "y")
            return refused, str(info.value), pool
        finally:
            await pool.aclose()

    refused, message, pool = asyncio.run(main())
    assert refused == (False, None) and message == "bad input: y"
    assert pool.broken == "closed" and pool.declined == 2  # the pool itself still worked
    assert pool.started == 1


def test_a_pool_that_cannot_start_sends_everything_to_the_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")

    async def main() -> tuple[int, ProcessPool]:
        pool = ProcessPool(2)
        try:
            await pool.start()
            with use_process_pool(pool):
                return await off_loop(offload.OFF_LOOP_CHARS, _pid), pool
        finally:
            await pool.aclose()

    pid, pool = asyncio.run(main())
    assert pid == os.getpid() and pool.started == 0
    assert pool.broken is not None and "could not start" in pool.broken


def test_a_cancelled_job_retires_its_worker() -> None:
    async def main() -> ProcessPool:
        pool = ProcessPool(1)
        try:
            await pool.start()
            job = asyncio.ensure_future(pool.run(_sleep, (30.0,), {}))
            await asyncio.sleep(0.2)  # let it send the job (the test holds either way)
            job.cancel()
            with pytest.raises(asyncio.CancelledError):
                await job
            # Its late reply must not be read as the next job's: a new worker does that.
            await pool.start()
            assert await pool.run(_pid, (), {}) == (True, pool._all[-1].proc.pid)
            return pool
        finally:
            await pool.aclose()

    pool = asyncio.run(main())
    assert pool.started == 2


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def test_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least 1 worker"):
        ProcessPool(0)


@pytest.mark.parametrize("name", ["loop", "pool", "worker"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    module = importlib.import_module(f"mast.judge.offload.{name}")
    result = doctest.testmod(module, raise_on_error=False)
    assert result.attempted >= 1 and result.failed == 0
