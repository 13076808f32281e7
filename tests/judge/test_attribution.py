"""Who and when in the judge's own answer: schema, JSON and text parsing, grounding, the
judge end to end (local server, official SDK), windows, store and frame."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.bulk.store import ResultsStore, read_annotations, to_frame
from mast.judge.attribution import (
    DecisiveError,
    earliest_error,
    normalize_agent,
    read_decisive_error,
)
from mast.judge.judge import Judge
from mast.judge.reply.attribution_grounding import ground_attribution
from mast.judge.reply.parse import normalize_step_id, parse_response
from mast.judge.verdict import Verdict, verdict_json_schema
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
KEY = "sk-attribution-judge-key-00000QQQQ"


def answer(present: dict[str, dict[str, Any]], decisive: Any = None, **extra: Any) -> str:
    modes = {
        code: {
            "evidence": [],
            "rationale": "",
            "present": False,
            "confidence": 0.9,
            "first_step": None,
            "agent": None,
            **present.get(code, {}),
        }
        for code in CODES
    }
    body = {"summary": "s", "modes": modes, "decisive_error": decisive, "task_completed": False}
    return json.dumps({**body, **extra})


def run() -> Trace:
    return Trace(
        id="run",
        task="Find the price.",
        steps=[
            Step.make(0, "Find the price of the flat.", agent="human"),
            Step.make(1, "Please search for the highest price.", agent="Orchestrator (thought)"),
            Step.make(2, "I typed 'highest price' into the search box.", agent="WebSurfer"),
            Step.make(3, "The answer is $3M; request satisfied.", agent="Orchestrator (thought)"),
        ],
    )


DECISIVE = {
    "agent": "Orchestrator",
    "step_id": "s4",
    "modes": ["3.2", "3.3"],
    "reason": "accepted a number nobody checked",
    "quote": "request satisfied",
}


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("inline", [False, True])
def test_schema_asks_for_first_steps_and_one_decisive_error(inline: bool) -> None:
    schema = verdict_json_schema(inline=inline)
    finding = (
        schema["$defs"]["finding"]
        if not inline
        else schema["properties"]["modes"]["properties"]["1.1"]
    )
    assert {"first_step", "agent"} <= set(finding["required"])
    decisive = schema["properties"]["decisive_error"]["anyOf"]
    assert decisive[1] == {"type": "null"}
    assert sorted(decisive[0]["required"]) == ["agent", "modes", "quote", "reason", "step_id"]
    assert "decisive_error" in schema["required"]


# --------------------------------------------------------------------------- parsing


def test_json_answer_carries_who_and_when() -> None:
    v = parse_response(
        answer(
            {"3.2": {"present": True, "first_step": "S4", "agent": "Orchestrator (thought)"}},
            decisive=DECISIVE,
        )
    )
    assert (v.findings["3.2"].first_step, v.findings["3.2"].agent) == (
        "s4",
        "Orchestrator (thought)",
    )
    assert v.findings["1.1"].first_step is None and v.findings["1.1"].agent is None
    error = v.decisive_error
    assert error is not None
    assert (error.agent, error.step_id, error.modes) == ("Orchestrator", "s4", ["3.2", "3.3"])
    assert error.reason == "accepted a number nobody checked" and error.method == "verdict"


def test_missing_fields_stay_unknown() -> None:
    old = parse_response('{"modes": {"1.1": {"present": true}}, "task_completed": false}')
    assert old.decisive_error is None and old.findings["1.1"].first_step is None
    empty = parse_response(answer({}, decisive={"agent": None, "step_id": None, "modes": []}))
    assert empty.decisive_error is None
    problems: list[str] = []
    assert read_decisive_error({"reason": "bad", "modes": ["1.1"]}, CODES, problems) is None
    assert "names neither an agent nor a step" in problems[0]


def test_stray_codes_and_bad_shapes_are_reported() -> None:
    problems: list[str] = []
    error = read_decisive_error(
        {"agent": "A", "step": 3, "modes": ["1.6", "2.6"]}, CODES, problems, normalize_step_id
    )
    assert error is not None and error.modes == ["2.6"] and error.step_id == "s3"
    assert any("1.6" in p for p in problems)
    assert read_decisive_error("s3", CODES, problems) is None
    assert "expected an object" in problems[-1]


def test_text_format_answer_carries_who_and_when() -> None:
    text = (
        "@@\nA. The orchestrator accepted an unchecked number.\nB. no\n"
        "C. 1.1 Disobey Task Specification: no\n"
        "3.2 No or Incomplete Verification: yes (first step s4, agent: Orchestrator)\n"
        "3.3 Incorrect Verification: no\n"
        "D. Decisive error: agent=Orchestrator; step=s4; modes=3.2; reason=took $3M unchecked\n@@"
    )
    v = parse_response(text)
    assert v.format == "text" and v.vector["3.2"] is True and v.vector["3.3"] is False
    assert (v.findings["3.2"].first_step, v.findings["3.2"].agent) == ("s4", "Orchestrator")
    assert v.findings["3.3"].first_step is None  # the D line is not part of 3.3
    error = v.decisive_error
    assert error is not None and (error.agent, error.step_id, error.modes) == (
        "Orchestrator",
        "s4",
        ["3.2"],
    )
    assert error.reason == "took $3M unchecked"


def test_to_schema_dict_round_trips() -> None:
    v = parse_response(
        answer({"3.2": {"present": True, "first_step": "s4", "agent": "X"}}, decisive=DECISIVE)
    )
    again = parse_response(json.dumps(v.to_schema_dict()))
    assert again.decisive_error == v.decisive_error
    assert again.findings["3.2"].first_step == "s4" and again.findings["3.2"].agent == "X"


# --------------------------------------------------------------------------- grounding


def test_grounding_checks_step_quote_and_agent() -> None:
    trace = run()

    def check(**kw: Any) -> DecisiveError:
        v = Verdict.from_findings([], codes=[], format="json", decisive_error=DecisiveError(**kw))
        out = ground_attribution(v, trace).decisive_error
        assert out is not None
        return out

    good = check(agent="orchestrator", step_id="s4", quote="Request  SATISFIED")
    assert good.grounded is True and good.problem is None
    assert check(agent="Orchestrator", step_id="s9").problem == (
        "no step 's9' in trace 'run' (its steps are s1–s4)"
    )
    assert "quote not found in s3" in (check(step_id="s3", quote="I clicked").problem or "")
    assert "does not speak" in (check(agent="FileSurfer", step_id="s3").problem or "")
    assert check(agent="FileSurfer", step_id="s3").grounded is False


def test_grounding_reports_first_steps_outside_the_trace() -> None:
    v = parse_response(answer({"1.3": {"present": True, "first_step": "s12", "agent": "Ghost"}}))
    problems = ground_attribution(v, run()).problems
    assert any("first step 's12'" in p for p in problems)
    assert any("agent 'Ghost'" in p for p in problems)


def test_agent_names_compare_by_key() -> None:
    assert normalize_agent("Orchestrator (-> WebSurfer)") == normalize_agent("orchestrator")
    assert normalize_agent("Verification_Expert") == normalize_agent("VerificationExpert")
    assert normalize_agent("  ") is None and normalize_agent(None) is None
    assert normalize_agent("(thought)") == "thought"  # a name that is only a note stays


# --------------------------------------------------------------------------- the judge


def judge(server: FakeLLMServer, **kw: Any) -> Judge:
    return Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key=KEY, fewshot=0, **kw)


def test_judge_answer_brings_who_and_when_at_no_extra_call(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.enqueue(
        Reply.text(
            answer(
                {
                    "3.2": {
                        "present": True,
                        "first_step": "s4",
                        "agent": "Orchestrator (thought)",
                        "evidence": [{"step_id": "s4", "quote": "request satisfied"}],
                    }
                },
                decisive=DECISIVE,
            )
        )
    )
    ann = judge(fake_llm).annotate(run())
    assert len(fake_llm.requests) == 1
    schema = fake_llm.requests[0].body["response_format"]["json_schema"]["schema"]
    assert "decisive_error" in schema["properties"]
    assert "decisive_error" in fake_llm.requests[0].body["messages"][0]["content"]
    error = ann.decisive_error
    assert error is not None and error.grounded is True and error.step_id == "s4"
    assert ann.findings["3.2"].first_step == "s4"

    path = tmp_path / "r.jsonl"
    with ResultsStore(path) as store:
        store.append(ann)
    (back,) = read_annotations(path)
    assert back.decisive_error == error and back.findings == ann.findings
    frame = to_frame(path)
    row = frame.loc["run"]
    assert row["decisive_agent"] == "Orchestrator" and row["decisive_step"] == "s4"
    assert row["decisive_modes"] == "3.2, 3.3" and bool(row["decisive_grounded"]) is True
    assert row["attribution_method"] == "verdict"
    assert row["first_steps"] == "3.2=s4 (Orchestrator (thought))"


def test_unknown_attribution_stays_none_in_the_frame(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text(answer({"1.1": {"present": True}})))
    ann = judge(fake_llm).annotate(run())
    assert ann.decisive_error is None
    row = to_frame([ann]).loc["run"]
    for column in ("decisive_agent", "decisive_step", "decisive_modes", "first_steps"):
        assert row[column] is None
    assert row["decisive_grounded"] is not True and str(row["decisive_grounded"]) == "<NA>"


_HEADER = re.compile(r"^\[(s\d+)\] ", re.MULTILINE)


def test_windows_keep_the_earliest_first_step_and_decisive_error(
    fake_llm: FakeLLMServer,
) -> None:
    steps = [
        Step.make(i, f"marker-{i + 1}: " + "agent talk " * 145, agent=("coder", "planner")[i % 2])
        for i in range(40)
    ]
    trace = Trace(id="long", task="Build the thing.", steps=steps)

    def respond(request: Recorded) -> Reply:
        ids = _HEADER.findall(request.body["messages"][1]["content"])
        present: dict[str, dict[str, Any]] = {}
        decisive = None
        for target in ("s12", "s30"):
            if target in ids:
                agent = "planner" if int(target[1:]) % 2 == 0 else "coder"
                # a window's positive needs grounded evidence to survive the merge (issue 16)
                cited = [{"step_id": target, "quote": f"marker-{target[1:]}: agent talk"}]
                present["1.3"] = {"present": True, "first_step": target, "agent": agent,
                                  "evidence": cited}  # fmt: skip
                decisive = {"agent": agent, "step_id": target, "modes": ["1.3"], "reason": "r",
                            "quote": ""}  # fmt: skip
        return Reply.text(answer(present, decisive=decisive))

    fake_llm.responder = respond
    ann = judge(fake_llm, context_tokens=12_000, max_tokens=1000).annotate(trace)
    assert ann.windows >= 3
    assert ann.findings["1.3"].first_step == "s12" and ann.findings["1.3"].agent == "planner"
    assert ann.decisive_error is not None and ann.decisive_error.step_id == "s12"
    assert ann.decisive_error.grounded is True


def test_earliest_error_orders_by_trace_position() -> None:
    order = {"a": 0, "b": 1}
    assert earliest_error([DecisiveError(step_id="b"), DecisiveError(step_id="a")], order) == (
        DecisiveError(step_id="a")
    )
    assert earliest_error([None, None]) is None


def test_docstring_examples() -> None:
    import doctest

    import mast.judge.attribute
    import mast.judge.attribution
    import mast.judge.reply.attribution_grounding

    results = [
        doctest.testmod(module, raise_on_error=False)
        for module in (
            mast.judge.attribution,
            mast.judge.reply.attribution_grounding,
            mast.judge.attribute,
        )
    ]
    assert sum(r.attempted for r in results) >= 8
    assert sum(r.failed for r in results) == 0


def test_evidence_policy_unknown_makes_an_ungrounded_decisive_error_unknown(
    fake_llm: FakeLLMServer,
) -> None:
    bad = {**DECISIVE, "step_id": "s9"}
    fake_llm.default = Reply.text(answer({}, decisive=bad))
    flagged = judge(fake_llm).annotate(run())
    assert flagged.decisive_error is not None and flagged.decisive_error.grounded is False
    strict = judge(fake_llm, ungrounded="unknown").annotate(run())
    assert strict.decisive_error is None
    assert any("made unknown" in p for p in strict.problems)
    good = {**DECISIVE}
    fake_llm.default = Reply.text(answer({}, decisive=good))
    kept = judge(fake_llm, ungrounded="unknown").annotate(run())
    assert kept.decisive_error is not None and kept.decisive_error.grounded is True
