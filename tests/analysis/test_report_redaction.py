"""The report and the exports show trace text through the privacy stage: a secret in a trace
(or in what a judge wrote about it) is redacted unless the user asks for the raw text, and a
raw page says so."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import mast
from mast.analysis.export_tables import export_table
from mast.analysis.otel_export import evaluation_events
from mast.analysis.redaction import redact_annotation, shown_redactor
from mast.analysis.report import render_report
from mast.bulk.store import read_annotations
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector, Step, Trace

pytest.importorskip("matplotlib")

# Made up, but shaped like an OpenAI project key, which the default patterns know.
KEY = "sk-proj-" + "Q7x2Lm9Pz4Rt8Kw1Vb6N" * 2


def _leaky_trace() -> Trace:
    return Trace(
        id="leaky",
        task="Call the weather API.",
        steps=[
            Step.make(0, "Use the key from the environment.", agent="user"),
            Step.make(1, f"export OPENAI_API_KEY={KEY} && curl api", agent="coder"),
        ],
    )


def _leaky_annotation() -> Annotation:
    # What a judge run without redaction could write: the key quoted back in every field.
    finding = Finding(
        code="1.1",
        present=True,
        evidence=[Evidence(step_id="s2", quote=f"OPENAI_API_KEY={KEY}")],
        rationale=f"The coder pasted {KEY} into the command.",
    )
    vector = FailureVector({"1.1": True}, codes=mast.load_taxonomy().codes)
    return Annotation(
        trace_id="leaky",
        status="ok",
        taxonomy="mast",
        vector=vector,
        findings={"1.1": finding},
        summary=f"Leaks {KEY}.",
        problems=[f"note about {KEY}"],
        decisive_error=DecisiveError(agent="coder", step_id="s2", reason=f"printed {KEY}"),
    )


def test_mast_report_redacts_by_default_and_says_so_without(tmp_path: Path) -> None:
    traces = tmp_path / "leaky.json"
    traces.write_text(_leaky_trace().model_dump_json(), encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["annotate", str(traces), "--model", "heuristic", "--out", str(results)]) == 0
    page = tmp_path / "page.html"
    common = ["report", str(results), "--traces", str(traces), "--bootstrap", "0"]
    assert main([*common, "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert KEY not in html and KEY[8:20] not in html
    assert "[REDACTED:" in html  # the step is shown, with the key replaced
    assert 'id="redacted"' in html and 'id="not-redacted"' not in html

    raw = tmp_path / "raw.html"
    assert main([*common, "--no-redact", "--out", str(raw)]) == 0
    html = raw.read_text(encoding="utf-8")
    assert KEY in html
    warning = html[html.index('id="not-redacted"') :].split("</p>")[0]
    assert "Not redacted" in warning and "--no-redact" in warning


def test_what_a_judge_wrote_about_the_trace_is_redacted_too() -> None:
    ann = _leaky_annotation()
    html = render_report({"run": [ann]}, traces=[_leaky_trace()], bootstrap=0)
    assert KEY not in html
    raw = render_report({"run": [ann]}, traces=[_leaky_trace()], bootstrap=0, redact=False)
    assert raw.count(KEY) >= 3  # step, summary, rationale, quote, decisive reason


def test_redact_annotation_covers_every_free_text_field() -> None:
    ann = _leaky_annotation()
    shown = redact_annotation(ann, shown_redactor(True))
    assert KEY not in shown.model_dump_json()
    assert ann.summary is not None and KEY in ann.summary  # the input is not changed
    # Labels, ids and numbers are untouched.
    assert shown.vector["1.1"] is True and shown.findings["1.1"].evidence[0].step_id == "s2"
    assert redact_annotation(ann, shown_redactor(False)) is ann
    clean = ann.model_copy(update={"summary": "nothing", "findings": {}, "problems": []})
    clean = clean.model_copy(update={"decisive_error": None})
    assert redact_annotation(clean, shown_redactor(True)) is clean


def test_table_exports_redact_unless_told(tmp_path: Path) -> None:
    ann = _leaky_annotation().model_copy(update={"status": "error", "error": f"HTTP 500 {KEY}"})
    trace = _leaky_trace().model_copy(update={"system": f"bot {KEY}"})
    out = tmp_path / "results.csv"
    export_table({"run": [ann]}, out, traces=[trace])
    text = out.read_text(encoding="utf-8")
    assert KEY not in text and "[REDACTED:" in text
    with out.open(encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["trace_id"] == "leaky" and row["status"] == "error"
    export_table({"run": [ann]}, out, traces=[trace], redact=False)
    assert KEY in out.read_text(encoding="utf-8")


def test_otel_explanations_redact_unless_told() -> None:
    ann = _leaky_annotation()
    [event] = [e for e in evaluation_events([ann]) if e.attributes["mast.mode.code"] == "1.1"]
    assert KEY not in event.attributes["gen_ai.evaluation.explanation"]
    raw = evaluation_events([ann], redact=False)
    assert any(KEY in str(e.attributes.get("gen_ai.evaluation.explanation")) for e in raw)


def test_results_file_round_trip_keeps_raw_text(tmp_path: Path) -> None:
    # Redaction is of what is shown: the results file itself is not rewritten.
    from mast.bulk.store import ResultsStore

    path = tmp_path / "r.jsonl"
    with ResultsStore(path, fsync=False) as store:
        store.append(_leaky_annotation())
    render_report(path, bootstrap=0)
    [back] = read_annotations(path)
    assert back.summary is not None and KEY in back.summary
