"""The evidence policy on a real trace with hand-made findings (issue 31, item 1).

MAD human trace ``mad-human/2`` (AG2 MathChat, Monica's ribbon): ``mathproxyagent`` writes
s1, s3, s5, s7, s9 (s5, s7 and s9 repeat s3, which the compact prompt shows as
``[same content as s3]``), ``assistant`` writes the even steps. Under
``ungrounded="unknown"`` a positive stands only on a non-empty quote found in a step it
cites.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply
from mast.judge.judge import Judge
from mast.judge.prompt.compact import compact_steps
from mast.judge.reply.grounding import ground, grounded_share
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import Trace

TAX = mast.load_taxonomy()


@pytest.fixture(scope="module")
def trace() -> Trace:
    path = Path(__file__).resolve().parents[1] / "fixtures" / "mad" / "human_sample.json"
    return next(t for t in mast.load_traces(path) if t.id == "mad-human/2")


def judged(trace: Trace, *evidence: Evidence, agent: str | None = None) -> Finding:
    finding = Finding(code="1.5", present=True, evidence=list(evidence), agent=agent)
    verdict = Verdict.from_findings([finding], codes=TAX.codes, format="json")
    return ground(verdict, trace, policy="unknown").findings["1.5"]


def problems(trace: Trace, *evidence: Evidence, agent: str | None = None) -> list[str]:
    finding = Finding(code="1.5", present=True, evidence=list(evidence), agent=agent)
    verdict = Verdict.from_findings([finding], codes=TAX.codes, format="json")
    return ground(verdict, trace, policy="unknown").problems


def test_the_fixture_is_what_the_cases_assume(trace: Trace) -> None:
    shown = {r.id: r.text for r in compact_steps(trace.steps)}
    assert shown["s5"] == "[same content as s3]" and shown["s7"] == "[same content as s3]"
    assert "\\boxed{}" in (trace.steps[2].content or "")  # one backslash in the trace
    assert trace.steps[2].agent == "mathproxyagent" and trace.steps[9].agent == "assistant"


# ---------------------------------------------------------------- ungrounded


def test_a_step_citation_without_a_quote_is_not_evidence(trace: Trace) -> None:
    finding = judged(trace, Evidence(step_id="s10"), Evidence(step_id="s8", quote=""))
    assert finding.present is None and finding.judged is True
    assert finding.evidence[0].grounded is None  # says where to look, proves nothing
    notes = problems(trace, Evidence(step_id="s10"))
    assert any("quotes nothing" in n and "set to unknown" in n for n in notes), notes


def test_only_bad_citations_are_dropped_and_leave_the_finding_ungrounded(trace: Trace) -> None:
    finding = judged(trace, Evidence(step_id="s99", quote="the problem cannot be solved"))
    assert finding.present is None
    assert not finding.evidence and [e.step_id for e in finding.dropped] == ["s99"]
    notes = problems(trace, Evidence(step_id="s99", quote="the problem cannot be solved"))
    assert any("no step 's99'" in n for n in notes)
    assert any("cites no step of the trace" in n for n in notes), notes


def test_one_real_quote_grounds_and_a_made_up_step_is_dropped_with_a_note(trace: Trace) -> None:
    real = Evidence(step_id="s10", quote="the problem cannot be solved")
    finding = judged(trace, real, Evidence(step_id="s99"))
    assert finding.present is True and finding.grounded is True
    assert [e.step_id for e in finding.dropped] == ["s99"]


def test_a_quote_from_another_step_than_cited_is_ungrounded(trace: Trace) -> None:
    # The words are in s10, the finding cites s4.
    finding = judged(trace, Evidence(step_id="s4", quote="we can say the problem is unsolved"))
    assert finding.present is None
    assert "not found in s4" in (finding.evidence[0].problem or "")


def test_a_paraphrase_is_fuzzy_reported_not_grounded(trace: Trace) -> None:
    # s10 says "does not provide any specific details"; one word of 18 changed.
    quote = (
        "Since the problem does not give any specific details of the length of ribbon "
        "available to Monica or the amount of ribbon used"
    )
    finding = judged(trace, Evidence(step_id="s10", quote=quote))
    assert finding.present is None and finding.judged is True
    item = finding.evidence[0]
    assert item.fuzzy is True and item.grounded is False
    assert "near-verbatim" in (item.problem or "")
    far = judged(trace, Evidence(step_id="s10", quote="Monica lacks the ribbon data entirely"))
    assert far.evidence[0].fuzzy is False


# ---------------------------------------------------------------- grounded


@pytest.mark.parametrize(
    "step_id", ["s2, s4", "s2 and s4", "s4; s6", "steps 2, 4", "s2-s4", "[s4, s99]", "s4 & s6"]
)
def test_lists_and_ranges_of_steps_ground(trace: Trace, step_id: str) -> None:
    quote = "Without any of these pieces of information, the problem remains unsolvable"
    finding = judged(trace, Evidence(step_id=step_id, quote=quote))
    assert finding.present is True and finding.grounded is True, finding.evidence


def test_a_list_with_a_bad_member_is_noted(trace: Trace) -> None:
    quote = "the problem remains unsolvable"
    notes = problems(trace, Evidence(step_id="s4, s99", quote=quote))
    assert any("s99" in n and "ignored" in n for n in notes), notes


def test_a_quote_running_on_into_the_next_step_grounds(trace: Trace) -> None:
    # The end of s2 and the start of s3, cited as s2.
    quote = (
        'such as "Monica has 120 inches of ribbon" or "Each bow uses X inches of ribbon". '
        "Continue. Please keep solving"
    )
    assert judged(trace, Evidence(step_id="s2", quote=quote)).grounded is True
    # ... but not cited as s3: a quote starts in the step it cites.
    assert judged(trace, Evidence(step_id="s3", quote=quote)).present is None


def test_compaction_references_resolve_to_the_text_they_stand_for(trace: Trace) -> None:
    # The judge saw s7 as "[same content as s3]": it quotes the marker ...
    assert judged(trace, Evidence(step_id="s7", quote="[same content as s3]")).grounded is True
    # ... or the text it stands for, at the referring step.
    quote = "Continue. Please keep solving the problem until you need to query"
    assert judged(trace, Evidence(step_id="s9", quote=quote)).grounded is True
    # A marker naming another step is not what s7 showed.
    assert judged(trace, Evidence(step_id="s7", quote="[same content as s2]")).present is None


@pytest.mark.parametrize(
    "quote",
    [
        "put it in \\\\boxed{}",  # over-escaped, as JSON-in-JSON writes it
        "put it in \\boxed{}",
        '\\\\boxed{\\\\text{\\"Data insufficient to solve the problem\\"}}',
        "Continue.\n   Please keep\tsolving the problem",  # whitespace
        "such as \u201cMonica has 120 inches of ribbon\u201d",  # typographic quote marks
    ],
)
def test_escaping_whitespace_and_quote_marks_are_normalised(trace: Trace, quote: str) -> None:
    step = "s2" if "Monica has" in quote else "s10" if "Data" in quote else "s3"
    assert judged(trace, Evidence(step_id=step, quote=quote)).grounded is True, quote


def test_a_quote_from_another_agents_step_is_flagged_not_dropped(trace: Trace) -> None:
    quote = "Please keep solving the problem until you need to query"
    finding = judged(trace, Evidence(step_id="s3", quote=quote), agent="assistant")
    assert finding.present is True and finding.grounded is True
    assert finding.evidence[0].off_agent is True
    notes = problems(trace, Evidence(step_id="s3", quote=quote), agent="assistant")
    assert any("'mathproxyagent'" in n and "'assistant'" in n for n in notes), notes
    own = judged(trace, Evidence(step_id="s3", quote=quote), agent="mathproxyagent")
    assert own.evidence[0].off_agent is False


def test_grounded_share_counts_fuzzy_and_off_agent(trace: Trace) -> None:
    paraphrase = Evidence(
        step_id="s10",
        quote="Since the problem does not give any specific details of the length of ribbon "
        "available to Monica or the amount of ribbon used",
    )
    off = Evidence(step_id="s3", quote="Please keep solving the problem until you need to query")
    findings = [
        {"1.5": judged(trace, paraphrase)},
        {"1.5": judged(trace, off, agent="assistant")},
        {"1.5": judged(trace, Evidence(step_id="s10"))},
    ]
    share = grounded_share(findings)["1.5"]
    assert (share.positives, share.grounded, share.fuzzy, share.off_agent) == (3, 1, 1, 1)


def test_flag_stays_the_default_and_keeps_the_answer(trace: Trace) -> None:
    finding = Finding(code="1.5", present=True, evidence=[Evidence(step_id="s10")])
    verdict = ground(Verdict.from_findings([finding], codes=TAX.codes, format="json"), trace)
    assert verdict.vector["1.5"] is True and verdict.ungrounded == ["1.5"]
    assert any("is judged present but quotes nothing" in p for p in verdict.problems)


# ---------------------------------------------------------------- end to end


def _reply(evidence: list[dict[str, Any]]) -> str:
    modes = {
        code: {"present": code == "1.5", "evidence": evidence if code == "1.5" else [],
               "rationale": "r", "confidence": 0.9}
        for code in TAX.codes
    }  # fmt: skip
    return json.dumps({"summary": "s", "modes": modes, "task_completed": False})


@pytest.mark.parametrize(
    ("evidence", "present"),
    [
        ([{"step_id": "s10", "quote": ""}], None),
        ([{"step_id": "s99", "quote": "the problem cannot be solved"}], None),
        ([{"step_id": "s8, s10", "quote": "we can say the problem is unsolved"}], True),
        ([{"step_id": "s5", "quote": "[same content as s3]"}], True),
    ],
)
def test_judge_with_ungrounded_unknown(
    fake_llm: FakeLLMServer, trace: Trace, evidence: list[dict[str, Any]], present: bool | None
) -> None:
    fake_llm.default = Reply.text(_reply(evidence))
    judge = Judge(
        "openai/gpt-4.1",
        base_url=fake_llm.openai_base_url,
        api_key="sk-evidence-test-000000000000",
        fewshot=0,
        redact=False,
        ungrounded="unknown",
    )
    ann = judge.annotate(trace)
    assert ann.status == "ok", ann.error
    assert ann.vector["1.5"] is present
