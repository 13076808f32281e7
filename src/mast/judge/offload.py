"""Keep the event loop free while a long trace is redacted, rendered and its answer parsed.

A bulk run annotates many traces on one event loop. Redacting, rendering and parsing are
plain CPU work proportional to the trace's length: for a 1 MB trace they take long enough
that every other trace's calls would wait. :func:`off_loop` runs such work in a worker
thread when the text is long (the loop goes on serving the other traces' network I/O in
between) and inline when it is short, where a thread would cost more than it saves.

>>> import asyncio
>>> asyncio.run(off_loop(10, str.upper, "short: run inline"))
'SHORT: RUN INLINE'
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["OFF_LOOP_CHARS", "off_loop"]

T = TypeVar("T")

OFF_LOOP_CHARS = 50_000
"""Texts at least this long (characters) are processed in a worker thread."""


async def off_loop(size: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, in a worker thread when ``size`` (the characters it works
    through) is at least :data:`OFF_LOOP_CHARS`, else right here."""
    if size < OFF_LOOP_CHARS:
        return fn(*args, **kwargs)
    # to_thread copies the context, so the call hook's ContextVar stays visible.
    return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))
