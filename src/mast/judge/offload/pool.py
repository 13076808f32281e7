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

Workers are fresh interpreters (``python -c``, see :mod:`mast.judge.offload.worker`): not
``fork`` (unsafe once the parent runs threads) and not :mod:`multiprocessing`'s ``spawn``
(which re-runs the user's script in each child, and with it any calls it makes).

>>> import asyncio
>>> async def demo() -> tuple[bool, object]:
...     pool = ProcessPool(workers=1)
...     try:
...         await pool.start()  # optional: else the first jobs go to a thread meanwhile
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

from mast.judge.offload.worker import SHARED_SEQUENCES, context, shared
from mast.privacy.redact import Redactor
from mast.taxonomy import Taxonomy

__all__ = ["PROCESS_CHARS", "ProcessPool", "default_workers", "dumps"]

log = logging.getLogger("mast.judge.offload")

_HEADER = 8
_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from mast.judge.offload.worker import main; main()"
)
_MAX_DEFAULT_WORKERS = 4
READY = b"R"  # what a worker sends once it is ready for jobs

PROCESS_CHARS = 25_000
"""Default :attr:`ProcessPool.min_chars`: the characters a job works through from which a
worker process does it (see :func:`mast.judge.offload.loop.off_loop`; the judge passes the
trace's length for redaction and rendering, the prompt's, static part included, for
parsing and grounding). Measured on the bench's 200 MAD-size traces on 2 cores: from 25k
on, the event-loop thread used 2.2 s of CPU and the worker 2.25 s; from 50k on, 2.7-2.9 s
and 1.2 s (a job in a worker costs more CPU in all than inline, but not on the loop)."""


def default_workers() -> int:
    """Worker processes by default: one per core beyond the event loop's, at most 4."""
    return max(0, min(_MAX_DEFAULT_WORKERS, (os.cpu_count() or 1) - 1))


def _shared_index() -> dict[int, tuple[Any, tuple[str, str, int]]]:
    index: dict[int, tuple[Any, tuple[str, str, int]]] = {}
    for module, name in SHARED_SEQUENCES:
        for i, obj in enumerate(getattr(importlib.import_module(module), name)):
            index[id(obj)] = (obj, (module, name, i))
    return index


def _is_context(obj: Any) -> bool:
    """Objects many jobs share, sent once per worker and referred to by key after that."""
    if isinstance(obj, (Taxonomy, Redactor)):
        return True
    kind = type(obj)  # the Judge, named: importing it here would close an import circle
    return kind.__name__ == "Judge" and kind.__module__ == "mast.judge.judge"


class _Pickler(pickle.Pickler):
    """Sends the library's shared objects (see
    :data:`~mast.judge.offload.worker.SHARED_SEQUENCES`) by reference, and contexts (see
    :func:`_is_context`) as keys, pickling each context once into ``contexts``."""

    index: ClassVar[dict[int, tuple[Any, tuple[str, str, int]]]] = {}

    def __init__(self, buffer: io.BytesIO, contexts: _Contexts, skip: Any = None) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.contexts = contexts
        self.skip = skip  # the context being pickled itself is pickled by value
        self.used: list[str] = []

    # reducer_override, unlike persistent_id, is not called for str, int, list, dict and
    # the other plain types a trace is mostly made of: a 10k-character trace holds
    # thousands of them, and a Python call for each cost ~1.5 ms of loop time per job.
    def reducer_override(self, obj: Any) -> Any:
        found = self.index.get(id(obj))
        if found is not None and found[0] is obj:
            return shared, found[1]
        if obj is not self.skip and _is_context(obj):
            key = self.contexts.add(obj)
            self.used.append(key)
            return context, (key,)
        return NotImplemented


class _Contexts:
    """The contexts pickled so far (key -> pickle), in an order a worker can load them in
    (a context's own contexts first). Holds the objects, so their ids stay theirs."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.needs: dict[str, list[str]] = {}  # key -> keys it refers to
        self._objects: dict[str, Any] = {}

    def add(self, obj: Any) -> str:
        key = f"{type(obj).__name__}:{id(obj)}"
        if key not in self.blobs:
            self._objects[key] = obj
            buffer = io.BytesIO()
            pickler = _Pickler(buffer, self, skip=obj)
            pickler.dump(obj)
            self.blobs[key] = buffer.getvalue()
            self.needs[key] = pickler.used
        return key

    def missing(self, keys: list[str], known: set[str]) -> list[tuple[str, bytes]]:
        """The contexts behind ``keys`` a worker that knows ``known`` lacks, in load order."""
        out: list[tuple[str, bytes]] = []

        def visit(key: str) -> None:
            if key in known:
                return
            for inner in self.needs[key]:
                visit(inner)
            known.add(key)
            out.append((key, self.blobs[key]))

        for key in keys:
            visit(key)
        return out


def dumps(value: Any, contexts: _Contexts | None = None) -> tuple[bytes, list[str]]:
    """``value`` pickled for a worker, and the context keys it refers to (raises what
    pickle raises when it cannot be pickled)."""
    if not _Pickler.index:
        _Pickler.index = _shared_index()
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, contexts if contexts is not None else _Contexts())
    pickler.dump(value)
    return buffer.getvalue(), pickler.used


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.known: set[str] = set()  # contexts it holds

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

    async def ready(self) -> None:
        """Wait for the worker's ready byte (sent once its imports are done)."""
        assert self.proc.stdout is not None
        if await self.proc.stdout.readexactly(1) != READY:
            raise EOFError("the worker process sent no ready signal")

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


