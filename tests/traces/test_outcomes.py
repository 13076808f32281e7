"""Outcomes are read once per source format: one run, one outcome, whichever loader reads it,
with the field it came from in ``metadata["outcome_field"]`` (issue 32 item 6)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import mast
from mast.errors import DuplicateLabelsWarning
from mast.traces.datasets import examples_path
from mast.traces.loaders import load_trace, load_traces
from mast.traces.segment import SegmentationWarning

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "mad_frameworks"


def _quiet(path: Path, **kwargs: object) -> list[mast.Trace]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SegmentationWarning)
        warnings.simplefilter("ignore", DuplicateLabelsWarning)
        return list(load_traces(path, **kwargs))  # type: ignore[arg-type]


def test_the_bundled_ag2_runs_have_one_outcome_through_both_loaders() -> None:
    ag2 = {t.id: t for i in (1, 2, 3) for t in _quiet(examples_path() / f"ag2_trace{i}.json")}
    human = _quiet(examples_path() / "mad_human_sample.json")
    matched = 0
    for trace in human:
        run = trace.metadata.get("segmentation_info", {}).get("instance_id")
        if run in ag2:
            matched += 1
            assert trace.outcome == ag2[run].outcome, trace.id
            assert trace.metadata["outcome_field"] == "other_data.correct"
            assert ag2[run].metadata["outcome_field"] == "other_data.correct"
    assert matched == 1  # mad-human/2 is ag2_trace1 (the same instance_id)
    by_id = {t.id: t for t in human}
    assert by_id["mad-human/2"].outcome.value == "success"  # was "unknown"
    assert by_id["mad-human/7"].outcome.value == "failure"  # its other_data.correct is false
    # MetaGPT records say nothing about the outcome: unknown, and no field is claimed.
    assert by_id["mad-human/4"].outcome.value == "unknown"
    assert "outcome_field" not in by_id["mad-human/4"].metadata


@pytest.mark.parametrize("success", [True, False])
def test_an_appworld_log_has_the_same_outcome_as_a_text_file_and_in_a_record(
    tmp_path: Path, success: bool
) -> None:
    folder = FRAMEWORKS / "appworld"
    log = (folder / "appworld_human_r2_b119b1f_2.trajectory.txt").read_text(encoding="utf-8")
    assert log.count('"success": true,') == 1
    log = log.replace('"success": true,', f'"success": {json.dumps(success)},')
    record = json.loads((folder / "appworld_human_r2_b119b1f_2.record.json").read_text())
    record["trace"] = log
    (tmp_path / "appworld.txt").write_text(log, encoding="utf-8")
    (tmp_path / "record.json").write_text(json.dumps(record), encoding="utf-8")
    as_text = load_trace(tmp_path / "appworld.txt")
    (in_record,) = _quiet(tmp_path / "record.json")
    expected = "success" if success else "failure"
    assert as_text.format == "text" and in_record.format == "mad-human"
    assert as_text.outcome.value == in_record.outcome.value == expected
    assert as_text.metadata["outcome_field"] == "evaluation_success"
    assert in_record.metadata["outcome_field"] == "evaluation_success"


def test_whoandwhen_names_the_field_of_its_outcome() -> None:
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "whoandwhen"
    for path in sorted(folder.glob("*.json")):
        trace = load_trace(path)
        assert trace.outcome.value == "failure"
        assert trace.metadata["outcome_field"] in ("is_correct", "mistake_agent")


def test_one_system_has_one_name_across_datasets() -> None:
    """Issue 32 item 11: MAD's 'Magentic' and Who&When's 'Magentic-One' are one system."""
    (mad,) = _quiet(FRAMEWORKS / "magentic_one_gaia" / "magentic_human_gen_gaia.record.json")
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "whoandwhen"
    (ww,) = _quiet(folder / "hand-crafted-12.json")
    assert mad.system == ww.system == "Magentic-One"
    assert mad.metadata["mas_name"] == "Magentic"  # as the record writes it
