"""Dedicated attribution methods against a local server with scripted answers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.judge.attribute import AttributionJudge, attribute, expected_calls, read_answer
from mast.judge.judge import Judge
from mast.traces.model import Step, Trace

KEY = "sk-attribution-test-key-000000QQQQ"


def trace(n: int) -> Trace:
    agents = ["Planner", "Coder", "Tester"]
    return Trace(
        id=f"run{n}",
        task="Sum the numbers.",
        steps=[Step.make(i, f"message {i + 1} text", agent=agents[i % 3]) for i in range(n)],
    )


def judge(server: FakeLLMServer, **kw: Any) -> Judge:
    return Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key=KEY, **kw)


def shown(request: Recorded) -> list[int]:
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    return [int(s) for s in re.findall(r"^\[s(\d+)\] ", user, flags=re.MULTILINE)]


def answer(found: bool | None, agent: str | None = None, step: str | None = None) -> Reply:
    body = {"found": found, "agent": agent, "step_id": step, "reason": "r", "quote": ""}
    return Reply.text(json.dumps(body))


def scripted(target: int | None, method: str) -> Any:
    """Answers as a judge that knows the error is at step ``target`` (1-based)."""

    def respond(request: Recorded) -> Reply:
        last = shown(request)[-1]
        if method == "step-by-step":
            return answer(target is not None and last == target)
        if method == "binary-search":
            return answer(target is not None and target <= last)
        return answer(True, "Coder", f"s{target}")

    return respond


def test_all_at_once_is_one_call(fake_llm: FakeLLMServer) -> None:
    fake_llm.responder = scripted(5, "all-at-once")
    ann = attribute(trace(10), judge(fake_llm), method="all-at-once")
    assert len(fake_llm.completions) == 1 == expected_calls("all-at-once", 10)
    assert shown(fake_llm.completions[0]) == list(range(1, 11))
    err = ann.decisive_error
    assert err is not None and (err.agent, err.step_id, err.method, err.calls) == (
        "Coder",
        "s5",
        "all-at-once",
        1,
    )
    assert err.grounded is True
    assert all(v is None for v in ann.vector.values())  # the modes were not judged
    body = fake_llm.completions[0].body
    assert body["response_format"]["json_schema"]["name"] == "mast_attribution"


@pytest.mark.parametrize("target", [1, 4, 7])
def test_step_by_step_stops_at_the_first_yes(fake_llm: FakeLLMServer, target: int) -> None:
    fake_llm.responder = scripted(target, "step-by-step")
    ann = attribute(trace(7), judge(fake_llm), method="step-by-step")
    assert len(fake_llm.completions) == target == expected_calls("step-by-step", 7, error_at=target)
    # each call shows the trace up to the step under review
    assert [shown(r)[-1] for r in fake_llm.completions] == list(range(1, target + 1))
    err = ann.decisive_error
    assert err is not None and err.step_id == f"s{target}" and err.calls == target
    assert err.agent == trace(7).steps[target - 1].agent


def test_step_by_step_without_a_yes_is_unknown(fake_llm: FakeLLMServer) -> None:
    fake_llm.responder = scripted(None, "step-by-step")
    ann = attribute(trace(4), judge(fake_llm), method="step-by-step")
    assert len(fake_llm.completions) == 4
    assert ann.decisive_error is None and ann.status == "ok"
    assert any("no step was judged" in p for p in ann.problems)


@pytest.mark.parametrize(
    ("n", "target", "calls"), [(8, 3, 3), (5, 2, 3), (5, 3, 2), (16, 16, 4), (1, 1, 0)]
)
def test_binary_search_halves_prefixes(
    fake_llm: FakeLLMServer, n: int, target: int, calls: int
) -> None:
    fake_llm.responder = scripted(target, "binary-search")
    ann = attribute(trace(n), judge(fake_llm), method="binary-search")
    assert len(fake_llm.completions) == calls <= expected_calls("binary-search", n)
    for request in fake_llm.completions:
        assert shown(request)[0] == 1  # always a prefix
    err = ann.decisive_error
    assert err is not None and err.step_id == f"s{target}" and err.calls == calls


def test_undecided_answer_stops_the_search(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(answer(False), answer(None))
    ann = attribute(trace(6), judge(fake_llm), method="step-by-step")
    assert ann.decisive_error is None
    assert any("could not decide" in p for p in ann.problems)


def test_unreadable_answer_is_repaired_then_parse_error(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("I think it is fine."), Reply.text("no idea"))
    ann = attribute(trace(3), judge(fake_llm, repair_attempts=1), method="all-at-once")
    assert len(fake_llm.completions) == 2
    assert ann.status == "parse_error" and ann.decisive_error is None


def test_text_answers_are_read() -> None:
    got = read_answer("Agent Name: Coder\nStep Number: 4\nReason for Mistake: wrong sum")
    assert got is not None and (got.agent, got.step_id) == ("Coder", "s4")
    assert read_answer("nothing here") is None


def test_ungrounded_step_is_flagged(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(answer(True, "Coder", "s42"))
    ann = attribute(trace(3), judge(fake_llm), method="all-at-once")
    assert ann.decisive_error is not None and ann.decisive_error.grounded is False
    assert "no step 's42'" in (ann.decisive_error.problem or "")


def test_heuristic_judge_is_refused() -> None:
    with pytest.raises(ValueError, match="LLM judge"):
        AttributionJudge(Judge("heuristic"), "all-at-once")
    with pytest.raises(ValueError, match="method"):
        expected_calls("guess", 3)  # type: ignore[arg-type]
