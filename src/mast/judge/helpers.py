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
from pathlib import Path
from typing import TypeVar

from mast.taxonomy import Taxonomy, load_taxonomy

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter)."""

    box: list[T] = []

    async def runner() -> None:
        # The result stays out of the task: on the main thread asyncio.run's SIGINT handler
        # holds the task, and Python 3.11's signal.getsignal formats that handler's repr,
        # the task's result included — the repr of every annotation of a 10^4-trace run
        # (seconds, and a string of hundreds of megabytes, twice per run).
        box.append(await factory())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(runner())
        return box[0]
    # A loop is already running in this thread (a notebook): use a private one elsewhere.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_run_on_own_loop, runner).result()
    return box[0]


def _run_on_own_loop(main: Callable[[], Awaitable[None]]) -> None:
    """asyncio.run's work on a loop of our own, closed at the end.

    Not asyncio.run itself: once nest_asyncio has patched it (Jupyter kernels do; so does
    Inspect Scout's log reader), it takes the thread's loop from get_event_loop and never
    closes it, and every call from a notebook would leave an unclosed loop behind.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # as asyncio.run does, for code that asks for "the" loop
    try:
        loop.run_until_complete(main())
    finally:
        try:
            left = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def judge_taxonomy(
    taxonomy: Taxonomy | str | Path | None, verification: str | None, *, heuristic: bool
) -> Taxonomy:
    """The taxonomy a judge works with, in the 3.2/3.3 convention ``verification`` asks for.

    The heuristic judge's rules are written for the taxonomy's own convention: another one is
    refused rather than answered in the wrong meaning.

    >>> judge_taxonomy(None, "official", heuristic=False)["3.2"].name
    'Weak Verification'
    """
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    if verification is None or verification == tax.verification:
        return tax
    if heuristic:
        raise ValueError(
            "the heuristic judge's rules follow the taxonomy's own 3.2/3.3 convention "
            f"({tax.verification}); verification={verification!r} needs an LLM judge"
        )
    return tax.in_convention(verification)
