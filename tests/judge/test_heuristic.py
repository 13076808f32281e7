"""The heuristic judge: each rule fires on a crafted trace and not on its control, cites
grounded evidence, and says "unknown" when its signature cannot be checked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import mast
from mast.judge.heuristic import RULE_MODES, heuristic_verdict
from mast.judge.reply.parse import parse_response
from mast.traces.model import Step, StepKind, Trace

RULE_CODES = ["1.3", "1.5", "2.1", "3.1"]
CODES = mast.load_taxonomy().codes

LONG_A = (
    "I will parse the input file line by line, strip the punctuation from every word, lower "
    "case it, and then compare each cleaned word with its reverse to collect the palindromes "
    "into a list that the function returns to the caller at the end."
)
LONG_B = (
    "The tests should cover an empty file, a file without palindromes, mixed case words, "
    "punctuation around words, and a very large file, and each test needs its own fixture "
    "file created in a temporary directory before the assertion runs."
)
TASK = "Monica has 144 inches of ribbon and 12 gifts. How many inches of ribbon can each bow use?"
PROMPT = f"Solve the problem and put the final answer in \\boxed{{}}.\nProblem: {TASK}"
CONTINUE = "Continue. Please keep solving the problem until you need to query."


def _trace(*messages: tuple[str, str] | Step, task: str | None = None, **meta: Any) -> Trace:
    steps = []
    for i, item in enumerate(messages):
        if isinstance(item, Step):
            steps.append(item.model_copy(update={"id": f"s{i + 1}", "index": i}))
        else:
            agent, text = item
            steps.append(Step.make(i, text, agent=agent, role="assistant"))
    return Trace(id="crafted", task=task, steps=steps, metadata=meta)


def _call(agent: str, code: str) -> Step:
    return Step.make(0, code, agent=agent, kind=StepKind.TOOL_CALL, tool_name="python")


def _result(text: str) -> Step:
    return Step.make(0, text, kind=StepKind.TOOL_RESULT, role="tool")


def _check_common(trace: Trace, unquoted: tuple[str, ...] = ()) -> mast.judge.verdict.Verdict:
    verdict = heuristic_verdict(trace)
    assert verdict.format == "rules"
    for code in CODES:
        if code not in RULE_CODES:
            assert verdict.vector[code] is None
    for code in RULE_CODES:
        finding = verdict.findings[code]
        assert finding.rationale and finding.rationale.startswith("Rule: ")
        if finding.present:
            assert finding.evidence, code
            # quotes hold; a step cited without a quote is a citation (grounded None)
            assert all(e.grounded is not False for e in finding.evidence), finding.evidence
            # a positive read from metadata has no text to quote: ungrounded, and flagged
            assert finding.grounded is (code not in unquoted)
    # the raw answer is a JSON verdict that parses back to the same vector
    assert parse_response(verdict.raw).vector == verdict.vector
    return verdict


# ---------------------------------------------------------------- 1.3 Step Repetition


def test_repetition_fires_on_a_repeated_message() -> None:
    trace = _trace(("user", PROMPT), ("coder", LONG_A), ("tester", LONG_B), ("coder", LONG_A))
    verdict = _check_common(trace)
    assert verdict.vector["1.3"] is True
    assert [e.step_id for e in verdict.findings["1.3"].evidence] == ["s2", "s4"]


def test_repetition_control_distinct_messages_are_absent() -> None:
    trace = _trace(("user", PROMPT), ("coder", LONG_A), ("coder", LONG_B))
    assert _check_common(trace).vector["1.3"] is False


def test_repetition_same_text_by_different_agents_is_not_a_repeat() -> None:
    trace = _trace(("user", PROMPT), ("coder", LONG_A), ("tester", LONG_A))
    assert _check_common(trace).vector["1.3"] is None  # nobody has two steps to compare


def test_repetition_ignores_trivially_short_steps() -> None:
    trace = _trace(("user", PROMPT), ("coder", "OK."), ("coder", "OK."), ("coder", "OK."))
    assert _check_common(trace).vector["1.3"] is None


def test_repeated_tool_call_with_same_result_fires_and_changing_result_does_not() -> None:
    same = [s for _ in range(3) for s in (_call("agent", "ls /data"), _result("a.txt"))]
    assert _check_common(_trace(("user", PROMPT), *same)).vector["1.3"] is True
    changing = [s for n in range(3) for s in (_call("agent", "next_song()"), _result(f"song {n}"))]
    assert _check_common(_trace(("user", PROMPT), *changing)).vector["1.3"] is not True


# ---------------------------------------------------------------- 1.5 Termination


def test_termination_fires_on_a_turn_limit() -> None:
    trace = _trace(
        ("user", PROMPT),
        ("solver", "Let me think about the ribbon."),
        Step.make(0, "Maximum number of turns reached (10); stopping.", kind=StepKind.SYSTEM),
    )
    verdict = _check_common(trace)
    assert verdict.vector["1.5"] is True
    assert verdict.findings["1.5"].evidence[0].step_id == "s3"


def test_termination_fires_on_continue_after_final_answer() -> None:
    trace = _trace(
        ("proxy", PROMPT), ("solver", "Each bow gets \\boxed{12} inches."), ("proxy", CONTINUE)
    )
    verdict = _check_common(trace)
    assert verdict.vector["1.5"] is True
    assert [e.step_id for e in verdict.findings["1.5"].evidence] == ["s2", "s3"]


def test_termination_fires_on_continue_after_unsolvable() -> None:
    trace = _trace(
        ("proxy", PROMPT),
        ("solver", "This cannot be solved: the ribbon length is missing."),
        ("proxy", CONTINUE),
        ("solver", "\\boxed{\\text{no answer}}"),
    )
    assert _check_common(trace).vector["1.5"] is True


def test_termination_control_run_stops_at_its_answer() -> None:
    trace = _trace(
        ("proxy", PROMPT),
        ("solver", "144 / 12 = 12."),
        ("proxy", CONTINUE),  # continuing before any answer is fine
        ("solver", "So each bow uses \\boxed{12} inches."),
    )
    assert _check_common(trace).vector["1.5"] is False


def test_termination_unknown_without_an_ending_marker() -> None:
    trace = _trace(("proxy", PROMPT), ("solver", "Working on it."), ("proxy", "Thanks."))
    assert _check_common(trace).vector["1.5"] is None


def test_termination_from_metadata() -> None:
    trace = _trace(("proxy", PROMPT), ("solver", "hmm"), termination_reason="max_turns reached")
    verdict = _check_common(trace, unquoted=("1.5",))
    assert verdict.vector["1.5"] is True
    assert any("1.5 is judged present but quotes nothing" in p for p in verdict.problems)


# ---------------------------------------------------------------- 2.1 Conversation Reset


def test_reset_fires_when_the_task_is_reissued() -> None:
    trace = _trace(
        ("user", TASK),
        ("solver", LONG_A),
        ("critic", LONG_B),
        ("user", TASK),
        ("solver", "Starting over."),
        task=TASK,
    )
    verdict = _check_common(trace)
    assert verdict.vector["2.1"] is True
    assert [e.step_id for e in verdict.findings["2.1"].evidence] == ["s1", "s4"]


def test_reset_control_task_issued_once() -> None:
    trace = _trace(("user", TASK), ("solver", LONG_A), ("critic", LONG_B), ("solver", "Done."))
    assert _check_common(trace).vector["2.1"] is False


def test_reset_quoting_the_task_inside_a_long_message_is_not_a_reset() -> None:
    quoting = f"Recall the task: {TASK} {LONG_A} {LONG_B}"
    trace = _trace(("user", TASK), ("solver", LONG_A), ("critic", quoting), ("solver", "ok"))
    assert _check_common(trace).vector["2.1"] is False


def test_reset_unknown_for_short_tasks() -> None:
    trace = _trace(("user", "Add 2+2."), ("solver", "4"), ("user", "Add 2+2."), ("solver", "4"))
    assert _check_common(trace).vector["2.1"] is None


# ---------------------------------------------------------------- 3.1 Premature Termination


def test_premature_fires_when_the_deliverable_never_appears() -> None:
    trace = _trace(("proxy", PROMPT), ("solver", "We need 144 / 12."), ("proxy", CONTINUE))
    verdict = _check_common(trace)
    assert verdict.vector["3.1"] is True
    assert verdict.task_completed is False
    assert [e.step_id for e in verdict.findings["3.1"].evidence] == ["s1", "s3"]


def test_premature_fires_when_the_run_ends_on_an_error() -> None:
    trace = _trace(
        ("proxy", PROMPT),
        _call("solver", "print(144 / gifts)"),
        _result(
            "Traceback (most recent call last):\n  ...\nNameError: name 'gifts' is not defined"
        ),
    )
    verdict = _check_common(trace)
    assert verdict.vector["3.1"] is True
    assert verdict.findings["3.1"].evidence[0].step_id == "s3"


def test_premature_control_deliverable_given() -> None:
    trace = _trace(("proxy", PROMPT), ("solver", "Each bow: \\boxed{12}"))
    verdict = _check_common(trace)
    assert verdict.vector["3.1"] is False
    assert verdict.task_completed is None  # the rules never claim success


def test_premature_answer_later_in_the_same_unsegmented_step() -> None:
    log = Step.make(0, f"user: {PROMPT}\nsolver: 144 / 12 = \\boxed{{12}}", kind=StepKind.LOG)
    assert _check_common(_trace(log)).vector["3.1"] is False
    only_request = Step.make(0, f"user: {PROMPT}\nsolver: thinking...", kind=StepKind.LOG)
    assert _check_common(_trace(only_request)).vector["3.1"] is True


def test_premature_a_request_is_not_its_own_answer() -> None:
    ask = "Think step by step, then output 'The answer is (X)' where X is 0, 1, 2 or 3."
    assert _check_common(_trace(("user", ask), ("solver", "Hmm."))).vector["3.1"] is True
    answered = _trace(("user", ask), ("solver", "So the answer is (2)."))
    assert _check_common(answered).vector["3.1"] is False
    # "final answer" mentioned in passing is not a request for a FINAL ANSWER line
    prose = _trace(("user", "Check whether the final answer 29 is right."), ("solver", "No."))
    assert _check_common(prose).vector["3.1"] is None


def test_premature_unknown_without_a_stated_format() -> None:
    trace = _trace(("user", TASK), ("solver", "12 inches."))
    assert _check_common(trace).vector["3.1"] is None


# ---------------------------------------------------------------- taxonomy, size, real traces


def test_rules_map_to_codes_by_name(tmp_path: Path) -> None:
    path = tmp_path / "tax.yaml"
    path.write_text(
        "name: Mini\nversion: '1'\ncategories: [{code: X, name: x}]\n"
        "modes:\n"
        "  - {code: '9.1', id: M1, name: Step Repetition, category: X, definition: d}\n"
        "  - {code: '9.2', id: M2, name: Something Else, category: X, definition: d}\n",
        encoding="utf-8",
    )
    tax = mast.load_taxonomy(path)
    trace = _trace(("user", PROMPT), ("coder", LONG_A), ("coder", LONG_A))
    verdict = heuristic_verdict(trace, tax)
    assert verdict.vector.to_dict() == {"9.1": True, "9.2": None}
    assert set(RULE_MODES) >= {"Step Repetition"}


def test_long_trace_is_fast() -> None:
    messages: list[tuple[str, str]] = [("user", PROMPT)]
    for n in range(1500):
        messages.append(
            (f"agent{n % 3}", f"{LONG_A} iteration {n} " + " ".join(map(str, range(n % 40))))
        )
    start = time.perf_counter()
    heuristic_verdict(_trace(*messages))
    # a hang guard (quadratic blow-up takes minutes), not a performance claim
    assert time.perf_counter() - start < 30


def _ag2(fixtures: Path, n: int) -> Trace:
    return mast.load_trace(fixtures / "ag2" / f"AG2_trace{n}.json")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_real_ag2_traces_follow_the_human_note_on_stopping(fixtures: Path, n: int) -> None:
    trace = _ag2(fixtures, n)
    human = trace.labels["note"]  # "Unaware of stopping conditions" etc., mapped to codes
    verdict = _check_common(trace)
    assert human["1.5"] is not None
    assert verdict.vector["1.5"] is human["1.5"]
    # where the note says no repetition / no restart, the rules do not claim one
    for code in ("1.3", "2.1"):
        if human[code] is False:
            assert verdict.vector[code] is not True


def test_ag2_trace1_cites_the_continue_after_unsolvable(fixtures: Path) -> None:
    verdict = heuristic_verdict(_ag2(fixtures, 1))
    finding = verdict.findings["1.5"]
    assert [e.step_id for e in finding.evidence] == ["s2", "s3"]
    assert "cannot be solved" in (finding.evidence[0].quote or "")


def test_real_mad_records_give_grounded_answers(fixtures: Path) -> None:
    for trace in mast.traces.datasets.load_mad_human(fixtures / "mad" / "human_sample.json"):
        verdict = _check_common(trace)
        assert verdict.answered, trace.id  # every record is long enough for some rule
