"""The child side of :class:`~mast.judge.offload.pool.ProcessPool`: one worker process.

It is a fresh interpreter started as ``python -c …`` (never ``fork``: the parent runs
threads; never :mod:`multiprocessing`'s spawn: that re-runs the user's script in the
child). It reads jobs from its standard input and writes results to its standard output,
one at a time, until its input ends. Once its imports are done it writes one byte,
``R``, so the parent knows it is ready:

* job: 8-byte big-endian length, then a pickle of ``(new contexts, job)`` (see
  :func:`run_job`), the job a pickle of ``(function, args, kwargs)``;
* reply: one status byte (0: done; 1: the job failed here and the parent redoes it in a
  thread, where any exception is raised with its real traceback), 8-byte length, payload
  (the pickled result, or a short reason).

Anything the job prints goes to standard error, so it cannot corrupt the replies.

>>> import pickle
>>> run_job(pickle.dumps(([], pickle.dumps((len, ("abc",), {})))))
(0, b'\\x80\\x05K\\x03.')
"""

from __future__ import annotations

import os
import pickle
from typing import Any, BinaryIO

__all__ = ["context", "main", "run_job", "shared"]

_HEADER = 8
# Objects sent by reference (name of a module-level sequence, index) instead of by value:
# they hold functions that pickle cannot copy (lambdas), and the worker has the same ones.
SHARED_SEQUENCES = (("mast.privacy.secret_patterns", "DEFAULT_PATTERNS"),)


def shared(module: str, name: str, index: int) -> Any:
    """Element ``index`` of the module-level sequence ``module.name`` (unpickling helper)."""
    import importlib

    return getattr(importlib.import_module(module), name)[index]


# The contexts of the job being loaded (see run_job); only this process's one thread reads it.
_active: dict[str, Any] = {}


def context(key: str) -> Any:
    """The context ``key`` sent to this worker earlier (unpickling helper)."""
    return _active[key]


def run_job(payload: bytes, contexts: dict[str, Any] | None = None) -> tuple[int, bytes]:
    """Run one job; (status, reply payload). ``payload`` pickles ``(new contexts, job)``:
    the contexts (objects many jobs share: the judge, its taxonomy, its redactor) this
    worker has not seen, as ``(key, pickle)`` pairs, then the job, which refers to them by
    key. Keeping them here, one copy for all jobs, keeps their caches warm."""
    global _active
    contexts = {} if contexts is None else contexts
    _active = contexts
    try:
        new, job = pickle.loads(payload)
        for key, data in new:
            contexts[key] = pickle.loads(data)
        fn, args, kwargs = pickle.loads(job)
        result = fn(*args, **kwargs)
        return 0, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # the parent redoes the job in a thread and gets the error there
        return 1, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000]


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    if len(data) < size:
        return None  # the parent closed our input: the run is over
    return data


def main() -> None:
    """Serve jobs on stdin/stdout until stdin ends."""
    jobs = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    # Only the reply stream may write to the parent's pipe: prints go to stderr.
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # Warm up while the parent goes on: the first job need not wait for these imports.
    import mast.judge.prompt.render
    import mast.judge.reply.echo
    import mast.judge.reply.grounding
    import mast.judge.reply.parse
    import mast.privacy.redact

    # Compile the secret patterns now, not during the first (long) trace's redaction.
    mast.privacy.redact.Redactor().redact("warm-up: password=hunter2 sk-proj-0000")
    replies.write(b"R")  # ready (process_pool.READY)
    replies.flush()

    contexts: dict[str, Any] = {}
    while True:
        header = _read(jobs, _HEADER)
        if header is None:
            return
        payload = _read(jobs, int.from_bytes(header, "big"))
        if payload is None:
            return
        status, reply = run_job(payload, contexts)
        replies.write(bytes([status]) + len(reply).to_bytes(_HEADER, "big"))
        replies.write(reply)
        replies.flush()


if __name__ == "__main__":  # pragma: no cover - started by ProcessPool
    main()
