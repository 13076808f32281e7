"""The parts of :class:`~mast.bulk.ratelimit.RateLimiter`: one limit's sliding window and
smoothing bucket (:class:`WindowLimit`), and what the provider accepted lately
(:class:`Accepted`), from which the adaptive limiter learns its rates."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["Accepted", "Entry", "WindowLimit"]


@dataclass(eq=False)  # identity: two calls in the same instant are different entries
class Entry:
    at: float
    amount: float


class WindowLimit:
    """One limit: sliding-window log plus a smoothing bucket."""

    def __init__(
        self, limit: float, window: float, now: float, pad: float = 0.0, burst: float = 1.0
    ) -> None:
        if limit <= 0:
            raise ValueError(f"rate limits must be positive, got {limit}")
        self.limit = float(limit)
        self.window = window + pad  # the log's: see RateLimiter's pad
        self.base_window = window
        self.rate = self.limit / window
        # One second's worth: the event loop's delays are in seconds whatever the window,
        # and a bucket that holds less loses the rate a waiter's late wake-up did not use
        # (a 1.2 s test window with a 1/60 bucket held 20 ms of it).
        self.burst = burst  # seconds' worth the bucket holds
        self.capacity = min(self.limit, max(1.0, self.limit * min(burst, window) / window))
        self.tokens = self.capacity
        self.updated = now
        self.log: deque[Entry] = deque()
        self.used = 0.0
        # By how much the last calls' estimates exceeded what they counted once answered:
        # a call without max_tokens is estimated with a reserve for its answer that it
        # seldom uses, and while it is in flight that reserve held others back.
        self.overshoot: deque[float] = deque(maxlen=20)

    def set_limit(self, limit: float) -> None:
        """A new limit; the calls of the last window still count."""
        self.limit = float(limit)
        self.rate = self.limit / self.base_window
        burst = min(self.burst, self.base_window)
        self.capacity = min(self.limit, max(1.0, self.limit * burst / self.base_window))
        self.tokens = min(self.tokens, self.capacity)

    def corrected(self, amount: float) -> float:
        """``amount`` less the smallest overshoot of the last calls (never below half)."""
        if not self.overshoot:
            return float(amount)
        return max(amount * 0.5, amount - max(0.0, min(self.overshoot)))

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

    def take(self, amount: float, now: float) -> Entry:
        entry = Entry(now, float(amount))
        self.log.append(entry)
        self.used += entry.amount
        # May go negative: a large call borrows from the future and later calls wait.
        self.tokens -= amount
        return entry

    def settle(self, entry: Entry, actual: float) -> None:
        delta = float(actual) - entry.amount
        if entry in self.log:
            self.used += delta
        entry.amount = float(actual)
        self.tokens -= delta
        self.tokens = min(self.tokens, self.capacity)


class Accepted:
    """What the provider accepted lately: admitted and refused request times (one window)."""

    def __init__(self, window: float, ceiling: float | None, now: float, given: bool) -> None:
        self.window = window
        self.ceiling = ceiling  # the user's rpm, if any: never probe above it
        self.given = given  # the user gave rpm or tpm: a lone 429 does not lower the rate
        self.held_back: float | None = None  # when a caller last waited for the rate
        self.held_back_requests: float | None = None  # ... for the request rate
        self.held_back_tokens: float | None = None  # ... for the learnt token rate
        # What the provider accepted per window at the last 429 (requests, tokens): probing
        # goes up to just under it, and past it only some windows later.
        self.failed: tuple[float | None, float | None, float] | None = None
        self.cut_at: dict[str, float] = {}  # when a given limit was last lowered, by kind
        self.admitted: deque[float] = deque()
        self.refused: deque[float] = deque()
        self.changed = now
        self.throttles = 0

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
