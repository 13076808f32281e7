"""Runs without ``rpm``: the shared limiter learns the provider's limit from its 429s.

The fake server enforces a small request window (429 + ``Retry-After``); every trace must
still end ``ok`` (none ``rate_limited``), and the summary must report the rate found.
Checked by counts (server-side accounting against the run's), never by the clock.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, RateWindow, Recorded, Reply, verdict_json
from mast.bulk.ratelimit import RateLimiter, counted_tokens
from mast.bulk.runner import annotate_many
from mast.judge.judge import Judge
from mast.judge.providers._errors import (
    limit_kind,
    rate_limit_headers,
    stated_limits,
    translate_error,
)
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
ANSWER = verdict_json(CODES, ("1.1",))
KEY = "sk-adaptive-test-key-0000000000000ZZZZ"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def traces(n: int) -> list[Trace]:
    return [
        Trace(id=f"t{i}", task=f"Task {i}", steps=[Step.make(0, f"add {i} and 1", agent="a")])
        for i in range(n)
    ]


def answer(_: Recorded) -> Reply:
    return Reply.text(ANSWER)


def test_a_run_without_rpm_loses_no_trace_to_rate_limits(fake_llm: FakeLLMServer) -> None:
    # 6 requests per 1.5 s window, 24 traces, 8 workers started together: the first window
    # is overrun at once, and the run must slow down instead of failing traces.
    window = RateWindow(answer, requests=6, window=1.5)
    fake_llm.responder = window
    judge = Judge("openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    run = annotate_many(
        traces(24), judge, concurrency=8, rate_window=1.5, cache=False, progress=False
    )
    s = run.summary
    assert [a.status for a in run] == ["ok"] * 24
    assert not s.failed  # in particular no "rate_limited"
    # The run's accounting matches the server's: every 429 was counted and retried.
    assert window.accepted == 24
    assert s.rate_limited == window.refused >= 1
    assert s.calls == window.accepted + window.refused
    assert all(requests <= 6 for requests, _ in window.windows.values())
    assert s.found_rpm is not None and s.found_rpm > 0
    assert "rate limited" in s.format() and "requests/min" in s.format()


def test_each_429_lowers_the_shared_rate_to_what_was_accepted() -> None:
    now = [0.0]
    limiter = RateLimiter(window=60.0, adaptive=True, clock=lambda: now[0])
    assert limiter.limited and limiter.found_rpm is None

    async def admit(n: int) -> None:
        for _ in range(n):
            (await limiter.acquire()).settle(100)  # answered: slow start lets more go

    asyncio.run(admit(30))  # 30 requests at t=0 ...
    now[0] = 10.0
    limiter.pause(20.0)  # ... one refused at t=10, to be taken again at t=30
    # 29 accepted over 30 s: 58/min, less the 5% margin.
    assert limiter.found_rpm == pytest.approx(0.95 * 29 * 60 / 30)
    assert limiter.throttles == 1
    before = limiter.found_rpm
    limiter.pause(0.0, stated_limit=20)  # the provider's header names a lower limit
    # ... which is held as it is, as a given one: nothing to discover about it.
    assert limiter.found_rpm == pytest.approx(20) and limiter.found_rpm < before
    assert limiter.stated and limiter.found_tpm == pytest.approx(0.95 * 3000 * 60 / 30)


def test_a_given_rpm_is_the_ceiling_of_probing() -> None:
    now = [0.0]
    limiter = RateLimiter(rpm=100, window=60.0, adaptive=True, clock=lambda: now[0])
    limiter.pause(0.0, stated_limit=50)
    assert limiter.found_rpm == pytest.approx(50)
    limiter.pause(0.0, stated_limit=500)  # the provider's latest word, under the user's
    assert limiter.found_rpm == pytest.approx(100)


def test_provider_rate_limit_headers_are_read() -> None:
    assert rate_limit_headers(
        {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "3"}
    ) == (50.0, None)
    assert rate_limit_headers(
        {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "250ms"}
    ) == (None, 0.25)
    assert rate_limit_headers({}) == (None, None)


def test_a_429_carries_the_stated_limit_and_reset(fake_llm: FakeLLMServer) -> None:
    import openai

    fake_llm.enqueue(
        Reply.error(
            429,
            "slow down",
            headers={
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "2s",
            },
        )
    )
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEY, max_retries=0)
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    err = translate_error(info.value, provider="openai", model="m", env_var="OPENAI_API_KEY")
    assert getattr(err, "limit_requests", None) == 500.0
    assert getattr(err, "retry_after", None) == 2.0


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def test_slow_start_doubles_the_calls_in_flight_until_the_first_429() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)
    peaks: list[int] = []  # calls in flight at each grant

    async def one() -> None:
        grant = await limiter.acquire(tokens=10)
        peaks.append(limiter.in_flight)
        for _ in range(30):  # the call: other workers run meanwhile
            await asyncio.sleep(0)
        grant.settle(10)

    async def go() -> None:
        await asyncio.gather(*(one() for _ in range(40)))

    asyncio.run(go())
    assert len(peaks) == 40
    assert peaks[:8] == list(range(1, 9))  # 8 in flight at first
    assert max(peaks) > 8  # ... and more as calls are answered
    assert limiter.slow_start is not None and limiter.slow_start >= 40  # one per answer
    limiter.pause(1.0)  # the first 429 ends it: the rate learnt from it governs
    assert limiter.slow_start is None and limiter.found_rpm is not None


def test_slow_start_caps_in_flight_calls_by_count() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def go() -> list[int]:
        grants = [await limiter.acquire() for _ in range(8)]
        third = asyncio.ensure_future(limiter.acquire())
        for _ in range(5):
            await asyncio.sleep(0)
        held = [limiter.in_flight, int(third.done())]  # the ninth waits for a slot
        grants[0].settle(0)  # refused (429-like): frees a slot, no growth
        grants.append(await third)
        return [*held, limiter.in_flight, limiter.slow_start or 0]

    assert asyncio.run(go()) == [8, 0, 8, 8]


def test_slow_start_without_a_settle_ends_one_window_after_the_first_call() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=2.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def go() -> int:
        for _ in range(8):
            await limiter.acquire()  # never settled: workers that died

        async def later() -> None:
            await asyncio.sleep(0.06)  # real: the waiter re-checks every 50 ms
            clock.now = 5.0

        mover = asyncio.ensure_future(later())
        await limiter.acquire()
        await mover
        return limiter.in_flight

    assert asyncio.run(go()) == 9
    assert limiter.slow_start is None


def test_no_slow_start_when_the_limits_are_given() -> None:
    assert RateLimiter(rpm=60, adaptive=True).slow_start is None
    assert RateLimiter(tpm=1000, adaptive=True).slow_start is None
    assert RateLimiter(window=60.0, adaptive=True).slow_start == 8


def test_the_window_is_padded_for_the_grant_to_arrival_delay() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(rpm=2, window=10.0, pad=1.0, clock=clock, sleep=clock.sleep)

    async def go() -> list[float]:
        times = []
        for _ in range(3):
            await limiter.acquire()
            times.append(clock.now)
        return times

    times = asyncio.run(go())
    # Two per 10 s window, counted over 11 s: the third goes when the first is 11 s old.
    assert times[2] == pytest.approx(times[0] + 11.0)
    assert RateLimiter(rpm=1)._pad == pytest.approx(0.6)  # a hundredth of a minute
    assert RateLimiter(rpm=1, window=1.0)._pad == pytest.approx(0.05)


def test_a_late_wake_up_is_caught_up_within_one_second() -> None:
    # A 6 s window (a benchmark's time-scaled minute): the smoothing bucket holds a
    # second's worth (1/6 of the limit), so a waiter woken 0.5 s late loses nothing.
    clock = _FakeClock()
    limiter = RateLimiter(tpm=60_000, window=6.0, pad=0.0, clock=clock, sleep=clock.sleep)

    async def go() -> int:
        (await limiter.acquire(tokens=5_000)).settle(5_000)
        clock.now += 0.5  # the loop was busy elsewhere
        before = clock.now
        n = 0
        while True:  # how many go at once after the stall
            (await limiter.acquire(tokens=5_000)).settle(5_000)
            if clock.now != before:
                return n
            n += 1

    # The bucket kept 5k after the first call and refilled 5k in the stall: two calls go at
    # once (a bucket of a sixtieth, 1k, would have let one go and lost the rest).
    assert asyncio.run(go()) == 2
    assert limiter._tpm is not None and limiter._tpm.capacity == pytest.approx(10_000)


def test_a_call_counts_its_max_tokens_or_its_answer() -> None:
    assert counted_tokens(9_000, 1_200, None) == 10_200  # no max_tokens sent: the answer
    assert counted_tokens(9_000, 1_200, 4_096) == 13_096  # reserved at arrival
    assert counted_tokens(9_000, 5_000, 4_096) == 14_000
    assert counted_tokens(None, 1_200, None) is None


def test_in_flight_calls_count_what_the_last_ones_counted_not_the_reserve() -> None:
    # Estimates carry an 8k reserve for an answer that counts ~1k: once calls have been
    # answered, a call in flight holds its estimate less the smallest overshoot seen.
    clock = _FakeClock()
    limiter = RateLimiter(tpm=100_000, window=60.0, clock=clock, sleep=clock.sleep)

    async def go() -> tuple[int, int]:
        (await limiter.acquire(tokens=18_000)).settle(10_000)  # 8k over
        (await limiter.acquire(tokens=18_000)).settle(11_000)  # 7k over: the smallest
        held = [await limiter.acquire(tokens=18_000) for _ in range(3)]  # in flight
        assert limiter._tpm is not None
        used = round(limiter._tpm.used)
        held[0].settle(None)  # no usage reported: its corrected estimate stays
        return used, round(limiter._tpm.used)

    # 21k settled + 3 x (18k - 7k) in flight.
    assert asyncio.run(go()) == (21_000 + 33_000, 21_000 + 33_000)


def test_with_the_limits_given_a_lone_429_pauses_without_lowering_the_rate() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(rpm=100, window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def admit(n: int) -> None:
        for _ in range(n):
            (await limiter.acquire()).settle(1)

    asyncio.run(admit(20))
    limiter.pause(2.0)  # one call reached the provider late
    assert limiter.found_rpm is None and limiter._rpm is not None
    assert limiter._rpm.limit == 100
    limiter.pause(2.0)
    limiter.pause(2.0)  # three in one window: the given limit is too high
    assert limiter.found_rpm is not None and limiter.found_rpm < 100


def test_probing_up_only_while_callers_wait_for_the_rate() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=10.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def run(n: int, gap: float) -> None:
        for _ in range(n):
            (await limiter.acquire()).settle(1)
            clock.now += gap

    asyncio.run(run(20, 0.0))
    clock.now += 1.0
    limiter.pause(1.0)
    first = limiter.found_rpm
    assert first is not None
    asyncio.run(run(3, 2.0))  # the first waits out the pause and the emptied bucket
    found = limiter.found_rpm
    assert found is not None
    asyncio.run(run(20, 2.0))  # one call per 2 s, far under the rate: nobody waits
    assert limiter.found_rpm == found
    # As fast as it lets them: the rate is what holds them back, and it goes up, to just
    # under what the provider accepted at the 429 (0.99 of it, against 0.95 at the cut).
    asyncio.run(run(100, 0.0))
    assert found <= limiter.found_rpm == pytest.approx(first / 0.95 * 0.99)
    # After a 429, for ten windows probing takes the learnt token rate up to just under
    # what the provider accepted then, not past it; after that, 5% per half window again.
    limiter.pause(0.0)
    assert limiter._adaptive is not None and limiter._adaptive.failed is not None
    accepted = limiter._adaptive.failed[1]
    assert accepted is not None and limiter._tpm is not None
    asyncio.run(run(300, 0.0))
    assert limiter._tpm.limit == pytest.approx(0.99 * accepted)
    clock.now += 100.0
    asyncio.run(run(300, 0.0))
    assert limiter._tpm.limit > 0.99 * accepted * 1.01


def test_without_limits_a_429_also_sets_a_token_rate() -> None:
    # Long traces: tokens bind before requests do. The 429 sets a token rate from what the
    # last window's calls counted, so a window of long calls waits instead of overrunning.
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def go() -> None:
        for i in range(12):
            (await limiter.acquire(tokens=20_000)).settle(10_000 if i < 10 else 0)

    asyncio.run(go())  # 10 answered (100k tokens), the last two refused
    clock.now = 30.0
    limiter.pause(30.0)  # takes calls again at t=60: 100k tokens over 60 s
    assert limiter._tpm is not None
    assert limiter._tpm.limit == pytest.approx(0.95 * 100_000)
    assert limiter.found_rpm == pytest.approx(0.95 * 11)  # 12 admitted, one 429 reported


def test_a_cut_keeps_four_fifths_of_the_rate_and_one_overrun_cuts_once() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)

    async def admit(n: int) -> None:
        for _ in range(n):
            (await limiter.acquire()).settle(100)

    asyncio.run(admit(30))
    clock.now = 30.0
    limiter.pause(30.0)
    first = limiter.found_rpm
    assert first is not None
    clock.now = 40.0
    limiter.pause(30.0)  # the same overrun (within half a window): no second cut
    assert limiter.found_rpm == first
    clock.now = 200.0  # long after: the last window holds almost nothing ...
    asyncio.run(admit(2))
    limiter.pause(60.0)  # ... so it reads a tiny rate; the cut keeps 4/5 of the old one
    assert limiter.found_rpm == pytest.approx(0.8 * first)


OPENAI_TPM_429 = (
    "Rate limit reached for gpt-4.1 in organization org-x on tokens per min (TPM): "
    "Limit 30000, Used 29100, Requested 1500. Please try again in 1.2s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more."
)


def test_an_openai_429_says_which_limit_and_states_both(fake_llm: FakeLLMServer) -> None:
    import openai

    fake_llm.enqueue(
        # As the API answers: the kind in the error's type and message, limits in headers.
        Reply.error(
            429,
            OPENAI_TPM_429,
            error_type="tokens",
            code="rate_limit_exceeded",
            headers={
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-limit-tokens": "30000",
                "x-ratelimit-remaining-requests": "499",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-requests": "120ms",
                "x-ratelimit-reset-tokens": "1.2s",
            },
        ),
        # A compatible server that says only the wording (no type, no headers).
        Reply.error(429, OPENAI_TPM_429.replace("tokens per min (TPM)", "requests per min")),
        Reply.error(429, "rate limit reached", retry_after=2),  # says nothing at all
    )
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEY, max_retries=0)
    errors = []
    for _ in range(3):
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        errors.append(
            translate_error(info.value, provider="openai", model="m", env_var="OPENAI_API_KEY")
        )
    seen = [
        (e.limit_kind, e.limit_requests, e.limit_tokens, e.retry_after)  # type: ignore[attr-defined]
        for e in errors
    ]
    assert seen == [
        ("tokens", 500.0, 30000.0, 1.2),  # the exhausted tokens' reset is the wait
        ("requests", None, None, None),
        (None, None, None, 2.0),
    ]


def test_an_anthropic_429_says_which_limit_and_states_it(fake_llm: FakeLLMServer) -> None:
    import anthropic

    fake_llm.enqueue(
        Reply.error(
            429,
            "This request would exceed the rate limit for your organization (org-1) of "
            "50,000 input tokens per minute. For details, refer to: "
            "https://docs.claude.com/en/api/rate-limits.",
            retry_after=7,
            headers={
                "anthropic-ratelimit-requests-limit": "50",
                "anthropic-ratelimit-requests-remaining": "42",
                "anthropic-ratelimit-input-tokens-limit": "50000",
                "anthropic-ratelimit-input-tokens-remaining": "0",
                "anthropic-ratelimit-output-tokens-limit": "10000",
                "anthropic-ratelimit-tokens-limit": "60000",
            },
        )
    )
    client = anthropic.Anthropic(base_url=fake_llm.url, api_key=KEY, max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as info:
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    err = translate_error(info.value, provider="anthropic", model="m", env_var="ANTHROPIC_API_KEY")
    assert getattr(err, "limit_kind", None) == "tokens"
    assert getattr(err, "limit_requests", None) == 50.0
    assert getattr(err, "limit_tokens", None) == 50000.0  # the input-token limit
    assert getattr(err, "retry_after", None) == 7.0


def test_the_kind_of_limit_is_read_from_type_words_or_headers() -> None:
    assert limit_kind("whatever", "requests", None) == "requests"
    assert limit_kind("exceed ... of 8,000 output tokens per minute", None, None) == "tokens"
    # Both exhausted: the headers cannot tell which one refused.
    both = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "2s",
    }
    assert limit_kind("rate limit reached", None, both) is None
    assert stated_limits({"x-ratelimit-limit-tokens": "-1"}) == (None, None)  # Azure's "none"


def _admitted(limiter: RateLimiter, n: int, tokens: int = 10_000) -> None:
    async def go() -> None:
        for _ in range(n):
            (await limiter.acquire(tokens=tokens)).settle(tokens)

    asyncio.run(go())


def test_a_tokens_429_lowers_the_token_rate_only() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)
    _admitted(limiter, 10)  # 100k tokens in 10 requests, then a 429 on tokens at t=30
    clock.now = 30.0
    limiter.pause(30.0, kind="tokens")
    assert limiter.found_tpm == pytest.approx(0.95 * 100_000)
    assert limiter.found_rpm is None and limiter._rpm is None  # requests were not the limit


def test_a_requests_429_lowers_the_request_rate_only() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)
    _admitted(limiter, 10)
    clock.now = 30.0
    limiter.pause(30.0, kind="requests")
    assert limiter.found_rpm == pytest.approx(0.95 * 9)  # 10 admitted, one refused
    assert limiter.found_tpm is None
    assert limiter._tpm is not None and not math.isfinite(limiter._tpm.limit)


def test_stated_limits_are_held_like_given_ones() -> None:
    clock = _FakeClock()
    limiter = RateLimiter(window=60.0, adaptive=True, clock=clock, sleep=clock.sleep)
    assert limiter.slow_start == 8
    _admitted(limiter, 10)
    limiter.pause(1.0, kind="tokens", stated_limit=500, stated_tokens=150_000)
    assert limiter.slow_start is None  # known limits: nothing to ramp up to
    assert (limiter.found_rpm, limiter.found_tpm) == (500.0, 150_000.0)
    assert limiter.stated
    for _ in range(3):  # the calls in flight when it was learnt: sent before, no evidence
        limiter.pause(1.0, kind="tokens")
    assert limiter.found_tpm == 150_000.0
    clock.now += 61.0
    limiter.pause(1.0, kind="tokens")  # a lone 429 on a stated limit: a late call, pause only
    limiter.pause(1.0, kind="tokens")
    assert limiter.found_tpm == 150_000.0
    limiter.pause(1.0, kind="tokens")  # the third in one window: the limit is too high
    assert limiter.found_tpm == pytest.approx(0.9 * 150_000)
    assert limiter.found_rpm == 500.0  # the request limit was not the one hit


def test_the_user_given_limit_stays_the_ceiling_of_a_stated_one() -> None:
    limiter = RateLimiter(tpm=100_000, window=60.0, adaptive=True)
    limiter.pause(0.0, kind="tokens", stated_tokens=150_000)
    assert limiter._tpm is not None and limiter._tpm.limit == 100_000  # the user's, kept
    assert limiter.found_tpm is None and limiter.found_rpm is None  # nothing new found
    limiter.pause(0.0, kind="tokens", stated_tokens=80_000)  # the provider's is lower
    assert limiter.found_tpm == 80_000.0


def _stating(headers: dict[str, str]) -> Any:
    def reply(_: Recorded) -> Reply:
        answer = Reply.text(ANSWER)
        answer.headers = dict(headers)
        return answer

    return reply


@pytest.mark.parametrize(
    ("model", "headers", "limits"),
    [
        (
            "openai/gpt-4o-mini",
            {"x-ratelimit-limit-requests": "500", "x-ratelimit-limit-tokens": "30000",
             "x-ratelimit-remaining-requests": "499", "x-ratelimit-reset-requests": "120ms"},
            (500.0, 30000.0),
        ),
        (
            "anthropic/claude-sonnet-4-5",
            {"anthropic-ratelimit-requests-limit": "50",
             "anthropic-ratelimit-input-tokens-limit": "40000",
             "anthropic-ratelimit-output-tokens-limit": "8000"},
            (50.0, 40000.0),
        ),
    ],
)  # fmt: skip
def test_an_answer_that_states_the_limits_sets_them_without_a_429(
    fake_llm: FakeLLMServer, model: str, headers: dict[str, str], limits: tuple[float, float]
) -> None:
    fake_llm.responder = _stating(headers)
    url = fake_llm.openai_base_url if model.startswith("openai") else fake_llm.url
    judge = Judge(model, base_url=url, api_key=KEY, fewshot=0)
    run = annotate_many(traces(3), judge, concurrency=1, cache=False, progress=False)
    s = run.summary
    assert [a.status for a in run] == ["ok"] * 3
    assert s.rate_limited == 0 and s.limits_stated
    assert (s.found_rpm, s.found_tpm) == limits
    assert "the limits the provider's headers state" in s.format()


def test_an_answer_without_rate_headers_states_nothing(fake_llm: FakeLLMServer) -> None:
    fake_llm.responder = answer
    judge = Judge("openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    run = annotate_many(traces(2), judge, concurrency=1, cache=False, progress=False)
    s = run.summary
    assert not s.limits_stated and s.found_rpm is None and s.found_tpm is None
    assert "rate limited" not in s.format()
