"""Long traces prepared in a worker process (mast.judge.offload.pool) during a bulk run.

Ordering, never timing: the long trace's redaction in the worker waits for a file that
only the server's handling of the small trace's request creates. Results must be the same
bytes as without a pool, and a worker that dies or a job that cannot be pickled must
cost nothing but the move to a thread."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from offload_helpers import ChattyRedactor, CrashingRedactor, GatedRedactor

import mast
import mast.bulk.runner as runner_mod
import mast.judge.offload.loop as offload
import mast.judge.offload.pool as process_pool
from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.judge.offload.pool import ProcessPool
from mast.privacy.redact import Redactor
from mast.privacy.secret_patterns import SecretPattern
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
QUOTE = "the tool returned 404 for /api/items"


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[ProcessPool | None]:
    """Every pool the runner makes (so a test can see what it did)."""
    made: list[ProcessPool | None] = []
    real = runner_mod._process_pool

    def spy(setting: bool | int, concurrency: int) -> ProcessPool | None:
        made.append(real(setting, concurrency))
        return made[-1]

    monkeypatch.setattr(runner_mod, "_process_pool", spy)
    return made


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # No key literal is added to the judge's redactor, so a custom redactor stays as given.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def answer(request: Recorded) -> Reply:
    """A verdict citing step s2 (grounded) and a quote no step has (flagged)."""
    modes: dict[str, Any] = {
        code: {"present": False, "evidence": [], "rationale": "", "confidence": 0.7}
        for code in CODES
    }
    modes["1.3"] = {
        "present": True,
        "evidence": [{"step_id": "s2", "quote": QUOTE}],
        "rationale": "the same call again",
        "confidence": 0.9,
    }
    modes["2.6"] = {
        "present": True,
        "evidence": [{"step_id": "s1", "quote": "words that appear nowhere"}],
        "rationale": "says one thing, does another",
        "confidence": 0.6,
    }
    body = {"summary": "loops on a failing call", "modes": modes, "task_completed": False}
    return Reply.text(json.dumps(body))


def traces(long_steps: int = 400) -> list[Trace]:
    key = "sk-proj-" + "Q7x2Lm9Kp4Rt8Vw1Zb6Nc3Hd5Fg0Js"
    out = []
    for i in range(4):
        steps = [
            Step.make(0, f"Task {i}: list the items. OPENAI_API_KEY={key}", agent="user"),
            Step.make(1, f"Calling GET /api/items: {QUOTE}.", agent="coder"),
        ]
        filler = "lorem ipsum dolor " * 8
        steps += [
            Step.make(2 + k, f"tool output {i}.{k} ({k * 7919 % 1000}): {filler}", agent="coder")
            for k in range(long_steps * i)
        ]
        out.append(Trace(id=f"t{i}", steps=steps))
    return out


def run_records(
    fake: FakeLLMServer,
    out: Path,
    *,
    redact: bool | Redactor = True,
    pool: ProcessPool | None = None,
    concurrency: int = 8,
    **settings: Any,
) -> list[dict[str, Any]]:
    """The records of one run, with ``pool`` (started and ready first) or without one."""
    judge = mast.Judge(
        "openai/gpt-4.1", base_url=fake.openai_base_url, fewshot=0, redact=redact, **settings
    )

    async def main() -> None:
        if pool is not None:
            await pool.start()  # ready before the first job: every job can go to it
        try:
            await mast.aannotate_many(
                traces(),
                judge,
                out=out,
                cache=False,
                progress=False,
                concurrency=concurrency,
                process_pool=pool if pool is not None else False,
            )
        finally:
            await judge.aclose()
            if pool is not None:
                await pool.aclose()

    asyncio.run(main())
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for record in records:
        # What differs between any two runs: when, how long, and the server's reply ids
        # (numbered in the order calls arrive).
        del record["latency_s"], record["created_at"]
        record["judge"].pop("response_ids", None)
    return sorted(records, key=lambda r: r["trace_id"])


@pytest.fixture
def everything_off_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every off-loadable step of every trace goes to the pool (or the thread)."""
    monkeypatch.setattr(offload, "OFF_LOOP_CHARS", 1)
    monkeypatch.setattr(process_pool, "PROCESS_CHARS", 1)


def test_same_records_with_and_without_the_pool(
    fake_llm: FakeLLMServer, tmp_path: Path, everything_off_loop: None
) -> None:
    fake_llm.responder = answer
    inline = run_records(fake_llm, tmp_path / "thread.jsonl")
    pool = ProcessPool(1)
    pooled = run_records(fake_llm, tmp_path / "pool.jsonl", pool=pool)
    assert pool.done >= 4 * 5 and pool.declined == 0
    assert pool.started == 1  # one process, reused for the whole run
    assert pooled == inline
    # The work that moved is real: redactions, grounding and the flag all came back.
    assert [r["status"] for r in pooled] == ["ok"] * 4
    assert all(r["redactions"] == {"openai_key": 1} for r in pooled)
    assert all(r["vector"]["1.3"] is True for r in pooled)
    assert all(any("2.6" in p for p in r["problems"]) for r in pooled)


def test_same_records_for_traces_annotated_in_windows(
    fake_llm: FakeLLMServer, tmp_path: Path, everything_off_loop: None
) -> None:
    fake_llm.responder = answer
    # Long traces go in several windows. One trace at a time: the judge refines its token
    # estimate from each answer, so with several at once the windows would depend on
    # which answer came first, pool or not.
    small: dict[str, Any] = {"context_tokens": 10_000, "max_tokens": 2_000, "concurrency": 1}
    inline = run_records(fake_llm, tmp_path / "thread.jsonl", **small)
    pool = ProcessPool(1)
    pooled = run_records(fake_llm, tmp_path / "pool.jsonl", pool=pool, **small)
    assert max(r["windows"] for r in inline) >= 3
    assert pool.done >= 20 and pool.declined == 0
    assert pooled == inline


