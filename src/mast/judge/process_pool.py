"""Worker processes for the CPU work of very long traces, so a second core does it.

Threads share the interpreter lock: a 1 MB trace redacted, rendered and parsed in a thread
no longer blocks the event loop outright, but it still takes the loop's core. A
:class:`ProcessPool` runs that work in other processes instead. One bulk run
(:func:`mast.annotate_many`) owns one pool: it starts no process until a trace long enough
arrives, reuses its processes for the whole run and stops them at the end.

Nothing is ever lost to the pool. :meth:`ProcessPool.run` answers ``(False, None)`` when it
cannot do a job (the job does not pickle, a process would not start or died, the function
raised); the caller then does the job in a thread, as it would without a pool. A pool
whose process died or would not start is not used again in that run.

Workers are fresh interpreters (``python -c``, see :mod:`mast.judge.offload_worker`): not
``fork`` (unsafe once the parent runs threads) and not :mod:`multiprocessing`'s ``spawn``
(which re-runs the user's script in each child, and with it any calls it makes).

>>> import asyncio
>>> async def demo() -> tuple[bool, object]:
...     pool = ProcessPool(workers=1)
...     try:
...         return await pool.run(sorted, ("cab",), {})
...     finally:
...         await pool.aclose()
>>> asyncio.run(demo())
(True, ['a', 'b', 'c'])
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import json
import logging
import os
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from mast.judge.offload_worker import SHARED_SEQUENCES, shared

__all__ = ["PROCESS_CHARS", "ProcessPool", "default_workers", "dumps"]

log = logging.getLogger("mast.judge.offload")

_HEADER = 8
_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from mast.judge.offload_worker import main; main()"
)
_MAX_DEFAULT_WORKERS = 4

PROCESS_CHARS = 50_000
"""Default :attr:`ProcessPool.min_chars`: the characters a job works through from which a
worker process does it (see :func:`mast.judge.offload.off_loop`)."""


def default_workers() -> int:
    """Worker processes by default: one per core beyond the event loop's, at most 4."""
    return max(0, min(_MAX_DEFAULT_WORKERS, (os.cpu_count() or 1) - 1))


def _shared_index() -> dict[int, tuple[Any, tuple[str, str, int]]]:
    index: dict[int, tuple[Any, tuple[str, str, int]]] = {}
    for module, name in SHARED_SEQUENCES:
        for i, obj in enumerate(getattr(importlib.import_module(module), name)):
            index[id(obj)] = (obj, (module, name, i))
    return index


class _Pickler(pickle.Pickler):
    """A pickler that sends the library's shared objects (see
    :data:`~mast.judge.offload_worker.SHARED_SEQUENCES`) by reference."""

    index: ClassVar[dict[int, tuple[Any, tuple[str, str, int]]]] = {}

    def reducer_override(self, obj: Any) -> Any:
        found = self.index.get(id(obj))
        if found is not None and found[0] is obj:
            return shared, found[1]
        return NotImplemented


def dumps(value: Any) -> bytes:
    """``value`` pickled for a worker (raises what pickle raises when it cannot be)."""
    if not _Pickler.index:
        _Pickler.index = _shared_index()
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls) -> _Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _BOOT,
            json.dumps(sys.path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def call(self, payload: bytes) -> tuple[int, bytes]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(len(payload).to_bytes(_HEADER, "big") + payload)
        await self.proc.stdin.drain()
        head = await self.proc.stdout.readexactly(1 + _HEADER)
        body = await self.proc.stdout.readexactly(int.from_bytes(head[1:], "big"))
        return head[0], body

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def stop(self, timeout: float = 5.0) -> None:
        """Close its input (it exits at the end of it); kill it if it does not."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            self.kill()
            await self.proc.wait()
        except asyncio.CancelledError:
            self.kill()
            raise


class ProcessPool:
    """Up to ``workers`` worker processes, started on first use, for one event loop.

    ``min_chars``: jobs over fewer characters than this are not worth a process (see
    :func:`mast.judge.offload.off_loop`, which asks the pool).
    """

    def __init__(self, workers: int | None = None, *, min_chars: int | None = None) -> None:
        self.workers = default_workers() if workers is None else workers
        if self.workers < 1:
            raise ValueError(f"a process pool needs at least 1 worker, got {self.workers}")
        self.min_chars = PROCESS_CHARS if min_chars is None else min_chars
        self.broken: str | None = None
        self.done = 0  # jobs done in a worker
        self.declined = 0  # jobs handed back to the caller (to run in a thread)
        self.started = 0  # worker processes started
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []  # started, killed ones included (stopped at the end)
        self._slots: asyncio.Semaphore | None = None

    async def run(
        self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[bool, Any]:
        """``(True, fn(*args, **kwargs))`` computed in a worker, or ``(False, None)`` when
        the pool cannot do it (the caller then does it itself)."""
        if self.broken is not None:
            self.declined += 1
            return False, None
        try:
            payload = dumps((fn, tuple(args), dict(kwargs)))
        except Exception as exc:  # e.g. a custom redactor with a lambda: a thread does it
            log.debug("not sent to a worker process (cannot be pickled): %s", exc)
            self.declined += 1
            return False, None
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        async with self._slots:
            # The pool may have broken while this job waited for a slot.
            status, reply = (2, b"") if self.broken is not None else await self._call(payload)
        if status != 0:
            if status == 1:
                log.debug("a worker process handed a job back: %s", reply.decode(errors="replace"))
            self.declined += 1
            return False, None
        self.done += 1
        return True, pickle.loads(reply)

    async def _call(self, payload: bytes) -> tuple[int, bytes]:
        """(status, reply); status 2 when the pool broke on this job."""
        if self._idle:
            worker = self._idle.pop()
        else:
            try:
                worker = await _Worker.start()
            except (OSError, NotImplementedError, RuntimeError) as exc:
                # No subprocess support here (an event loop without it, no executable).
                self._break(f"a worker process could not start ({type(exc).__name__}: {exc})")
                return 2, b""
            self._all.append(worker)
            self.started += 1
        try:
            status, reply = await worker.call(payload)
        except asyncio.CancelledError:
            # Its reply would come later and be read as the next job's: do not reuse it.
            worker.kill()
            raise
        except (OSError, EOFError, asyncio.IncompleteReadError) as exc:
            with contextlib.suppress(asyncio.TimeoutError):  # for its exit code
                await asyncio.wait_for(worker.proc.wait(), 2.0)
            worker.kill()
            code = worker.proc.returncode
            self._break(
                f"a worker process died ({type(exc).__name__}"
                + (f", exit code {code}" if code is not None else "")
                + ")"
            )
            return 2, b""
        if self.broken is None:
            self._idle.append(worker)
        return status, reply

    def _break(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
            log.warning("%s; long traces are prepared in a thread for the rest of the run", reason)
        for worker in self._all:
            worker.kill()
        self._idle = []

    async def aclose(self) -> None:
        """Stop every worker process and wait for it to exit."""
        workers, self._all, self._idle = self._all, [], []
        self.broken = self.broken or "closed"
        for worker in workers:
            await worker.stop()
