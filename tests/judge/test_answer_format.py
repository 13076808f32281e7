"""Compact answers (issue 21): schema, prompt, parsing, provider requests and the resume key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fake_llm_server import FakeLLMServer, Reply
from mast.bulk.types import config_hash
from mast.judge.judge import Judge
from mast.judge.prompt.answer_format import answer_schema, check_answer, compact_answer
from mast.judge.prompt.render import render_system
from mast.judge.reply.parse import parse_response
from mast.judge.verdict import verdict_json_schema
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_trace
from mast.traces.model import Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAD_EXAMPLES = FIXTURES / "fewshot_mad"
KEY = "sk-answer-format-test-000000000QQ"
CODES = load_taxonomy().codes

PRESENT_15 = {
    "evidence": [{"step_id": "s5", "quote": "Continue. Please keep solving the problem"}],
    "rationale": "The proxy keeps asking to continue after the assistant said data was missing.",
    "present": True,
    "confidence": 0.8,
    "first_step": "s5",
    "agent": "user_proxy",
}


def compact_reply(**overrides: Any) -> dict[str, Any]:
    """A compact answer for AG2_trace1: 1.5 present, 3.3 unknown, the rest false."""
    modes: dict[str, Any] = {code: False for code in CODES}
    modes["1.5"] = PRESENT_15
    modes["3.3"] = None
    modes.update(overrides)
    return {"summary": "The proxy kept the run going.", "modes": modes,
            "decisive_error": None, "task_completed": False}  # fmt: skip


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(FIXTURES / "ag2" / "AG2_trace1.json")


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def assert_strict(schema: dict[str, Any]) -> None:
    """What OpenAI strict structured outputs require of a schema (and Anthropic accepts)."""
    assert schema["type"] == "object" and "anyOf" not in schema
    for node in _nodes(schema):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
        for ref in [node["$ref"]] if "$ref" in node else []:
            assert ref.startswith("#/$defs/") and ref.split("/")[-1] in schema["$defs"]
    jsonschema.Draft202012Validator.check_schema(schema)


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("inline", [False, True])
def test_compact_schema_shape_is_strict(inline: bool) -> None:
    schema = answer_schema(answer="compact", inline=inline)
    assert_strict(schema)
    modes = schema["properties"]["modes"]
    assert modes["required"] == CODES and sorted(modes["properties"]) == sorted(CODES)
    assert schema["required"] == ["summary", "modes", "decisive_error", "task_completed"]
    for code in CODES:
        entry = modes["properties"][code]
        if inline:
            false, null, finding = entry["anyOf"]
            assert finding["type"] == "object" and "evidence" in finding["properties"]
            assert entry["description"].startswith(code) and "$defs" not in schema
        else:
            assert entry == {"$ref": "#/$defs/mode"}
            false, null, finding = schema["$defs"]["mode"]["anyOf"]
            assert finding == {"$ref": "#/$defs/finding"}
        assert false == {"type": "boolean", "enum": [False]} and null == {"type": "null"}
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(compact_reply()))
    # A bare true (present without evidence) and a missing code are not valid answers.
    assert list(validator.iter_errors(compact_reply(**{"1.1": True})))
    short = compact_reply()
    del short["modes"]["1.1"]
    assert list(validator.iter_errors(short))


def test_full_schema_is_unchanged() -> None:
    assert answer_schema(answer="full") == verdict_json_schema()
    assert answer_schema(answer="full", inline=True) == verdict_json_schema(inline=True)
    assert_strict(verdict_json_schema())


def test_unknown_answer_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="full, compact"):
        check_answer("short")
    with pytest.raises(ValueError, match="full, compact"):
        Judge("heuristic", answer="terse")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- parsing


def test_compact_reply_reads_false_null_missing_and_objects() -> None:
    reply = compact_reply()
    del reply["modes"]["2.1"]
    verdict = parse_response(json.dumps(reply))
    assert verdict.vector["1.1"] is False and verdict.vector["1.5"] is True
    assert verdict.vector["3.3"] is None  # null: unknown
    assert verdict.vector["2.1"] is None  # missing: unknown, never False
    assert "2.1: not answered" in verdict.problems
    finding = verdict.findings["1.5"]
    assert finding.evidence[0].step_id == "s5" and finding.first_step == "s5"
    assert finding.agent == "user_proxy" and finding.rationale and finding.confidence == 0.8
    assert verdict.findings["1.1"].rationale is None and verdict.findings["1.1"].evidence == []
    assert sorted(c for c, v in verdict.vector.items() if v is False) == sorted(
        set(CODES) - {"1.5", "3.3", "2.1"}
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("maybe", "neither yes nor no"),
        ([], "neither yes nor no"),
        (0.5, "neither yes nor no"),
        ({"evidence": [], "rationale": "x"}, "no 'present' field"),
    ],
)
def test_malformed_compact_entry_is_unknown(value: Any, problem: str) -> None:
    verdict = parse_response(json.dumps(compact_reply(**{"2.3": value})))
    assert verdict.vector["2.3"] is None
    assert any(p.startswith("2.3:") and problem in p for p in verdict.problems)
    assert verdict.vector["2.4"] is False and verdict.vector["1.5"] is True


def test_truncated_compact_reply_keeps_complete_entries() -> None:
    text = json.dumps(compact_reply())
    cut = text[: text.index('"2.2"')]
    verdict = parse_response(cut)
    assert verdict.vector["1.1"] is False and verdict.vector["1.5"] is True
    assert all(verdict.vector[c] is None for c in CODES[CODES.index("2.2") :])


# --------------------------------------------------------------------------- prompt


def test_prompt_describes_and_shows_the_compact_shape() -> None:
    from mast.judge.prompt.fewshot import load_examples

    examples = load_examples(MAD_EXAMPLES)[:2]
    full = render_system(examples=examples)
    compact = render_system(examples=examples, answer="compact")
    assert "Only a mode the trace shows gets an object" in compact
    assert "Only a mode the trace shows gets an object" not in full
    assert f'"{CODES[1]}": false,' in compact
    for example in examples:
        absent = next(c for c in CODES if example.labels.get(c) is False)
        assert f'    "{absent}": false' in compact
        assert f'    "{absent}": {{"evidence": []' in full
        present = next(c for c in CODES if example.labels.get(c) is True)
        assert f'    "{present}": {{"evidence": [{{"step_id"' in compact
    assert len(compact) < len(full)


def test_compact_answer_keeps_present_objects() -> None:
    modes = {"1.1": PRESENT_15, "1.2": {"present": False}, "1.3": {"present": None}}
    full = {"summary": "s", "decisive_error": None, "task_completed": None, "modes": modes}
    assert compact_answer(full)["modes"] == {"1.1": PRESENT_15, "1.2": False, "1.3": None}


# --------------------------------------------------------------------------- providers


def test_openai_round_trip_in_compact_mode(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.text(json.dumps(compact_reply()), usage={"input": 900, "output": 80}))
    judge = Judge(
        "openai/gpt-4.1",
        base_url=fake_llm.openai_base_url,
        api_key=KEY,
        fewshot=str(MAD_EXAMPLES),
        answer="compact",
    )
    ann = judge.annotate(trace)
    assert ann.status == "ok" and ann.vector.positives == ["1.5"]
    assert ann.vector["3.3"] is None and ann.vector["1.1"] is False
    assert [e.grounded for e in ann.findings["1.5"].evidence] == [True]
    assert ann.judge["answer"] == "compact"
    (request,) = fake_llm.requests
    response_format = request.body["response_format"]["json_schema"]
    assert response_format["strict"] is True
    assert response_format["schema"] == answer_schema(answer="compact")  # $ref, see schema_choice
    system = request.body["messages"][0]["content"]
    assert system == judge.render(trace).system
    assert "Only a mode the trace shows gets an object" in system
    assert ': {"evidence": [], "rationale": "No sign' not in system


@pytest.mark.parametrize(("model", "structured"), [("claude-haiku-4-5", "tool"),
                                                   ("claude-sonnet-5-5", "auto")])  # fmt: skip
def test_anthropic_requests_compact_schema(
    fake_llm: FakeLLMServer, trace: Trace, model: str, structured: str
) -> None:
    if structured == "tool":
        fake_llm.enqueue(Reply.tool(compact_reply()))
    else:
        fake_llm.enqueue(Reply.text(json.dumps(compact_reply())))
    judge = Judge(
        f"anthropic/{model}",
        base_url=fake_llm.anthropic_base_url,
        api_key=KEY,
        fewshot=0,
        answer="compact",
        structured_output=structured,  # type: ignore[arg-type]
    )
    ann = judge.annotate(trace)
    assert ann.status == "ok" and ann.vector.positives == ["1.5"] and ann.vector["2.1"] is False
    body = fake_llm.requests[0].body
    expected = answer_schema(answer="compact")
    if structured == "tool":
        assert body["tools"][0]["input_schema"] == expected
    else:
        assert body["output_config"]["format"]["schema"] == expected


# --------------------------------------------------------------------------- resume key


def test_answer_mode_is_in_the_config_hash() -> None:
    full = Judge("openai/gpt-4.1", api_key=KEY, fewshot=0)
    compact = Judge("openai/gpt-4.1", api_key=KEY, fewshot=0, answer="compact")
    assert "answer" not in full.describe()  # records from before compact answers resume
    assert compact.describe()["answer"] == "compact"
    assert config_hash(full) != config_hash(compact)
    assert config_hash(full) == config_hash(Judge("openai/gpt-4.1", api_key=KEY, fewshot=0))


def test_cli_defaults_to_compact_answers() -> None:
    from mast.cli import _build_parser

    parser = _build_parser()
    args = parser.parse_args(["annotate", "x.json", "--model", "heuristic", "--out", "o.jsonl"])
    assert args.answer == "compact"
    args = parser.parse_args(
        ["annotate", "x.json", "--model", "heuristic", "--out", "o", "--answer", "full"]
    )
    assert args.answer == "full"


def test_docstring_examples() -> None:
    import doctest

    import mast.judge.prompt.answer_format as module

    result = doctest.testmod(module, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("inline", [False, True])
def test_compact_answers_ask_for_one_sentence(inline: bool) -> None:
    # Output costs several times input: compact summaries and rationales are one sentence,
    # full answers keep two or three (issue 21).
    compact, full = answer_schema(answer="compact", inline=inline), answer_schema(inline=inline)
    assert compact["properties"]["summary"]["description"].startswith("One sentence")
    assert full["properties"]["summary"]["description"].startswith("Two or three")
    found = [o["properties"]["rationale"]["description"] for o in _nodes(compact)
             if "rationale" in (o.get("properties") or {})]  # fmt: skip
    assert found and all(text.startswith("One sentence") for text in found)
    system = render_system(answer="compact")
    assert "<one sentence: what went wrong" in system and "<one sentence: why" in system
    assert "two or three sentences" in render_system(answer="full")
