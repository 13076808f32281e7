"""Request and token rate limits for the bulk runner (``rpm`` / ``tpm``).

One :class:`RateLimiter` guards both limits atomically: a call waits until it fits both.
Two rules apply to each limit:

* **a sliding window** — never more than ``limit`` units in any ``window`` seconds
  (half-open windows), which is the guarantee users ask for with ``rpm=``;
* **smoothing** — a token bucket refilled at ``limit / window`` per second that holds one
  sixtieth of the limit (one second's worth for per-minute limits), so a run does not
  fire a minute's worth of requests in the first instant (providers enforce their
  per-minute limits over shorter intervals too).

A single call larger than the whole token limit is let through alone (once the window is
empty) instead of waiting forever. Token amounts are estimates before the call;
:meth:`Grant.settle` replaces the estimate with the usage the provider reported.
:meth:`RateLimiter.pause` holds every caller back after a 429 with ``Retry-After``.

>>> import asyncio
>>> limiter = RateLimiter(rpm=120)
>>> grant = asyncio.run(limiter.acquire(tokens=500))
>>> grant.tokens
500
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Grant", "LimitRefused", "Limiter", "LimiterGrant", "RateLimiter"]

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class LimitRefused(Exception):
    """A shared limiter refuses any further call (``reason`` "budget" or "auth"): the run
    stops as it does when its own budget is spent."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class LimiterGrant(Protocol):
    """What :meth:`Limiter.acquire` hands out; settled exactly once by the runner."""

    def settle(self, actual_tokens: int | None, *, cost: float | None = None) -> None: ...


class Limiter(Protocol):
    """What the runner asks before each call: :class:`RateLimiter` in one process, or a
    limiter shared by many processes (:mod:`mast.bulk.distributed`), which also keeps
    the budget and may raise :class:`LimitRefused`."""

    @property
    def limited(self) -> bool: ...

    def pause(self, seconds: float) -> None: ...

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> LimiterGrant: ...


@dataclass(eq=False)  # identity: two calls in the same instant are different entries
class _Entry:
    at: float
    amount: float


class _Limit:
    """One limit: sliding-window log plus a smoothing bucket."""

    def __init__(self, limit: float, window: float, now: float) -> None:
        if limit <= 0:
            raise ValueError(f"rate limits must be positive, got {limit}")
        self.limit = float(limit)
        self.window = window
        self.rate = self.limit / window
        self.capacity = max(1.0, self.limit / 60.0)
        self.tokens = self.capacity
        self.updated = now
        self.log: deque[_Entry] = deque()
        self.used = 0.0

    def _expire(self, now: float) -> None:
        while self.log and self.log[0].at <= now - self.window:
            self.used -= self.log.popleft().amount
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` fits (0 = now)."""
        self._expire(now)
        amount = min(amount, self.limit)
        waits = [0.0]
        if self.used + amount > self.limit + 1e-9:
            freed = 0.0
            for entry in self.log:
                freed += entry.amount
                if self.used - freed + amount <= self.limit + 1e-9:
                    waits.append(entry.at + self.window - now)
                    break
        need = min(amount, self.capacity)
        if self.tokens < need - 1e-9:
            waits.append((need - self.tokens) / self.rate)
        return max(waits)

    def take(self, amount: float, now: float) -> _Entry:
        entry = _Entry(now, float(amount))
        self.log.append(entry)
        self.used += entry.amount
        # May go negative: a large call borrows from the future and later calls wait.
        self.tokens -= amount
        return entry

    def settle(self, entry: _Entry, actual: float) -> None:
        delta = float(actual) - entry.amount
        if entry in self.log:
            self.used += delta
        entry.amount = float(actual)
        self.tokens -= delta
        self.tokens = min(self.tokens, self.capacity)


@dataclass
class Grant:
    """Permission for one call; :meth:`settle` corrects its token estimate afterwards."""

    tokens: int
    _limiter: RateLimiter
    _entry: _Entry | None

    def settle(self, actual_tokens: int | None, *, cost: float | None = None) -> None:
        """Count ``actual_tokens`` (prompt + output, as reported; None = keep the estimate)
        instead of the estimate. ``cost`` is for shared limiters (the runner keeps its own
        budget)."""
        if actual_tokens is None or self._entry is None or self._limiter._tpm is None:
            return
        self._limiter._tpm.settle(self._entry, actual_tokens)
        self._entry = None


class RateLimiter:
    """At most ``rpm`` requests and ``tpm`` tokens per ``window`` seconds (None = no limit).

    ``clock`` and ``sleep`` are injectable so tests can run minutes of traffic in no time.
    Waiters are served first come, first served.
    """

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        window: float = 60.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window}")
        self._clock = clock
        self._sleep = sleep
        now = clock()
        self._rpm = _Limit(rpm, window, now) if rpm is not None else None
        self._tpm = _Limit(tpm, window, now) if tpm is not None else None
        self._paused_until = 0.0
        self._lock: asyncio.Lock | None = None

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return self._rpm is not None or self._tpm is not None

    def pause(self, seconds: float) -> None:
        """Hold every caller back for ``seconds`` from now (a provider asked us to wait)."""
        self._paused_until = max(self._paused_until, self._clock() + max(seconds, 0.0))

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> Grant:
        """Wait until one request of about ``tokens`` tokens fits the limits, and count it.
        (``cost``, the call's estimated price, matters to shared limiters only.)"""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            while True:
                now = self._clock()
                wait = self._paused_until - now
                if self._rpm is not None:
                    wait = max(wait, self._rpm.wait(1, now))
                if self._tpm is not None:
                    wait = max(wait, self._tpm.wait(tokens, now))
                if wait <= 0:
                    break
                await self._sleep(max(wait, 0.001))
            if self._rpm is not None:
                self._rpm.take(1, now)
            entry = self._tpm.take(tokens, now) if self._tpm is not None else None
        return Grant(tokens=tokens, _limiter=self, _entry=entry)
