"""Compact trace rendering: repeats become references, and nothing is lost (issue 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mast
from mast.judge.prompt.compact import (
    MIN_SPLIT_LINE,
    RenderedStep,
    compact_steps,
    expand_steps,
    plain_body,
)
from mast.judge.prompt.render import render, step_header
from mast.judge.prompt.tokens import estimate_tokens
from mast.traces.model import Step, Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAD_HUMAN_FILES = [
    FIXTURES / "mad" / "human_sample.json",
    *sorted((FIXTURES / "mad_frameworks").glob("*/*_human_*.record.json")),
]
CHATDEV = FIXTURES / "mad_frameworks" / "chatdev" / "chatdev_madfull_ProgramDev_GPT4o_5.record.json"


def _traces(paths: list[Path]) -> list[Trace]:
    return [t for path in paths for t in mast.load_traces(path)]


MAD_HUMAN = _traces(MAD_HUMAN_FILES)


def _fenced(prompt_user: str, boundary: str) -> str:
    return prompt_user.split(f"<<<BEGIN {boundary}>>>\n", 1)[1].split(f"<<<END {boundary}>>>")[0]


def _steps_from_prompt(trace: Trace, block: str) -> list[RenderedStep]:
    """Cut the fenced block back into steps at the headers the trace's steps get."""
    show_role = not (trace.system or "").lower().startswith("ag2") and trace.format != "ag2"
    headers = [step_header(s, show_role=show_role) for s in trace.steps]
    out: list[RenderedStep] = []
    rest = block
    for i, (step, header) in enumerate(zip(trace.steps, headers, strict=True)):
        _, found, rest = rest.partition(header + "\n")
        assert found, f"header of {step.id} not found"
        if i + 1 < len(headers):
            body, _, _ = rest.partition("\n\n" + headers[i + 1] + "\n")
            rest = rest[len(body) + 2 :]
        else:
            body = rest.rsplit("\n\n", 1)[0]
        out.append(_parse_body(step.id, body, step))
    return out


def _parse_body(step_id: str, shown: str, step: Step) -> RenderedStep:
    args = None
    body = shown
    if step.tool_args is not None:
        first, _, body = shown.partition("\n")
        args = first.removeprefix("arguments: ")
    if body == "(no content)" and not step.content:
        body = ""
    # A step counts as compacted when the prompt shows it other than verbatim.
    compacted = body != step.content or (
        args is not None and args != plain_body(step).split("\n", 1)[0][len("arguments: ") :]
    )
    return RenderedStep(step_id, body, args, compacted=compacted)


@pytest.mark.parametrize("trace", MAD_HUMAN, ids=lambda t: t.id)
def test_the_compact_prompt_of_every_mad_human_trace_loses_nothing(trace: Trace) -> None:
    prompt = render(trace)
    block = _fenced(prompt.user, prompt.boundary)
    # Every step's exact text is rebuilt from what the prompt shows, and nothing else.
    rebuilt = expand_steps(_steps_from_prompt(trace, block))
    for step in trace.steps:
        assert rebuilt[step.id] == plain_body(step) or (
            not step.content and step.tool_args is None
        ), step.id
    # Every distinct line of the trace appears in the prompt as it is; only long lines may
    # instead be rebuilt from a character-range reference to where the prompt shows them.
    shown_lines = set(block.split("\n"))
    for step in trace.steps:
        for line in step.content.split("\n"):
            if len(line) < MIN_SPLIT_LINE:
                assert line in shown_lines, (step.id, line[:80])


def test_chatdev_trace_tokens_drop_by_at_least_half() -> None:
    (trace,) = mast.load_traces(CHATDEV)
    full = render(trace, compact=False)
    compact = render(trace)
    before = estimate_tokens(_fenced(full.user, full.boundary))
    after = estimate_tokens(_fenced(compact.user, compact.boundary))
    assert after <= 0.5 * before, (before, after)
    # Same steps, same ids, in the same order.
    assert compact.step_ids == full.step_ids == tuple(s.id for s in trace.steps)
    rebuilt = expand_steps(compact_steps(trace.steps))
    assert all(rebuilt[s.id] == plain_body(s) for s in trace.steps)


def test_whole_step_repeats_become_references() -> None:
    prompt_text = "You are the reviewer. Check the code for bugs and style. " * 5
    steps = [
        Step.make(0, prompt_text, agent="system"),
        Step.make(1, "looks fine", agent="reviewer"),
        Step.make(2, prompt_text, agent="system"),
    ]
    rendered = compact_steps(steps)
    assert rendered[2].body == "[same content as s1]" and rendered[2].compacted
    assert rendered[0].body == prompt_text and not rendered[0].compacted
    assert expand_steps(rendered)["s3"] == prompt_text


def test_steps_that_differ_only_in_ids_or_times_keep_the_changed_lines() -> None:
    log = "\n".join(
        ["[2025-03-31 20:40:53 INFO] request 4411 started"]
        + [f"worker {i} finished its share of the batch without errors" for i in range(6)]
    )
    later = log.replace("20:40:53", "20:41:17").replace("4411", "4412")
    rendered = compact_steps([Step.make(0, log), Step.make(1, later)])
    assert rendered[1].body == (
        "[same content as s1 except line 1:]\n[2025-03-31 20:41:17 INFO] request 4412 started"
    )
    assert expand_steps(rendered)["s2"] == later


