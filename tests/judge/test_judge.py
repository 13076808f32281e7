"""The Judge end to end: real trace, official SDK clients, local fake server (no network)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.errors import AuthError
from mast.judge.annotation import Annotation
from mast.judge.judge import Judge, context_window
from mast.judge.prompt.fewshot import load_examples
from mast.judge.prompt.render import render
from mast.judge.verdict import verdict_json_schema
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_trace
from mast.traces.model import Step, Trace

# Whole-trace examples cut from MAD human traces (test fixtures; mast bundles none).
MAD_EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "fewshot_mad"

FIXTURES = Path(__file__).parents[1] / "fixtures"
KEY = "sk-judge-test-key-0000000000QQQQ"
CODES = load_taxonomy().codes


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(FIXTURES / "ag2" / "AG2_trace1.json")


def verdict(present: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A verdict in the requested JSON shape; every mode absent unless given."""
    present = present or {}
    modes = {}
    for code in CODES:
        value = present.get(code, False)
        evidence: list[dict[str, str]] = []
        if isinstance(value, tuple):
            value, evidence = value
        modes[code] = {
            "evidence": evidence,
            "rationale": f"rationale for {code}",
            "present": value,
            "confidence": 0.8,
        }
    return {"summary": "summary", "modes": modes, "task_completed": False, **extra}


# An answer a careful model gives for AG2_trace1 (written by us for the test).
AG2_ANSWER = verdict(
    {
        "1.5": (
            True,
            [
                {"step_id": "s5", "quote": "Continue. Please keep solving the problem"},
                {"step_id": "s9", "quote": "keep solving the problem until you need to query"},
            ],
        ),
        "2.5": (True, [{"step_id": "s7", "quote": "Continue. Please keep solving"}]),
        "3.3": None,
    },
    summary="The proxy agent kept asking to continue after the assistant said data was missing.",
)


def openai_judge(server: FakeLLMServer, **kwargs: Any) -> Judge:
    kwargs.setdefault("fewshot", 0)
    return Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key=KEY, **kwargs)


def no_key_in(annotation: Annotation) -> None:
    assert KEY not in annotation.model_dump_json()


# --------------------------------------------------------------------------- end to end


