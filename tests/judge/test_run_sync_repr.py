"""run_sync must not format its result: on the main thread, Python 3.11's asyncio.run reads
its SIGINT handler back through signal.getsignal, which formats the handler's repr — the
main task and its result with it. For a 10^4-trace run that was every annotation's repr,
twice (issue 37: seconds of the rerun and a string of hundreds of megabytes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mast.judge.helpers import run_sync


class _Counted:
    reprs = 0

    def __repr__(self) -> str:
        _Counted.reprs += 1
        return "<counted>"


def test_run_sync_returns_the_result_without_formatting_it() -> None:
    value = _Counted()

    async def make() -> _Counted:
        return value

    _Counted.reprs = 0
    assert run_sync(make) is value
    assert _Counted.reprs == 0


# Inside a running loop run_sync uses a loop of its own in another thread. With nest_asyncio
# applied (as Jupyter and Inspect Scout do, for the whole process: hence a child), asyncio.run
# would leave that loop unclosed; run_sync must close it.
_IN_A_NOTEBOOK = """
import asyncio, gc, warnings
import nest_asyncio2
from mast.judge.helpers import run_sync
warnings.simplefilter("error", ResourceWarning)
nest_asyncio2.apply()

async def two():
    return 2

async def cell():
    return [run_sync(two) for _ in range(3)]

assert asyncio.run(cell()) == [2, 2, 2]
gc.collect()
print("done")
"""


def test_run_sync_closes_its_own_loop_under_nest_asyncio() -> None:
    pytest.importorskip("nest_asyncio2")
    child = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _IN_A_NOTEBOOK],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "done"
    assert "unclosed event loop" not in child.stderr, child.stderr
