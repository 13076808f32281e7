"""Result shard folders, `merge_results`, the shared limits state and work units: the parts
of the Ray engine that need no Ray."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.ratelimit import LimitRefused
from mast.bulk.runner import aannotate_many
from mast.bulk.shared_limits import LimitsState
from mast.bulk.store import ResultsStore, merge_results, read_annotations, shard_paths
from mast.bulk.units import load_unit, plan_units
from mast.errors import MastError, TraceFormatError
from mast.judge.annotation import Annotation
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.loaders._split import record_stream
from mast.traces.model import FailureVector, Step, Trace

CODES = load_taxonomy().codes
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def record(trace_id: str, status: str = "ok", *, minutes: int = 0, **present: bool) -> Annotation:
    return Annotation(
        trace_id=trace_id,
        status=status,  # type: ignore[arg-type]
        taxonomy="MAST 1.0",
        vector=FailureVector({c[1:].replace("_", "."): v for c, v in present.items()}),
        judge={"config_hash": "h1"},
        created_at=T0 + timedelta(minutes=minutes),
    )


def write(path: Path, *annotations: Annotation) -> None:
    with ResultsStore(path) as store:
        for ann in annotations:
            store.append(ann)


# --------------------------------------------------------------------------- shard folders


def test_a_folder_reads_as_one_result_set_newest_record_per_key(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    # t2 failed in worker 1's shard and succeeded later in worker 0's (a rerun).
    write(folder / "shard-0000.jsonl", record("t1"), record("t2", minutes=5, _1_1=True))
    write(folder / "shard-0001.jsonl", record("t2", "error", minutes=1), record("t3"))
    found = {a.trace_id: a for a in read_annotations(folder)}
    assert sorted(found) == ["t1", "t2", "t3"]
    assert found["t2"].status == "ok" and found["t2"].vector["1.1"] is True
    assert len(read_annotations(folder, latest=False)) == 4
    assert list(mast.to_frame(folder).index) == ["t1", "t2", "t3"]
    assert [p.name for p in shard_paths(folder)] == ["shard-0000.jsonl", "shard-0001.jsonl"]


def test_a_torn_last_line_in_a_shard_is_ignored(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    write(folder / "shard-0000.jsonl", record("t1"))
    with (folder / "shard-0000.jsonl").open("ab") as fh:
        fh.write(b'{"trace_id": "t2", "sta')  # a worker killed mid-write
    assert [a.trace_id for a in read_annotations(folder)] == ["t1"]


def test_an_empty_folder_says_what_it_expected(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no results in folder .*\*\.jsonl"):
        read_annotations(tmp_path)


def test_merge_writes_one_record_per_key(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    write(folder / "shard-0000.jsonl", record("t1"), record("t2", "error"))
    write(folder / "shard-0001.jsonl", record("t2", minutes=2), record("t3"))
    write(tmp_path / "extra.jsonl", record("t4"))
    out = tmp_path / "merged.jsonl"
    assert merge_results([folder, tmp_path / "extra.jsonl"], out) == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["trace_id"], r["status"]) for r in rows] == [
        ("t1", "ok"),
        ("t2", "ok"),
        ("t3", "ok"),
        ("t4", "ok"),
    ]
    assert [a.trace_id for a in read_annotations(out)] == ["t1", "t2", "t3", "t4"]
    with pytest.raises(MastError, match="one of the inputs"):
        merge_results([folder], folder / "shard-0001.jsonl")
    assert not list(tmp_path.glob(".merged.jsonl.*"))  # no temporary file left behind


# --------------------------------------------------------------------------- shared limits


def test_limits_state_keeps_one_budget_and_frees_reservations() -> None:
    async def scenario() -> list[Any]:
        state = LimitsState(budget_usd=1.0)
        first, _ = await state.admit(100, 0.6)
        assert first is not None
        # 0.6 reserved + 0.6 > 1.0, but the first call may cost less: the second waits.
        waiting = asyncio.ensure_future(state.admit(100, 0.6))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        state.settle(first, 0, None)  # the provider refused the call: nothing spent
        second, _ = await waiting
        assert second is not None
        state.settle(second, 90, 0.5)  # really spent 0.5: 0.5 + 0.6 > 1.0, none in flight
        refused = await state.admit(100, 0.6)
        return [refused, state.snapshot()]

    refused, snapshot = asyncio.run(scenario())
    assert refused[0] is None and refused[1][0] == "budget"
    assert "$0.5000 spent" in refused[1][1]  # the money really spent
    # Once refused, everyone is refused (one budget for the cluster).
    assert snapshot["stopped"][0] == "budget" and snapshot["reserved_usd"] == 0.0


class _InProcessLimiter:
    """The Limiter a Ray worker gets, minus Ray: every call asks one LimitsState."""

    def __init__(self, state: LimitsState) -> None:
        self.state = state

    @property
    def limited(self) -> bool:
        return True

    def pause(self, seconds: float, **what: Any) -> None:
        self.state.pause(seconds, **what)

    def adopt(self, requests: float | None = None, tokens: float | None = None) -> None:
        self.state.adopt(requests, tokens)

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> Any:
        ticket, refused = await self.state.admit(tokens, cost)
        if refused is not None:
            raise LimitRefused(*refused)
        state = self.state

        class Grant:
            def settle(self, actual: int | None, *, cost: float | None = None) -> None:
                assert ticket is not None
                state.settle(ticket, actual, cost)

        return Grant()


def test_two_runs_sharing_one_limiter_stop_at_one_budget(fake_llm: FakeLLMServer) -> None:
    # Each call costs about what the runner reserves for it (max output tokens), so ten
    # calls fit $0.05 at gpt-4o-mini's prices.
    fake_llm.default = Reply.text(verdict_json(CODES), usage={"input": 500, "output": 8000})
    judge = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key="k" * 24, fewshot=0
    )
    state = LimitsState(budget_usd=0.05)
    traces = [
        Trace(id=f"t{i}", steps=[Step.make(0, f"Task number {i}.", agent="a")]) for i in range(20)
    ]
    limiter = _InProcessLimiter(state)

    async def two_runs() -> list[Any]:
        try:
            return [
                await aannotate_many(
                    half, judge, cache=False, progress=False, on_stop="return", limiter=limiter
                )
                for half in (traces[:10], traces[10:])
            ]
        finally:
            await judge.aclose()

    runs = asyncio.run(two_runs())
    spent = state.snapshot()["spent_usd"]
    assert 0.04 < spent <= 0.05
    assert runs[1].summary.stopped == "budget"  # the second run found the budget spent
    assert sum(r.summary.done for r in runs) == len(fake_llm.completions) < 20


# --------------------------------------------------------------------------- work units


def mad_records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "mas_name": "AG2",
            "benchmark_name": "GSM",
            "trace_id": i,
            "trace": {"trajectory": f"user (to solver):\nAdd {i} and 1.\n"},
            "mast_annotation": {},
        }
        for i in range(n)
    ]


def test_units_split_multi_record_files_by_record_and_group_other_files(tmp_path: Path) -> None:
    (tmp_path / "mad.json").write_text(json.dumps(mad_records(7)))
    lines = [json.dumps({"id": f"j{i}", "steps": []}) for i in range(3)]
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    for i in range(3):
        chat = {"id": f"c{i}", "messages": [{"role": "user", "content": f"hi {i}"}]}
        (tmp_path / f"chat{i}.json").write_text(json.dumps(chat))
    units = list(plan_units(tmp_path, size=3))
    sizes = [(Path(u.source).name if u.source else "files", u.count) for u in units]
    # Files are taken in name order: the three chats fill one unit of whole files first.
    assert sizes == [
        ("files", 0),
        ("mad.json", 3),
        ("mad.json", 3),
        ("mad.json", 1),
        ("runs.jsonl", 3),
    ]
    assert len(units[0].files) == 3
    traces = [t for u in units for t in load_unit(u, u.records)]
    assert len(traces) == 7 + 3 + 3 and all(isinstance(t, Trace) for t in traces)
    assert next(str(t.source) for t in traces if "mad.json" in str(t.source)).endswith("#record 0")


def test_a_bad_record_in_a_unit_is_reported_and_the_others_load(tmp_path: Path) -> None:
    records = mad_records(3)
    del records[1]["trace"]
    (tmp_path / "mad.json").write_text(json.dumps(records))
    (unit,) = plan_units(tmp_path / "mad.json", size=10)
    items = list(load_unit(unit, unit.records))
    assert [type(i).__name__ for i in items] == ["Trace", "TraceFormatError", "Trace"]
    error = items[1]
    assert isinstance(error, TraceFormatError) and "record 1" in str(error)


def test_files_that_are_one_trace_are_not_split(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    (tmp_path / "log.txt").write_text("a log\n")
    assert record_stream(tmp_path / "chat.json") is None
    assert record_stream(tmp_path / "log.txt") is None
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(mad_records(2))[:-30])
    stream = record_stream(broken)
    assert stream is not None
    items = list(stream)
    assert isinstance(items[-1][1], TraceFormatError)
