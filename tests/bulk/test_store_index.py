"""The results store opens without validating its records, and still treats lines that are
not whole records as it always did (skipped, copied as they are by a compaction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast import read_annotations
from mast.bulk.store import ResultsStore
from mast.judge.annotation import Annotation
from mast.judge.providers.usage import Usage
from mast.traces.model import FailureVector


def ann(trace_id: str, status: str = "ok", **kw: object) -> Annotation:
    return Annotation(
        trace_id=trace_id,
        status=status,  # type: ignore[arg-type]
        error=None if status == "ok" else "boom",
        error_kind=None if status == "ok" else "connection",
        taxonomy="MAST 1.0",
        vector=FailureVector({"1.1": True}),
        judge={"model": "m", "config_hash": "cfg"},
        usage=Usage(input_tokens=10, output_tokens=2),
        cost_usd=0.25,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every Annotation.model_validate call (what made opening a large file slow)."""
    calls: list[object] = []
    original = Annotation.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Annotation], obj: object, **kw: object) -> Annotation:
        calls.append(obj)
        return original(cls, obj, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Annotation, "model_validate", classmethod(counting))
    return calls


def test_opening_validates_no_record_and_get_validates_one(
    tmp_path: Path, validations: list[object]
) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        for i in range(50):
            store.append(ann(f"t{i}", "ok" if i % 5 else "error"))
    validations.clear()
    with ResultsStore(path) as store:
        assert len(store) == 50 and validations == []
        brief = store.brief("t5", "cfg")
        assert brief is not None and (brief.status, brief.error_kind) == ("error", "connection")
        assert store.brief("t5", "other") is None
        assert store.spent_usd == pytest.approx(50 * 0.25) and validations == []
        got = store.get("t7", "cfg")
        assert got is not None and got.trace_id == "t7" and got.vector["1.1"] is True
        assert len(validations) == 1


def _damaged(trace_id: str) -> bytes:
    # Passes the brief check (id, status, taxonomy, vector) but is no Annotation.
    record = json.loads(ann(trace_id, created_at="2026-01-01T00:00:00Z").model_dump_json())
    record["usage"] = "not usage"
    return json.dumps(record).encode() + b"\n"


def test_a_damaged_record_is_found_when_asked_for_and_kept_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(ann("a").model_dump_json().encode() + b"\n" + _damaged("b"))
    with ResultsStore(path) as store:
        assert len(store) == 2 and store.skipped_lines == 0  # not read yet
        assert store.get("b", "cfg") is None  # read now: not a record, annotated again
        assert store.skipped_lines == 1 and len(store) == 1
        assert store.spent_usd == pytest.approx(0.25)
        store.append(ann("b"))
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[1] == _damaged("b")  # copied as it is, as an unreadable line always was
    with pytest.warns(UserWarning, match="unreadable"):
        assert [a.trace_id for a in read_annotations(path)] == ["a", "b"]


def test_a_damaged_line_never_supersedes_nor_is_superseded(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good_a = ann("a", "error").model_dump_json().encode() + b"\n"
    path.write_bytes(
        good_a + _damaged("a") + _damaged("c") + ann("c").model_dump_json().encode() + b"\n"
    )
    with ResultsStore(path) as store:
        # "a": the later line of the key is damaged, the earlier one stays the record.
        first = store.get("a", "cfg")
        assert first is not None and first.status == "error"
        # "c": the earlier line is damaged, so the later one is the key's first record.
        assert store.get("c", "cfg") is not None
        assert store.skipped_lines == 2 and len(store) == 2
        store.append(ann("a"))  # redo the failure: supersedes the good earlier line
    lines = path.read_bytes().splitlines(keepends=True)
    assert [json.loads(x)["trace_id"] for x in lines] == ["a", "a", "c", "c"]
    assert json.loads(lines[0])["status"] == "ok" and lines[1] == _damaged("a")
    assert lines[2] == _damaged("c")
