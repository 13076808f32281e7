"""Run a coroutine to completion from plain code, also inside a running loop (Jupyter).

>>> async def two() -> int:
...     return 2
>>> run_sync(two)
2
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter)."""

    async def runner() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(runner())
    # A loop is already running in this thread (a notebook): use a private one elsewhere.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, runner()).result()
