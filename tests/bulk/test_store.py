"""The results store: append-only JSONL, torn-line recovery, locking, reading, to_frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mast import read_annotations, to_frame
from mast.bulk.store import ResultsFileWarning, ResultsStore, record_key
from mast.errors import MastError
from mast.judge.annotation import SCHEMA_VERSION, Annotation
from mast.judge.providers.usage import Usage
from mast.taxonomy import load_taxonomy
from mast.traces.model import FailureVector

CODES = load_taxonomy().codes


def ann(trace_id: str, status: str = "ok", config: str = "cfg1", **kw: object) -> Annotation:
    values = {c: (c == "1.1") for c in CODES} if status == "ok" else {}
    if status == "ok":
        values["3.3"] = None  # unknown must survive the round trip as unknown
    return Annotation(
        trace_id=trace_id,
        status=status,  # type: ignore[arg-type]
        error=None if status == "ok" else "boom",
        taxonomy="MAST 1.0",
        vector=FailureVector(values, codes=CODES),
        judge={"provider": "openai", "model": "gpt-4o-mini", "config_hash": config},
        usage=Usage(input_tokens=100, cached_input_tokens=0, output_tokens=20),
        cost_usd=0.001,
        **kw,  # type: ignore[arg-type]
    )


def test_compaction_keeps_unreadable_lines_and_the_money_spent(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("a", "error"))
        store.append(ann("b"))
    with open(path, "a", encoding="utf-8") as handle:  # a record of a newer layout
        handle.write(json.dumps({"schema_version": 99, "trace_id": "z", "status": "ok"}) + "\n")
    with ResultsStore(path) as store:
        assert store.spent_usd == pytest.approx(0.002)
        store.append(ann("a"))  # redone: supersedes the failure, and costs again
        store.append(ann("a"))  # and once more
        assert store.spent_usd == pytest.approx(0.004)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["trace_id"], r["status"]) for r in lines] == [("a", "ok"), ("b", "ok"), ("z", "ok")]
    ledger = json.loads((tmp_path / "r.jsonl.spent.json").read_text())
    assert ledger["carried_usd"] == pytest.approx(0.002)  # the two superseded records
    assert ledger["spent_usd"] == pytest.approx(0.004)
    with ResultsStore(path) as store:
        assert store.spent_usd == pytest.approx(0.004)  # across the compaction
        assert store.skipped_lines == 1
    # Nothing to compact and nothing appended: the file is left alone.
    assert [json.loads(line)["trace_id"] for line in path.read_text().splitlines()] == [
        "a",
        "b",
        "z",
    ]


def test_round_trip_and_top_level_fields(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("t1"))
        store.append(ann("t2", "error"))
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    for line in lines[:2]:
        record = json.loads(line)
        assert record["schema_version"] == SCHEMA_VERSION
        assert {"trace_id", "status"} <= set(record)
    got = read_annotations(path)
    assert [(a.trace_id, a.status) for a in got] == [("t1", "ok"), ("t2", "error")]
    assert got[0].vector["1.1"] is True and got[0].vector["3.3"] is None


def test_latest_record_per_key_wins_but_keeps_first_position(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("a", "error"))
        store.append(ann("b"))
        store.append(ann("a"))  # retried later
        store.append(ann("a", config="other"))  # another judge: another key
        assert store.get("a", "cfg1").status == "ok"  # type: ignore[union-attr]
        assert store.get("zzz", "cfg1") is None
        # While the run goes on the superseded line is there, and skipped on read.
        assert len(read_annotations(path, latest=False)) == 4
        assert len(read_annotations(path)) == 3
    latest = read_annotations(path)
    assert [(a.trace_id, a.status, record_key(a)[1]) for a in latest] == [
        ("a", "ok", "cfg1"),
        ("b", "ok", "cfg1"),
        ("a", "ok", "other"),
    ]
    # Closing compacted the file: one line per key, the latest at the first one's place.
    assert read_annotations(path, latest=False) == latest
    with ResultsStore(path) as store:  # reopening indexes the same way
        assert len(store) == 3


def test_torn_last_line_is_ignored_then_cut_so_the_file_stays_appendable(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("t1"))
    whole = ann("t2").model_dump_json().encode()
    with open(path, "ab") as handle:
        handle.write(whole[: len(whole) // 2])  # a process killed mid-write
    assert [a.trace_id for a in read_annotations(path)] == ["t1"]  # no warning, no error
    with ResultsStore(path) as store:
        assert store.repaired is not None and "torn" in store.repaired
        assert store.get("t2", "cfg1") is None
        store.append(ann("t2"))
    assert [a.trace_id for a in read_annotations(path)] == ["t1", "t2"]
    assert path.read_bytes().count(b"\n") == 2


def test_whole_last_record_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(ann("t1").model_dump_json().encode())  # crash between record and "\n"
    with ResultsStore(path) as store:
        assert store.repaired is not None and "completed" in store.repaired
        assert store.get("t1", "cfg1") is not None
        store.append(ann("t2"))
    assert [a.trace_id for a in read_annotations(path)] == ["t1", "t2"]


def test_torn_line_longer_than_the_read_block(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("t1"))
    big = ann("t2", raw="x" * 200_000).model_dump_json().encode()
    with open(path, "ab") as handle:
        handle.write(big[:150_000])
    with ResultsStore(path) as store:
        assert len(store) == 1
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 1


def test_corrupt_middle_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        ann("t1").model_dump_json().encode()
        + b"\n{not json\n"
        + json.dumps(
            {"schema_version": SCHEMA_VERSION + 1, "trace_id": "x", "status": "ok"}
        ).encode()
        + b"\n"
        + ann("t2").model_dump_json().encode()
        + b"\n"
    )
    with pytest.warns(ResultsFileWarning) as caught:
        got = read_annotations(path)
    assert [a.trace_id for a in got] == ["t1", "t2"]
    assert len(caught) == 2 and "newer" in str(caught[1].message)
    with ResultsStore(path) as store:
        assert store.skipped_lines == 2 and len(store) == 2


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path):
        code = (
            "import sys; from mast.bulk.store import ResultsStore\n"
            "try:\n    ResultsStore(sys.argv[1])\nexcept Exception as e:\n    print(e); sys.exit(3)"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
            timeout=60,
        )
        assert proc.returncode == 3, proc.stderr
        assert "another mast process" in proc.stdout
    with ResultsStore(path):  # released on close
        pass


def test_a_second_store_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    # flock belongs to the open file description, so a second open in-process conflicts.
    with ResultsStore(tmp_path / "r.jsonl"), pytest.raises(MastError):
        ResultsStore(tmp_path / "r.jsonl")


def test_to_frame_one_row_per_trace_unknown_stays_na(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann("t1", "error"))
        store.append(ann("t1"))
        store.append(ann("t2", cached=True))
        store.append(ann("t3", "parse_error"))
    frame = to_frame(path)
    assert list(frame.index) == ["t1", "t2", "t3"]
    assert set(CODES) <= set(frame.columns)
    assert {"status", "cost_usd", "input_tokens", "output_tokens", "cached", "judge"} <= set(
        frame.columns
    )
    assert frame.loc["t1", "status"] == "ok" and frame.loc["t3", "status"] == "parse_error"
    assert bool(frame.loc["t1", "1.1"]) is True
    assert pd.isna(frame.loc["t1", "3.3"])  # unknown, never False
    assert pd.isna(frame.loc["t3", "1.1"])
    assert str(frame["1.1"].dtype) == "boolean"
    assert frame.loc["t1", "judge"] == "openai/gpt-4o-mini"
    assert bool(frame.loc["t2", "cached"]) is True
    same = to_frame(read_annotations(path))
    pd.testing.assert_frame_equal(frame, same)
