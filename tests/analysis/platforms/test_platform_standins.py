"""Langfuse and LangSmith exports and pulls through the vendors' own SDK clients, against the
local stand-ins of standins.py, which check every request against the documented shapes."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from standins import LangfuseStandIn, LangSmithStandIn

import mast
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector

PLATFORMS = Path(__file__).resolve().parents[2] / "fixtures" / "platforms"
SECRET = "sk-proj-4fQ9xT2mLr8ZkP1vW7aN3bC6dE0gH5jK"


def verdict(trace_id: str) -> Annotation:
    """Judged: 1.3 present (evidence s4, a rationale quoting a secret), 2.6 absent, 3.2
    unknown; the other modes unknown too."""
    return Annotation(
        trace_id=trace_id,
        status="ok",
        taxonomy="MAST 1.0",
        vector=FailureVector({"1.3": True, "2.6": False, "3.2": None}),
        findings={
            "1.3": Finding(
                code="1.3",
                present=True,
                evidence=[Evidence(step_id="s4", quote="convert_units")],
                rationale=f"the same call twice (the log shows {SECRET})",
            ),
            "2.6": Finding(code="2.6", present=False, rationale="actions follow the reasoning"),
        },
        judge={"provider": "openai", "model": "openai/gpt-4.1", "config_hash": "c0ffee"},
        created_at=datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc),
    )


@pytest.fixture
def langfuse_env(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("langfuse.api")
    server = LangfuseStandIn(
        observations=[
            json.loads(x)
            for x in (PLATFORMS / "langfuse_observations.jsonl").read_text().splitlines()
        ]
    )
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
    monkeypatch.setenv("LANGFUSE_HOST", server.url)
    yield server
    server.close()


def test_langfuse_scores_match_the_documented_shape_and_a_rerun_updates(
    langfuse_env: LangfuseStandIn, tmp_path: Path, capsys
) -> None:
    trace_file = PLATFORMS / "langfuse_trace.json"
    trace = mast.load_trace(trace_file)
    results = tmp_path / "results.jsonl"
    results.write_text(verdict(trace.id).model_dump_json() + "\n")
    args = ["export", "langfuse", str(results), "--traces", str(trace_file)]

    assert main([*args, "--dry-run", "--format", "json"]) == 0
    items = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [i["code"] for i in items] == ["1.3", "2.6"]  # 3.2 unknown: no score
    assert langfuse_env.requests == []  # a dry run sends nothing

    assert main(args) == 0
    assert langfuse_env.problems == []
    scores = list(langfuse_env.scores.values())
    assert len(scores) == 2 and langfuse_env.created == 2
    by_name = {s["name"]: s for s in scores}
    present = by_name["MAST 1.3 Step Repetition"]
    assert present["value"] == 1 and present["dataType"] == "BOOLEAN"
    assert present["traceId"] == trace.id
    assert present["observationId"] == trace.step("s4").metadata["observation_id"]
    assert present["id"] == items[0]["id"]  # the id the dry run announced
    assert SECRET not in json.dumps(present) and "[REDACTED:openai_key]" in present["comment"]
    assert present["metadata"]["judge"]["model"] == "openai/gpt-4.1"
    assert present["metadata"]["step_ids"] == ["s4"] and present["metadata"]["label"] == "present"
    absent = by_name["MAST 2.6 Reasoning-Action Mismatch"]
    assert absent["value"] == 0 and "observationId" not in absent  # no evidence: the trace

    assert main(args) == 0  # a rerun: same ids and timestamps, so Langfuse updates
    assert langfuse_env.created == 2 and langfuse_env.problems == []

    # Human labels: ANNOTATION scores, each with a BOOLEAN score config (created once).
    labels = tmp_path / "labels.csv"
    labels.write_text(f"trace_id,annotator,1.3,2.6\n{trace.id},alice,1,\n")
    assert main([*args, "--human", str(labels)]) == 0
    assert main([*args, "--human", str(labels)]) == 0
    assert langfuse_env.problems == []
    human = [s for s in langfuse_env.scores.values() if s["source"] == "ANNOTATION"]
    assert len(human) == 1 and human[0]["metadata"]["labeller"] == "alice"
    assert [c["name"] for c in langfuse_env.configs] == ["MAST 1.3 Step Repetition"]

    # --no-redact sends the rationale as the judge wrote it (same id: the score is updated).
    assert main([*args, "--no-redact"]) == 0
    assert SECRET in langfuse_env.scores[present["id"]]["comment"]


def test_langfuse_pull_pages_resumes_and_round_trips(
    langfuse_env: LangfuseStandIn, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "pulled.jsonl"
    assert main(["pull", "langfuse", "--out", str(out), "--limit", "5"]) == 0
    assert "pulled 1 trace(s)" in capsys.readouterr().out
    trace = mast.load_trace(out)
    reference = mast.load_trace(PLATFORMS / "langfuse_observations.jsonl")
    assert trace.id == reference.id
    assert [s.metadata["observation_id"] for s in trace.steps] == [
        s.metadata["observation_id"] for s in reference.steps
    ]
    assert main(["pull", "langfuse", "--out", str(out), "--limit", "5"]) == 0
    assert "pulled 0 trace(s)" in capsys.readouterr().out  # resumed: nothing fetched twice
    assert langfuse_env.problems == []


def test_langfuse_pull_follows_the_cursor(langfuse_env: LangfuseStandIn, tmp_path: Path) -> None:
    from mast.export import pull_langfuse

    report = pull_langfuse(tmp_path / "p.jsonl", page_size=2)
    # 7 observations of one trace, 2 per page: the trace is read through 4 pages.
    assert report.records == len(langfuse_env.observations) and report.traces == 1
    assert langfuse_env.page_size_seen.count(2) >= 4


@pytest.fixture
def langsmith_env(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("langsmith")
    text = (PLATFORMS / "langsmith_runs.jsonl").read_text()
    server = LangSmithStandIn(runs=[json.loads(x) for x in text.splitlines()])
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    yield server
    server.close()


def test_langsmith_feedback_matches_the_documented_shape_and_a_rerun_updates(
    langsmith_env: LangSmithStandIn, tmp_path: Path, capsys
) -> None:
    trace_file = PLATFORMS / "langsmith_run.json"
    trace = mast.load_trace(trace_file)
    results = tmp_path / "results.jsonl"
    results.write_text(verdict(trace.id).model_dump_json() + "\n")
    project = "11111111-2222-4333-8444-555555555555"
    args = [
        "export", "langsmith", str(results), "--traces", str(trace_file),
        "--endpoint", langsmith_env.url, "--api-key", langsmith_env.api_key,
        "--project-id", project,
    ]  # fmt: skip
    assert main([*args, "--dry-run"]) == 0
    assert langsmith_env.requests == []
    capsys.readouterr()

    assert main(args) == 0
    assert langsmith_env.problems == []
    feedback = {f["key"]: f for f in langsmith_env.feedback.values()}
    assert set(feedback) == {"MAST 1.3 Step Repetition", "MAST 2.6 Reasoning-Action Mismatch"}
    present = feedback["MAST 1.3 Step Repetition"]
    assert present["score"] == 1 and present["value"] == "present"
    assert present["run_id"] == trace.step("s4").metadata["run_id"]
    assert present["trace_id"] == trace.id and present["session_id"] == project
    assert present["feedback_source"]["type"] == "model"
    assert present["feedback_source"]["metadata"]["quote"] == "convert_units"
    assert SECRET not in json.dumps(present)
    absent = feedback["MAST 2.6 Reasoning-Action Mismatch"]
    assert absent["run_id"] == trace.id  # no evidence step: the root run

    assert main(args) == 0  # rerun: ids taken (409), so the same feedback is updated
    assert len(langsmith_env.feedback) == 2 and len(langsmith_env.patched) == 2
    assert langsmith_env.problems == []


def test_langsmith_pull_pages_keeps_run_ids_and_feeds_the_export(
    langsmith_env: LangSmithStandIn, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "pulled.jsonl"
    pull = ["pull", "langsmith", "--project", "agents", "--out", str(out)]
    pull += ["--endpoint", langsmith_env.url, "--api-key", langsmith_env.api_key]
    assert main(pull) == 0
    assert "pulled 1 trace(s)" in capsys.readouterr().out
    trace = mast.load_trace(out)
    reference = mast.load_trace(PLATFORMS / "langsmith_runs.jsonl")
    assert trace.id == reference.id
    assert [s.metadata["run_id"] for s in trace.steps] == [
        s.metadata["run_id"] for s in reference.steps
    ]
    assert trace.metadata["session_id"] == langsmith_env.project_id  # kept for the export
    assert any(q.get("cursor") for q in langsmith_env.queries)  # more than one page read
    assert main(pull) == 0
    assert "pulled 0 trace(s)" in capsys.readouterr().out  # resumed
    results = tmp_path / "results.jsonl"
    results.write_text(verdict(trace.id).model_dump_json() + "\n")
    export = ["export", "langsmith", str(results), "--traces", str(out)]
    export += ["--endpoint", langsmith_env.url, "--api-key", langsmith_env.api_key]
    assert main(export) == 0
    assert {f["session_id"] for f in langsmith_env.feedback.values()} == {langsmith_env.project_id}
    assert langsmith_env.problems == []


def test_failed_and_unknown_are_reported_not_written(tmp_path: Path) -> None:
    from mast.export import build_scores

    trace = mast.load_trace(PLATFORMS / "langfuse_trace.json")
    failed = Annotation(
        trace_id=trace.id, status="parse_error", error="unreadable", taxonomy="MAST 1.0",
        vector=FailureVector(), judge={"model": "m"},
    )  # fmt: skip
    report = build_scores([failed, verdict("not-a-known-trace")], [trace], "langfuse")
    assert report.scores == []
    assert report.failed == [(trace.id, "parse_error: unreadable")]
    assert report.unattached == ["not-a-known-trace"]


def test_ids_depend_on_the_record_key_only(tmp_path: Path) -> None:
    from mast.export import build_scores

    src = PLATFORMS / "langfuse_trace.json"
    trace = mast.load_trace(src)
    first = build_scores([verdict(trace.id)], [trace], "langfuse").scores
    again = build_scores([verdict(trace.id)], [trace], "langfuse").scores
    other = verdict(trace.id)
    other.judge["config_hash"] = "another"
    third = build_scores([other], [trace], "langfuse").scores
    assert [s.id for s in first] == [s.id for s in again]
    assert not {s.id for s in first} & {s.id for s in third}
    shutil.copy(src, tmp_path / "copy.json")  # the same trace from another file: same ids
    assert [
        s.id for s in build_scores([verdict(trace.id)], tmp_path / "copy.json", "langfuse").scores
    ] == [s.id for s in first]


def test_docstring_examples_run() -> None:
    import doctest

    from mast.analysis.platforms import pull, scores

    for module in (scores, pull):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_a_missing_sdk_names_the_package_and_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mast.errors import MissingDependencyError
    from mast.export import to_phoenix

    trace = mast.load_trace(PLATFORMS / "phoenix_spans.json")
    monkeypatch.setitem(sys.modules, "phoenix.client", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"arize-phoenix-client.*\[phoenix\]"):
        to_phoenix([verdict(trace.id)], [trace], base_url="http://127.0.0.1:9")


def test_a_pull_into_a_file_of_another_query_is_refused(tmp_path: Path) -> None:
    from mast.analysis.platforms.pull import PullWriter
    from mast.errors import MastError

    out = tmp_path / "p.jsonl"
    with PullWriter(out, platform="langfuse", query={"limit": 5}, trace_of=lambda r: r["t"]) as w:
        w.write_trace("a", [{"t": "a"}, {"t": "a"}])
        w.done("a")
        w.write_trace("b", [{"t": "b"}])  # a crash before done("b")
    with pytest.raises(MastError, match="other settings"):
        PullWriter(out, platform="langfuse", query={"limit": 9})
    with PullWriter(out, platform="langfuse", query={"limit": 5}, trace_of=lambda r: r["t"]):
        pass  # resuming drops the unfinished trace's lines
    assert [json.loads(x)["t"] for x in out.read_text().splitlines()] == ["a", "a"]