def test_openai_judge_end_to_end(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(
        Reply.text(json.dumps(AG2_ANSWER), usage={"input": 3000, "cached": 2048, "output": 400})
    )
    judge = openai_judge(fake_llm, fewshot=str(MAD_EXAMPLES))
    ann = judge.annotate(trace)

    assert ann.status == "ok" and ann.error is None and ann.trace_id == trace.id
    assert ann.vector.positives == ["1.5", "2.5"]
    assert ann.vector["3.3"] is None and ann.vector["1.1"] is False
    assert [e.grounded for e in ann.findings["1.5"].evidence] == [True, True]
    assert ann.task_completed is False and ann.summary and "continue" in ann.summary
    assert ann.taxonomy == "MAST 1.0" and ann.windows == 1
    assert ann.usage.input_tokens == 3000 and ann.usage.cached_input_tokens == 2048
    # gpt-4.1: $2 / $0.50 cached / $8 per 1M tokens.
    assert ann.cost_usd == pytest.approx((952 * 2.0 + 2048 * 0.5 + 400 * 8.0) / 1e6)
    assert ann.latency_s is not None and ann.latency_s > 0
    assert ann.raw == json.dumps(AG2_ANSWER)

    # What the server received: the prompt the judge records, static prefix first.
    (request,) = fake_llm.requests
    # The "ribbon" example is an excerpt of this very trace: it must be left out. The
    # "cards" example shares only AG2 MathChat's system prompt with it: it stays.
    assert "ag2-gsmplus-ribbon" in [ex.id for ex in judge.examples]
    assert "ag2-gsmplus-ribbon" not in ann.judge["fewshot"]
    assert "ag2-gsmplus-cards" in ann.judge["fewshot"]
    assert any("ag2-gsmplus-ribbon" in p and "excerpt" in p for p in ann.problems)
    by_id = {ex.id: ex for ex in load_examples(MAD_EXAMPLES)}
    expected = render(trace, examples=[by_id[i] for i in ann.judge["fewshot"]])
    assert ann.judge["prompt_hash"] == expected.prompt_hash
    assert ann.judge["static_prefix_hash"] == expected.static_prefix_hash
    assert request.body["messages"][0]["content"] == expected.system
    assert request.body["messages"][1]["content"] == expected.user
    assert request.body["response_format"]["json_schema"]["strict"] is True
    # Compatible servers (base_url) get the $ref schema too (inline only once refused).
    assert request.body["response_format"]["json_schema"]["schema"] == verdict_json_schema()
    assert len(ann.judge["fewshot"]) == 3 and len(judge.examples) == 4
    assert "Monica" not in expected.system
    for example_id in ann.judge["fewshot"]:
        assert f"({example_id})" in expected.system
    assert ann.judge["provider"] == "openai" and ann.judge["model"] == "gpt-4.1"
    assert ann.judge["temperature"] == 0.0
    assert ann.judge["base_url"] == fake_llm.openai_base_url
    no_key_in(ann)
    assert KEY not in repr(judge)

    again = Annotation.model_validate_json(ann.model_dump_json())
    assert again.vector == ann.vector and again.findings == ann.findings
    record = json.loads(ann.model_dump_json())
    assert record["trace_id"] == trace.id and record["status"] == "ok"


@pytest.mark.parametrize(
    ("model", "structured", "reply_kind"),
    [("claude-sonnet-5-5", "auto", "text"), ("claude-haiku-4-5", "tool", "tool")],
)
def test_anthropic_judge_end_to_end(
    fake_llm: FakeLLMServer, trace: Trace, model: str, structured: str, reply_kind: str
) -> None:
    usage = {"input": 4000, "cached": 3000, "cache_write": 0, "output": 500}
    if reply_kind == "tool":
        fake_llm.enqueue(Reply.tool(AG2_ANSWER, usage=usage))
    else:
        fake_llm.enqueue(Reply.text(json.dumps(AG2_ANSWER), usage=usage))
    judge = Judge(
        f"anthropic/{model}",
        base_url=fake_llm.anthropic_base_url,
        api_key=KEY,
        fewshot=1,
        structured_output=structured,  # type: ignore[arg-type]
    )
    ann = judge.annotate(trace)
    assert ann.status == "ok" and ann.vector.positives == ["1.5", "2.5"]
    body = fake_llm.requests[0].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert trace.task and trace.task in body["messages"][0]["content"]
    assert trace.task not in body["system"][0]["text"]
    assert ann.judge["temperature"] is None  # not sent to Anthropic
    assert ann.judge["structured_output"] == ("tool" if reply_kind == "tool" else "json_schema")
    assert ann.usage.cached_input_tokens == 3000
    assert ann.cost_usd is not None and ann.cost_usd > 0
    no_key_in(ann)


def test_text_format_answer_is_read_when_schema_is_ignored(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    answer = (
        "@@\nA. The proxy kept saying continue.\nB. no\nC.\n"
        + "\n".join(f"{code} {load_taxonomy()[code].name}: no" for code in CODES if code != "1.5")
        + "\n1.5 Unaware of Termination Conditions: yes\n@@"
    )
    fake_llm.enqueue(Reply.text(answer))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "ok"
    assert ann.vector.positives == ["1.5"]
    assert ann.vector["2.5"] is False


# --------------------------------------------------------------------------- repair


def test_garbage_then_repair_succeeds(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(
        Reply.text("I am sorry, I cannot comply.", usage={"input": 100, "output": 10}),
        Reply.text(json.dumps(AG2_ANSWER), usage={"input": 130, "output": 300}),
    )
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "ok" and ann.vector.positives == ["1.5", "2.5"]
    first, second = (r.body["messages"] for r in fake_llm.requests)
    assert second[:2] == first
    assert second[2] == {"role": "assistant", "content": "I am sorry, I cannot comply."}
    assert second[3]["role"] == "user" and "only the JSON object" in second[3]["content"]
    assert len(second[3]["content"]) < 600
    assert ann.usage.input_tokens == 230 and ann.usage.output_tokens == 310
    assert any("repair request 1" in p for p in ann.problems)
    assert ann.raw == json.dumps(AG2_ANSWER)


@pytest.mark.parametrize("attempts", [0, 1, 2])
def test_parse_error_after_bounded_repairs(
    fake_llm: FakeLLMServer, trace: Trace, attempts: int
) -> None:
    fake_llm.default = Reply.text("Let me think about this trace step by step...")
    ann = openai_judge(fake_llm, repair_attempts=attempts).annotate(trace)
    assert len(fake_llm.requests) == attempts + 1
    assert ann.status == "parse_error"
    assert ann.vector.unknown == CODES  # unreadable is unknown, never "no"
    assert ann.error and "unreadable" in ann.error
    assert ann.raw and ann.raw.count("step by step") == attempts + 1


def test_empty_answer_is_repaired_without_an_empty_assistant_turn(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    fake_llm.enqueue(Reply.text(""), Reply.text(json.dumps(AG2_ANSWER)))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "ok"
    roles = [m["role"] for m in fake_llm.requests[1].body["messages"]]
    assert roles == ["system", "user", "user"]


def test_truncated_answer_notes_max_tokens(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.default = Reply.text("Thinking", finish_reason="length")
    ann = openai_judge(fake_llm, repair_attempts=0, max_tokens=50).annotate(trace)
    assert ann.status == "parse_error" and "max_tokens=50" in (ann.error or "")


# --------------------------------------------------------------------------- errors


def test_provider_failure_is_an_error_record(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.error(500, "upstream exploded"))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "error" and "HTTP 500" in (ann.error or "")
    assert ann.vector.unknown == CODES and ann.findings == {}
    no_key_in(ann)


def test_rate_limit_is_an_error_record(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.error(429, "slow down", retry_after=3))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "error" and "rate limited" in (ann.error or "")


def test_auth_error_propagates(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.error(401, "Incorrect API key provided"))
    with pytest.raises(AuthError):
        openai_judge(fake_llm).annotate(trace)


def test_failed_repair_call_is_an_error(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.text("no json here"), Reply.error(503, "unavailable"))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "error" and "repair request failed" in (ann.error or "")


# --------------------------------------------------------------------------- grounding


def test_ungrounded_evidence_is_flagged_or_dropped(fake_llm: FakeLLMServer, trace: Trace) -> None:
    answer = verdict(
        {
            "1.3": (
                True,
                [{"step_id": "s99", "quote": ""}, {"step_id": "s3", "quote": "words nobody wrote"}],
            )
        }
    )
    fake_llm.default = Reply.text(json.dumps(answer))
    flagged = openai_judge(fake_llm).annotate(trace)
    assert flagged.vector["1.3"] is True
    # s99 names no step: dropped with a note, whatever drop_ungrounded says
    assert [e.grounded for e in flagged.findings["1.3"].evidence] == [False]
    assert [e.step_id for e in flagged.findings["1.3"].dropped] == ["s99"]
    assert flagged.ungrounded == ["1.3"]
    assert any("grounding" in p for p in flagged.problems)
    dropped = openai_judge(fake_llm, drop_ungrounded=True).annotate(trace)
    assert dropped.findings["1.3"].evidence == []
    assert len(dropped.findings["1.3"].dropped) == 2


def test_evidence_policy_unknown_makes_ungrounded_positives_none(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    answer = verdict(
        {
            "1.3": (True, [{"step_id": "s3", "quote": "words nobody wrote in this trace"}]),
            "1.5": (True, []),
            "2.1": (False, []),
        }
    )
    fake_llm.default = Reply.text(json.dumps(answer))
    strict = openai_judge(fake_llm, ungrounded="unknown").annotate(trace)
    assert (strict.vector["1.3"], strict.vector["1.5"], strict.vector["2.1"]) == (None, None, False)
    assert strict.findings["1.3"].judged is True
    assert sum("set to unknown" in p for p in strict.problems) == 2
    assert strict.judge["ungrounded"] == "unknown"
    kept = openai_judge(fake_llm, ungrounded="keep").annotate(trace)
    assert (kept.vector["1.3"], kept.vector["1.5"]) == (True, True)
    assert not any("judged present" in p for p in kept.problems)
    assert "ungrounded" not in kept.judge  # answers as before: old records still resume
    with pytest.raises(ValueError, match="ungrounded"):
        openai_judge(fake_llm, ungrounded="drop")


# --------------------------------------------------------------------------- windows


def long_trace(n: int = 40, size: int = 1600) -> Trace:
    steps = [
        Step.make(
            i,
            f"marker-{i + 1}: " + ("agent talk " * (size // 11)),
            agent="planner" if i % 2 else "coder",
            role="assistant",
        )
        for i in range(n)
    ]
    return Trace(id="long", task="Build the thing.", steps=steps)


_HEADER = re.compile(r"^\[(s\d+)\] ", re.MULTILINE)


def shown_steps(request: Recorded) -> list[str]:
    user = request.body["messages"][1]["content"]
    return _HEADER.findall(user)


def window_responder(*, fail: str | None = None, unknown: str | None = None) -> Any:
    """Answer per window: 1.3 present where s25 is shown, 2.2 unknown where `unknown` is shown."""

    def respond(request: Recorded) -> Reply:
        ids = shown_steps(request)
        if fail in ids:
            return Reply.error(500, "window failed")
        present: dict[str, Any] = {}
        if "s25" in ids:
            present["1.3"] = (True, [{"step_id": "s25", "quote": "marker-25: agent talk"}])
        if unknown in ids:
            present["2.2"] = None
        return Reply.text(json.dumps(verdict(present, summary=f"part with {ids[0]}")))

    return respond


def test_long_trace_is_annotated_in_windows_without_truncation(fake_llm: FakeLLMServer) -> None:
    trace = long_trace()
    fake_llm.responder = window_responder(unknown="s3")
    judge = openai_judge(fake_llm, context_tokens=12_000, max_tokens=1000)
    ann = judge.annotate(trace)

    # one request per window, then one final pass for the modes that span windows
    assert ann.windows == len(fake_llm.requests) - 1 >= 3
    windows, final = fake_llm.requests[:-1], fake_llm.requests[-1]
    seen = [s for r in windows for s in shown_steps(r)]
    assert seen == [s.id for s in trace.steps]  # every step once, in order, none cut
    assert shown_steps(final) == ["s25"]  # the steps the windows cited
    for request in windows:
        user = request.body["messages"][1]["content"]
        assert "Build the thing." in user
        ids = shown_steps(request)
        for step in trace.steps:
            if step.id in ids:
                assert step.content in user
    second_user = fake_llm.requests[1].body["messages"][1]["content"]
    assert "earlier parts" in second_user and "part 2 of" in second_user
    # Merge rules: present anywhere -> True with evidence; unanswered somewhere -> None;
    # False only where every window said False.
    assert ann.status == "ok"
    assert ann.vector["1.3"] is True
    assert [e.step_id for e in ann.findings["1.3"].evidence] == ["s25"]
    assert ann.findings["1.3"].evidence[0].grounded is True
    assert ann.vector["2.2"] is None
    assert ann.vector["1.1"] is False and ann.vector["3.3"] is False
    assert any("windows of whole steps" in p for p in ann.problems)
    assert (
        ann.judge["window_prompt_hashes"] and len(ann.judge["window_prompt_hashes"]) == ann.windows
    )
    assert len(ann.judge["window_spans"]) == ann.windows and ann.judge["final_pass_prompt_hash"]


def test_a_failed_window_makes_its_modes_unknown_not_absent(fake_llm: FakeLLMServer) -> None:
    trace = long_trace()
    fake_llm.responder = window_responder(fail="s40")  # the last step: the ending
    ann = openai_judge(fake_llm, context_tokens=12_000, max_tokens=1000).annotate(trace)
    assert ann.windows > 1
    assert ann.status == "error" and "window failed" in (ann.error or "")
    assert ann.vector["1.3"] is True  # shown by a window that worked
    assert ann.vector["1.1"] is None  # a window failed: unknown, never False
    assert ann.task_completed is None  # the last window (the ending) failed


def test_context_length_error_falls_back_to_windows(fake_llm: FakeLLMServer) -> None:
    trace = long_trace(n=12, size=800)
    fake_llm.enqueue(
        Reply.error(
            400,
            "This model's maximum context length is 8192 tokens",
            code="context_length_exceeded",
        )
    )
    fake_llm.responder = window_responder()
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.status == "ok" and ann.windows > 1
    assert any("too long" in p for p in ann.problems)
    seen = [s for r in fake_llm.requests[1:] for s in shown_steps(r)]
    assert seen == [s.id for s in trace.steps]


def test_budget_too_small_for_the_static_prompt(fake_llm: FakeLLMServer) -> None:
    ann = openai_judge(fake_llm, context_tokens=2_000, max_tokens=500).annotate(long_trace())
    assert ann.status == "error" and "context_tokens" in (ann.error or "")
    assert fake_llm.requests == []


def test_context_window_table() -> None:
    assert context_window("anthropic/claude-sonnet-5-5") == 1_000_000
    assert context_window("openai/gpt-4o-mini") == 128_000
    assert context_window("openai/qwen2.5-7b") == 128_000


# --------------------------------------------------------------------------- heuristic


def test_heuristic_judge_needs_no_key(monkeypatch: pytest.MonkeyPatch, trace: Trace) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = Judge("heuristic")
    ann = judge.annotate(trace)
    assert ann.status == "ok" and ann.cost_usd == 0.0 and ann.usage.input_tokens == 0
    assert ann.judge["provider"] == "heuristic"
    assert set(ann.vector) == set(CODES)
    # It cannot judge everything: some modes stay unknown rather than "no".
    assert ann.vector.unknown
    assert ann.vector["1.5"] is True  # "Continue. Please keep solving…" repeated to the end


def test_llm_judge_without_key_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        Judge("openai/gpt-4.1")


# --------------------------------------------------------------------------- sync/async, cost


def test_annotate_works_inside_a_running_loop(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.default = Reply.text(json.dumps(AG2_ANSWER))
    judge = openai_judge(fake_llm)

    async def notebook_cell() -> Annotation:
        return judge.annotate(trace)  # sync call while a loop runs, as in Jupyter

    assert asyncio.run(notebook_cell()).status == "ok"


def test_async_annotations_run_concurrently(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.default = Reply.text(json.dumps(AG2_ANSWER), delay=0.2)
    judge = openai_judge(fake_llm)

    async def main() -> list[Annotation]:
        async with judge:
            return list(await asyncio.gather(*(judge.aannotate(trace) for _ in range(3))))

    results = asyncio.run(main())
    assert [a.status for a in results] == ["ok"] * 3
    assert len(fake_llm.requests) == 3


def test_unknown_price_and_unreported_usage_give_no_cost(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    fake_llm.default = Reply.text(json.dumps(AG2_ANSWER))
    local = Judge("openai/qwen2.5-7b", base_url=fake_llm.openai_base_url, fewshot=0)
    ann = local.annotate(trace)
    assert ann.cost_usd is None and any("no price" in p for p in ann.problems)
    priced = Judge(
        "openai/qwen2.5-7b",
        base_url=fake_llm.openai_base_url,
        fewshot=0,
        prices={"openai/qwen2.5-7b": {"input": 0.1, "output": 0.2}},
    )
    assert priced.annotate(trace).cost_usd is not None
    fake_llm.default = Reply.no_usage(json.dumps(AG2_ANSWER))
    ann = openai_judge(fake_llm).annotate(trace)
    assert ann.usage.input_tokens is None and ann.cost_usd is None
    assert any("did not report" in p for p in ann.problems)


@pytest.mark.parametrize(
    "module",
    [
        "mast.judge.judge",
        "mast.judge.prompt.render",
        "mast.judge.prompt.types",
        "mast.judge.records",
        "mast.judge.annotation",
        "mast.judge.providers.pricing",
        "mast.judge.providers.usage",
        "mast.judge.windows",
        "mast.cli.demo",
        "mast.judge.providers",
        "mast.judge.providers._errors",
        "mast.judge.providers.openai",
        "mast.judge.providers.anthropic",
    ],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), raise_on_error=False)
    assert result.failed == 0
