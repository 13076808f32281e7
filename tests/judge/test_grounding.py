"""ground(): step ids must exist and quotes must occur in the cited step."""

from __future__ import annotations

from pathlib import Path

import pytest

import mast
from mast.judge.reply.grounding import ground
from mast.judge.reply.parse import parse_response
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import Step, StepKind, Trace

CODES = ["1.3", "1.5", "2.5"]


@pytest.fixture
def trace(fixtures: Path) -> Trace:
    return mast.load_trace(fixtures / "ag2" / "AG2_trace1.json")


def _verdict(evidence: dict[str, list[Evidence]], present: bool | None = True) -> Verdict:
    findings = [Finding(code=c, present=present, evidence=evidence.get(c, [])) for c in CODES]
    return Verdict.from_findings(findings, codes=CODES, format="json")


def test_real_quotes_ground_with_whitespace_and_case_differences(trace: Trace) -> None:
    verdict = _verdict(
        {
            "1.5": [
                Evidence(step_id="s3", quote="Continue.   Please keep SOLVING the problem"),
                Evidence(step_id="s2", quote="this problem cannot be solved with the information"),
            ],
            # typographic quotes and an ellipsis that skips part of the step
            "2.5": [Evidence(step_id="s4", quote="“What is the total length … Monica has?”")],
        }
    )
    grounded = ground(verdict, trace)
    assert [e.grounded for e in grounded.findings["1.5"].evidence] == [True, True]
    assert grounded.findings["2.5"].evidence[0].grounded is True
    assert grounded.findings["1.5"].grounded is True
    # 1.3 is answered present and cites nothing: the only ungrounded positive
    assert grounded.ungrounded == ["1.3"]
    assert [p for p in grounded.problems if p.startswith("grounding")] == [
        "grounding: 1.3 is judged present but cites no evidence"
    ]


def test_unknown_step_and_invented_quote_are_flagged(trace: Trace) -> None:
    verdict = _verdict(
        {
            "1.3": [
                Evidence(step_id="s99", quote="Continue."),
                Evidence(step_id="s3", quote="the proxy says it will stop now"),
            ],
            "1.5": [Evidence(step_id="s3", quote="Continue. Please keep solving")],
        }
    )
    grounded = ground(verdict, trace)
    # the citation of a step that does not exist is dropped (with a note)
    bad = [*grounded.findings["1.3"].dropped, *grounded.findings["1.3"].evidence]
    assert [e.grounded for e in bad] == [False, False]
    assert bad[0].problem is not None and "no step 's99'" in bad[0].problem
    assert bad[1].problem is not None and "quote not found in s3" in bad[1].problem
    # every cited item failed: the finding is visibly ungrounded, but its answer is kept
    assert grounded.findings["1.3"].grounded is False
    assert grounded.findings["1.3"].present is True
    assert grounded.ungrounded == ["1.3", "2.5"]  # 2.5 cites nothing
    assert any("1.3 is judged present but none" in p for p in grounded.problems)
    assert grounded.findings["1.5"].grounded is True
    # the input is not modified
    assert verdict.findings["1.3"].evidence[0].grounded is None


def test_quote_from_another_step_is_not_grounded(trace: Trace) -> None:
    # s10 holds the boxed answer; s2 does not
    verdict = _verdict({"1.3": [Evidence(step_id="s2", quote="Data insufficient to solve")]})
    assert ground(verdict, trace).findings["1.3"].evidence[0].grounded is False
    verdict = _verdict({"1.3": [Evidence(step_id="s10", quote="Data insufficient to solve")]})
    assert ground(verdict, trace).findings["1.3"].evidence[0].grounded is True


