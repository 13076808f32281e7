"""Field-test fixes for bulk runs (issue 18): duplicate ids, batches without a cache, reruns
after failures, full disks and damaged caches."""

from __future__ import annotations

import asyncio
import errno
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.cache import CacheWarning, ResponseCache
from mast.bulk.store import ResultsStore
from mast.errors import MastError
from mast.traces.model import Step, Trace

CODES = mast.load_taxonomy().codes
ANSWER = verdict_json(CODES, ("1.2",))
KEY = "sk-field-test-key-0000000000000000QQQQ"
FAST = mast.RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
USAGE = {"input": 2000, "output": 300}
# gpt-4o-mini: $0.15 in / $0.60 out per million tokens; batch items at half price.
LIVE_COST = (2000 * 0.15 + 300 * 0.60) / 1e6


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def synthetic(n: int, *, source: str | None = None) -> list[Trace]:
    return [
        Trace(
            id=f"t{i}",
            task=f"Task number {i}: say hello.",
            steps=[Step.make(0, f"hello {i}", agent="a"), Step.make(1, "done", agent="b")],
            source=source,
        )
        for i in range(n)
    ]


def judge_for(server: FakeLLMServer, **kw: Any) -> mast.Judge:
    kw.setdefault("fewshot", 0)
    return mast.Judge("openai/gpt-4o-mini", base_url=server.openai_base_url, api_key=KEY, **kw)


def run(traces: list[Trace], judge: mast.Judge, **kw: Any) -> mast.AnnotationRun:
    kw.setdefault("progress", False)
    kw.setdefault("retry", FAST)
    kw.setdefault("batch_poll_interval", 0.01)
    return mast.annotate_many(traces, judge, **kw)


# --- 1. duplicate ids --------------------------------------------------------------------------