def test_a_long_trace_in_a_worker_process_does_not_hold_up_a_small_one(
    fake_llm: FakeLLMServer, tmp_path: Path, pools: list[ProcessPool | None]
) -> None:
    gate, log = tmp_path / "small-sent", tmp_path / "redacted-by"
    order: list[str] = []

    def respond(request: Recorded) -> Reply:
        name = "long" if "LONG-TRACE" in json.dumps(request.body) else "small"
        order.append(name)
        if name == "small":
            gate.touch()
        return answer(request)

    fake_llm.responder = respond
    line = "LONG-TRACE tool output: " + "x" * 200
    long = Trace(id="long", steps=[Step.make(i, line, agent=f"a{i % 2}") for i in range(4700)])
    small = Trace(id="small", steps=[Step.make(0, "Add 2 and 2. The sum is 4.", agent="a")])
    assert long.text_length >= 1_000_000 > offload.OFF_LOOP_CHARS > small.text_length
    judge = mast.Judge(
        "openai/gpt-4.1",
        base_url=fake_llm.openai_base_url,
        fewshot=0,
        redact=GatedRedactor(gate, log),
    )
    pool = ProcessPool(1)

    async def main() -> mast.AnnotationRun:
        await pool.start()
        try:
            # The long trace comes first and starts first (concurrency 2).
            return await mast.aannotate_many(
                [long, small], judge, concurrency=2, cache=False, progress=False, process_pool=pool
            )
        finally:
            await judge.aclose()
            await pool.aclose()

    run = asyncio.run(main())
    assert [a.status for a in run] == ["ok", "ok"]
    assert order[0] == "small" and "long" in order
    # The long trace's redaction ran in another process, and only there.
    pids = log.read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()
    assert pool.done >= 1 and pool.declined == 0


def test_by_default_a_run_starts_its_pool_on_the_first_long_trace_and_stops_it(
    fake_llm: FakeLLMServer, tmp_path: Path, pools: list[ProcessPool | None]
) -> None:
    fake_llm.responder = answer
    judge = mast.Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, fewshot=0)
    small = traces(long_steps=0)
    run = mast.annotate_many(small, judge, cache=False, progress=False, process_pool=1)
    assert run.summary.done == 4
    assert pools[0] is not None and pools[0].started == 0  # short traces: no process at all
    run = mast.annotate_many(traces(), judge, cache=False, progress=False, process_pool=1)
    assert run.summary.done == 4
    pool = pools[1]
    # The first long job does not wait for the process to start: it goes to the thread.
    assert pool is not None and pool.started == 1 and pool.declined >= 1
    assert pool.broken == "closed"  # stopped with the run


def test_a_worker_that_dies_costs_only_the_move_to_a_thread(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    everything_off_loop: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.responder = answer
    expected = run_records(fake_llm, tmp_path / "plain.jsonl", redact=CrashingRedactor())
    pool = ProcessPool(1)
    with caplog.at_level(logging.WARNING, logger="mast.judge.offload"):
        got = run_records(fake_llm, tmp_path / "crash.jsonl", redact=CrashingRedactor(), pool=pool)
    assert got == expected  # no trace lost, none different
    assert pool.broken is not None and "exit code 3" in pool.broken
    assert pool.done == 0 and pool.started == 1  # not restarted after it died
    assert any("worker process died" in r.getMessage() for r in caplog.records)


def test_a_job_that_cannot_be_pickled_goes_to_a_thread(
    fake_llm: FakeLLMServer, tmp_path: Path, everything_off_loop: None
) -> None:
    fake_llm.responder = answer
    # A check written as a lambda: such a redactor cannot be sent to a process.
    custom = Redactor(extra=[SecretPattern.make("ticket", r"TCK-\d{6}", check=lambda s: True)])
    expected = run_records(fake_llm, tmp_path / "plain.jsonl", redact=custom)
    pool = ProcessPool(1)
    got = run_records(fake_llm, tmp_path / "pool.jsonl", redact=custom, pool=pool)
    assert got == expected
    assert pool.declined >= 4 and pool.broken == "closed"


def test_a_worker_that_prints_still_answers(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    everything_off_loop: None,
    capfd: pytest.CaptureFixture[str],
) -> None:
    fake_llm.responder = answer
    expected = run_records(fake_llm, tmp_path / "plain.jsonl", redact=ChattyRedactor())
    capfd.readouterr()
    pool = ProcessPool(1)
    got = run_records(fake_llm, tmp_path / "pool.jsonl", redact=ChattyRedactor(), pool=pool)
    assert got == expected
    assert pool.declined == 0 and pool.done >= 4
    assert "redacting t0" in capfd.readouterr().err  # the worker's prints went to stderr


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert runner_mod._process_pool(False, 8) is None
    assert runner_mod._process_pool(0, 8) is None
    pool = runner_mod._process_pool(2, 8)
    assert pool is not None and pool.workers == 2 and pool.started == 0  # nothing started yet
    monkeypatch.setattr(runner_mod, "default_workers", lambda: 1)
    default = runner_mod._process_pool(True, 8)
    assert default is not None and default.workers == 1
    # One trace in flight: nothing to overlap, so no pool unless asked for by number.
    assert runner_mod._process_pool(True, 1) is None
    asked = runner_mod._process_pool(1, 1)
    assert asked is not None and asked.workers == 1
    with pytest.raises(ValueError, match="process_pool"):
        runner_mod._process_pool(-1, 8)