def test_drop_ungrounded_moves_items_but_keeps_them_visible(trace: Trace) -> None:
    verdict = _verdict(
        {
            "1.3": [Evidence(step_id="s42")],
            "1.5": [Evidence(step_id="s5", quote="Continue. Please keep"), Evidence(step_id="s0")],
        }
    )
    grounded = ground(verdict, trace, drop_ungrounded=True)
    assert grounded.findings["1.3"].evidence == []
    assert [e.step_id for e in grounded.findings["1.3"].dropped] == ["s42"]
    assert grounded.findings["1.3"].grounded is False
    assert [e.step_id for e in grounded.findings["1.5"].evidence] == ["s5"]
    assert grounded.findings["1.5"].grounded is True
    # grounding again is stable (no duplicate notes, dropped stays dropped)
    again = ground(grounded, trace, drop_ungrounded=True)
    assert again.problems == grounded.problems
    assert again.findings == grounded.findings


def test_step_id_forms_and_ranges(trace: Trace) -> None:
    verdict = _verdict(
        {
            "1.5": [
                Evidence(step_id="3", quote="please keep solving the problem"),
                Evidence(step_id="[S5]"),
                Evidence(step_id="s4-s6", quote="It can't be solved with current data."),
                Evidence(step_id="s3-s5", quote="It can't be solved with current data."),
                Evidence(step_id="s9-s12"),
            ]
        }
    )
    finding = ground(verdict, trace).findings["1.5"]
    assert [e.step_id for e in finding.evidence] == ["s3", "s5", "s4-s6", "s3-s5"]
    # a plain citation (no quote) is neither grounded nor failed
    assert [e.grounded for e in finding.evidence] == [True, None, True, False]
    # a range reaching past the last step names no step of the trace: dropped
    assert [e.step_id for e in finding.dropped] == ["s9-s12"]


def test_no_evidence_means_grounding_unknown(trace: Trace) -> None:
    grounded = ground(_verdict({}, present=False), trace)
    assert all(f.grounded is None for f in grounded.findings.values())


def test_tool_arguments_are_searched() -> None:
    trace = Trace(
        id="tools",
        steps=[
            Step.make(
                0, "", kind=StepKind.TOOL_CALL, tool_name="bash", tool_args={"cmd": "rm -rf build"}
            ),
            Step.make(1, "removed", kind=StepKind.TOOL_RESULT),
        ],
    )
    verdict = _verdict({"1.3": [Evidence(step_id="s1", quote='"cmd": "rm -rf build"')]})
    assert ground(verdict, trace).findings["1.3"].evidence[0].grounded is True


def test_grounding_a_parsed_text_answer(trace: Trace) -> None:
    text = (
        "C.\n1.3 Step Repetition: no\n"
        "1.5 Unaware of Termination Conditions: yes - the proxy keeps asking in [s3] and [s5]\n"
        "2.5 Ignored Other Agent's Input: yes - see s4 and s40\n"
    )
    grounded = ground(parse_response(text), trace)
    # the text format cites steps but quotes nothing: a citation is not evidence
    assert grounded.findings["1.5"].grounded is False
    assert [e.grounded for e in grounded.findings["2.5"].evidence] == [None]
    assert [e.step_id for e in grounded.findings["2.5"].dropped] == ["s40"]
    assert grounded.ungrounded == ["1.5", "2.5"]


# ---------------------------------------------------------------- quotes that prove nothing


@pytest.mark.parametrize(
    ("quote", "grounded"),
    [
        ("", None),  # no quote: a plain step citation, nothing to check
        ("...", False),
        ("the", False),
        ("Continue.", False),  # one word, under 15 characters: occurs in many steps
        ("keep solving", False),
        ("Please keep solving the", True),
        ("Continue. … you need to query", True),
        ("Continue … query", False),  # fragments too short to mean anything
    ],
)
def test_quotes_must_be_long_enough(trace: Trace, quote: str, grounded: bool | None) -> None:
    verdict = _verdict({"1.5": [Evidence(step_id="s3", quote=quote)]})
    item = ground(verdict, trace).findings["1.5"].evidence[0]
    assert item.grounded is grounded, item.problem