_DIED = (OSError, EOFError, asyncio.IncompleteReadError)


class ProcessPool:
    """Up to ``workers`` worker processes for one event loop, started on first use.

    Jobs that arrive before any worker is ready are handed back (the caller runs them in
    a thread): a process takes a moment to start, and a long trace should not wait for it.
    Once one is ready, jobs go to an idle worker or wait for one, and another worker is
    started while all are busy (up to ``workers``).

    ``min_chars``: jobs over fewer characters than this are not worth a process (see
    :func:`mast.judge.offload.loop.off_loop`, which asks the pool).
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
        self._all: list[_Worker] = []  # started, killed ones included (stopped at the end)
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._live = 0  # workers starting or ready (not dead, not retired)
        self._ready = 0  # workers ready for jobs (idle or busy)
        self._spawning: set[asyncio.Task[None]] = set()
        self._waiting = 0
        self._contexts = _Contexts()

    async def start(self) -> None:
        """Start one worker and wait until it is ready (optional: :meth:`run` starts
        workers by itself; this is for a caller that wants one ready beforehand)."""
        self._spawn()
        while self._spawning and self._ready == 0:
            await asyncio.wait(set(self._spawning))

    async def run(
        self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[bool, Any]:
        """``(True, fn(*args, **kwargs))`` computed in a worker, or ``(False, None)`` when
        the pool cannot do it now (the caller then does it itself)."""
        if self.broken is None and self._ready == 0:
            self._spawn()  # the first job starts the pool, but does not wait for it
        if self.broken is not None or self._ready == 0:
            self.declined += 1
            return False, None
        try:
            job, keys = dumps((fn, tuple(args), dict(kwargs)), self._contexts)
        except Exception as exc:  # e.g. a custom redactor with a lambda: a thread does it
            log.debug("not sent to a worker process (cannot be pickled): %s", exc)
            self.declined += 1
            return False, None
        status, reply = await self._call(job, keys)
        if status != 0:
            if status == 1:
                log.debug("a worker process handed a job back: %s", reply.decode(errors="replace"))
            self.declined += 1
            return False, None
        self.done += 1
        return True, pickle.loads(reply)

    def _queue(self) -> asyncio.Queue[_Worker | None]:
        if self._idle is None:
            self._idle = asyncio.Queue()
        return self._idle

    def _spawn(self) -> None:
        """Start one more worker in the background (if the pool may have one more)."""
        if self.broken is None and self._live < self.workers:
            self._live += 1
            task = asyncio.ensure_future(self._boot())
            self._spawning.add(task)
            task.add_done_callback(self._spawning.discard)

    async def _boot(self) -> None:
        try:
            worker = await _Worker.start()
        except (OSError, NotImplementedError, RuntimeError) as exc:
            # No subprocess support here (an event loop without it, no executable).
            self._live -= 1
            self._break(f"a worker process could not start ({type(exc).__name__}: {exc})")
            return
        self._all.append(worker)
        self.started += 1
        try:
            await worker.ready()
        except _DIED as exc:
            await self._died(worker, exc)
            return
        if self.broken is not None:
            return
        self._ready += 1
        self._queue().put_nowait(worker)

    async def _call(self, job: bytes, keys: list[str]) -> tuple[int, bytes]:
        """(status, reply); status 2 when the pool broke."""
        queue = self._queue()
        if queue.empty():
            self._spawn()  # all busy: one more, if allowed (this job waits for any)
        self._waiting += 1
        try:
            worker = await queue.get()
        finally:
            self._waiting -= 1
        if worker is None:  # the pool broke while this job waited
            return 2, b""
        # Contexts it lacks go along, and it keeps them (it would not if this job failed
        # to arrive, but then the worker is gone anyway).
        new = self._contexts.missing(keys, worker.known)
        payload = pickle.dumps((new, job), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            status, reply = await worker.call(payload)
        except asyncio.CancelledError:
            # Its reply would come later and be read as the next job's: do not reuse it.
            worker.kill()
            self._ready -= 1
            self._live -= 1
            self._spawn()
            raise
        except _DIED as exc:
            await self._died(worker, exc)
            return 2, b""
        queue.put_nowait(worker)
        return status, reply

    async def _died(self, worker: _Worker, exc: BaseException) -> None:
        self._live -= 1
        with contextlib.suppress(asyncio.TimeoutError):  # for its exit code
            await asyncio.wait_for(worker.proc.wait(), 2.0)
        worker.kill()
        code = worker.proc.returncode
        self._break(
            f"a worker process died ({type(exc).__name__}"
            + (f", exit code {code}" if code is not None else "")
            + ")"
        )

    def _break(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
            log.warning("%s; long traces are prepared in a thread for the rest of the run", reason)
        for worker in self._all:
            worker.kill()
        self._release()

    def _release(self) -> None:
        """Empty the idle queue and wake every job waiting for a worker (none will come)."""
        queue = self._queue()
        while not queue.empty():
            queue.get_nowait()
        for _ in range(self._waiting):
            queue.put_nowait(None)

    async def aclose(self) -> None:
        """Stop every worker process and wait for it to exit."""
        self.broken = self.broken or "closed"
        for task in list(self._spawning):
            task.cancel()
        if self._spawning:
            await asyncio.wait(set(self._spawning))
        self._release()
        workers, self._all = self._all, []
        for worker in workers:
            await worker.stop()
