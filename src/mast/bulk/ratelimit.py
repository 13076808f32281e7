"""Request and token rate limits for the bulk runner (``rpm`` / ``tpm``).

One :class:`RateLimiter` guards both limits atomically: a call waits until it fits both.
Two rules apply to each limit:

* **a sliding window** — never more than ``limit`` units in any ``window`` seconds
  (half-open windows), which is the guarantee users ask for with ``rpm=``;
* **smoothing** — a token bucket refilled at ``limit / window`` per second that holds one
  second's worth of the limit (a sixtieth of a per-minute limit; more of a shorter
  window, whose delays do not shrink with it), so a run does not fire a minute's worth of
  requests in the first instant (providers enforce their per-minute limits over shorter
  intervals too).

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
import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from mast.bulk.ratewindow import Accepted, Entry, WindowLimit

__all__ = ["Grant", "LimitRefused", "Limiter", "LimiterGrant", "RateLimiter", "counted_tokens"]

_SAFETY = 0.95  # the rate set after a 429: a little under what the provider accepted
_PROBE = 1.05  # raised by this much after each quiet half window
# Calls in flight at first when nothing is known. From 2, a run without any limit at C=64
# and 5.6 s calls lost ~17 s ramping up (1,000 traces: 131 s against 114 s for perfect
# workers on the same latencies); from 8 the ramp is two round trips shorter.
_SLOW_START = 8.0
_GIVEN_TRUST = 3  # 429s within one window that overrule a given limit
_GIVEN_CUT = 0.9  # ... and lower it by this much
_NEAR = 0.99  # probing after a 429 goes up to this share of what the provider accepted
_FLOOR = 0.8  # a cut keeps at least this share of the rate in force
_HOLD_WINDOWS = 10  # ... for this many windows; then on 5% a half window again

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


def counted_tokens(
    input_tokens: int | None, output_tokens: int | None, max_tokens: int | None
) -> int | None:
    """What one answered call counts against a tokens-per-minute limit: its prompt plus the
    ``max_tokens`` it asked for (OpenAI reserves that when the request arrives, not the
    shorter answer), or plus the answer's tokens when it asked for no ``max_tokens``.
    None when the provider reported no prompt tokens (the estimate stays).

    >>> counted_tokens(9000, 1200, None), counted_tokens(9000, 1200, 4096)
    (10200, 13096)
    """
    if input_tokens is None:
        return None
    output = output_tokens or 0
    return input_tokens + (output if max_tokens is None else max(max_tokens, output))


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
    the budget and may raise :class:`LimitRefused`. A limiter may also have
    ``adopt(requests, tokens)``, called with the limits an answer's headers state."""

    @property
    def limited(self) -> bool: ...

    def pause(
        self,
        seconds: float,
        *,
        kind: str | None = None,
        stated_limit: float | None = None,
        stated_tokens: float | None = None,
    ) -> None:
        """A provider answered 429: hold every caller back ``seconds`` (0 = it gave no
        ``Retry-After``), and slow down if the limiter adapts: the limit of ``kind``
        ("requests" / "tokens"; None = unknown), held at what the provider's headers
        state (``stated_limit`` requests, ``stated_tokens`` tokens per minute) if sent."""

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> LimiterGrant: ...


@dataclass
class Grant:
    """Permission for one call; :meth:`settle` corrects its token estimate afterwards."""

    tokens: int
    _limiter: RateLimiter
    _entry: Entry | None
    _open: bool = True

    def settle(self, actual_tokens: int | None, *, cost: float | None = None) -> None:
        """Count ``actual_tokens`` (prompt + output, as reported; None = keep the estimate,
        0 = the provider refused the call) instead of the estimate. ``cost`` is for shared
        limiters (the runner keeps its own budget)."""
        if self._open:
            self._open = False
            self._limiter._finished(answered=bool(actual_tokens))
        if actual_tokens is None or self._entry is None or self._limiter._tpm is None:
            return
        if actual_tokens > 0:  # 0: refused, nothing learnt about the estimate
            self._limiter._tpm.overshoot.append(self.tokens - actual_tokens)
        self._limiter._tpm.settle(self._entry, actual_tokens)
        self._entry = None