def test_runs_of_lines_and_identical_lines() -> None:
    table = [f"| row {i} | a value that is long enough to matter in a prompt |" for i in range(8)]
    first = "\n".join(["header one", *table])
    second = "\n".join(["another header", *table, "a new closing line"])
    log_line = "[INFO] flask app.py did not start for online log"
    third = "\n".join([log_line] * 96)
    rendered = compact_steps([Step.make(0, first), Step.make(1, second), Step.make(2, third)])
    assert rendered[1].body == "another header\n[lines 2-9 of s1, repeated]\na new closing line"
    assert rendered[2].body == f"{log_line}\n[previous line repeated 95 more times]"
    rebuilt = expand_steps(rendered)
    assert rebuilt["s2"] == second and rebuilt["s3"] == third


def test_a_long_step_refers_to_runs_above_it_in_itself() -> None:
    # An unsegmented log is one step; a block it prints again is shown once (issue 21).
    block = [
        f"2025-03-31 INFO retry {i}: connecting to the sandbox at port 80{i}" for i in range(6)
    ]
    log = "\n".join(["start", *block, "middle line", *block, *block[:3], "end"])
    (rendered,) = compact_steps([Step.make(0, log)])
    assert rendered.body.split("\n") == [
        "start", *block, "middle line", "[lines 2-7 of s1, repeated]",
        "[lines 2-4 of s1, repeated]", "end",
    ]  # fmt: skip
    assert expand_steps([rendered]) == {"s1": log}
    # A run never covers its own reference: lines that repeat right below are not folded
    # into a reference to themselves, and the whole rendering still rebuilds the log.
    twice = "\n".join(block + block + block)
    (again,) = compact_steps([Step.make(0, twice)])
    assert again.body.split("\n")[6:] == ["[lines 1-6 of s1, repeated]"] * 2
    assert expand_steps([again]) == {"s1": twice}


def test_a_self_reference_shows_lines_above_it_only() -> None:
    # A step shown verbatim that merely looks like a reference to itself stays as it is.
    step = Step.make(0, "\n".join(["[lines 1-2 of s1, repeated]", "a", "b"]))
    (rendered,) = compact_steps([step])
    assert not rendered.compacted and expand_steps([rendered]) == {"s1": step.content}


def test_long_lines_refer_to_text_shown_earlier() -> None:
    shared = "The role prompt says: " + "follow the design, write tests, report back. " * 8
    first = "intro line\n" + shared
    second = "| **phase_prompt** | " + shared + " | cycle 2 |"
    rendered = compact_steps([Step.make(0, first), Step.make(1, second)])
    assert re.search(r"\[…same text as s1 line 2, characters 1-\d+…\]", rendered[1].body)
    assert expand_steps(rendered)["s2"] == second


def test_tool_call_code_is_shown_once() -> None:
    (_, seven, *_) = mast.load_traces(FIXTURES / "mad" / "human_sample.json")
    call = next(s for s in seven.steps if s.kind == "tool_call")
    assert call.tool_args is not None and call.tool_args["code"] in call.content
    (rendered,) = compact_steps([call])
    assert rendered.tool_args is not None
    assert re.fullmatch(r'\{"code": "\[= content lines \d+-\d+\]"\}', rendered.tool_args)
    assert rendered.text.count("total_basketball_cards = 6 * 25") == 1
    assert expand_steps([rendered])[call.id] == plain_body(call)


def test_text_that_looks_like_a_reference_is_left_alone() -> None:
    steps = [
        Step.make(0, "x" * 300),
        Step.make(1, "[same content as s1]"),  # an agent typed this; it is not a reference
    ]
    rendered = compact_steps(steps)
    assert not rendered[1].compacted
    assert expand_steps(rendered)["s2"] == "[same content as s1]"


def test_windows_only_refer_to_steps_they_show() -> None:
    text = "A paragraph that the framework prints again and again for every phase. " * 4
    trace = Trace(id="w", steps=[Step.make(i, text) for i in range(4)])
    prompt = render(trace, steps=trace.steps[2:])
    block = _fenced(prompt.user, prompt.boundary)
    assert "s1" not in block and "s2]" not in block
    assert "[same content as s3]" in block


def test_ag2_headers_leave_out_the_inverted_role() -> None:
    trace = mast.load_trace(FIXTURES / "ag2" / "AG2_trace3.json")
    user = render(trace).user
    assert "agent=assistant role=user" not in user
    assert "[s2] agent=assistant kind=message" in user
    chat = Trace(id="c", steps=[Step.make(0, "hi", agent="planner", role="assistant")])
    assert "[s1] agent=planner role=assistant kind=message" in render(chat).user


def test_the_judge_is_told_references_are_not_step_repetition() -> None:
    system = render(Trace(id="t", steps=[Step.make(0, "x")])).system
    assert "Repeated text is shown once" in system
    assert "not by themselves evidence of step repetition" in system
    tax = mast.load_taxonomy()
    assert any("framework text" in item for item in tax["1.3"].not_this)
