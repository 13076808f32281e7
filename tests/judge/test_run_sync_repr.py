"""run_sync must not format its result: on the main thread, Python 3.11's asyncio.run reads
its SIGINT handler back through signal.getsignal, which formats the handler's repr — the
main task and its result with it. For a 10^4-trace run that was every annotation's repr,
twice (issue 37: seconds of the rerun and a string of hundreds of megabytes)."""

from __future__ import annotations

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
