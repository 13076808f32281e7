"""Attribution scoring: ids compared whole, past-the-end labels, names, unanswered, CIs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import mast
from mast.agree.attribution import AttributionLabel, attribution_accuracy, attribution_labels
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.traces.model import FailureVector

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "whoandwhen_attr"


def label(
    tid: str, agent: str, step: str, n: int = 20, subset: str | None = None
) -> AttributionLabel:
    return AttributionLabel(tid, agent=agent, step_id=step, n_steps=n, subset=subset)


def test_step_ten_is_not_step_one() -> None:
    # The reference scorer matched "1" inside "10"; ids are compared whole here.
    rep = attribution_accuracy(
        {"t": DecisiveError(agent="A", step_id="s10")}, {"t": label("t", "A", "s1")}, bootstrap=0
    )
    assert rep.overall["step"].correct == 0
    assert rep.overall["step"].answered == 1
    assert rep.overall["step_within"].correct == 0  # nine steps apart
    assert rep.overall["agent"].correct == 1


def test_within_k_counts_neighbours_by_position() -> None:
    preds = {"a": {"agent": "A", "step": "s4"}, "b": {"agent": "A", "step": 6}}
    labels = {"a": label("a", "A", "s5"), "b": label("b", "A", "s4")}
    one = attribution_accuracy(preds, labels, within=1, bootstrap=0)
    two = attribution_accuracy(preds, labels, within=2, bootstrap=0)
    assert one.overall["step"].correct == 0
    assert one.overall["step_within"].correct == 1
    assert two.overall["step_within"].correct == 2


def test_positions_follow_the_trace_ids_not_their_numbers() -> None:
    lab = AttributionLabel("t", agent="A", step_id="s3", step_ids=("s1", "s2", "s3", "s10"))
    rep = attribution_accuracy({"t": {"agent": "A", "step": "s10"}}, {"t": lab}, bootstrap=0)
    assert rep.overall["step"].correct == 0
    assert rep.overall["step_within"].correct == 1  # s10 is the next step of this trace


def test_past_the_end_labels_are_excluded_and_counted() -> None:
    labels = {"ok": label("ok", "A", "s2", n=5), "late": label("late", "A", "s9", n=8)}
    preds = {"ok": {"agent": "A", "step": "s2"}, "late": {"agent": "A", "step": "s8"}}
    rep = attribution_accuracy(preds, labels, bootstrap=0)
    assert rep.excluded_past_end == ["late"]
    assert rep.overall["agent"].total == 1 and rep.overall["step"].total == 1
    assert "excluded, label past the end of the trace: 1 (late)" in rep.to_text()


def test_agent_names_are_normalised_and_the_mapping_shown() -> None:
    labels = {
        "a": label("a", "Orchestrator", "s2"),
        "b": label("b", "Verification_Expert", "s2"),
        "c": label("c", "WebSurfer", "s2"),
    }
    preds = {
        "a": {"agent": "Orchestrator (thought)", "step": "s2"},
        "b": {"agent": "verification expert", "step": "s2"},
        "c": {"agent": "FileSurfer", "step": "s2"},
    }
    rep = attribution_accuracy(preds, labels, bootstrap=0)
    assert rep.overall["agent"].correct == 2
    assert rep.agent_names == {
        "Orchestrator (thought)": "Orchestrator",
        "verification expert": "Verification_Expert",
    }
    assert "'verification expert' -> 'Verification_Expert'" in rep.to_text()
    aliased = attribution_accuracy(preds, labels, aliases={"FileSurfer": "WebSurfer"}, bootstrap=0)
    assert aliased.overall["agent"].correct == 3


def test_unanswered_is_neither_right_nor_silently_dropped() -> None:
    labels = {t: label(t, "A", "s2") for t in ("a", "b", "c", "d")}
    preds = {"a": DecisiveError(agent="A", step_id="s2"), "b": None, "c": {"agent": "B"}}
    rep = attribution_accuracy(preds, labels, bootstrap=0)
    agent, step = rep.overall["agent"], rep.overall["step"]
    assert (agent.correct, agent.answered, agent.total) == (1, 2, 3)
    assert (step.correct, step.answered, step.total) == (1, 1, 3)
    assert step.value == 1.0 and step.value_all == pytest.approx(1 / 3)
    assert rep.not_predicted == ["d"]


def test_predictions_without_labels_are_counted() -> None:
    rep = attribution_accuracy({"x": {"agent": "A", "step": "s1"}}, {}, bootstrap=0)
    assert rep.unlabelled == ["x"] and rep.rows == []
    assert math.isnan(rep.overall["agent"].value)


def test_bootstrap_interval_brackets_the_estimate_and_is_seeded() -> None:
    labels = {f"t{i}": label(f"t{i}", "A", "s2") for i in range(40)}
    preds = {f"t{i}": {"agent": "A" if i % 4 else "B", "step": "s2"} for i in range(40)}
    a = attribution_accuracy(preds, labels, bootstrap=500, seed=3)
    b = attribution_accuracy(preds, labels, bootstrap=500, seed=3)
    low, high = a.overall["agent"].ci_answered
    assert low < a.overall["agent"].value == 0.75 < high
    assert a.overall["agent"].ci_answered == b.overall["agent"].ci_answered
    assert math.isnan(a.overall["step"].ci_answered[0]) or a.overall["step"].ci_answered == (
        1.0,
        1.0,
    )


def test_groups_per_subset_and_system() -> None:
    labels = {
        "h": AttributionLabel(
            "h", agent="A", step_id="s1", n_steps=3, subset="Hand-Crafted", system="M1"
        ),
        "g": AttributionLabel(
            "g", agent="A", step_id="s1", n_steps=3, subset="Algorithm-Generated"
        ),
    }
    preds = {"h": {"agent": "A", "step": "s1"}, "g": {"agent": "B", "step": "s1"}}
    rep = attribution_accuracy(preds, labels, bootstrap=0)
    assert rep.groups[("subset", "Hand-Crafted")]["agent"].correct == 1
    assert rep.groups[("subset", "Algorithm-Generated")]["agent"].correct == 0
    assert rep.groups[("system", "M1")]["agent"].total == 1
    frame = rep.to_frame()
    assert set(frame["by"]) == {"all", "subset", "system"}
    data = json.loads(rep.to_json())
    assert data["overall"]["agent"]["correct"] == 1


def test_labels_from_whoandwhen_traces() -> None:
    traces = mast.datasets.load_whoandwhen(FIXTURES)
    labels = attribution_labels(traces)
    assert len(labels) == 9
    first = labels["whoandwhen/algorithm-generated/21"]
    # mistake_step is a 0-based history index: "0" is the first step, s1.
    assert (first.agent, first.step_id, first.n_steps) == ("Lyrics_Expert", "s1", 6)
    assert first.subset == "Algorithm-Generated" and first.system == "CaptainAgent"
    cut = labels["whoandwhen/hand-crafted/33-cut"]
    assert cut.step_id == "s9" and cut.n_steps == 8 and cut.past_end
    assert not labels["whoandwhen/hand-crafted/6"].past_end


def test_annotations_as_predictions() -> None:
    ann = Annotation(
        trace_id="t",
        status="ok",
        taxonomy="MAST",
        vector=FailureVector(),
        decisive_error=DecisiveError(agent="A", step_id="s3"),
    )
    rep = attribution_accuracy([ann], {"t": label("t", "A", "s3")}, bootstrap=0)
    assert rep.overall["step"].correct == 1


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="within"):
        attribution_accuracy({}, {}, within=-1)
    with pytest.raises(TypeError, match="Annotation"):
        attribution_accuracy([{"agent": "A"}], {})  # type: ignore[list-item]


def test_docstring_example() -> None:
    import doctest

    import mast.agree.attribution

    result = doctest.testmod(mast.agree.attribution, raise_on_error=False)
    assert result.attempted >= 4 and result.failed == 0


def test_two_runs_of_one_trace_in_one_file_are_reported() -> None:
    def record(step: str) -> Annotation:
        return Annotation(
            trace_id="t",
            status="ok",
            taxonomy="MAST",
            vector=FailureVector(),
            decisive_error=DecisiveError(agent="A", step_id=step),
        )

    rep = attribution_accuracy(
        [record("s1"), record("s3")], {"t": label("t", "A", "s3")}, bootstrap=0
    )
    assert rep.repeated == ["t"] and rep.overall["step"].correct == 1  # the last record
    assert "more than one judge or method" in rep.to_text()
