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

**Adaptive request rate** (``adaptive=True``, what :func:`mast.annotate_many` uses): each
429 the provider answers (:meth:`RateLimiter.pause`) sets a request rate for every caller
from what the provider just accepted — the requests admitted in the last window that were
not refused, spread over the time from the first of them to the moment the server says it
takes requests again (``Retry-After``) — or from the limit the provider states in its
``x-ratelimit-limit-requests`` / ``anthropic-ratelimit-requests-limit`` header. Each half
window without a 429 raises the rate by 5% while callers use it, so a limit set too low is
found again. ``found_rpm`` reports the rate it settled on (requests per minute).

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

_SAFETY = 0.95  # the rate set after a 429: a little under what the provider accepted
_PROBE = 1.05  # raised by this much after each quiet half window

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

    def pause(self, seconds: float) -> None:
        """A provider answered 429: hold every caller back ``seconds`` (0 = it gave no
        ``Retry-After``), and slow down if the limiter adapts."""

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


class _Adaptive:
    """What the provider accepted lately: admitted and refused request times (one window)."""

    def __init__(self, window: float, ceiling: float | None, now: float) -> None:
        self.window = window
        self.ceiling = ceiling  # the user's rpm, if any: never probe above it
        self.admitted: deque[float] = deque()
        self.refused: deque[float] = deque()
        self.changed = now
        self.throttles = 0
        self.lowest: float | None = None

    def trim(self, now: float) -> None:
        for times in (self.admitted, self.refused):
            while times and times[0] <= now - self.window:
                times.popleft()

    def estimate(self, now: float, retry_after: float) -> float | None:
        """Requests per window the provider accepts, from the last window (None: unknown)."""
        self.trim(now)
        accepted = len(self.admitted) - len(self.refused)
        if accepted <= 0 or not self.admitted:
            return None
        span = now - self.admitted[0] + retry_after
        span = min(max(span, self.window / 60.0), self.window)
        return accepted * self.window / span


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
        adaptive: bool = False,
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
        self._window = window
        self._adaptive = _Adaptive(window, rpm, now) if adaptive else None

    @property
    def limited(self) -> bool:
        """Whether any limit is set (an adaptive limiter always counts)."""
        return self._rpm is not None or self._tpm is not None or self._adaptive is not None

    @property
    def found_rpm(self) -> float | None:
        """The request rate (per minute) the adaptive limiter holds after 429s; None when
        it never had to slow down (or does not adapt)."""
        a = self._adaptive
        if a is None or not a.throttles or self._rpm is None:
            return None
        return self._rpm.limit * 60.0 / self._window

    @property
    def throttles(self) -> int:
        """429 answers reported through :meth:`pause`."""
        return self._adaptive.throttles if self._adaptive is not None else 0

    def pause(self, seconds: float, *, stated_limit: float | None = None) -> None:
        """A provider answered 429: hold every caller back ``seconds`` from now (its
        ``Retry-After``; 0 when it gave none) and, if adaptive, lower the request rate.
        ``stated_limit`` is the per-minute request limit the provider's headers named."""
        now = self._clock()
        self._paused_until = max(self._paused_until, now + max(seconds, 0.0))
        a = self._adaptive
        if a is None:
            return
        a.throttles += 1
        a.refused.append(now)
        estimate = a.estimate(now, max(seconds, 0.0))
        if stated_limit is not None and stated_limit > 0:
            stated = stated_limit * self._window / 60.0
            estimate = stated if estimate is None else min(estimate, stated)
        current = self._rpm.limit if self._rpm is not None else None
        if estimate is None:  # nothing got through lately: halve what we had, if anything
            if current is None:
                return  # no rate to learn from yet: the pause and the retry backoff wait
            target = max(1.0, current / 2)
        else:
            target = max(1.0, _SAFETY * estimate)
        if current is not None and target >= current:
            a.changed = now  # a 429 at this rate: no probing up for a while
            return
        self._set_rate(target, now)
        a.lowest = target if a.lowest is None else min(a.lowest, target)

    def _set_rate(self, limit: float, now: float) -> None:
        assert self._adaptive is not None
        old = self._rpm
        self._rpm = _Limit(limit, self._window, now)
        if old is not None:  # the calls of the last window still count
            old._expire(now)
            for entry in old.log:
                self._rpm.take(entry.amount, entry.at)
            self._rpm.tokens = min(old.tokens, self._rpm.capacity)
        else:
            for at in self._adaptive.admitted:
                self._rpm.take(1, at)
            self._rpm.tokens = 0.0  # smoothing starts now, not a window back
        self._rpm.tokens = min(self._rpm.tokens, self._rpm.capacity)
        self._rpm.updated = now
        self._adaptive.changed = now

    def _probe(self, now: float) -> None:
        """Raise an adapted rate after a quiet half window, if callers are using it."""
        a = self._adaptive
        if a is None or self._rpm is None or now - a.changed < self._window / 2:
            return
        a.trim(now)
        if len(a.admitted) < 0.8 * self._rpm.limit:
            a.changed = now  # not the limit holding the run back: nothing to learn
            return
        raised = self._rpm.limit * _PROBE
        if a.ceiling is not None:
            raised = min(raised, a.ceiling)
        if raised > self._rpm.limit:
            self._set_rate(raised, now)
        else:
            a.changed = now

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> Grant:
        """Wait until one request of about ``tokens`` tokens fits the limits, and count it.
        (``cost``, the call's estimated price, matters to shared limiters only.)"""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._probe(self._clock())
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
            if self._adaptive is not None:
                self._adaptive.admitted.append(now)
                self._adaptive.trim(now)
            entry = self._tpm.take(tokens, now) if self._tpm is not None else None
        return Grant(tokens=tokens, _limiter=self, _entry=entry)
