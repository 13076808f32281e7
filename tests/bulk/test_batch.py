"""Batch mode for both providers against the fake batch endpoints (official SDK clients)."""

from __future__ import annotations

import asyncio
import errno
import json
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.bulk.batch import BATCH_PRICE_FACTOR, BatchState, batch_state_path
from mast.bulk.runner import RetryPolicy, aannotate_many, annotate_many
from mast.bulk.store import ResultsStore
from mast.errors import BudgetExceeded
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
ANSWER = verdict_json(CODES, ("1.2",))
KEY = "sk-batch-test-key-000000000000000WXYZ"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)
PROVIDERS = ["openai/gpt-4o-mini", "anthropic/claude-sonnet-5-5"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def synthetic(n: int) -> list[Trace]:
    return [
        Trace(
            id=f"t{i}",
            task=f"Task number {i}: say hello.",
            steps=[Step.make(0, f"hello {i}", agent="a"), Step.make(1, "done", agent="b")],
        )
        for i in range(n)
    ]


def judge_for(server: FakeLLMServer, model: str, **kw: Any) -> Judge:
    url = server.anthropic_base_url if model.startswith("anthropic") else server.openai_base_url
    kw.setdefault("fewshot", 0)
    return Judge(model, base_url=url, api_key=KEY, **kw)


def run_batch(judge: Judge, traces: list[Trace], tmp_path: Path, **kw: Any) -> mast.AnnotationRun:
    kw.setdefault("out", tmp_path / "r.jsonl")
    kw.setdefault("cache", tmp_path / "cache")
    return annotate_many(
        traces, judge, batch=True, batch_poll_interval=0.01, retry=FAST, progress=False, **kw
    )


def trace_of(request: Recorded) -> str:
    text = json.dumps(request.body)
    start = text.index("Task number ") + len("Task number ")
    return text[start : text.index(":", start)]


def posts(server: FakeLLMServer, path: str) -> int:
    return sum(r.method == "POST" and r.path == path for r in server.requests)


@pytest.mark.parametrize("model", PROVIDERS)
def test_batch_mode_completes_at_half_price(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 2000, "output": 300})
    judge = judge_for(fake_llm, model)
    run = run_batch(judge, synthetic(6), tmp_path)
    assert [a.trace_id for a in run] == [f"t{i}" for i in range(6)]
    assert all(a.ok and a.vector["1.2"] is True and not a.cached for a in run)
    assert fake_llm.completions == []  # no live call at all
    assert len(fake_llm.batch_requests) == 6 and run.summary.batch_items == 6
    batch_path = "/v1/messages/batches" if model.startswith("anthropic") else "/v1/batches"
    assert posts(fake_llm, batch_path) == 1 and len(run.summary.batches) == 1
    full = judge.prices.cost(model, run[0].usage)
    assert full is not None and run[0].cost_usd == pytest.approx(full * BATCH_PRICE_FACTOR)
    assert run.summary.cost_usd == pytest.approx(6 * full * BATCH_PRICE_FACTOR)
    assert not batch_state_path(tmp_path / "r.jsonl").exists()  # collected: nothing pending
    # Each batch item is exactly the request a live call would have sent.
    item = fake_llm.batch_requests[0].body
    assert item["model"] == model.split("/", 1)[1]
    assert ("system" in item) if model.startswith("anthropic") else ("messages" in item)
    assert KEY not in json.dumps([r.body for r in fake_llm.requests if r.body])
    # Rerun: everything is resumed, no new batch.
    again = run_batch(judge, synthetic(6), tmp_path)
    assert again.summary.resumed == 6 and posts(fake_llm, batch_path) == 1


