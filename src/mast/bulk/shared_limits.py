"""One rate limit and one budget for many runners (the Ray engine's cluster-wide limits).

:func:`mast.annotate_many` keeps ``rpm`` / ``tpm`` / ``budget_usd`` inside one process.
When several processes annotate together (:mod:`mast.bulk.distributed`), one
:class:`LimitsState` holds the token buckets, the money spent and reserved, the pause
after a ``Retry-After`` and a stop for everyone; each runner asks it before every provider
call (through a :class:`~mast.bulk.ratelimit.Limiter` that forwards to it) and reports
what the call used afterwards. The Ray engine keeps it in an actor; tests use it directly.

>>> import asyncio
>>> state = LimitsState(rpm=600, budget_usd=1.0)
>>> ticket, refused = asyncio.run(state.admit(tokens=100, cost=0.4))
>>> state.settle(ticket, tokens=90, cost=0.3)
>>> round(state.snapshot()["spent_usd"], 2), refused
(0.3, None)
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from mast.bulk.ratelimit import Grant, RateLimiter
from mast.bulk.spending import Budget, BudgetSpent

__all__ = ["LimitsState"]


class LimitsState:
    """Token buckets (``rpm`` / ``tpm`` per ``window`` seconds) and a budget in one place.

    :meth:`admit` returns ``(ticket, None)`` or ``(None, (reason, message))`` instead of
    raising, so that its answer crosses process boundaries as plain data. Every admitted
    ticket is settled once (:meth:`settle`), which frees its reserved cost.
    """

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        window: float = 60.0,
        budget_usd: float | None = None,
        spent_usd: float = 0.0,
        results: str | None = None,
    ) -> None:
        # A worker's request reaches the provider some time after its grant, and not always
        # the same time (its event loop may be busy rendering another trace, its first call
        # imports half the SDK): two grants one window apart could land inside one window.
        # Counting a window a tenth longer (at most a second, under 2% of a minute) keeps
        # the provider's view within the limit.
        # Adaptive: a 429 any worker gets slows the whole cluster down (see RateLimiter).
        # Smoothing as tight as a sixtieth of the window: grants cross processes, and a
        # burst of them lands at the provider spread by those delays (a 3 s test window
        # with a second's worth per burst let 31 of 30 requests into one window).
        self.limiter = RateLimiter(
            rpm=rpm,
            tpm=tpm,
            window=window + min(1.0, 0.1 * window),
            adaptive=True,
            burst=window / 60.0,
        )
        # spent_usd: what the results folder's records cost in earlier runs (budget scope
        # "file"); a call that does not fit only because others are in flight waits.
        self.money = Budget(budget_usd, prior=spent_usd, results=Path(results) if results else None)
        self.calls = 0
        self.stopped: tuple[str, str] | None = None
        self._tickets: dict[int, tuple[Grant | None, float]] = {}
        self._ids = itertools.count(1)

    async def admit(self, tokens: int, cost: float) -> tuple[int | None, tuple[str, str] | None]:
        """Wait until a call of about ``tokens`` tokens and ``cost`` USD fits."""
        if self.stopped is not None:
            return None, self.stopped
        try:
            # A worker that dies never settles its calls: wait at most 10 minutes for one.
            why = "estimated prompt tokens + max output tokens"
            await self.money.reserve(cost, why=why, patience=600.0)
        except BudgetSpent as exc:
            self.stopped = ("budget", f"{exc} (across the cluster)")
            return None, self.stopped
        if self.stopped is not None:  # stopped while this call waited
            self.money.settle(cost, None)
            return None, self.stopped
        # Reserve first, then wait: a call waiting for the rate limit holds its share.
        try:
            grant = await self.limiter.acquire(tokens) if self.limiter.limited else None
        except BaseException:
            self.money.settle(cost, None)
            raise
        ticket = next(self._ids)
        self._tickets[ticket] = (grant, cost)
        self.calls += 1
        return ticket, None

    def settle(self, ticket: int, tokens: int | None, cost: float | None) -> None:
        """The call is over: it used ``tokens`` (None = as estimated, 0 = refused by the
        provider) and cost ``cost`` USD (None = unknown or nothing)."""
        grant, reserved = self._tickets.pop(ticket, (None, 0.0))
        self.money.settle(reserved, cost)
        if grant is not None:
            grant.settle(tokens)

    def pause(
        self,
        seconds: float,
        *,
        kind: str | None = None,
        stated_limit: float | None = None,
        stated_tokens: float | None = None,
    ) -> None:
        """A provider answered 429: hold every caller back ``seconds`` (its ``Retry-After``,
        0 if none) and lower the cluster's rate that the 429 hit (``kind``; see
        :meth:`RateLimiter.pause <mast.bulk.ratelimit.RateLimiter.pause>`)."""
        self.limiter.pause(
            seconds, kind=kind, stated_limit=stated_limit, stated_tokens=stated_tokens
        )

    def adopt(self, requests: float | None = None, tokens: float | None = None) -> None:
        """The provider's headers state its limits: the cluster holds them."""
        self.limiter.adopt(requests, tokens)

    def stop(self, reason: str, message: str) -> None:
        """Refuse every further call."""
        if self.stopped is None:
            self.stopped = (reason, message)

    def snapshot(self) -> dict[str, Any]:
        """Money spent and reserved, calls admitted, and why everyone stopped (if so)."""
        return {
            "spent_usd": self.money.spent,
            "reserved_usd": self.money.reserved,
            "calls": self.calls,
            "stopped": self.stopped,
        }
