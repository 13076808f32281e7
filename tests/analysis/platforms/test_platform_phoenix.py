"""Round trips through a REAL local Phoenix server (see conftest.py): spans sent with the
OTel SDK -> ``mast pull phoenix`` -> ``mast annotate`` (heuristic judge) -> ``mast export
phoenix`` -> annotations read back through Phoenix's own client."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import mast
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector

if os.environ.get("MAST_REQUIRE_PHOENIX") is None:
    pytest.importorskip("phoenix.client")

from phoenix.client import Client


def send_run(url: str, project: str) -> tuple[str, list[str]]:
    """One agent run as OpenInference spans (an AGENT root, one LLM span per message of a
    bundled AG2 example); returns the trace id and the span ids, root first."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    example = mast.datasets.example_traces()[0]
    provider = TracerProvider(
        resource=Resource.create({"service.name": "ag2", "openinference.project.name": project})
    )
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("mast-tests")
    spans: list[str] = []
    with tracer.start_as_current_span("agent run") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("input.value", example.task or "")
        spans.append(format(root.get_span_context().span_id, "016x"))
        for step in example.steps[:6]:
            with tracer.start_as_current_span(f"llm {step.agent}") as span:
                span.set_attribute("openinference.span.kind", "LLM")
                span.set_attribute("llm.output_messages.0.message.role", "assistant")
                span.set_attribute("llm.output_messages.0.message.content", step.content)
                spans.append(format(span.get_span_context().span_id, "016x"))
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x"), spans


def wait_for_spans(client: Client, project: str, count: int) -> list[Any]:
    # Phoenix inserts spans from a queue: poll (bounded) until all have landed.
    for _ in range(120):
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=100)
        except Exception:  # the project appears with its first span
            spans = []
        if len(spans) >= count:
            return spans
        time.sleep(0.5)
    raise AssertionError(f"Phoenix holds {len(spans)} of {count} spans")


def annotations(client: Client, project: str) -> list[Any]:
    spans = client.spans.get_spans(project_identifier=project, limit=100)
    return client.spans.get_span_annotations(spans=spans, project_identifier=project)


def test_pull_annotate_export_round_trip(phoenix_server, tmp_path: Path, capsys) -> None:
    url, project = phoenix_server.url, "roundtrip"
    trace_id, span_ids = send_run(url, project)
    client = Client(base_url=url)
    wait_for_spans(client, project, len(span_ids))

    pulled = tmp_path / "pulled.jsonl"
    assert (
        main(["pull", "phoenix", "--endpoint", url, "--project", project, "--out", str(pulled)])
        == 0
    )
    assert "pulled 1 trace(s) (7 record(s))" in capsys.readouterr().out
    trace = mast.load_trace(pulled)
    assert trace.id == trace_id and trace.format == "otel"
    # Every step keeps the id of the span it came from (a span repeating an earlier message
    # adds no step), in order, the root's input first.
    step_spans = [s.metadata["span_id"] for s in trace.steps]
    assert step_spans[0] == span_ids[0] and len(step_spans) >= 5
    assert step_spans == [s for s in span_ids if s in step_spans]
    # A second pull resumes: the trace is written already and is not fetched again.
    assert (
        main(["pull", "phoenix", "--endpoint", url, "--project", project, "--out", str(pulled)])
        == 0
    )
    assert "pulled 0 trace(s) (0 record(s))" in capsys.readouterr().out
    assert len(pulled.read_text().splitlines()) == 7

    results = tmp_path / "results.jsonl"
    assert main(["annotate", str(pulled), "--model", "heuristic", "--out", str(results)]) == 0
    # A failed annotation of another trace: reported, never written.
    failed = Annotation(
        trace_id="f" * 32,
        status="error",
        error="timeout",
        taxonomy="MAST 1.0",
        vector=FailureVector(),
        judge={"model": "heuristic"},
    )
    with open(results, "a") as handle:
        handle.write(failed.model_dump_json() + "\n")
    ann = next(a for a in mast.read_annotations(results) if a.ok)
    judged = {c: v for c, v in ann.vector.items() if v is not None}
    assert judged and any(judged.values())  # the heuristic flags 1.5 and 3.1 on this run
    capsys.readouterr()

    # --dry-run sends nothing and prints one JSON object per score with its id.
    args = ["export", "phoenix", str(results), "--traces", str(pulled), "--endpoint", url]
    assert main([*args, "--dry-run", "--format", "json"]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(items) == len(judged) and all(i["id"] and i["identifier"] for i in items)
    assert annotations(client, project) == []

    assert main(args) == 0
    out = capsys.readouterr()
    assert f"wrote {len(judged)} score(s) to phoenix" in out.out
    assert "failed annotation " + "f" * 32 in out.err
    got = annotations(client, project)
    assert len(got) == len(judged)
    by_name = {a["name"]: a for a in got}
    tax = mast.load_taxonomy()
    for code, value in judged.items():
        note = by_name[f"MAST {code} {tax[code].name}"]
        assert note["result"]["score"] == (1.0 if value else 0.0)
        assert note["result"]["label"] == ("present" if value else "absent")
        assert note["annotator_kind"] == "CODE"  # the heuristic is rules, not an LLM
        finding = ann.findings.get(code)
        steps = [e.step_id for e in finding.evidence] if finding else []
        # On the span of the first evidence step, else the root span.
        expected = trace.step(steps[0]).metadata["span_id"] if steps else span_ids[0]
        assert note["span_id"] == expected, code
        assert note["metadata"]["step_ids"] == steps
        assert note["metadata"]["judge"]["model"] == "heuristic"
        assert note["metadata"]["judge"]["taxonomy"] == "MAST 1.0"
        if value:
            assert note["result"]["explanation"] == finding.rationale
            assert note["metadata"]["quote"] == finding.evidence[0].quote

    # A rerun updates in place: same count, same annotation ids.
    assert main(args) == 0
    again = annotations(client, project)
    assert sorted(a["id"] for a in again) == sorted(a["id"] for a in got)

    # Human labels from `mast label export` go out as HUMAN annotations beside the judge's.
    labels = tmp_path / "labels.csv"
    labels.write_text(f"trace_id,annotator,1.1,1.5,3.1\n{trace_id},alice,0,1,\n")
    assert main([*args, "--human", str(labels)]) == 0
    with_human = annotations(client, project)
    humans = [a for a in with_human if a["annotator_kind"] == "HUMAN"]
    assert len(with_human) == len(judged) + 2  # 3.1 is unknown: no score
    assert {a["name"].split()[1]: a["result"]["score"] for a in humans} == {"1.1": 0.0, "1.5": 1.0}
    assert all(a["metadata"]["labeller"] == "alice" for a in humans)


def test_a_trace_from_elsewhere_gets_no_phoenix_score(phoenix_server, tmp_path: Path) -> None:
    from mast.export import to_phoenix

    trace = mast.datasets.example_traces()[0]  # an AG2 file: no span ids anywhere
    ann = mast.Judge("heuristic").annotate(trace)
    report = to_phoenix([ann], [trace], base_url=phoenix_server.url)
    assert report.scores == [] and report.written == 0
    assert report.unattached == [trace.id]
