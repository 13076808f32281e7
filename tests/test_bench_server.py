"""The benchmark's fake model answers in the shape the request's schema asks for, so the cost
benchmark bills our output as a constrained model would write it (issue 21)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mast.judge.prompt.answer_format import answer_schema
from mast.judge.providers.schema_choice import inline_schema

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
_server = pytest.importorskip("_server")

TRACE = "\n".join(
    f"[s{i}] agent=Agent{i % 2} role=user kind=message\nstep {i} says something worth quoting"
    for i in range(1, 9)
)
LOG = "[s1] kind=log\nTraceback (most recent call last): the sandbox did not start"


@pytest.mark.parametrize("inline", [False, True])
def test_compact_answers_fill_the_schema(inline: bool) -> None:
    schema = answer_schema(answer="compact")
    schema = inline_schema(schema) if inline else schema
    answers = [json.loads(_server.mast_answer(f"{TRACE}\n{n}", compact=True, schema=schema))
               for n in range(30)]  # fmt: skip
    for answer in answers:
        jsonschema.validate(answer, schema)  # every key a strict schema requires
        shown = {c: m for c, m in answer["modes"].items() if m}
        if shown:
            error = answer["decisive_error"]
            assert error["step_id"] == min(
                (m["first_step"] for m in shown.values()), key=lambda s: int(s[1:])
            )
            assert all(m["agent"] == f"Agent{int(m['first_step'][1:]) % 2}" for m in shown.values())
        # The compact schema asks for one sentence; so the fake writes one.
        assert answer["summary"].count(". ") == 0
        assert all(m["rationale"].count(". ") == 0 for m in shown.values())
    assert any(answer["decisive_error"] for answer in answers)


def test_a_one_step_log_is_cited_too() -> None:
    answers = [json.loads(_server.mast_answer(f"{LOG}{n}", compact=True,
                                              schema=answer_schema(answer="compact")))
               for n in range(30)]  # fmt: skip
    cited = [m for a in answers for m in a["modes"].values() if m]
    assert cited and all(m["evidence"][0]["step_id"] == "s1" for m in cited)


def test_without_a_schema_the_old_shape_stays() -> None:
    answer = json.loads(_server.mast_answer(TRACE, compact=False))
    assert "decisive_error" not in answer
    assert all(set(m) == {"evidence", "rationale", "present", "confidence"}
               for m in answer["modes"].values())  # fmt: skip


# ------------------------------------------------------------------ rate limits (issue 37)
class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_limited_server_counts_requests_per_window() -> None:
    clock = _Clock()
    limits = _server.WindowLimits(rpm=3, tpm=None, window=10.0, clock=clock)
    assert [limits.admit(1) for _ in range(3)] == [None, None, None]
    wait = limits.admit(1)  # the fourth in the window: 429, retry when the first expires
    assert wait == pytest.approx(10.0)
    clock.now += 4.0
    assert limits.admit(1) == pytest.approx(6.0)
    clock.now += 6.0  # the first three leave the window
    assert limits.admit(1) is None
    accepted = [ok for _, ok, _ in limits.events]
    assert accepted.count(True) == 4 and accepted.count(False) == 2


def test_the_rate_limited_server_counts_tokens_per_window() -> None:
    clock = _Clock()
    limits = _server.WindowLimits(rpm=None, tpm=1000, window=60.0, clock=clock)
    assert limits.admit(600) is None
    clock.now += 10.0
    assert limits.admit(300) is None
    clock.now += 10.0
    # 900 used: 200 more does not fit until the first 600 leave (40 s from now).
    assert limits.admit(200) == pytest.approx(40.0)
    assert limits.admit(100) is None  # 100 still fits
    assert sum(n for _, ok, n in limits.events if ok) == 1000


def test_request_tokens_count_the_prompt_and_max_tokens() -> None:
    body = {"messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 500}
    text, n = _server.prompt_text(body)
    assert _server.request_tokens(body) == _server.tokens(len(text)) + 4 * n + 500
    # Without max_tokens, the answer's tokens count (nothing is reserved at arrival).
    del body["max_tokens"]
    assert _server.request_tokens(body, 700) == _server.tokens(len(text)) + 4 * n + 700


def test_lognormal_latency_has_the_median_and_p95_asked_for() -> None:
    import random

    rng = random.Random(1)
    draws = sorted(_server.lognormal(4.0, 15.0, rng) for _ in range(20_000))
    assert draws[10_000] == pytest.approx(4.0, rel=0.05)
    assert draws[19_000] == pytest.approx(15.0, rel=0.08)


def test_the_rate_limited_server_says_which_limit_refused_and_sends_openai_headers() -> None:
    clock = _Clock()
    limits = _server.WindowLimits(rpm=2, tpm=1000, window=60.0, clock=clock)
    wait, kind, headers = limits.decide(600)
    assert (wait, kind) == (None, None)
    assert headers == {
        "x-ratelimit-limit-requests": "2",
        "x-ratelimit-remaining-requests": "1",
        "x-ratelimit-reset-requests": "1m0s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "400",
        "x-ratelimit-reset-tokens": "1m0s",
    }
    clock.now += 30.0
    wait, kind, headers = limits.decide(500)  # 600 + 500 > 1000: the tokens refuse it
    assert kind == "tokens" and wait == pytest.approx(30.0)
    assert headers["x-ratelimit-remaining-tokens"] == "400"
    assert limits.decide(100)[1] is None  # fits: the second request of the window
    assert limits.decide(1)[1] == "requests"  # a third: the request limit refuses it
    assert [_server.duration(x) for x in (0.02, 1.5, 2.0, 360.0)] == ["20ms", "1.5s", "2s", "6m0s"]


def _run_against_the_bench_server(headers: bool) -> tuple[Any, Any]:
    from fake_llm_server import FakeLLMServer
    from mast.bulk.runner import annotate_many
    from mast.judge.judge import Judge
    from mast.traces.model import Step, Trace

    # 4 requests per 1.5 s window; 12 traces, 6 workers at once: the first window overruns.
    limits = _server.WindowLimits(rpm=4, tpm=None, window=1.5)
    billing = _server.Billing(0.0, None, limits=limits, rate_headers=headers)
    traces = [
        Trace(id=f"t{i}", task=f"Task {i}", steps=[Step.make(0, f"step {i}", agent="a")])
        for i in range(12)
    ]
    with FakeLLMServer() as server:
        server.responder = billing.reply
        judge = Judge(
            "openai/gpt-4.1", base_url=server.openai_base_url, api_key="sk-bench-0000", fewshot=0
        )
        run = annotate_many(
            traces, judge, concurrency=6, rate_window=1.5, cache=False, progress=False
        )
    return run, limits


@pytest.mark.parametrize("headers", [True, False])
def test_a_run_without_rpm_reads_the_stated_limit_or_finds_one(
    headers: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    run, limits = _run_against_the_bench_server(headers)
    s = run.summary
    accepted = sum(ok for _, ok, _ in limits.events)
    refused = sum(not ok for _, ok, _ in limits.events)
    assert [a.status for a in run] == ["ok"] * 12 and not s.failed
    assert accepted == 12 and s.rate_limited == refused >= 1  # counted like the server
    assert s.calls == accepted + refused
    assert s.limits_stated is headers
    if headers:
        # The 429's headers named the limit: held as it is (4 per 1.5 s window = 160/min).
        assert s.found_rpm == pytest.approx(4 * 60 / 1.5)
        assert "the limits the provider's headers state" in s.format()
    else:
        assert s.found_rpm is not None and s.found_rpm > 0
        assert "the limits it found" in s.format()


def test_the_ceiling_is_what_whole_requests_leave_of_a_sliding_window() -> None:
    _ratelimit = pytest.importorskip("_ratelimit")
    # 40-token requests, 100 per window: two fit, the 20 they leave stays unused.
    assert _ratelimit.fifo_ceiling([40] * 200, 1.0, 100, 1000) == pytest.approx(0.8)
    assert _ratelimit.fifo_ceiling([50] * 200, 1.0, 100, 1000) == pytest.approx(1.0)
    # The request limit binds: 3 per window of 10 allowed, whatever the tokens.
    assert _ratelimit.fifo_ceiling([1] * 200, 1.0, 10**6, 3) == pytest.approx(1.0)
    assert _ratelimit.fifo_ceiling([40] * 3, 1.0, 100, 1000) is None  # one window: no rate