class RateLimiter:
    """At most ``rpm`` requests and ``tpm`` tokens per ``window`` seconds (None = no limit).

    ``clock`` and ``sleep`` are injectable so tests can run minutes of traffic in no time.
    Waiters are served first come, first served.

    ``burst``: seconds' worth of each limit the smoothing bucket holds (at most the window).

    ``pad`` (seconds; default a hundredth of the window, 0.05 s to 1 s) lengthens the window
    this side counts: a grant reaches the provider a little later than it is counted here,
    by a varying delay (the event loop, the SDK), so two grants one window apart could both
    land inside one of the provider's windows. Measured on the benchmark's server: 10 ms
    median, about 30 ms at most once a run is going (up to 0.5 s in its first second).

    **Slow start** (adaptive, no ``rpm`` / ``tpm`` given): until the first 429, at most
    ``cwnd`` calls are in flight, 8 at first and one more for each answered call (twice as
    many per round trip), so a run against a tight tier does not send its whole
    concurrency at once into a limit it does not know. It ends at the first 429 (the rate
    learnt from it takes over) or one window after the first call.
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
        pad: float | None = None,
        burst: float = 1.0,
    ) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window}")
        self._clock = clock
        self._sleep = sleep
        now = clock()
        self._pad = min(1.0, max(0.05, 0.01 * window)) if pad is None else pad
        self._burst = burst
        self._rpm = WindowLimit(rpm, window, now, self._pad, burst) if rpm is not None else None
        self._tpm = WindowLimit(tpm, window, now, self._pad, burst) if tpm is not None else None
        # Adaptive with nothing given: count tokens too (no limit until a 429), so that a
        # 429 sets a token rate as well as a request rate; where tokens bind (long traces),
        # a request rate alone would let a window of long ones past the provider's limit.
        self._learns_tokens = adaptive and rpm is None and tpm is None
        self._hold = _HOLD_WINDOWS * window
        if self._learns_tokens:
            self._tpm = WindowLimit(math.inf, window, now, self._pad, burst)
        self._user = {"requests": rpm, "tokens": tpm}
        # The limits held as given: the user's, or lower ones the provider's headers state.
        self._given: dict[str, float | None] = dict(self._user)
        # The share of each given limit in force (lowered by 429s, probed back up).
        self._scale = {"requests": 1.0, "tokens": 1.0}
        self._found = {"requests": False, "tokens": False}  # a rate the provider set
        self._stated = False  # the provider's headers named a limit
        self._paused_until = 0.0
        self._lock: asyncio.Lock | None = None
        self._window = window
        given = rpm is not None or tpm is not None
        self._adaptive = Accepted(window, rpm, now, given) if adaptive else None
        self._inflight = 0
        slow = adaptive and rpm is None and tpm is None
        self._cwnd: float | None = _SLOW_START if slow else None
        self._slow_until: float | None = None  # set at the first grant
        self._finished_event: asyncio.Event | None = None

    @property
    def in_flight(self) -> int:
        """Calls granted and not yet settled."""
        return self._inflight

    @property
    def slow_start(self) -> int | None:
        """Slow start's cap on calls in flight (None once it is over, or without it)."""
        return None if self._cwnd is None else int(self._cwnd)

    def _finished(self, *, answered: bool) -> None:
        """A granted call is over (settled); ``answered``: it used tokens (not refused)."""
        self._inflight = max(0, self._inflight - 1)
        if self._cwnd is not None and answered:
            self._cwnd += 1
        if self._finished_event is not None:
            self._finished_event.set()

    async def _wait_for_a_slot(self) -> None:
        """Slow start: wait until fewer than ``cwnd`` calls are in flight (or it ends)."""
        while self._cwnd is not None and self._inflight >= self._cwnd:
            if self._slow_until is not None and self._clock() >= self._slow_until:
                self._cwnd = None  # a grant never settled must not hold the run forever
                return
            if self._finished_event is None:
                self._finished_event = asyncio.Event()
            self._finished_event.clear()
            # A settle wakes us; the deadline is checked now and then.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._finished_event.wait(), 0.05)

    @property
    def limited(self) -> bool:
        """Whether any limit is set (an adaptive limiter always counts)."""
        return self._rpm is not None or self._tpm is not None or self._adaptive is not None

    @property
    def found_rpm(self) -> float | None:
        """The request rate (per minute) the adaptive limiter holds after 429s; None when
        it never had to slow down (or does not adapt)."""
        if not self._found["requests"] or self._rpm is None:
            return None
        return self._rpm.limit * 60.0 / self._window

    @property
    def found_tpm(self) -> float | None:
        """The token rate (per minute) in force after 429s or a limit the provider stated;
        None when nothing set one (or the limiter does not adapt)."""
        t = self._tpm
        if not self._found["tokens"] or t is None or not math.isfinite(t.limit):
            return None
        return t.limit * 60.0 / self._window

    @property
    def stated(self) -> bool:
        """Whether the provider's rate-limit headers named a limit this limiter holds."""
        return self._stated

    def adopt(self, requests: float | None = None, tokens: float | None = None) -> None:
        """The provider's headers state its limits (per its minute, which is the
        ``window``): hold them as given ones, under the user's if lower. Nothing is left
        to find out for those: slow start ends, a lone 429 only pauses (as with
        ``rpm`` / ``tpm`` given), and no probing goes above them."""
        a = self._adaptive
        if a is None:
            return
        now = self._clock()
        for kind, stated in (("requests", requests), ("tokens", tokens)):
            if stated is None or not stated > 0 or not math.isfinite(stated):
                continue
            user = self._user[kind]
            value = float(stated) if user is None else min(user, float(stated))
            if self._given[kind] == value:
                continue
            self._given[kind] = value
            self._stated = self._found[kind] = True
            limit = max(1.0, value * self._scale[kind])
            if kind == "requests":
                if self._rpm is None:
                    self._set_rate(limit, now)
                else:
                    self._rpm.set_limit(limit)
                a.ceiling = value
            else:
                if self._tpm is None:
                    self._tpm = WindowLimit(limit, self._window, now, self._pad, self._burst)
                else:
                    self._tpm.set_limit(limit)
                self._learns_tokens = False
            a.given = True
            a.changed = now
            # The calls in flight were sent before the limit was known: their 429s in
            # the next window must not count as evidence against it.
            a.cut_at[kind] = now
            self._cwnd = None  # the limits are known: nothing to ramp up to

    @property
    def throttles(self) -> int:
        """429 answers reported through :meth:`pause`."""
        return self._adaptive.throttles if self._adaptive is not None else 0

    def pause(
        self,
        seconds: float,
        *,
        kind: str | None = None,
        stated_limit: float | None = None,
        stated_tokens: float | None = None,
    ) -> None:
        """A provider answered 429: hold every caller back ``seconds`` from now (its
        ``Retry-After``; 0 when it gave none) and, if adaptive, lower the rate the 429
        hit: ``kind`` "requests" or "tokens" as the provider said (None: unknown, both).
        ``stated_limit`` / ``stated_tokens``: the limits its headers named (:meth:`adopt`)."""
        now = self._clock()
        self._paused_until = max(self._paused_until, now + max(seconds, 0.0))
        a = self._adaptive
        if a is None:
            return
        a.throttles += 1
        a.refused.append(now)
        a.trim(now)
        if stated_limit is not None or stated_tokens is not None:
            self.adopt(stated_limit, stated_tokens)
        cwnd, self._cwnd = self._cwnd, None  # a 429: the rate learnt from it takes over
        kinds = ("requests", "tokens") if kind not in ("requests", "tokens") else (kind,)
        for k in kinds:
            if self._given[k] is not None:
                self._given_429(k, now)
        user_given = any(v is not None for v in self._user.values())
        learn_tokens = self._given["tokens"] is None and self._learns_tokens and "tokens" in kinds
        learn_requests = self._given["requests"] is None and (
            kind == "requests"
            or (kind is None and not user_given)
            # a tokens 429 with no token rate to learn: slow the requests, as if unknown
            or (kind == "tokens" and not learn_tokens and self._given["tokens"] is None)
        )
        if learn_requests or learn_tokens:
            self._learn(now, max(seconds, 0.0), learn_requests, learn_tokens, cwnd)

    def _given_429(self, kind: str, now: float) -> None:
        """A 429 on a given (or stated) limit. A lone one is a call that reached the
        provider late (measured: up to 1 s in a run's first second), not a wrong limit:
        pause only. Several in one window: the limit is too high; lower it by a tenth
        (once a window), and probe back up to it (_probe)."""
        a = self._adaptive
        assert a is not None
        cut_at = a.cut_at.get(kind)
        if len(a.refused) >= _GIVEN_TRUST and (cut_at is None or now - cut_at >= self._window):
            self._rescale(kind, self._scale[kind] * _GIVEN_CUT, now)
            a.cut_at[kind] = now
            self._found[kind] = True

    def _learn(
        self, now: float, retry_after: float, requests: bool, tokens: bool, cwnd: float | None
    ) -> None:
        """Set the learnt request and/or token rate from what the provider accepted."""
        a = self._adaptive
        assert a is not None
        if a.failed is not None and now - a.failed[2] < self._window / 2:
            # The same overrun: the calls that were on their way when the first 429 came.
            # Cutting again for each would count a window emptied by the pause.
            return
        failed_requests, failed_tokens = (a.failed or (None, None, now))[:2]
        if tokens:
            accepted = self._token_estimate(now, retry_after)
            t = self._tpm
            if accepted is not None and t is not None:
                least = _FLOOR * t.limit if math.isfinite(t.limit) else 0.0
                target_tokens = max(_SAFETY * accepted, least)
                if target_tokens < t.limit:
                    t.set_limit(target_tokens)
                    self._found["tokens"] = True
                failed_tokens = target_tokens / _SAFETY
            a.changed = now
        if not requests:
            a.failed = (failed_requests, failed_tokens, now)
            return
        estimate = a.estimate(now, retry_after)
        current = self._rpm.limit if self._rpm is not None else None
        if estimate is None:  # nothing got through lately: halve what we had, if anything
            if current is None:  # no rate to learn from yet: the pause and the backoff wait
                self._cwnd = None if cwnd is None else max(1.0, cwnd / 2)
                a.failed = (failed_requests, failed_tokens, now)
                return
            target = max(1.0, current / 2)
        else:
            # At most a fifth off the rate in force per cut: one window's estimate is noisy
            # (a window the last pause left half empty reads low); 429s that go on cut again.
            target = max(1.0, _SAFETY * estimate, _FLOOR * (current or 0.0))
        a.failed = (target / _SAFETY, failed_tokens, now)
        if current is not None and target >= current:
            a.changed = now  # a 429 at this rate: no probing up for a while
            return
        self._set_rate(target, now)
        self._found["requests"] = True

    def _token_estimate(self, now: float, retry_after: float) -> float | None:
        """Tokens per window the provider accepts (learning limiters only; None: unknown):
        what the last window's calls counted (refused ones settle at 0), as for requests."""
        t = self._tpm
        if not self._learns_tokens or t is None:
            return None
        t._expire(now)
        if not t.log or t.used <= 0:
            return None
        span = now - t.log[0].at + retry_after
        span = min(max(span, self._window / 60.0), self._window)
        return t.used * self._window / span

    def _raised(self, limit: float, failed: float | None, now: float) -> float:
        """``limit`` probed up 5%: to just under what the provider last refused above, for
        the ten windows after that 429."""
        raised = limit * _PROBE
        a = self._adaptive
        recent = a is not None and a.failed is not None and now - a.failed[2] < self._hold
        if recent and failed is not None:
            raised = max(limit, min(raised, _NEAR * failed))
        return raised

    def _rescale(self, kind: str, scale: float, now: float) -> None:
        """Hold ``scale`` of the given limit of ``kind`` ("requests" or "tokens")."""
        assert self._adaptive is not None
        self._scale[kind] = scale
        limit = self._rpm if kind == "requests" else self._tpm
        given = self._given[kind]
        if limit is not None and given is not None:
            limit.set_limit(max(1.0, given * scale))
        self._adaptive.changed = now

    def _set_rate(self, limit: float, now: float) -> None:
        assert self._adaptive is not None
        old = self._rpm
        self._rpm = WindowLimit(limit, self._window, now, self._pad, self._burst)
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
        if a is None or now - a.changed < self._window / 2:
            return
        lowered = [k for k, v in self._scale.items() if v < 1.0 and self._given[k] is not None]
        if lowered:
            if a.held_back is not None and a.held_back >= a.changed:
                for kind in lowered:
                    self._rescale(kind, min(1.0, self._scale[kind] * _PROBE), now)
            else:
                a.changed = now
            return
        if self._rpm is None:
            return
        # Each learnt rate goes up only if callers waited for it since the last change:
        # else it is not what holds the run back.
        since = a.changed
        failed = a.failed or (None, None, now)
        if (
            self._given["requests"] is None
            and a.held_back_requests is not None
            and a.held_back_requests >= since
        ):
            raised = self._raised(self._rpm.limit, failed[0], now)
            if a.ceiling is not None:
                raised = min(raised, a.ceiling)
            if raised > self._rpm.limit:
                self._set_rate(raised, now)
        t = self._tpm
        if (
            self._learns_tokens
            and t is not None
            and math.isfinite(t.limit)
            and a.held_back_tokens is not None
            and a.held_back_tokens >= since
        ):
            t.set_limit(self._raised(t.limit, failed[1], now))
        a.changed = now

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> Grant:
        """Wait until one request of about ``tokens`` tokens fits the limits, and count it.
        (``cost``, the call's estimated price, matters to shared limiters only.)"""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self._wait_for_a_slot()
            self._probe(self._clock())
            while True:
                now = self._clock()
                wait = self._paused_until - now
                if self._rpm is not None:
                    rpm_wait = self._rpm.wait(1, now)
                    if rpm_wait > 0 and self._adaptive is not None:
                        self._adaptive.held_back = now
                        self._adaptive.held_back_requests = now
                    wait = max(wait, rpm_wait)
                if self._tpm is not None:
                    counted = self._tpm.corrected(tokens)
                    tpm_wait = self._tpm.wait(counted, now)
                    if tpm_wait > 0 and self._adaptive is not None:
                        self._adaptive.held_back = now
                        self._adaptive.held_back_tokens = now
                    wait = max(wait, tpm_wait)
                if wait <= 0:
                    break
                await self._sleep(max(wait, 0.001))
            if self._rpm is not None:
                self._rpm.take(1, now)
            if self._adaptive is not None:
                self._adaptive.admitted.append(now)
                self._adaptive.trim(now)
            entry = self._tpm.take(counted, now) if self._tpm is not None else None
            self._inflight += 1
            if self._cwnd is not None and self._slow_until is None:
                self._slow_until = now + self._window
        return Grant(tokens=tokens, _limiter=self, _entry=entry)