def test_openai_batch_upload_is_a_jsonl_of_chat_requests(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    run_batch(judge_for(fake_llm, PROVIDERS[0]), synthetic(3), tmp_path)
    (upload,) = [r for r in fake_llm.requests if r.path == "/v1/files"]
    assert upload.headers["content-type"].startswith("multipart/form-data")
    uploaded = [d for d in fake_llm.files.values() if d.count(b'"custom_id"') == 3]
    lines = [json.loads(x) for x in uploaded[0].decode().splitlines()]
    assert {x["url"] for x in lines} == {"/v1/chat/completions"}
    assert {x["method"] for x in lines} == {"POST"}
    assert all(len(x["custom_id"]) == 64 for x in lines)


@pytest.mark.parametrize("model", PROVIDERS)
def test_partial_batch_failure_falls_back_to_live_calls(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str
) -> None:
    def respond(request: Recorded) -> Reply:
        if request.custom_id is not None and trace_of(request) in ("1", "3"):
            return Reply.error(500, "batch worker crashed")
        return Reply.text(ANSWER)

    fake_llm.responder = respond
    run = run_batch(judge_for(fake_llm, model), synthetic(5), tmp_path)
    assert all(a.ok for a in run)
    assert sorted(trace_of(r) for r in fake_llm.completions) == ["1", "3"]  # only the failed
    assert run.summary.batch_items == 3 and run.summary.calls == 2


def test_an_item_that_also_fails_live_gets_an_error_record(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    def respond(request: Recorded) -> Reply:
        if trace_of(request) == "0":
            return Reply.error(400, "this request is invalid")
        return Reply.text(ANSWER)

    fake_llm.responder = respond
    run = run_batch(judge_for(fake_llm, PROVIDERS[1]), synthetic(3), tmp_path)
    assert [a.status for a in run] == ["error", "ok", "ok"]
    assert len(fake_llm.completions) == 1  # 400 is not retried live either
    assert run.summary.failed == {"http_400": 1}


@pytest.mark.parametrize("model", PROVIDERS)
def test_repairs_go_into_a_second_batch(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str
) -> None:
    def respond(request: Recorded) -> Reply:
        # A repair request carries the unreadable answer and a follow-up turn.
        repair = len(request.body["messages"]) > (1 if model.startswith("anthropic") else 2)
        return Reply.text(ANSWER if repair or trace_of(request) != "1" else "no idea, sorry")

    fake_llm.responder = respond
    run = run_batch(judge_for(fake_llm, model, repair_attempts=1), synthetic(3), tmp_path)
    assert all(a.ok for a in run) and fake_llm.completions == []
    assert len(run.summary.batches) == 2 and len(fake_llm.batch_requests) == 4


@pytest.mark.parametrize("model", PROVIDERS)
def test_batch_is_collected_by_id_after_a_crash(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    fake_llm.batch_polls = 10_000  # stays "in progress" while the first run waits
    out = tmp_path / "r.jsonl"
    state = batch_state_path(out)
    judge = judge_for(fake_llm, model)

    async def crash() -> None:
        task = asyncio.ensure_future(
            aannotate_many(
                synthetic(4),
                judge,
                out=out,
                cache=tmp_path / "cache",
                batch=True,
                batch_poll_interval=0.02,
                progress=False,
            )
        )
        for _ in range(500):
            if state.exists():
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await judge.aclose()

    asyncio.run(crash())
    (entry,) = BatchState(state).entries
    assert len(entry.keys) == 4 and entry.provider == model.split("/")[0]
    assert not out.exists() or mast.read_annotations(out) == []
    fake_llm.batch_polls = 0
    run = run_batch(judge, synthetic(4), tmp_path)
    assert all(a.ok for a in run)
    assert len(fake_llm.batches) == 1  # the old batch was collected, no new one submitted
    assert run.summary.batch_items == 4 and not state.exists()
    assert fake_llm.completions == []


def test_a_plain_rerun_collects_a_pending_batch_too(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    fake_llm.batch_polls = 10_000
    out = tmp_path / "r.jsonl"
    judge = judge_for(fake_llm, PROVIDERS[0])

    async def crash() -> None:
        task = asyncio.ensure_future(
            aannotate_many(
                synthetic(2),
                judge,
                out=out,
                cache=tmp_path / "cache",
                batch=True,
                batch_poll_interval=0.02,
                progress=False,
            )
        )
        while not batch_state_path(out).exists():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await judge.aclose()

    asyncio.run(crash())
    fake_llm.batch_polls = 0
    run = annotate_many(synthetic(2), judge, out=out, cache=tmp_path / "cache", progress=False)
    assert all(a.ok for a in run) and fake_llm.completions == []  # paid answers were used


def test_batch_budget_submits_what_fits_and_stops(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    judge = judge_for(
        fake_llm,
        PROVIDERS[0],
        max_tokens=500,
        prices={"openai/gpt-4o-mini": {"input": 1.0, "output": 1.0}},
    )
    # One request is estimated at ≈4,100 tokens (prompt + max_tokens) at half price: the
    # budget fits one or two of them, not ten.
    with pytest.raises(BudgetExceeded) as info:
        run_batch(judge, synthetic(10), tmp_path, budget_usd=0.004)
    run = info.value.run
    assert isinstance(run, mast.AnnotationRun)
    done = run.summary.done
    assert 1 <= done < 10 and run.summary.failed_total == 0
    assert len(fake_llm.batch_requests) == done and run.summary.cost_usd <= 0.004
    assert len(run.summary.not_attempted) == 10 - done


@pytest.mark.parametrize("model", PROVIDERS)
def test_auth_failure_of_the_batch_api_stops_the_run(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    fake_llm.batch_error = Reply.error(401, "invalid x-api-key")
    out = tmp_path / "r.jsonl"
    run = run_batch(judge_for(fake_llm, model), synthetic(3), tmp_path, on_stop="return")
    assert run.stopped == "auth" and len(run) == 0
    assert run.summary.not_attempted == ["t0", "t1", "t2"]
    assert not out.exists() or mast.read_annotations(out) == []
    assert fake_llm.completions == [] and fake_llm.batches == {}


@pytest.mark.parametrize("model", PROVIDERS)
def test_batches_are_split_to_the_provider_limits(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that refuses batches over 3 requests (or over the byte limit) gets several
    batches within both limits, and every trace is answered by batch."""
    from mast.bulk.batch import AnthropicBatch, OpenAIBatch

    fake_llm.default = Reply.text(ANSWER)
    judge = judge_for(fake_llm, model)
    probe = OpenAIBatch(judge.provider, "m")  # type: ignore[arg-type]
    one = max(
        probe.request_size("x" * 64, judge.provider.request_body(p, judge.call_config))  # type: ignore[union-attr,arg-type]
        for p in [judge.render(t) for t in synthetic(8)]
    )
    # At most 3 requests per batch, and bytes for two and a half requests: both limits bite.
    fake_llm.batch_limits = (3, one * 5 // 2)
    for cls in (OpenAIBatch, AnthropicBatch):
        monkeypatch.setattr(cls, "max_requests", 3)
        monkeypatch.setattr(cls, "max_bytes", one * 5 // 2)
    run = run_batch(judge, synthetic(8), tmp_path)
    assert all(a.ok for a in run) and len(run) == 8
    assert fake_llm.completions == []  # nothing fell back to live calls
    # Traces are taken 3 at a time (max_requests) and each slice cut to 2 + 1 by bytes.
    assert len(fake_llm.batches) == len(run.summary.batches) == 5  # 2+1, 2+1, 2
    assert run.summary.batch_items == 8


@pytest.mark.parametrize("model", PROVIDERS)
def test_every_part_of_a_split_batch_is_collected_after_a_crash(
    fake_llm: FakeLLMServer, tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast.bulk.batch import AnthropicBatch, OpenAIBatch

    fake_llm.default = Reply.text(ANSWER)
    fake_llm.batch_polls = 10_000  # parts stay "in progress" while the first run waits
    out = tmp_path / "r.jsonl"
    state = batch_state_path(out)
    judge = judge_for(fake_llm, model)
    probe = OpenAIBatch(judge.provider, "m")  # type: ignore[arg-type]
    one = max(
        probe.request_size("x" * 64, judge.provider.request_body(p, judge.call_config))  # type: ignore[union-attr,arg-type]
        for p in [judge.render(t) for t in synthetic(3)]
    )
    for cls in (OpenAIBatch, AnthropicBatch):
        monkeypatch.setattr(cls, "max_bytes", one * 3 // 2)  # one request per batch

    async def crash() -> None:
        task = asyncio.ensure_future(
            aannotate_many(
                synthetic(3),
                judge,
                out=out,
                cache=tmp_path / "cache",
                batch=True,
                batch_poll_interval=0.02,
                progress=False,
            )
        )
        for _ in range(500):
            if state.exists() and len(BatchState(state).entries) == 3:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await judge.aclose()

    asyncio.run(crash())
    entries = BatchState(state).entries
    assert [len(e.keys) for e in entries] == [1, 1, 1]  # every part is remembered
    fake_llm.batch_polls = 0
    run = run_batch(judge, synthetic(3), tmp_path)
    assert all(a.ok for a in run)
    assert len(fake_llm.batches) == 3  # the three parts were collected, none submitted again
    assert run.summary.batch_items == 3 and not state.exists()
    assert fake_llm.completions == []


def test_batch_mode_takes_one_batch_of_traces_at_a_time(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pending traces are streamed: the runner reads the next batch's worth of traces only
    after the previous batch was submitted and collected, never the whole input first."""
    from mast.bulk.batch import OpenAIBatch

    monkeypatch.setattr(OpenAIBatch, "max_requests", 2)
    fake_llm.default = Reply.text(ANSWER)
    seen_at: list[int] = []  # batches already created when each trace was read

    def lazily() -> Any:
        for trace in synthetic(5):
            seen_at.append(len(fake_llm.batches))
            yield trace

    run = run_batch(judge_for(fake_llm, PROVIDERS[0]), lazily(), tmp_path)  # type: ignore[arg-type]
    assert all(a.ok for a in run) and len(run) == 5
    assert seen_at == [0, 0, 1, 1, 2]
    assert len(fake_llm.batches) == 3 and fake_llm.completions == []


def test_without_a_cache_a_run_that_stops_early_leaves_its_paid_batch_to_the_next(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--batch --no-cache: the collected answers live only in memory. A run that stops
    before writing them all (here the disk fills up after one record) keeps the batch
    listed beside the results file and counts what it did not use; the next run collects
    the same batch again instead of paying for a new one or for live calls."""
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    out = tmp_path / "r.jsonl"
    state = batch_state_path(out)
    real_append = ResultsStore.append
    written: list[str] = []

    def append(self: ResultsStore, annotation: mast.Annotation) -> None:
        if written:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        real_append(self, annotation)
        written.append(annotation.trace_id)

    monkeypatch.setattr(ResultsStore, "append", append)
    judge = judge_for(fake_llm, PROVIDERS[0])
    first = run_batch(judge, synthetic(4), tmp_path, cache=None, on_stop="return", concurrency=1)
    assert first.summary.stopped == "output" and len(fake_llm.batches) == 1
    assert first.summary.batch_unused == 2  # the answers of the two traces never reached
    assert first.summary.batch_unused_usd > 0 and first.summary.batch_unused_kept
    assert "collects them" in str(first.summary)
    assert len(BatchState(state).entries) == 1  # still listed for the next run

    monkeypatch.setattr(ResultsStore, "append", real_append)
    again = run_batch(judge, synthetic(4), tmp_path, cache=None)
    assert all(a.ok for a in again) and again.summary.resumed == 1
    assert len(fake_llm.batches) == 1 and fake_llm.completions == []  # nothing paid twice
    assert again.summary.batch_unused == 0 and not state.exists()
