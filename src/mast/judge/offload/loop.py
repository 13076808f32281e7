"""Keep the event loop free while a long trace is redacted, rendered and its answer parsed.

A bulk run annotates many traces on one event loop. Redacting, rendering and parsing are
plain CPU work proportional to the trace's length: for a 1 MB trace they take long enough
that every other trace's calls would wait. :func:`off_loop` runs such work elsewhere when
the text is long, and inline when it is short, where moving it would cost more than it
saves:

* in a worker process of the run's :class:`~mast.judge.offload.pool.ProcessPool`, when
  :func:`use_process_pool` set one up (:func:`mast.annotate_many` does, by default), so
  another core does the work: from :data:`PROCESS_CHARS` characters on;
* otherwise, or when the pool cannot do the job, in a worker thread from
  :data:`OFF_LOOP_CHARS` on: the loop goes on serving the other traces' network I/O in
  between, but shares its core with the thread (the interpreter lock).

Both give the same result as running inline: the functions are deterministic and the
process path sends them, their arguments and their result through :mod:`pickle`.

>>> import asyncio
>>> asyncio.run(off_loop(10, str.upper, "short: run inline"))
'SHORT: RUN INLINE'
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from mast.judge.offload.pool import PROCESS_CHARS, ProcessPool

__all__ = ["OFF_LOOP_CHARS", "PROCESS_CHARS", "ProcessPool", "current_pool", "off_loop"]

T = TypeVar("T")

OFF_LOOP_CHARS = 50_000
"""Texts at least this long (characters) are processed off the event loop."""

_POOL: contextvars.ContextVar[ProcessPool | None] = contextvars.ContextVar(
    "mast_process_pool", default=None
)


def current_pool() -> ProcessPool | None:
    """The process pool :func:`off_loop` uses in this context, if any."""
    return _POOL.get()


@contextlib.contextmanager
def use_process_pool(pool: ProcessPool | None) -> Iterator[ProcessPool | None]:
    """Let :func:`off_loop` use ``pool`` in this context (tasks created inside inherit it).
    The caller owns the pool and closes it (:meth:`ProcessPool.aclose`)."""
    token = _POOL.set(pool)
    try:
        yield pool
    finally:
        _POOL.reset(token)


async def off_loop(size: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, where ``size`` (the characters it works through) says: in a
    worker process of the run's pool from its ``min_chars`` on (:data:`PROCESS_CHARS`), in
    a thread from :data:`OFF_LOOP_CHARS` on when the pool cannot take it, else right here."""
    pool = _POOL.get()
    if pool is not None and size >= pool.min_chars:
        done, value = await pool.run(fn, args, kwargs)
        if done:
            return value  # type: ignore[no-any-return]
    if size < OFF_LOOP_CHARS:
        return fn(*args, **kwargs)
    # to_thread copies the context, so the call hook's ContextVar stays visible.
    return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))
