"""Small asyncio helpers of the bulk runner.

>>> import asyncio
>>> async def ok() -> None:
...     await asyncio.sleep(0)
>>> asyncio.run(gather_or_cancel([ok(), ok()]))
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

__all__ = ["gather_or_cancel"]


async def gather_or_cancel(coros: list[Awaitable[None]]) -> None:
    """Run coroutines together; the first exception cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
