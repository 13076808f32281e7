"""Which agents start failures: counts and shares by agent and by mode."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import mast
import mast.analysis.attribution
from mast.bulk.store import ResultsStore
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.judge.verdict import Finding
from mast.traces.model import FailureVector


def ann(
    tid: str,
    error: DecisiveError | None,
    modes: dict[str, str | None] | None = None,
    status: str = "ok",
) -> Annotation:
    findings = {
        code: Finding(code=code, present=True, first_step="s2", agent=agent)
        for code, agent in (modes or {}).items()
    }
    return Annotation(
        trace_id=tid,
        status=status,  # type: ignore[arg-type]
        taxonomy="MAST 1.0",
        vector=FailureVector({code: True for code in findings}),
        findings=findings,
        decisive_error=error,
    )


ANNOTATIONS = [
    ann("a", DecisiveError(agent="Orchestrator (thought)", modes=["3.2"]), {"3.2": "Orchestrator"}),
    ann("b", DecisiveError(agent="orchestrator", modes=["1.1", "3.2"]), {"3.2": "WebSurfer"}),
    ann("c", DecisiveError(agent="WebSurfer", step_id="s3", modes=["1.1"]), {"1.1": None}),
    ann("d", DecisiveError(step_id="s4")),  # no agent named: unknown, still counted
    ann("e", None, {"2.6": "Coder"}),  # a present mode but no decisive error
    ann("f", DecisiveError(agent="Coder"), status="error"),  # failed record: left out
]


def test_decisive_errors_by_agent() -> None:
    fs = mast.analysis.failure_starters(ANNOTATIONS)
    rows = fs.by_agent.to_dict("records")
    assert [(r["agent"], r["traces"]) for r in rows] == [
        ("Orchestrator", 2),  # two spellings of one agent, shown as first written
        ("WebSurfer", 1),
        (None, 1),
    ]
    assert rows[0]["share"] == pytest.approx(0.5)
    assert rows[0]["modes_started"] == "1.1 (1), 3.2 (2)"
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert fs.excluded == {"no decisive error": 1, "not ok": 1}


def test_present_modes_by_agent() -> None:
    fs = mast.analysis.failure_starters(ANNOTATIONS)
    rows = {
        (r["mode"], r["agent"]): (r["traces"], r["share"]) for r in fs.by_mode.to_dict("records")
    }
    assert rows[("3.2", "Orchestrator")] == (1, 0.5)
    assert rows[("3.2", "WebSurfer")] == (1, 0.5)
    assert rows[("1.1", None)] == (1, 1.0)
    assert rows[("2.6", "Coder")] == (1, 1.0)
    assert "Decisive errors by agent" in fs.to_text()


def test_reads_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        for a in ANNOTATIONS:
            store.append(a)
    assert mast.analysis.failure_starters(path).by_agent["traces"].sum() == 4


def test_nothing_to_count_gives_empty_tables() -> None:
    fs = mast.analysis.failure_starters([])
    assert fs.by_agent.empty and fs.by_mode.empty
    assert list(fs.by_agent.columns) == ["agent", "traces", "share", "modes_started"]


def test_docstring_example() -> None:
    result = doctest.testmod(mast.analysis.attribution, raise_on_error=False)
    assert result.attempted >= 3 and result.failed == 0