def test_elided_quote_fragments_must_come_from_one_step_and_near_each_other(
    trace: Trace,
) -> None:
    # both fragments exist in the range s5-s6, but in different steps
    verdict = _verdict(
        {"1.5": [Evidence(step_id="s5-s6", quote="Please keep solving … can't be solved with")]}
    )
    assert ground(verdict, trace).findings["1.5"].evidence[0].grounded is False
    far = Trace(
        id="far",
        steps=[Step.make(0, "the agent starts the build " + "x " * 400 + "and the build fails")],
    )
    elided = _verdict({"1.5": [Evidence(step_id="s1", quote="the agent starts … the build fails")]})
    assert ground(elided, far).findings["1.5"].evidence[0].grounded is False
    near = Trace(id="near", steps=[Step.make(0, "the agent starts the build and the build fails")])
    assert ground(elided, near).findings["1.5"].evidence[0].grounded is True


# ---------------------------------------------------------------- evidence policies


def _policy_verdict() -> Verdict:
    findings = [
        Finding(code="1.3", present=True),  # cites nothing
        Finding(
            code="1.5",
            present=True,
            evidence=[Evidence(step_id="s3", quote="keep solving the problem")],
        ),
        Finding(code="2.5", present=True, evidence=[Evidence(step_id="s99")]),  # no such step
    ]
    return Verdict.from_findings(findings, codes=CODES, format="json")


def test_policy_keep_leaves_answers_and_notes_alone(trace: Trace) -> None:
    kept = ground(_policy_verdict(), trace, policy="keep")
    assert kept.vector.to_dict() == {"1.3": True, "1.5": True, "2.5": True}
    assert kept.ungrounded == ["1.3", "2.5"]
    assert not any("judged present" in p for p in kept.problems)


def test_policy_flag_keeps_answers_and_marks_them(trace: Trace) -> None:
    flagged = ground(_policy_verdict(), trace)  # the default
    assert flagged.vector.to_dict() == {"1.3": True, "1.5": True, "2.5": True}
    assert "grounding: 1.3 is judged present but cites no evidence" in flagged.problems
    assert "grounding: 2.5 is judged present but cites no step of the trace" in flagged.problems


def test_policy_unknown_turns_ungrounded_positives_into_none(trace: Trace) -> None:
    strict = ground(_policy_verdict(), trace, policy="unknown")
    assert strict.vector.to_dict() == {"1.3": None, "1.5": True, "2.5": None}
    assert strict.findings["1.3"].judged is True and strict.findings["1.3"].present is None
    assert strict.findings["1.5"].judged is None
    assert sum("set to unknown" in p for p in strict.problems) == 2
    # the share of grounded positives still counts what the judge said
    share = mast.grounded_share([strict.findings])
    assert (share["1.3"].positives, share["1.3"].grounded) == (1, 0)
    assert share["1.5"].share == 1.0
    with pytest.raises(ValueError, match="policy"):
        ground(_policy_verdict(), trace, policy="drop")  # type: ignore[arg-type]


def test_quotes_of_compacted_text_ground_the_same_from_the_prompt_rendering() -> None:
    from mast.judge.prompt.render import render

    line = "[INFO] the build server did not start: port 8080 is already in use"
    trace = Trace(
        id="t",
        steps=[
            Step.make(0, "\n".join([line] * 6), agent="a"),
            Step.make(1, "\n".join([line] * 6), agent="b"),
            Step.make(2, "retrying now\n" + "\n".join([line] * 6), agent="a"),
        ],
    )
    prompt = render(trace)
    assert prompt.step_ids == ("s1", "s2", "s3")
    assert "[same content as s1]" in prompt.shown_steps[1]
    quotes = [
        ("s2", "[same content as s1]"),
        ("s1", f"{line} [previous line repeated 5 more times]"),
        ("s3", "retrying now [lines 1-6 of s1, repeated]"),
        ("s3", "[same content as s9]"),
    ]
    verdict = _verdict({"1.3": [Evidence(step_id=s, quote=q) for s, q in quotes]})
    shown = dict(zip(prompt.step_ids, prompt.shown_steps, strict=True))
    fast, plain = ground(verdict, trace, shown=shown), ground(verdict, trace)
    assert fast.model_dump() == plain.model_dump()
    assert [e.grounded for e in fast.findings["1.3"].evidence][:2] == [True, True]
