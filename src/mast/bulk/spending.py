"""The budget of a bulk run: reserve before a call, settle after it, stop only when spent.

A call is let through when what is spent, what calls in flight have reserved and this
call's estimate (its estimated prompt tokens plus the most output tokens it may ask for,
at the model's price) fit in the budget. When they do not fit only because other calls
are in flight, the call **waits** for them to settle (their reservation replaced by what
they really cost) and checks again: a budget is never given up while money is only
reserved. The run stops when the spending alone leaves no room for the next call, and the
message says what was really spent.

**Scope.** With ``scope="file"`` (the default of :func:`mast.annotate_many` and
``mast annotate``) the budget is for the results file: what its records cost in earlier
runs (:attr:`mast.bulk.store.ResultsStore.spent_usd`, kept beside it) counts against it,
so rerunning the same command never gets a fresh budget. ``scope="run"`` (``--budget-scope
run``) counts only this run's spending, as before.

>>> import asyncio
>>> budget = Budget(1.0, prior=0.25)
>>> asyncio.run(budget.reserve(0.5)); budget.settle(0.5, 0.1); round(budget.total, 2)
0.35
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal, get_args

__all__ = ["BUDGET_SCOPES", "Budget", "BudgetScope", "BudgetSpent", "check_budget_scope"]

BudgetScope = Literal["file", "run"]
BUDGET_SCOPES: tuple[str, ...] = get_args(BudgetScope)


def check_budget_scope(scope: str) -> BudgetScope:
    """``scope`` if it is one of :data:`BUDGET_SCOPES`, else a ValueError naming them."""
    if scope not in BUDGET_SCOPES:
        raise ValueError(f"budget_scope must be one of {', '.join(BUDGET_SCOPES)}, got {scope!r}")
    return scope  # type: ignore[return-value]


class BudgetSpent(Exception):
    """The next call does not fit in what is left of the budget (``str`` says why)."""


class Budget:
    """Money of one run: ``limit`` (None = no budget), ``prior`` spent by earlier runs of
    the same results file (scope ``"file"``), what this run spent and has reserved."""

    def __init__(
        self, limit: float | None, *, prior: float = 0.0, results: Path | None = None
    ) -> None:
        self.limit = limit
        self.prior = prior
        self.results = results
        self.spent = 0.0
        """Spent by this run (every call's cost as it settles)."""
        self.reserved = 0.0
        self._settled: asyncio.Event | None = None

    @property
    def total(self) -> float:
        """Spent so far: earlier runs of the results file (scope ``"file"``) and this one."""
        return self.prior + self.spent

    def fits(self, estimate: float, planned: float = 0.0) -> bool:
        """Whether a call estimated at ``estimate`` fits beside what is spent, reserved
        and ``planned`` (a batch being put together)."""
        if self.limit is None:
            return True
        return self.total + self.reserved + planned + estimate <= self.limit + 1e-12

    async def reserve(
        self, estimate: float, *, why: str = "", patience: float | None = None
    ) -> None:
        """Reserve ``estimate`` for a call, waiting while calls in flight may still leave
        room; :class:`BudgetSpent` when the spending alone leaves none (or when no call
        settles for ``patience`` seconds: a reservation whose holder died)."""
        while not self.fits(estimate):
            if self.reserved <= 1e-12:
                raise BudgetSpent(self.message(estimate, why))
            if self._settled is None:
                self._settled = asyncio.Event()
            try:
                await asyncio.wait_for(self._settled.wait(), patience)
            except asyncio.TimeoutError:
                raise BudgetSpent(
                    self.message(estimate, why) + f"; ${self.reserved:.4f} still reserved by "
                    f"calls that did not settle within {patience:g}s"
                ) from None
        self.reserved += estimate

    def settle(self, estimate: float, cost: float | None) -> None:
        """Replace a reservation by what the call really cost (None = nothing known to be
        spent: a refused call) and let waiting calls check again."""
        self.reserved = max(0.0, self.reserved - estimate)
        self.spent += cost or 0.0
        if self._settled is not None:
            self._settled.set()  # wakes every waiter; each checks again
            self._settled = None

    def charge(self, cost: float | None) -> None:
        """Count money spent outside a reservation (an answer paid earlier that a record
        of this run now carries, e.g. from a batch or after a crash)."""
        self.spent += cost or 0.0

    def message(self, estimate: float, why: str = "") -> str:
        """Why the run stops: the money really spent, and what the next call needed."""
        assert self.limit is not None
        where = f" for {self.results.name}" if self.results is not None else ""
        text = f"budget of ${self.limit:.4f}{where} reached: ${self.total:.4f} spent"
        if self.results is not None:
            text += (
                f" (${self.spent:.4f} in this run, ${self.prior:.4f} by earlier runs of this "
                "results file; pass --budget-scope run / budget_scope='run' for a budget of "
                "this run alone)"
            )
        return (
            text
            + f", and the next call may cost up to ${estimate:.4f}"
            + (f" ({why})" if why else "")
        )
