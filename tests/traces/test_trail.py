"""load_trail on small hand-made files in TRAIL's documented shape (the real set is gated)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mast
from mast.errors import TraceFormatError
from mast.traces.trail import TrailLabelWarning, is_trail, load_trail

TRAIL = Path(__file__).resolve().parents[1] / "fixtures" / "trail"


def test_rows_with_json_string_fields_load_with_their_labels() -> None:
    traces = mast.datasets.load_trail(TRAIL / "gaia_rows.jsonl")
    assert [t.id for t in traces] == ["trail/aaa111", "trail/bbb222"]
    first = traces[0]
    # every span of the tree is one step, depth first, keeping its span id
    assert [s.metadata["span_id"] for s in first.steps] == ["a1", "a2", "a3", "a4"]
    assert [s.metadata["depth"] for s in first.steps] == [0, 1, 2, 1]
    assert first.steps[2].kind.value == "tool_call" and first.steps[2].tool_name == "web_search"
    assert "Error: 429 Too Many Requests" in first.steps[2].content
    assert '"function.output": "7"' in first.steps[3].content  # logs are kept
    errors = first.metadata["trail"]["errors"]
    assert [(e["location"], e["step_id"], e["category"]) for e in errors] == [
        ("a3", "s3", "2.3"),
        ("a4", "s4", "1.1"),
        ("a4", "s4", "4.3"),
    ]
    assert errors[0]["impact"] == "MEDIUM" and errors[1]["evidence"] == "final_answer(7)"
    assert first.labels["trail"].positives == ["1.1", "2.3", "4.3"]
    assert first.labels["trail"]["1.8"] is False  # every error is labelled: absent is "no"
    assert first.metadata["dataset"]["subset"] == "gaia"
    assert first.metadata["trail"]["scores"][0]["overall"] == 2.5


def test_trace_files_find_their_labels_by_trace_id() -> None:
    assert is_trail(TRAIL / "GAIA")
    traces = load_trail(TRAIL / "GAIA", labels=TRAIL / "processed_annotations_gaia")
    rows = load_trail(TRAIL / "gaia_rows.jsonl")
    assert [t.metadata["trail"]["errors"] for t in traces] == [
        t.metadata["trail"]["errors"] for t in rows
    ]
    bare = load_trail(TRAIL / "GAIA" / "bbb222.json")  # no labels given: none invented
    assert bare[0].labels == {} and "trail" not in bare[0].metadata


def test_unknown_category_is_unknown_and_bad_location_is_flagged(tmp_path: Path) -> None:
    row = json.loads((TRAIL / "gaia_rows.jsonl").read_text().splitlines()[1])
    labels = json.loads(row["labels"])
    labels["errors"].append({"category": "Cosmic Rays", "location": "zz9", "impact": "LOW"})
    row["labels"] = json.dumps(labels)
    path = tmp_path / "gaia.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.warns(TrailLabelWarning) as caught:
        (trace,) = load_trail(path)
    assert any("Cosmic Rays" in str(w.message) for w in caught)
    assert any("'zz9' is not a span id" in str(w.message) for w in caught)
    assert trace.labels["trail"]["1.8"] is True and trace.labels["trail"]["1.1"] is None
    assert trace.metadata["trail"]["errors"][-1]["step_id"] is None


def test_not_trail_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"question": "no trace here"}\n')
    with pytest.raises(TraceFormatError, match="neither 'trace' nor 'spans'"):
        load_trail(bad)
    with pytest.raises(FileNotFoundError, match="gated on the Hugging Face Hub"):
        load_trail(tmp_path / "missing")
    # an OTLP export also has "spans", but is not TRAIL
    otlp = tmp_path / "otlp.json"
    otlp.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "1"}]}]}]}')
    assert not is_trail(otlp)
