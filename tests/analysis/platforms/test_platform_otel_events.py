"""OTel evaluation events: gen_ai.response.id when not parented to a span, an error.type event
per failed annotation (opt-out), timeUnixNano on every record."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import mast
from mast.analysis.otel_export import export_otel
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector

PHOENIX = Path(__file__).resolve().parents[2] / "fixtures" / "platforms" / "phoenix_spans.json"
WHEN = datetime(2026, 11, 30, 12, 0, 0, 250000, tzinfo=timezone.utc)


def _records(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                out.extend(scope["logRecords"])
    return out


def _attrs(record: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}


def _ann(trace_id: str, status: str = "ok") -> Annotation:
    return Annotation(
        trace_id=trace_id,
        status=status,  # type: ignore[arg-type]
        error="read timed out" if status != "ok" else None,
        error_kind="timeout" if status != "ok" else None,
        taxonomy="MAST 1.0",
        vector=FailureVector({"1.3": True} if status == "ok" else {}),
        judge={"model": "openai/gpt-4.1"},
        created_at=WHEN,
    )


def test_response_id_error_events_and_timestamps(tmp_path: Path) -> None:
    phoenix = mast.load_trace(PHOENIX)
    other = mast.datasets.example_traces()[0]  # no OTel ids: cannot be parented
    out = tmp_path / "events.jsonl"
    summary = export_otel(
        [_ann(phoenix.id), _ann(other.id), _ann(phoenix.id, "error")],
        traces=[phoenix, other],
        out=out,
    )
    records = _records(out)
    assert summary.events == 3 and summary.error_events == 1 and summary.attached == 2
    by_trace = {}
    for record in records:
        by_trace.setdefault(_attrs(record)["mast.trace.id"], []).append(record)
    attached = next(r for r in by_trace[phoenix.id] if "error.type" not in _attrs(r))
    assert attached["spanId"] and "gen_ai.response.id" not in _attrs(attached)
    loose = by_trace[other.id][0]
    assert not loose.get("spanId") and _attrs(loose)["gen_ai.response.id"] == other.id
    error = next(r for r in by_trace[phoenix.id] if "error.type" in _attrs(r))
    assert _attrs(error)["error.type"] == "timeout"
    assert "gen_ai.evaluation.score.value" not in _attrs(error)
    expected = str(int(WHEN.timestamp()) * 10**9 + 250_000_000)
    assert all(r["timeUnixNano"] == expected for r in records)
    assert all(int(r["observedTimeUnixNano"]) > 0 for r in records)


def test_error_events_can_be_turned_off(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(_ann("t1", "error").model_dump_json() + "\n")
    out = tmp_path / "events.jsonl"
    assert main(["export", "otel", str(results), "--out", str(out), "--no-error-events"]) == 0
    assert _records(out) == []
    assert main(["export", "otel", str(results), "--out", str(out)]) == 0
    assert [_attrs(r)["error.type"] for r in _records(out)] == ["timeout"]
    assert "1 reported as error.type events" in capsys.readouterr().out
