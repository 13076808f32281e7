"""``mast demo``: bundled examples, heuristic judge offline, or an LLM via the fake server."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from fake_llm_server import FakeLLMServer, Reply
from mast.cli.demo import human_reference, register, run_demo
from mast.taxonomy import load_taxonomy
from mast.traces.model import FailureVector, LabelSource, Trace

CODES = load_taxonomy().codes


def test_offline_demo_on_the_bundled_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = io.StringIO()
    report = run_demo(out=out)
    text = out.getvalue()
    assert len(report.traces) == len(report.annotations) >= 7
    assert all(a.status == "ok" for a in report.annotations)
    for trace in report.traces:
        assert trace.id[:20] in text
    # Every (trace, mode) pair is counted exactly once, and unknown is its own column.
    assert report.agree + report.disagree + report.unknown == len(report.traces) * len(CODES)
    assert report.unknown > 0  # the heuristic leaves modes it cannot see unknown
    for code in CODES:
        assert f"\n{code:<5} {load_taxonomy()[code].name}" in text
    assert "Cohen's kappa" in text and "baseline" in text


def test_human_reference_is_a_majority_and_ties_are_unknown() -> None:
    vec = FailureVector.from_labels
    trace = Trace(
        id="t",
        labels={
            "a": vec({"1.1": 1, "1.2": 1, "1.3": None}),
            "b": vec({"1.1": 1, "1.2": 0, "1.3": None}),
            "c": vec({"1.1": 0, "1.2": None, "1.3": None}),
            "o1": vec({"1.1": 0, "1.2": 0, "1.3": 1}),
        },
        label_sources={"o1": LabelSource(annotator="o1", kind="llm")},
    )
    assert human_reference(trace) == {"1.1": True, "1.2": None, "1.3": None}


def test_demo_with_an_llm_judge(fake_llm: FakeLLMServer) -> None:
    answer = {
        "summary": "s",
        "modes": {
            c: {"evidence": [], "rationale": "", "present": c == "1.5", "confidence": 0.5}
            for c in CODES
        },
        "task_completed": True,
    }
    fake_llm.default = Reply.text(json.dumps(answer), usage={"input": 1000, "output": 100})
    out = io.StringIO()
    report = run_demo(
        "openai/gpt-4.1", out=out, base_url=fake_llm.openai_base_url, api_key="sk-demo", fewshot=1
    )
    assert len(fake_llm.requests) == len(report.traces)
    assert report.unknown < len(report.traces) * len(CODES) / 2
    text = out.getvalue()
    assert "Cost: $" in text and "sk-demo" not in text


def test_demo_subcommand_registration(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="mast")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["demo"])
    assert args.model == "heuristic"
    assert args.handler(args) == 0
    assert "mast demo: judge 'heuristic'" in capsys.readouterr().out
