"""ITBench SRE: ground truth (real files, Apache-2.0), diagnosis scoring, run folders
(hand-written sessions), the SRE taxonomy, and a failure analysis by outcome end to end."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import mast
from mast.errors import GroundTruthError
from mast.traces import itbench
from mast.traces.itbench import (
    find_runs,
    is_run_folder,
    load_ground_truth,
    load_run,
    load_runs,
    read_diagnosis,
    score_diagnosis,
)
from mast.traces.model import Outcome, StepKind


@pytest.fixture
def gt_dir(fixtures: Path) -> Path:
    return fixtures / "itbench" / "ground_truth"


@pytest.fixture
def runs(fixtures: Path) -> Path:
    return fixtures / "itbench" / "runs"


def cause(name: str, flag: object = True) -> dict[str, object]:
    return {"name": name, "contributing_factor": flag, "reasoning": "", "evidence": ""}


# --- ground truth -----------------------------------------------------------------------------


def test_ground_truth_wrapped_shape(gt_dir: Path) -> None:
    gt = load_ground_truth(gt_dir / "scenario_1" / "groundtruth_v1.yaml")
    assert gt.shape == "wrapped" and gt.name == "scenario-1"
    assert [g.id for g in gt.root_causes] == ["load-generator-pod-1"]
    assert gt.root_causes[0].filters == ("load-generator-.*",)
    assert gt.equivalents("load-generator-pod-1") == {
        "load-generator-service-1",
        "load-generator-pod-1",
        "frontend-proxy-service-1",
        "frontend-proxy-pod-1",
    }
    assert gt.equivalents("accounting-service-1") == {"accounting-service-1"}


def test_ground_truth_plain_shape(gt_dir: Path) -> None:
    gt = load_ground_truth(gt_dir / "scenario_2" / "groundtruth_v1.yaml")
    assert gt.shape == "plain" and gt.aliases == ()
    (root,) = gt.root_causes
    assert (root.id, root.kind, root.name, root.filters) == (
        "flagd-config",
        "ConfigMap",
        "flagd-config",
        (),
    )
    assert len(gt.groups) == 5


@pytest.mark.parametrize("scenario", ["scenario_1", "scenario_2"])
def test_ground_truth_entity_shape(gt_dir: Path, scenario: str) -> None:
    gt = load_ground_truth(gt_dir / scenario / "groundtruth.yaml")
    assert gt.shape == "entities"
    (root,) = gt.root_causes
    assert (root.kind, root.namespace, root.name) == ("ConfigMap", "otel-demo", "flagd-config")


def test_ground_truth_errors(tmp_path: Path, gt_dir: Path) -> None:
    path = tmp_path / "gt.yaml"
    path.write_text("groups:\n  - id: a\n    kind: Pod\n    filter: ['x']\n")
    with pytest.raises(GroundTruthError, match="no root cause to score against"):
        load_ground_truth(path)
    path.write_text(
        "groups:\n  - id: a\n    kind: Pod\n    root_cause: true\n    filter: ['cart(']\n"
    )
    with pytest.raises(GroundTruthError, match="group 'a' has an invalid filter regex 'cart\\('"):
        load_ground_truth(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(GroundTruthError, match="expected a mapping"):
        load_ground_truth(path)
    with pytest.raises(GroundTruthError, match="cannot read ground truth"):
        load_ground_truth(tmp_path / "missing.yaml")
    # an index file is not ground truth
    with pytest.raises(GroundTruthError, match="no root cause"):
        load_ground_truth(gt_dir / "scenario_1" / "index_1.json")


# --- scoring ----------------------------------------------------------------------------------


def test_score_exact_kind_and_name(gt_dir: Path) -> None:
    gt = gt_dir / "scenario_2" / "groundtruth_v1.yaml"
    # the diagnosis of a real ITBench run of this scenario (shape and names as written)
    s = score_diagnosis(
        {
            "entities": [
                cause("otel-demo/ConfigMap/flagd-config"),
                cause("otel-demo/Deployment/flagd"),
                cause("otel-demo/Deployment/cart", False),
            ]
        },
        gt,
    )
    assert (s.recall, s.precision, s.score) == (1.0, 0.5, 0.5)
    assert s.true_positives == ["otel-demo/ConfigMap/flagd-config"]
    assert s.false_positives == ["otel-demo/Deployment/flagd"]
    assert s.predicted == ["otel-demo/ConfigMap/flagd-config", "otel-demo/Deployment/flagd"]
    miss = score_diagnosis({"entities": [cause("otel-demo/Deployment/flagd-config")]}, gt)
    assert (miss.recall, miss.precision, miss.score, miss.missed) == (
        0.0,
        0.0,
        0.0,
        ["flagd-config"],
    )
    other_ns = score_diagnosis({"entities": [cause("default/ConfigMap/flagd-config")]}, gt)
    assert other_ns.recall == 0.0
    case = score_diagnosis({"entities": [cause("otel-demo/configmap/FLAGD-CONFIG")]}, gt)
    assert case.recall == 1.0


def test_score_filters_and_aliases(gt_dir: Path) -> None:
    gt = load_ground_truth(gt_dir / "scenario_1" / "groundtruth_v1.yaml")
    pod = score_diagnosis({"entities": [cause("otel-demo/Pod/load-generator-6d8f9c7b5-x2k4q")]}, gt)
    assert pod.recall == 1.0 and pod.precision == 1.0 and pod.score == 1.0
    wrong_kind = score_diagnosis({"entities": [cause("otel-demo/Deployment/load-generator")]}, gt)
    assert wrong_kind.recall == 0.0
    # aliased with the root cause: counts as finding it
    alias = score_diagnosis({"entities": [cause("otel-demo/Service/frontend-proxy")]}, gt)
    assert alias.recall == 1.0 and alias.found == ["load-generator-pod-1"]
    # `frontend-proxy\b` must match the whole name, not a prefix of another service
    prefix = score_diagnosis({"entities": [cause("otel-demo/Service/frontend-proxy-v2")]}, gt)
    assert prefix.recall == 0.0
    unrelated = score_diagnosis({"entities": [cause("otel-demo/Service/accounting")]}, gt)
    assert (unrelated.recall, unrelated.precision) == (0.0, 0.0)


def test_score_odd_but_real_diagnoses(gt_dir: Path) -> None:
    gt = gt_dir / "scenario_2" / "groundtruth.yaml"  # entity shape
    s = score_diagnosis(
        {
            "entities": [
                {"name": "otel-demo/ConfigMap/flagd-config (cartFailure on)"},
                {"name": "flagd-config", "contributing_factor": True},
                "not an object",
            ]
        },
        gt,
    )
    assert s.recall == 1.0 and s.precision == 0.5
    assert any("no contributing_factor" in n for n in s.notes)
    assert any("has no Kind" in n for n in s.notes)
    assert any("not an object" in n for n in s.notes)
    split = score_diagnosis(
        {
            "entities": [
                {
                    "name": "flagd-config",
                    "kind": "ConfigMap",
                    "namespace": "otel-demo",
                    "contributing_factor": "true",
                }
            ]
        },
        gt,
    )
    assert split.recall == 1.0
    none = score_diagnosis({"entities": [cause("otel-demo/Deployment/cart", False)]}, gt)
    assert (none.recall, none.precision, none.score) == (0.0, None, 0.0)


def test_read_diagnosis_quirks(tmp_path: Path) -> None:
    body = {"entities": [cause("otel-demo/ConfigMap/flagd-config")]}
    path = tmp_path / "agent_output.json"
    path.write_text(json.dumps("```json\n" + json.dumps(body) + "\n```"))
    assert read_diagnosis(path) == (body, None)
    path.write_text("Here is the diagnosis:\n```json\n" + json.dumps(body) + "\n```\n")
    assert read_diagnosis(path) == (body, None)
    path.write_text('{"entities": [')
    assert read_diagnosis(path) == (None, "diagnosis agent_output.json is not valid JSON")
    path.write_text('{"root_cause": "cart"}')
    assert read_diagnosis(path) == (None, "diagnosis agent_output.json has no 'entities' list")


# --- run folders ------------------------------------------------------------------------------


def test_load_traces_reads_each_trial_once_with_outcomes(runs: Path) -> None:
    traces = list(mast.load_traces(runs))
    assert [(t.id, t.outcome) for t in traces] == [
        ("itbench/Scenario-1/1", Outcome.SUCCESS),
        ("itbench/Scenario-1/2", Outcome.FAILURE),
        ("itbench/Scenario-2/1", Outcome.SUCCESS),
        ("itbench/Scenario-2/2", Outcome.FAILURE),
        ("itbench/Scenario-2/3", Outcome.FAILURE),
    ]
    by_id = {t.id: t for t in traces}
    t = by_id["itbench/Scenario-2/1"]
    assert t.format == "itbench" and t.benchmark == "ITBench SRE"
    assert (t.metadata["scenario"], t.metadata["scenario_id"], t.metadata["trial"]) == (
        "Scenario-2",
        "2",
        "1",
    )
    assert t.model == t.metadata["model"] == "gpt-oss-120b"
    assert t.metadata["itbench_score"]["recall"] == 1.0
    assert t.metadata["success_rule"] == "recall == 1"
    assert t.metadata["ground_truth_file"].endswith("Scenario-2/ground_truth.yaml")
    assert t.task.startswith("Investigate the incident")
    failed = by_id["itbench/Scenario-2/2"]
    assert failed.metadata["itbench_score"]["missed"] == ["flagd-config"]
    assert failed.metadata["outcome_reason"] == "recall 0.00, precision 0.00; missed flagd-config"


def test_missing_diagnosis_is_a_failure_with_its_reason(runs: Path) -> None:
    trace = mast.load_trace(runs / "Scenario-2" / "3")
    assert trace.outcome is Outcome.FAILURE
    assert trace.metadata["outcome_reason"] == "no diagnosis: agent_output.json not found"
    assert "itbench_score" not in trace.metadata
    assert trace.model == "qwen3-coder-30b"
    assert trace.steps and trace.steps[-1].kind is StepKind.LOG  # the cut-off last line


def test_resumed_sessions_merge_in_order_with_instructions_once(runs: Path) -> None:
    trace = mast.load_trace(runs / "Scenario-1" / "1")
    assert [s["id"] for s in trace.metadata["sessions"]] == [
        "019bc310-5622-7441-b030-3a973427f428",
        "019bc313-2cee-7763-b8b7-cdeaeeeb2319",
    ]
    boundaries = [s for s in trace.steps if s.metadata.get("boundary")]
    assert [b.content.split(":")[0] for b in boundaries] == ["[session 1 of 2", "[session 2 of 2"]
    instructions = trace.steps[1].content
    assert instructions.startswith("You are an SRE agent")
    assert [s.content for s in trace.steps].count(instructions) == 1
    refs = [s for s in trace.steps if "repeat_of" in s.metadata]
    for ref in refs:  # every reference points at a step that holds the full text
        target = trace.step(ref.metadata["repeat_of"])
        assert "repeat_of" not in target.metadata and len(target.content) > len(ref.content)
    assert trace.metadata["deduplicated_instructions"]["total"] >= len(refs) >= 3
    assert [s.id for s in trace.steps] == [f"s{i}" for i in range(1, len(trace.steps) + 1)]
    assert all("session_file" in s.metadata for s in trace.steps)
    nudge = next(s for s in trace.steps if s.content.startswith("I don't see agent_output.json"))
    assert nudge.role == "user" and nudge.index > boundaries[1].index
    assert trace.metadata["diagnosis_file"] == "outputs/agent_output.json"


def test_exec_capture_and_fenced_diagnosis(runs: Path) -> None:
    trace = mast.load_trace(runs / "Scenario-1" / "2")
    assert trace.outcome is Outcome.FAILURE
    assert trace.metadata["sessions"][0]["format"] == "codex-exec"
    assert trace.metadata["itbench_score"]["false_positives"] == ["otel-demo/Service/accounting"]
    assert trace.steps[0].content == "Reading prompt from stdin..."


def test_explicit_ground_truth_and_success_rule(runs: Path, gt_dir: Path) -> None:
    folder = runs / "Scenario-2" / "1"
    entity_gt = gt_dir / "scenario_2" / "groundtruth.yaml"
    trace = load_run(folder, ground_truth=entity_gt, success="exact")
    assert trace.outcome is Outcome.SUCCESS and trace.metadata["ground_truth_file"] == str(
        entity_gt
    )
    strict = load_run(
        runs / "Scenario-1" / "1", success=lambda s: s.score == 1.0 and len(s.predicted) > 1
    )
    assert strict.outcome is Outcome.FAILURE and strict.metadata["success_rule"] == "<lambda>"
    with pytest.raises(ValueError, match="success must be"):
        load_run(folder, success="precision")  # type: ignore[arg-type]
    assert [t.id for t in load_runs(runs / "Scenario-2")] == [
        "itbench/Scenario-2/1",
        "itbench/Scenario-2/2",
        "itbench/Scenario-2/3",
    ]


def test_detection_rule(tmp_path: Path, runs: Path, fixtures: Path) -> None:
    assert is_run_folder(runs / "Scenario-2" / "3")  # session + ground truth in the parent
    assert not is_run_folder(runs / "Scenario-2")  # the incident folder
    assert not is_run_folder(runs / "Scenario-2" / "1" / "agent_output.json")
    assert find_runs(runs / "Scenario-1") == [runs / "Scenario-1" / "1", runs / "Scenario-1" / "2"]
    # a session with neither diagnosis nor ground truth is an ordinary trace file
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(runs / "Scenario-2" / "3" / "session.jsonl", plain / "session.jsonl")
    assert not is_run_folder(plain)
    (trace,) = mast.load_traces(plain)
    assert trace.format == "codex" and trace.id == "019bc27d-0c11-7a20-9d0e-5be2f1c3aa01"
    with pytest.raises(mast.TraceFormatError, match="is a folder, not a trace file"):
        mast.load_trace(plain)
    with pytest.raises(mast.TraceFormatError, match="is a folder"):
        mast.load_trace(runs / "Scenario-2")
    # naming another format turns run detection off: files are read one by one
    problems: list[mast.TraceFormatError] = []
    names = sorted(
        Path(t.source).name
        for t in mast.load_traces(
            runs / "Scenario-2", format="codex", on_error="skip", errors=problems
        )
    )
    assert names == [
        "rollout-2026-01-15T17-50-01-019bc26a-8a6c-7f43-8605-0aa1c35bd7f8.jsonl",
        "session.jsonl",
        "session.jsonl",
    ]
    assert sorted(Path(e.path).name for e in problems) == ["agent_output.json", "agent_output.json"]
    with pytest.raises(mast.TraceFormatError, match="reads trial folders, not files"):
        mast.load_trace(runs / "Scenario-2" / "3" / "session.jsonl", format="itbench")


def test_no_ground_truth_leaves_the_outcome_unknown(tmp_path: Path, runs: Path) -> None:
    trial = tmp_path / "incident-7" / "1"
    shutil.copytree(runs / "Scenario-2" / "1", trial)
    trace = mast.load_trace(trial)
    assert trace.outcome is Outcome.UNKNOWN
    assert trace.metadata["outcome_reason"].startswith("no ground truth")
    assert trace.metadata["scenario_id"] == "7"


def test_broken_ground_truth_is_one_error_not_a_lost_folder(tmp_path: Path, runs: Path) -> None:
    shutil.copytree(runs, tmp_path / "runs")
    (tmp_path / "runs" / "Scenario-1" / "groundtruth.yaml").write_text("groups: [\n")
    errors: list[mast.TraceFormatError] = []
    traces = list(mast.load_traces(tmp_path / "runs", on_error="skip", errors=errors))
    assert [t.id for t in traces] == [
        "itbench/Scenario-2/1",
        "itbench/Scenario-2/2",
        "itbench/Scenario-2/3",
    ]
    assert len(errors) == 2 and all("not valid YAML" in str(e) for e in errors)
    assert str(errors[0]).startswith(str(tmp_path / "runs" / "Scenario-1" / "1"))


# --- SRE taxonomy -----------------------------------------------------------------------------


def test_sre_taxonomy_by_name_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sre, final = mast.load_taxonomy("sre"), mast.load_taxonomy()
    assert sre.name == "MAST-SRE" and sre.codes == final.codes
    for mode in final:
        assert (sre[mode.code].name, sre[mode.code].category, sre[mode.code].stage) == (
            mode.name,
            mode.category,
            mode.stage,
        )
        assert sre[mode.code].definition != mode.definition
        assert sre[mode.code].look_for and sre[mode.code].not_this
    assert "without checking it" in sre["3.2"].definition  # pinned: 3.2 = verification missing
    assert sre.code_for_name("Lack of critical verification") == "3.2"
    assert (
        mast.load_taxonomy(
            "taxonomy/sre.yaml"
            if Path("taxonomy/sre.yaml").exists()
            else Path(__file__).parents[2] / "taxonomy" / "sre.yaml"
        )
        == sre
    )
    assert mast.load_taxonomy("mast") == final
    with pytest.raises(mast.TaxonomyError, match=r"no bundled taxonomy 'sre2'.*'mast', 'sre'"):
        mast.load_taxonomy("sre2")
    # an existing file of that bare name wins over the bundled one
    monkeypatch.chdir(tmp_path)
    text = (Path(__file__).parents[2] / "taxonomy" / "sre.yaml").read_text()
    Path("sre").write_text(text.replace("name: MAST-SRE", "name: My-SRE"))
    assert mast.load_taxonomy("sre").name == "My-SRE"


# --- failure analysis by outcome, end to end --------------------------------------------------


def test_failure_analysis_by_outcome_with_the_heuristic_judge(runs: Path) -> None:
    import pandas as pd

    from mast.judge.heuristic import heuristic_verdict

    tax = mast.load_taxonomy("sre")
    rows = []
    for trace in mast.load_traces(runs):
        verdict = heuristic_verdict(trace, tax)
        assert list(verdict.vector) == tax.codes
        for finding in verdict.findings.values():  # evidence cites steps that exist
            for evidence in finding.evidence:
                trace.step(evidence.step_id)
        rows.append(
            {"trace_id": trace.id, "outcome": trace.outcome.value, **verdict.vector.to_dict()}
        )
    frame = pd.DataFrame(rows).set_index("trace_id")
    codes = tax.codes
    # unknown stays unknown: None becomes NaN and is left out of the rates, never counted as "no"
    values = frame[codes].astype("float")
    values["outcome"] = frame["outcome"]
    rates = values.groupby("outcome")[codes].mean()
    known = values.groupby("outcome")[codes].count()
    assert sorted(rates.index) == ["failure", "success"]
    assert frame["outcome"].value_counts().to_dict() == {"failure": 3, "success": 2}
    for outcome in ("success", "failure"):
        subset = [r for r in rows if r["outcome"] == outcome]
        for code in codes:
            answered = [r[code] for r in subset if r[code] is not None]
            assert known.loc[outcome, code] == len(answered)
            if answered:
                assert rates.loc[outcome, code] == pytest.approx(sum(answered) / len(answered))
            else:
                assert math.isnan(rates.loc[outcome, code])
    # the rules judge only some modes; the rest are unknown for every run
    assert known.loc["success", "2.2"] == known.loc["failure", "2.2"] == 0
    assert known[["1.3", "2.1"]].to_numpy().sum() > 0


def test_docstring_examples_run() -> None:
    import doctest

    from mast.traces.loaders import _session

    for module in (mast.traces.itbench, _session):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_one_call_reads_every_kind_of_source(runs: Path, fixtures: Path) -> None:
    traces = list(
        mast.load_traces(
            [
                fixtures / "codex" / "exec_stream.jsonl",
                fixtures / "claude_code" / "5c1d3f7e-2a4b-4c6d-8e9f-0a1b2c3d4e5f.jsonl",
                runs / "Scenario-2" / "1",
            ]
        )
    )
    assert [t.format for t in traces] == ["codex-exec", "claude-code", "itbench"]


# --- trials of several sessions (issue 32 item 3) -----------------------------------------------

_DIAG = "rollout-2026-01-15T17-50-01-019bc26a-8a6c-7f43-8605-0aa1c35bd7f8.jsonl"


def _session(text: str, *, model: str, session: str, hour: str, write: bool) -> str:
    """A copy of a real-shaped session with another model, id and start time; without
    ``write`` its apply_patch call (the one writing agent_output.json) is left out."""
    lines = text.splitlines(keepends=True)
    if not write:
        lines = [line for line in lines if "apply_patch" not in line]
    out = "".join(lines).replace("gpt-oss-120b", model)
    out = out.replace("019bc26a-8a6c-7f43-8605-0aa1c35bd7f8", session)
    return out.replace("2026-01-15T17:", f"2026-01-15T{hour}:")


def _trial(tmp_path: Path, runs: Path, writers: tuple[bool, bool, bool]) -> Path:
    source = runs / "Scenario-2" / "1"
    trial = tmp_path / "Scenario-2" / "9"
    (trial / "sessions").mkdir(parents=True)
    shutil.copy(source / "agent_output.json", trial / "agent_output.json")
    shutil.copy(runs / "Scenario-2" / "ground_truth.yaml", tmp_path / "Scenario-2")
    diag = next(source.rglob(_DIAG)).read_text(encoding="utf-8")
    layout = Path(__file__).resolve().parents[1] / "fixtures" / "itbench_layout"
    check = next(layout.rglob("rollout-*-019bc270-*.jsonl")).read_text(encoding="utf-8")
    sessions = [
        _session(
            diag,
            model="gpt-oss-120b",
            session="019c0000-0000-7000-8000-00000000000a",
            hour="15",
            write=writers[0],
        ),
        _session(
            diag,
            model="qwen3-coder-30b",
            session="019c0000-0000-7000-8000-00000000000b",
            hour="16",
            write=writers[1],
        ),
    ]
    for k, text in enumerate(sessions):
        (trial / "sessions" / f"s{k}.jsonl").write_text(text, encoding="utf-8")
    remediation = check.replace("checking a diagnosis written earlier", "planning a remediation")
    if writers[2]:
        remediation = remediation.replace(
            "jq '.entities[] | select(.contributing_factor) | .name' agent_output.json",
            "jq . plan.json > agent_output.json",
        )
    (trial / "sessions" / "s2.jsonl").write_text(remediation, encoding="utf-8")
    return trial


def test_a_trial_of_several_tasks_is_one_trace_per_task_scored_where_tied(
    tmp_path: Path, runs: Path
) -> None:
    trial = _trial(tmp_path, runs, (True, False, False))
    traces = list(mast.load_traces(trial))
    assert [t.id for t in traces] == [f"itbench/Scenario-2/9/task-{k}" for k in (1, 2, 3)]
    assert [t.model for t in traces] == ["gpt-oss-120b", "qwen3-coder-30b", "gpt-5-codex"]
    assert [t.task.split()[0] for t in traces] == ["Investigate", "Investigate", "Check"]
    scored, other, plan = traces
    assert scored.outcome is Outcome.SUCCESS and scored.metadata["itbench_score"]["recall"] == 1.0
    assert scored.metadata["scored_output"].startswith("task 1 of 3 writes agent_output.json")
    assert scored.metadata["outcome_field"] == "itbench_score"
    for trace in (other, plan):  # they did not write what was scored: no score, and why
        assert trace.outcome is Outcome.UNKNOWN and "itbench_score" not in trace.metadata
        assert "task 1 of 3 writes agent_output.json" in trace.metadata["outcome_reason"]
    assert sum(len(t.steps) for t in traces) == sum(
        s["steps"] for t in traces for s in t.metadata["sessions"]
    )
    with pytest.raises(mast.TraceFormatError, match="the trial holds 3 tasks"):
        mast.load_trace(trial)
    assert [t.id for t in itbench.load_trial(trial)] == [t.id for t in traces]


@pytest.mark.parametrize("writers", [(False, False, False), (True, False, True)])
def test_a_scored_output_no_single_session_wrote_scores_none(
    tmp_path: Path, runs: Path, writers: tuple[bool, bool, bool]
) -> None:
    traces = list(mast.load_traces(_trial(tmp_path, runs, writers)))
    assert len(traces) == 3
    for trace in traces:
        assert trace.outcome is Outcome.UNKNOWN and "itbench_score" not in trace.metadata
        reason = trace.metadata["outcome_reason"]
        assert "cannot be tied to one session" in reason, reason
    why = "none of its 3 tasks" if not any(writers) else "tasks 1, 3 of 3 all write"
    assert why in traces[0].metadata["outcome_reason"]
