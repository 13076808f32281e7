"""``mast export``: OpenTelemetry GenAI evaluation events (through the OTel SDK's own OTLP
exporters: the JSON file exporter, and OTLP/HTTP to a local collector stand-in), CSV and
Parquet tables."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

import mast
from mast.analysis.export_tables import export_table
from mast.analysis.otel_export import EVENT_NAME, export_otel
from mast.bulk.store import ResultsStore
from mast.cli import main
from mast.errors import MissingDependencyError
from mast.judge.annotation import Annotation
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector, Trace

PHOENIX = Path(__file__).resolve().parents[1] / "fixtures" / "platforms" / "phoenix_spans.json"
CODES = mast.load_taxonomy().codes


def _annotation(trace_id: str, *, status: str = "ok") -> Annotation:
    values: dict[str, bool | None] = {c: False for c in CODES}
    values["1.3"], values["3.2"] = True, None
    finding = Finding(
        code="1.3",
        present=True,
        rationale="convert was called twice",
        evidence=[Evidence(step_id="s5", grounded=True)],
    )
    return Annotation(
        trace_id=trace_id,
        status=status,
        taxonomy="MAST 1.0",
        vector=FailureVector(values, codes=CODES) if status == "ok" else FailureVector({}),
        findings={"1.3": finding} if status == "ok" else {},
        error=None if status == "ok" else "HTTP 500",
        judge={"provider": "openai", "model": "m"},
    )


@pytest.fixture
def phoenix() -> Trace:
    return mast.load_trace(PHOENIX)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                out += scope["logRecords"]
    return out


def _attrs(record: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}


def test_one_event_per_judged_mode_attached_to_the_evidence_span(
    phoenix: Trace, tmp_path: Path
) -> None:
    out = tmp_path / "events.jsonl"
    summary = export_otel([_annotation(phoenix.id)], traces=[phoenix], out=out)
    records = _records(out)
    assert len(records) == summary.events == 13 and summary.unknown_cells == 1
    assert {r["eventName"] for r in records} == {EVENT_NAME}
    by_code = {_attrs(r)["mast.mode.code"]: r for r in records}
    assert "3.2" not in by_code  # unknown is not "no": no event
    present = by_code["1.3"]
    attrs = _attrs(present)
    assert attrs["gen_ai.evaluation.name"] == "MAST 1.3 Step Repetition"
    assert attrs["gen_ai.evaluation.score.value"] == 1.0
    assert attrs["gen_ai.evaluation.score.label"] == "present"
    assert attrs["gen_ai.evaluation.explanation"] == "convert was called twice"
    # Parented to the span of the cited step (s5 is the second LLM span's output).
    assert present["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert present["spanId"] == phoenix.step("s5").metadata["span_id"] == "3333333333333333"
    absent = _attrs(by_code["2.1"])
    assert absent["gen_ai.evaluation.score.value"] == 0.0
    assert absent["gen_ai.evaluation.score.label"] == "absent"
    assert by_code["2.1"]["spanId"] == "00f067aa0ba902b7"  # no evidence: the root span
    assert summary.attached == 13


def test_langfuse_observations_with_otel_ids_are_attached(tmp_path: Path) -> None:
    # Langfuse (v3 on) keys traces and observations by OpenTelemetry ids.
    source = PHOENIX.parent / "langfuse_observations.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    ids = {row["id"]: f"{n + 1:016x}" for n, row in enumerate(rows)}
    for row in rows:
        row["id"] = ids[row["id"]]
        if row.get("parentObservationId"):
            row["parentObservationId"] = ids[row["parentObservationId"]]
    path = tmp_path / "observations.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    trace = mast.load_trace(path)
    out = tmp_path / "events.jsonl"
    summary = export_otel([_annotation(trace.id)], traces=[trace], out=out)
    present = next(r for r in _records(out) if _attrs(r)["mast.mode.code"] == "1.3")
    assert present["traceId"] == trace.id
    assert present["spanId"] == trace.step("s5").metadata["observation_id"]
    assert summary.attached == summary.events


def test_traces_without_otel_ids_get_unattached_events(tmp_path: Path) -> None:
    trace = mast.traces.datasets.example_traces()[0]
    out = tmp_path / "events.jsonl"
    summary = export_otel(
        [_annotation(trace.id), _annotation("x", status="error")], traces=[trace], out=out
    )
    records = _records(out)
    assert summary.attached == 0 and all("spanId" not in r for r in records)
    assert summary.skipped == ["x"] and summary.annotations == 2


class _Collector(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        _Collector.bodies.append((self.path, dict(self.headers), self.rfile.read(length)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    _Collector.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_otlp_http_endpoint_receives_the_events(phoenix: Trace, collector: str) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    summary = export_otel(
        [_annotation(phoenix.id)], traces=[phoenix], endpoint=collector, headers={"x-api-key": "k"}
    )
    paths = {p for p, _, _ in _Collector.bodies}
    assert paths == {"/v1/logs"}
    assert all(h.get("x-api-key") == "k" for _, h, _ in _Collector.bodies)
    records = []
    for _, _, body in _Collector.bodies:
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        records += [
            r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records
        ]
    assert len(records) == summary.events == 13
    assert {r.event_name for r in records} == {EVENT_NAME}
    assert {r.trace_id.hex() for r in records} == {"4bf92f3577b34da6a3ce929d0e0e4736"}


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk._logs", None)
    with pytest.raises(MissingDependencyError, match=r"mast-annotator\[otel\]"):
        export_otel([], out=tmp_path / "x.jsonl")


def _results(tmp_path: Path, trace_id: str, name: str = "run.jsonl") -> Path:
    path = tmp_path / name
    with ResultsStore(path, fsync=False) as store:
        store.append(_annotation(trace_id))
        store.append(_annotation("lost", status="error"))
    return path


def test_cli_export_otel(
    phoenix: Trace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path, phoenix.id)
    out = tmp_path / "ev.jsonl"
    code = main(["export", "otel", str(results), "--traces", str(PHOENIX), "--out", str(out)])
    assert code == 0
    said = capsys.readouterr().out
    # 13 verdict events and one error.type event for the failed record
    assert "14 gen_ai.evaluation.result event(s) from 2 annotation(s)" in said
    assert "13 attached" in said and "1 unusable record(s) skipped" in said
    assert len(_records(out)) == 14
    assert main(["export", "otel", str(results)]) == 2  # neither --out nor --endpoint
    assert "give --out FILE or --endpoint URL" in capsys.readouterr().err


def test_csv_and_parquet_keep_unknown_empty(
    phoenix: Trace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _results(tmp_path, phoenix.id, "a.jsonl")
    second = _results(tmp_path, phoenix.id, "b.jsonl")
    csv = tmp_path / "out.csv"
    assert (
        main(
            ["export", "csv", str(first), str(second), "--traces", str(PHOENIX), "--out", str(csv)]
        )
        == 0
    )
    assert "4 row(s) written" in capsys.readouterr().out
    frame = pd.read_csv(csv)
    assert list(frame.columns[:2]) == ["trace_id", "run"] and set(frame["run"]) == {"a", "b"}
    row = frame[(frame["trace_id"] == phoenix.id) & (frame["run"] == "a")].iloc[0]
    assert bool(row["1.3"]) is True and bool(row["2.1"]) is False and pd.isna(row["3.2"])
    assert row["trace_model"] == "gpt-4.1-mini"
    parquet = tmp_path / "out.parquet"
    assert main(["export", "parquet", str(first), "--out", str(parquet)]) == 0
    back = pd.read_parquet(parquet)
    ok = back[back["trace_id"] == phoenix.id].iloc[0]
    assert ok["1.3"] is True or ok["1.3"] == True  # noqa: E712 (numpy/pandas booleans)
    assert pd.isna(ok["3.2"])
    lost = back[back["trace_id"] == "lost"].iloc[0]
    assert lost["status"] == "error" and pd.isna(lost["1.3"])


def test_docstring_examples_run() -> None:
    import doctest

    import mast.analysis.export_tables
    import mast.analysis.otel_export

    for module in (mast.analysis.otel_export, mast.analysis.export_tables):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_export_table_formats_by_suffix(tmp_path: Path) -> None:
    anns = {"r": [_annotation("t1")]}
    assert (tmp_path / "x.tsv").exists() is False
    export_table(anns, tmp_path / "x.tsv")
    assert "\t" in (tmp_path / "x.tsv").read_text().splitlines()[0]
