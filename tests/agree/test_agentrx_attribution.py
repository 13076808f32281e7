"""``mast agree --attribution`` on AgentRx with scripted judge answers equals the hand count
in tests/fixtures/agentrx/scripted.yaml (root cause and any-failure, overall and per part)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mast.bulk.store import ResultsStore
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.traces.agentrx import bundled_agentrx_path
from mast.traces.model import FailureVector

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "agentrx" / "scripted.yaml"


def _results(path: Path, runs: dict[str, Any]) -> None:
    store = ResultsStore(path)
    for trace_id, case in runs.items():
        answer = case["answer"]
        store.append(
            Annotation(
                trace_id=trace_id,
                status="ok",
                taxonomy="AgentRx 1.0",
                vector=FailureVector(),
                decisive_error=None
                if answer is None
                else DecisiveError(
                    agent=answer["agent"], step_id=answer["step"], modes=answer.get("modes", [])
                ),
            )
        )
    store.close()


@pytest.mark.parametrize("reference", ["agentrx", "folder"])
def test_scripted_answers_give_the_hand_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: str
) -> None:
    script = yaml.safe_load(SCRIPT.read_text(encoding="utf-8"))
    results = tmp_path / "results.jsonl"
    _results(results, script["runs"])
    ref = "agentrx" if reference == "agentrx" else str(bundled_agentrx_path())
    argv = ["agree", "--attribution", "--reference", ref, "--candidate", str(results)]
    assert main([*argv, "--format", "json", "--bootstrap", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    groups = {g["group"]: g["metrics"] for g in data["groups"] if g["by"] == "subset"}
    for where, want in script["expected"].items():
        got = data["overall"] if where == "all" else groups[where]
        for metric, (correct, answered, total) in want.items():
            m = got[metric]
            assert [m["correct"], m["answered"], m["total"]] == [correct, answered, total], (
                where,
                metric,
            )
    assert len(data["not_predicted"]) == 37 - 9  # labelled runs without a record
    assert data["excluded_past_end"] == []
    # the plain-text table names the AgentRx measures
    assert main([*argv, "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    assert "any failure" in text and "any ±1" in text and "subset=tau_retail" in text
