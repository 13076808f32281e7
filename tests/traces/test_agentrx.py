"""load_agentrx on the copy of AgentRx's labelled runs bundled with mast (MIT)."""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest

import mast
from mast.errors import TraceFormatError
from mast.judge.attribution import normalize_agent
from mast.traces.agentrx import (
    AgentRxLabelWarning,
    agentrx_part,
    bundled_agentrx_path,
    is_agentrx,
    load_agentrx,
)

DATA = bundled_agentrx_path()


def _raw(part: str) -> list[dict[str, object]]:
    return json.loads((DATA / part / "ground_truth.json").read_text(encoding="utf-8"))


def test_every_run_loads_with_every_labelled_failure() -> None:
    runs = mast.datasets.load_agentrx()
    parts = collections.Counter(t.metadata["agentrx"]["part"] for t in runs)
    assert len(runs) == 37 and parts == {"magentic_one": 22, "tau_retail": 15}
    failures = [f for t in runs for f in t.metadata["agentrx"]["failures"]]
    assert len(failures) == 197  # 178 Magentic-One + 19 τ-bench
    # the same counts straight from the files
    raw = [f for part in ("magentic_one", "tau_retail") for r in _raw(part) for f in r["failures"]]
    assert len(raw) == len(failures)
    assert collections.Counter(f["category"] for f in failures) == {
        "1.0": 128, "2.0": 7, "3.0": 3, "4.0": 17, "5.0": 7, "6.0": 5, "7.0": 19, "8.0": 11,
    }  # fmt: skip
    # every run has its root cause, and it is one of its labelled failures
    for t in runs:
        root = t.metadata["agentrx"]["root_cause"]
        assert root is not None
        assert root["step_id"] in {f["step_id"] for f in t.metadata["agentrx"]["failures"]}
        assert (t.metadata["mistake_agent"], t.metadata["mistake_step_id"]) == (
            root["agent"],
            root["step_id"],
        )
        assert t.labels["agentrx"][root["category"]] is True
        assert t.outcome.value == "failure"
        assert not any(f["past_end"] for f in t.metadata["agentrx"]["failures"])
    assert sum(len(t.steps) for t in runs) == 1782


def test_step_numbers_are_one_based_against_the_histories() -> None:
    """The check the loader's numbering rests on (see mast.traces.agentrx's docstring)."""
    tau = load_agentrx(part="tau_retail")
    labels = [f for t in tau for f in t.metadata["agentrx"]["failures"]]
    steps = {t.id: {s.id: s for s in t.steps} for t in tau}
    by_run = [(t.id, f) for t in tau for f in t.metadata["agentrx"]["failures"]]
    hits = [f for tid, f in by_run if steps[tid][f["step_id"]].agent == f["agent"]]
    assert len(hits) == len(labels) == 19  # every label names the agent of message s<N>
    magentic = load_agentrx(part="magentic_one")
    same = shifted = 0
    for t in magentic:
        for f in t.metadata["agentrx"]["failures"]:
            n = f["step_number"]
            agent = normalize_agent(f["agent"])
            same += normalize_agent(t.steps[n - 1].agent) == agent
            shifted += n < len(t.steps) and normalize_agent(t.steps[n].agent) == agent
    assert (same, shifted) == (148, 31)


def test_task_expectations_stay_out_of_the_prompt() -> None:
    run = load_agentrx(part="tau_retail")[0]
    hidden = run.metadata["agentrx"]["task"]
    assert hidden["reward"] == 0.0 and hidden["expected_actions"][0]["name"]
    judge = mast.Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0, taxonomy="agentrx")
    prompt = judge.render(run)
    text = prompt.system + prompt.user
    assert "yusuf_rossi_9620" in text  # the run itself is shown (the assistant looked it up)
    for secret in ("You are Yusuf Rossi in 19122", "r_outputs", '"reward"', "expected_actions"):
        assert secret not in text, secret
    assert run.metadata["agentrx"]["failures"][0]["step_reason"] not in text
    # the tool call and its result are steps of their own
    assert run.steps[2].kind.value == "tool_call" and run.steps[3].kind.value == "tool_result"
    assert run.steps[2].metadata["call_id"] == run.steps[3].metadata["call_id"]


def test_format_detection_for_each_part_and_file(tmp_path: Path) -> None:
    assert agentrx_part(DATA / "magentic_one") == "magentic_one"
    assert agentrx_part(DATA / "tau_retail") == "tau_retail"
    assert agentrx_part(DATA) is None and is_agentrx(DATA)
    by_file = load_agentrx(DATA / "tau_retail" / "ground_truth.json")
    assert len(by_file) == 15 and {t.format for t in by_file} == {"agentrx"}
    assert len(load_agentrx(DATA / "magentic_one")) == 22
    assert not is_agentrx(tmp_path)
    with pytest.raises(TraceFormatError, match="no AgentRx data here"):
        load_agentrx(tmp_path)


def test_one_unreadable_run_does_not_lose_the_others(tmp_path: Path) -> None:
    part = tmp_path / "magentic_one"
    shutil.copytree(DATA / "magentic_one", part)
    victim = part / "trajectories" / "56137764-b4e0-45b8-9c52-1866420c3df5.json"
    victim.chmod(0o644)
    victim.write_text("{not json", encoding="utf-8")
    with pytest.warns(AgentRxLabelWarning, match="56137764.*skipped"):
        runs = load_agentrx(part)
    assert len(runs) == 21


def test_an_unknown_category_makes_absent_categories_unknown(tmp_path: Path) -> None:
    part = tmp_path / "tau_retail"
    shutil.copytree(DATA / "tau_retail", part)
    truth = part / "ground_truth.json"
    truth.chmod(0o644)
    records = json.loads(truth.read_text(encoding="utf-8"))
    records[0]["failures"][0]["failure_category"] = "Something Else"
    truth.write_text(json.dumps(records), encoding="utf-8")
    with pytest.warns(AgentRxLabelWarning, match="Something Else"):
        first = load_agentrx(part)[0]
    assert first.labels["agentrx"]["4.0"] is True  # the other failure's category is known
    assert first.labels["agentrx"]["1.0"] is None  # may be the unreadable one: unknown
