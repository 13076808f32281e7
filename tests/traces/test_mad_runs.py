"""MAD-shaped records without labels and MetaGPT run records load; errors name the field
that is really wrong (issue 32 item 9)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import mast
from mast.errors import DuplicateLabelsWarning
from mast.traces.datasets import examples_path
from mast.traces.segment import SegmentationWarning


def _records() -> list[dict[str, object]]:
    records = json.loads((examples_path() / "mad_human_sample.json").read_text("utf-8"))
    keep = ("trace_id", "mas_name", "benchmark_name", "round", "trace")
    return [{k: r[k] for k in keep} for r in records]  # mast-lint's fresh runs: no labels


def _load(path: Path, **kwargs: object) -> list[mast.Trace]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SegmentationWarning)
        warnings.simplefilter("ignore", DuplicateLabelsWarning)
        return list(mast.load_traces(path, **kwargs))  # type: ignore[arg-type]


def test_mad_shaped_records_without_annotations_load(tmp_path: Path) -> None:
    path = tmp_path / "fresh.json"
    path.write_text(json.dumps(_records()), encoding="utf-8")
    traces = _load(path)
    assert [(t.id, t.format, t.system) for t in traces] == [
        ("mad-run/2", "mad-run", "AG2"),
        ("mad-run/7", "mad-run", "AG2"),
        ("mad-run/4", "mad-run", "MetaGPT"),
        ("mad-run/16", "mad-run", "MetaGPT"),
    ]
    labelled = {t.id.split("/")[1]: t for t in _load(examples_path() / "mad_human_sample.json")}
    for trace in traces:
        twin = labelled[trace.id.split("/")[1]]
        assert not trace.labels  # nothing to label with
        assert [s.content for s in trace.steps] == [s.content for s in twin.steps]
        assert (trace.task, trace.outcome) == (twin.task, twin.outcome)
    assert traces[0].outcome.value == "success"  # other_data.correct inside the trace string
    # --format ag2 reads the AG2 run inside the 'trace' string.
    (tmp_path / "ag2.json").write_text(json.dumps(_records()[:2]), encoding="utf-8")
    runs = _load(tmp_path / "ag2.json", format="ag2")
    assert [t.id for t in runs] == [
        "02da9c1f-7c36-5739-b723-33a7d4f8e7e7",
        "6891537b-54d7-5f49-b9e4-790b5e6a5de6",
    ]
    assert [t.metadata["mad_trace_id"] for t in runs] == [2, 7]


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ("a log, not JSON", r"field 'trace' \(a string\) is not JSON"),
        (json.dumps({"instance_id": "x", "trajectory": "oops"}), "whose 'trajectory' is a str"),
        (json.dumps({"instance_id": "x"}), "a run record without a 'trajectory' field"),
    ],
)
def test_ag2_errors_name_the_field_inside_the_trace_string(
    tmp_path: Path, trace: str, message: str
) -> None:
    record = {**_records()[0], "trace": trace}
    path = tmp_path / "one.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    with pytest.raises(mast.TraceFormatError, match=message) as info:
        _load(path, format="ag2")
    assert "field 'trajectory' is not a list" not in str(info.value)


def test_ag2_without_a_trajectory_says_it_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"instance_id": "x", "messages_here": []}), encoding="utf-8")
    with pytest.raises(mast.TraceFormatError, match="record has no 'trajectory' field"):
        mast.load_trace(path, format="ag2")


def test_a_metagpt_run_record_on_its_own(tmp_path: Path) -> None:
    records = json.loads((examples_path() / "mad_human_sample.json").read_text("utf-8"))
    inner = json.loads(next(r["trace"] for r in records if r["trace_id"] == 4))
    path = tmp_path / "21.json"
    path.write_text(json.dumps(inner), encoding="utf-8")
    trace = mast.load_trace(path)
    assert (trace.id, trace.format, trace.system) == ("metagpt/21", "metagpt", "MetaGPT")
    assert trace.task == inner["prompt"] and trace.segmented and len(trace.steps) > 1
    assert trace.metadata["cost"] == inner["cost"]
    assert all(inner["prompt"] not in s.content for s in trace.steps[1:])
