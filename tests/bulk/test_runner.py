"""annotate_many against the local fake server: limits, retries, cache, resume, budget, stops."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from synthetic_traces import synthetic

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.bulk.progress import Progress
from mast.bulk.ratelimit import RateLimiter
from mast.bulk.runner import RetryPolicy, aannotate_many, annotate_many
from mast.errors import BudgetExceeded, DuplicateTraceError, RunStopped
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_traces
from mast.traces.model import Step, Trace

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODES = load_taxonomy().codes
KEY = "sk-runner-test-key-00000000000000ZZZZ"
ANSWER = verdict_json(CODES, ("1.1", "2.6"))
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never touch the user's ~/.cache from tests.
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def judge_for(server: FakeLLMServer, **kw: Any) -> Judge:
    kw.setdefault("fewshot", 0)
    return Judge("openai/gpt-4o-mini", base_url=server.openai_base_url, api_key=KEY, **kw)


def trace_of(request: Recorded) -> str:
    """Which synthetic trace a request is about (its user message names the task)."""
    text = json.dumps(request.body)
    start = text.index("Task number ") + len("Task number ")
    return text[start : text.index(":", start)]


# --------------------------------------------------------------------------- concurrency


def test_in_flight_requests_never_exceed_concurrency(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER, delay=0.4)
    run = annotate_many(
        synthetic(12), judge_for(fake_llm), concurrency=4, cache=False, progress=False
    )
    assert fake_llm.max_in_flight == 4  # reached, never exceeded
    assert len(run) == 12 and all(a.ok for a in run)
    assert [a.trace_id for a in run] == [f"t{i}" for i in range(12)]  # input order


def test_calls_overlap_up_to_the_concurrency(fake_llm: FakeLLMServer) -> None:
    # How close throughput comes to N*L/C is a benchmark (bench/), not a test: wall time on a
    # shared machine is noise. What the runner must guarantee is that C calls are in flight
    # at once, and never more, while every answer still takes its full latency.
    latency, n, c = 0.5, 32, 8
    judge = judge_for(fake_llm)
    fake_llm.default = Reply.text(ANSWER, delay=latency)
    start = time.perf_counter()
    run = annotate_many(synthetic(n), judge, concurrency=c, cache=False, progress=False)
    elapsed = time.perf_counter() - start
    assert all(a.ok for a in run)
    assert fake_llm.max_in_flight == c
    assert elapsed >= n * latency / c * 0.95  # no answer was skipped or served early


# --------------------------------------------------------------------------- rate limits


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def max_in_window(times: list[float], window: float, weights: list[float] | None = None) -> float:
    weights = weights or [1.0] * len(times)
    best = 0.0
    for start in times:
        inside = [w for t, w in zip(times, weights, strict=True) if start <= t < start + window]
        best = max(best, sum(inside))
    return best


def test_rpm_never_exceeded_in_any_minute_fake_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rpm=30, clock=clock, sleep=clock.sleep)
    times: list[float] = []

    async def go() -> None:
        async def one() -> None:
            await limiter.acquire()
            times.append(clock.now)

        await asyncio.gather(*(one() for _ in range(100)))

    asyncio.run(go())
    assert max_in_window(times, 60.0) <= 30
    # Smoothed: no burst of a whole minute's worth at the start, and no idling either.
    assert sum(t < times[0] + 1.0 for t in times) <= 2
    assert times[-1] - times[0] == pytest.approx(99 * 2.0, rel=0.05)


def test_tpm_counts_tokens_and_settles_to_reported_usage() -> None:
    clock = FakeClock()
    limiter = RateLimiter(tpm=10_000, clock=clock, sleep=clock.sleep)
    times: list[float] = []
    amounts: list[float] = []

    async def go() -> None:
        for i in range(30):
            grant = await limiter.acquire(tokens=3_000)
            times.append(clock.now)
            # Half of the calls used fewer tokens than estimated: settle them down.
            actual = 1_000 if i % 2 else 3_000
            grant.settle(actual)
            amounts.append(actual)

    asyncio.run(go())
    assert max_in_window(times, 60.0, amounts) <= 10_000
    # Settling made room: more than 10k/3k = 3.3 calls per minute went through on average.
    per_minute = len(times) / ((times[-1] - times[0]) / 60.0)
    assert per_minute > 4.0


def test_pause_holds_everyone_back() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rpm=6000, clock=clock, sleep=clock.sleep)

    async def go() -> float:
        await limiter.acquire()
        limiter.pause(5.0)
        start = clock.now
        await limiter.acquire()
        return clock.now - start

    assert asyncio.run(go()) >= 5.0


def test_rpm_end_to_end_with_a_short_window(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER)
    judge = judge_for(fake_llm)
    # The limiter counts calls when it lets them go; warm up so that the first call does
    # not arrive late (SDK imports) and bunch up with the next ones at the server.
    annotate_many(synthetic(1, "warm"), judge, cache=False, progress=False)
    fake_llm.reset()
    fake_llm.default = Reply.text(ANSWER)
    start = time.perf_counter()
    run = annotate_many(
        synthetic(12),
        judge,
        concurrency=8,
        rpm=4,
        rate_window=1.0,  # 4 requests per second, so the test takes seconds, not minutes
        cache=False,
        progress=False,
    )
    elapsed = time.perf_counter() - start
    assert all(a.ok for a in run)
    starts = sorted(r.started for r in fake_llm.completions)
    # The limiter's slots are exact (see the fake-clock tests); arrivals at the server lag
    # them by a variable delay J (request building, a busy CPU), so any 4 consecutive
    # arrivals span at least 1 s - J. Allow J up to 0.25 s on a shared machine.
    assert max_in_window(starts, 0.75) <= 4
    # A 1 s window's smoothing bucket holds a second's worth: 4 go at once, then 4 per
    # (padded) window.
    assert (len(starts) - 4) / (starts[-1] - starts[0]) <= 4.0 * 1.25
    assert elapsed >= 1.9  # 12 requests at 4/s after a burst of 4


def test_tpm_end_to_end_with_a_short_window(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 5000, "output": 10})
    judge = judge_for(fake_llm, max_tokens=100)
    annotate_many(synthetic(1, "warm"), judge, cache=False, progress=False)
    start = time.perf_counter()
    run = annotate_many(
        synthetic(6),
        judge,
        concurrency=6,
        tpm=12_000,  # two calls of ~5k tokens per 0.5 s window
        rate_window=0.5,
        cache=False,
        progress=False,
    )
    assert all(a.ok for a in run)
    # Six calls, two per window: the last goes out two windows after the first.
    assert time.perf_counter() - start >= 1.0


# --------------------------------------------------------------------------- faults


def test_429_with_retry_after_is_honoured(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(429, "slow down", retry_after=0.6))
    fake_llm.default = Reply.text(ANSWER)
    run = annotate_many(synthetic(1), judge_for(fake_llm), cache=False, progress=False)
    assert run[0].ok
    first, second = fake_llm.completions
    assert second.started - first.started >= 0.6
    assert run.summary.retries == 1 and run.summary.calls == 2


def test_server_errors_are_retried_then_recorded_and_the_run_goes_on(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    def respond(request: Recorded) -> Reply:
        return Reply.error(500, "kaput") if trace_of(request) == "1" else Reply.text(ANSWER)

    fake_llm.responder = respond
    out = tmp_path / "r.jsonl"
    run = annotate_many(
        synthetic(3), judge_for(fake_llm), out=out, retry=FAST, cache=False, progress=False
    )
    assert [a.status for a in run] == ["ok", "error", "ok"]
    assert "HTTP 500" in (run[1].error or "")
    assert sum(trace_of(r) == "1" for r in fake_llm.completions) == FAST.max_attempts
    assert run.summary.failed == {"server_error": 1} and run.summary.done == 2
    written = {a.trace_id: a.status for a in mast.read_annotations(out)}  # completion order
    assert written == {"t0": "ok", "t1": "error", "t2": "ok"}


def test_timeouts_and_dropped_connections_are_retried(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text(ANSWER, delay=3.0), Reply.reset())
    fake_llm.default = Reply.text(ANSWER)
    start = time.perf_counter()
    run = annotate_many(
        synthetic(1), judge_for(fake_llm), timeout=0.3, retry=FAST, cache=False, progress=False
    )
    assert run[0].ok
    assert run.summary.calls == 3 and run.summary.retries == 2
    assert time.perf_counter() - start < 2.5  # did not wait for the slow answer


def test_non_retryable_rejection_is_not_retried(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.error(400, "bad request field")
    run = annotate_many(synthetic(1), judge_for(fake_llm), retry=FAST, progress=False)
    assert run[0].status == "error" and len(fake_llm.completions) == 1
    assert run.summary.failed == {"http_400": 1}


def test_unreadable_answers_give_parse_error_records(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text("I would rather not say.")
    run = annotate_many(synthetic(2), judge_for(fake_llm, repair_attempts=1), progress=False)
    assert [a.status for a in run] == ["parse_error", "parse_error"]
    assert all(a.vector[c] is None for a in run for c in CODES)
    assert run.summary.failed == {"parse_error": 2}


def test_a_trace_the_judge_chokes_on_gets_an_error_record(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mast.judge.judge as judge_module

    real = judge_module.render

    def render(trace: Trace, **kw: Any) -> Any:
        if trace.id == "t1":
            raise RuntimeError("cannot render this one")
        return real(trace, **kw)

    monkeypatch.setattr(judge_module, "render", render)
    fake_llm.default = Reply.text(ANSWER)
    logging.getLogger("mast.bulk.runner").disabled = True
    try:
        run = annotate_many(synthetic(3), judge_for(fake_llm), progress=False)
    finally:
        logging.getLogger("mast.bulk.runner").disabled = False
    assert [a.status for a in run] == ["ok", "error", "ok"]
    assert "cannot render this one" in (run[1].error or "")
    assert run.summary.failed == {"error": 1}


# --------------------------------------------------------------------------- stops


def test_budget_stops_before_the_next_call_would_exceed_it(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    # $1 per million tokens either way: a call costs ~$0.0011; its estimate (the ≈3,600-token
    # prompt + 500 max output tokens) ~$0.0041. Room for about four calls.
    judge = judge_for(
        fake_llm, max_tokens=500, prices={"openai/gpt-4o-mini": {"input": 1.0, "output": 1.0}}
    )
    out = tmp_path / "r.jsonl"
    with pytest.raises(BudgetExceeded) as info:
        annotate_many(
            synthetic(10), judge, out=out, budget_usd=0.008, concurrency=1, progress=False
        )
    run = info.value.run
    assert isinstance(run, mast.AnnotationRun) and info.value.reason == "budget"
    summary = run.summary
    assert 2 <= summary.done < 10 and summary.failed_total == 0
    assert summary.cost_usd <= 0.008
    assert len(fake_llm.completions) == summary.done  # the refused call was never sent
    assert summary.not_attempted == [f"t{i}" for i in range(summary.done, 10)]
    assert "budget" in str(info.value) and "not attempted" in str(info.value)
    written = mast.read_annotations(out)
    assert len(written) == summary.done and all(a.ok for a in written)  # no error records
    # More budget, same command: resumes with the rest only.
    more = annotate_many(synthetic(10), judge, out=out, budget_usd=1.0, progress=False)
    assert more.summary.resumed == summary.done and more.summary.done == 10 - summary.done
    assert len(fake_llm.completions) == 10


def test_budget_needs_a_price(fake_llm: FakeLLMServer) -> None:
    judge = Judge("openai/my-local-model", base_url=fake_llm.openai_base_url, fewshot=0)
    with pytest.raises(mast.MastError, match="needs a price"):
        annotate_many(synthetic(1), judge, budget_usd=1.0, progress=False)


def test_auth_failure_stops_the_run_without_error_records(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.error(401, "invalid api key")
    out = tmp_path / "r.jsonl"
    run = annotate_many(
        synthetic(20),
        judge_for(fake_llm),
        out=out,
        concurrency=2,
        on_stop="return",
        progress=False,
    )
    assert run.stopped == "auth" and len(run) == 0
    assert run.summary.not_attempted == [f"t{i}" for i in range(20)]
    assert "refused the credentials" in (run.summary.stop_message or "")
    assert len(fake_llm.completions) <= 2  # one per worker at most, no retries
    assert not out.exists() or mast.read_annotations(out) == []
    with pytest.raises(RunStopped) as info:
        annotate_many(synthetic(2), judge_for(fake_llm), out=out, progress=False)
    assert info.value.reason == "auth"


# --------------------------------------------------------------------------- cache & resume


def test_cache_hits_on_rerun_cost_nothing(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    judge = judge_for(fake_llm)
    first = annotate_many(
        synthetic(5), judge, out=tmp_path / "a.jsonl", cache=tmp_path / "c", progress=False
    )
    assert all(a.cost_usd and a.cost_usd > 0 and not a.cached for a in first)
    second = annotate_many(
        synthetic(5), judge, out=tmp_path / "b.jsonl", cache=tmp_path / "c", progress=False
    )
    assert len(fake_llm.completions) == 5
    assert all(a.ok and a.cached and a.cost_usd == 0 for a in second)
    assert second[0].usage.input_tokens == 1000  # kept for information
    assert second.summary.cached == 5 and second.summary.cost_usd == 0
    assert [a.vector for a in second] == [a.vector for a in first]


def test_parser_fix_rereads_cached_answers(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mast.judge.judge as judge_module
    from mast.errors import VerdictParseError

    def broken(text: str, **kw: Any) -> Any:
        raise VerdictParseError("parser bug", raw=text)

    fake_llm.default = Reply.text(ANSWER)
    out, cache = tmp_path / "r.jsonl", tmp_path / "c"
    judge = judge_for(fake_llm, repair_attempts=0)
    with monkeypatch.context() as patch:
        patch.setattr(judge_module, "parse_response", broken)
        bad = annotate_many(synthetic(3), judge, out=out, cache=cache, progress=False)
    assert [a.status for a in bad] == ["parse_error"] * 3
    # Same command again: failures are kept (not redone) unless asked.
    again = annotate_many(synthetic(3), judge, out=out, cache=cache, progress=False)
    assert again.summary.resumed == 3 and [a.status for a in again] == ["parse_error"] * 3
    fixed = annotate_many(
        synthetic(3), judge, out=out, cache=cache, retry_failed=True, progress=False
    )
    assert [a.status for a in fixed] == ["ok"] * 3 and all(a.cached for a in fixed)
    assert len(fake_llm.completions) == 3  # no new call
    assert [a.status for a in mast.read_annotations(out)] == ["ok"] * 3


def test_resume_skips_done_and_retry_failed_redoes_only_failures(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    broken = {"2"}

    def respond(request: Recorded) -> Reply:
        # A refused request (400) is kept on rerun; a transport failure would be retried.
        return Reply.error(400, "bad") if trace_of(request) in broken else Reply.text(ANSWER)

    fake_llm.responder = respond
    out = tmp_path / "r.jsonl"
    kw: dict[str, Any] = dict(out=out, retry=FAST, cache=tmp_path / "c", progress=False)
    judge = judge_for(fake_llm)
    annotate_many(synthetic(4), judge, **kw)
    calls = len(fake_llm.completions)
    assert calls == 3 + 1  # a 400 is not retried
    rerun = annotate_many(synthetic(4), judge, **kw)
    assert len(fake_llm.completions) == calls and rerun.summary.resumed == 4
    assert rerun.summary.failed_earlier == {"http_400": 1}
    broken.clear()
    fixed = annotate_many(synthetic(4), judge, retry_failed=True, **kw)
    assert len(fake_llm.completions) == calls + 1
    assert fixed.summary.done == 1 and fixed.summary.resumed == 3
    assert all(a.ok for a in fixed)
    # Another judge setting is another key: nothing is skipped for it.
    other = annotate_many(synthetic(4), judge_for(fake_llm, temperature=0.5), **kw)
    assert other.summary.resumed == 0 and other.summary.done == 4


def test_identical_prompts_are_paid_once(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(ANSWER, delay=0.2)
    twins = [
        Trace(id=f"twin{i}", task="same", steps=[Step.make(0, "same text", agent="a")])
        for i in range(4)
    ]
    run = annotate_many(twins, judge_for(fake_llm), cache=tmp_path / "c", progress=False)
    assert all(a.ok for a in run) and len(fake_llm.completions) == 1
    assert sum(not a.cached for a in run) == 1


def test_duplicate_ids_are_an_error_before_any_call(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER)
    traces = synthetic(3) + synthetic(2)
    with pytest.raises(DuplicateTraceError, match="position 0 and in the in-memory trace at"):
        annotate_many(traces, judge_for(fake_llm), cache=False, progress=False)
    assert fake_llm.completions == []


def test_real_traces_and_no_key_anywhere(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.enqueue(Reply.error(500, f"echoing {KEY}"))
    fake_llm.default = Reply.text(ANSWER)
    traces = list(load_traces([FIXTURES / "ag2", FIXTURES / "whoandwhen"]))
    out, cache = tmp_path / "r.jsonl", tmp_path / "c"
    caplog.set_level(logging.DEBUG)
    stream = io.StringIO()
    run = annotate_many(
        traces,
        judge_for(fake_llm),
        out=out,
        cache=cache,
        retry=FAST,
        progress=True,
        progress_stream=stream,
    )
    assert len(run) == len(traces) == 5 and all(a.ok for a in run)
    assert KEY not in out.read_text()
    for file in cache.iterdir():
        assert KEY.encode() not in file.read_bytes()
    assert KEY not in caplog.text and KEY not in stream.getvalue()
    assert all(KEY not in json.dumps(r.body) for r in fake_llm.requests)


# --------------------------------------------------------------------------- event loops


def test_works_inside_a_running_event_loop(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER)
    judge = judge_for(fake_llm)

    async def notebook_cell() -> list[str]:
        run = annotate_many(synthetic(3), judge, cache=False, progress=False)  # sync API
        twin = await aannotate_many(synthetic(2, "u"), judge, cache=False, progress=False)
        await judge.aclose()
        return [a.trace_id for a in [*run, *twin]]

    assert asyncio.run(notebook_cell()) == ["t0", "t1", "t2", "u0", "u1"]


def test_lazy_input_is_read_as_it_goes(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER, delay=0.1)
    answered_when_pulled: list[int] = []

    def stream() -> Iterator[Trace]:
        for trace in synthetic(6):
            answered_when_pulled.append(sum(r.finished is not None for r in fake_llm.completions))
            yield trace

    run = annotate_many(stream(), judge_for(fake_llm), concurrency=2, progress=False)
    assert len(run) == 6
    # Two workers take the first two traces at once; each later one is read only when a
    # worker is free, i.e. after answers came back (not all read up front).
    assert answered_when_pulled[:2] == [0, 0] and answered_when_pulled[-1] >= 3


def test_heuristic_judge_runs_without_calls(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    run = annotate_many(synthetic(3), mast.Judge("heuristic"), out=out, progress=False)
    assert all(a.ok and a.cost_usd == 0 and not a.cached for a in run)
    again = annotate_many(synthetic(3), mast.Judge("heuristic"), out=out, progress=False)
    assert again.summary.resumed == 3


def test_invalid_arguments() -> None:
    judge = mast.Judge("heuristic")
    with pytest.raises(ValueError, match="concurrency"):
        annotate_many([], judge, concurrency=0)
    with pytest.raises(ValueError, match="on_stop"):
        annotate_many([], judge, on_stop="ignore")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- progress


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_and_quiet_elsewhere() -> None:
    now = [0.0]
    tty = TTY()
    bar = Progress(10, stream=tty, clock=lambda: now[0])
    assert bar.mode == "tty"
    now[0] = 4.0
    bar.advance(ok=3, failed=1, cached=1, cost=0.25)
    line = tty.getvalue().rsplit("\r", 1)[-1]
    assert "4/10" in line and "ok 3" in line and "failed 1" in line and "cached 1" in line
    assert "1.0/s" in line and "ETA 6s" in line and "$0.2500" in line
    bar.close()
    assert tty.getvalue().endswith("\n")
    pipe = io.StringIO()
    quiet = Progress(10, stream=pipe)
    quiet.advance(ok=1)
    quiet.close()
    assert quiet.mode == "off" and pipe.getvalue() == ""