def test_a_duplicate_id_from_another_file_is_an_error_naming_both(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    traces = synthetic(2, source="exports/a.json") + synthetic(1, source="exports/b.json")
    with pytest.raises(MastError, match=r"exports/a\.json") as info:
        run(traces, judge_for(fake_llm), out=tmp_path / "r.jsonl", cache=False)
    assert "exports/b.json" in str(info.value) and "'t0'" in str(info.value)
    assert fake_llm.completions == []  # found before anything was paid for


def test_a_lazy_input_stops_at_the_duplicate(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(ANSWER)
    traces = synthetic(2, source="a.json") + synthetic(1, source="b.json")
    result = run(iter(traces), judge_for(fake_llm), cache=False, on_stop="return")
    assert result.summary.stopped == "duplicate"
    assert "a.json" in (result.summary.stop_message or "")
    assert "b.json" in (result.summary.stop_message or "")


def test_the_same_trace_twice_is_not_an_error(fake_llm: FakeLLMServer) -> None:
    fake_llm.default = Reply.text(ANSWER)
    traces = synthetic(2, source="a.json")
    result = run(traces + traces[:1], judge_for(fake_llm), cache=False)
    assert [a.trace_id for a in result] == ["t0", "t1"]
    assert result.summary.duplicates == ["t0"]


# --- 2. batches without a cache ----------------------------------------------------------------


def test_batch_without_cache_submits_once_and_counts_every_item(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    result = run(
        synthetic(3), judge_for(fake_llm), out=tmp_path / "r.jsonl", cache=False, batch=True
    )
    assert all(a.ok for a in result)
    assert len(fake_llm.batches) == 1 and len(fake_llm.batch_requests) == 3
    assert fake_llm.completions == []  # no live call after the batch
    assert result.summary.batch_items == 3
    assert result.summary.cost_usd == pytest.approx(3 * LIVE_COST * 0.5)
    assert [a.cost_usd for a in result] == pytest.approx([LIVE_COST * 0.5] * 3)


def test_batch_items_count_in_the_budget(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    judge = judge_for(fake_llm)
    result = run(
        synthetic(3),
        judge,
        cache=False,
        batch=True,
        budget_usd=1.0,
        on_stop="return",
    )
    assert result.summary.cost_usd == pytest.approx(3 * LIVE_COST * 0.5)
    assert len(fake_llm.batch_requests) == 3 and fake_llm.completions == []


def test_a_submitted_batch_is_reused_by_a_rerun_without_cache(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    fake_llm.batch_polls = 10_000  # in progress until the first run is gone
    out = tmp_path / "r.jsonl"
    judge = judge_for(fake_llm)

    async def crash() -> None:
        task = asyncio.ensure_future(
            mast.aannotate_many(
                synthetic(2),
                judge,
                out=out,
                cache=False,
                batch=True,
                batch_poll_interval=0.02,
                progress=False,
            )
        )
        while not fake_llm.batches:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await judge.aclose()

    asyncio.run(crash())
    fake_llm.batch_polls = 0
    result = run(synthetic(2), judge, out=out, cache=False, batch=True)
    assert all(a.ok for a in result) and len(fake_llm.batches) == 1
    assert fake_llm.completions == [] and len(fake_llm.batch_requests) == 2
    assert result.summary.cost_usd == pytest.approx(2 * LIVE_COST * 0.5)


# --- 3. reruns after failures ------------------------------------------------------------------


def test_rerun_retries_transport_failures_and_explains_the_others(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    fake_llm.default = Reply.reset()
    first = run(synthetic(1), judge_for(fake_llm), out=out, cache=False)
    assert first.summary.failed == {"connection": 1}
    fake_llm.default = Reply.text(ANSWER)
    second = run(synthetic(1), judge_for(fake_llm), out=out, cache=False)
    assert second.summary.done == 1  # a dropped connection is no answer: tried again

    out2 = tmp_path / "r2.jsonl"
    fake_llm.default = Reply.error(400, "bad request")
    run(synthetic(1), judge_for(fake_llm), out=out2, cache=False)
    fake_llm.default = Reply.text(ANSWER)
    third = run(synthetic(1), judge_for(fake_llm), out=out2, cache=False)
    assert third.summary.resumed == 1 and third.summary.done == 0
    text = str(third.summary)
    assert "1 failed earlier" in text and "http_400 1" in text and "--retry-failed" in text


# --- 9. full disks and read-only outputs -------------------------------------------------------


def test_disk_full_results_file_stops_cleanly_and_keeps_paid_answers(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    cache, out = tmp_path / "cache", tmp_path / "r.jsonl"
    real_append = ResultsStore.append
    written: list[str] = []

    def append(self: ResultsStore, annotation: mast.Annotation) -> None:
        if written:  # the disk fills up after the first record
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        real_append(self, annotation)
        written.append(annotation.trace_id)

    monkeypatch.setattr(ResultsStore, "append", append)
    result = run(
        synthetic(3), judge_for(fake_llm), out=out, cache=cache, on_stop="return", concurrency=1
    )
    assert result.summary.stopped == "output"
    assert str(out) in (result.summary.stop_message or "")
    assert "No space left" in (result.summary.stop_message or "")
    assert len(fake_llm.completions) == 2  # stopped after the answer that could not be written
    assert [a.status for a in result] == ["ok", "ok"]  # the paid answer is returned, not lost
    monkeypatch.setattr(ResultsStore, "append", real_append)
    # The rerun uses the paid answer from the cache and charges it once.
    again = run(synthetic(3), judge_for(fake_llm), out=out, cache=cache)
    assert all(a.ok for a in again) and len(fake_llm.completions) == 3
    assert again.summary.resumed == 1
    assert again.summary.cost_usd == pytest.approx(2 * LIVE_COST)
    assert [json.loads(line)["status"] for line in out.read_text().splitlines()] == ["ok"] * 3


def test_cache_that_cannot_be_written_never_turns_a_paid_answer_into_an_error(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    cache = ResponseCache(tmp_path / "cache")
    pages = cache._db.execute("PRAGMA page_count").fetchone()[0]
    cache._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
    out = tmp_path / "r.jsonl"
    with pytest.warns(CacheWarning, match="full") as caught:
        result = run(synthetic(3), judge_for(fake_llm), out=out, cache=cache)
    cache.close()
    assert len(caught) == 1  # one warning, not one per trace
    assert [a.status for a in result] == ["ok"] * 3
    assert [json.loads(line)["status"] for line in out.read_text().splitlines()] == ["ok"] * 3


# --- 10. damaged cache -------------------------------------------------------------------------


def test_a_corrupted_cache_is_a_miss_with_one_warning(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage=USAGE)
    cache = tmp_path / "cache"
    run(synthetic(30), judge_for(fake_llm), cache=cache)
    db = sqlite3.connect(cache / "responses.sqlite")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(cache / "responses.sqlite", "r+b") as handle:
        handle.seek(4096 * 2 + 100)  # inside the responses table's root page
        handle.write(b"\xde\xad" * 1000)
    out = tmp_path / "r.jsonl"
    with pytest.warns(CacheWarning, match="corrupt") as caught:
        result = run(synthetic(30), judge_for(fake_llm), out=out, cache=cache)
    assert len(caught) == 1
    assert all(a.ok for a in result)
    # Answers read before the damaged page was met are used; from then on, asked again.
    assert 30 < len(fake_llm.completions) <= 60
    aside = [p.name for p in cache.iterdir() if ".corrupt" in p.name]
    assert aside and any(p.startswith("responses.sqlite.corrupt") for p in aside)
