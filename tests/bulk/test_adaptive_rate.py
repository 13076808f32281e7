"""Runs without ``rpm``: the shared limiter learns the provider's limit from its 429s.

The fake server enforces a small request window (429 + ``Retry-After``); every trace must
still end ``ok`` (none ``rate_limited``), and the summary must report the rate found.
Checked by counts (server-side accounting against the run's), never by the clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, RateWindow, Recorded, Reply, verdict_json
from mast.bulk.ratelimit import RateLimiter
from mast.bulk.runner import annotate_many
from mast.judge.judge import Judge
from mast.judge.providers._errors import rate_limit_headers, translate_error
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
    import asyncio

    async def admit(n: int) -> None:
        for _ in range(n):
            await limiter.acquire()

    asyncio.run(admit(30))  # 30 requests at t=0 ...
    now[0] = 10.0
    limiter.pause(20.0)  # ... one refused at t=10, to be taken again at t=30
    # 29 accepted over 30 s: 58/min, less the 5% margin.
    assert limiter.found_rpm == pytest.approx(0.95 * 29 * 60 / 30)
    assert limiter.throttles == 1
    before = limiter.found_rpm
    limiter.pause(0.0, stated_limit=20)  # the provider's header names a lower limit
    assert limiter.found_rpm == pytest.approx(0.95 * 20) and limiter.found_rpm < before


def test_a_given_rpm_is_the_ceiling_of_probing() -> None:
    now = [0.0]
    limiter = RateLimiter(rpm=100, window=60.0, adaptive=True, clock=lambda: now[0])
    limiter.pause(0.0, stated_limit=50)
    assert limiter.found_rpm == pytest.approx(47.5)


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
