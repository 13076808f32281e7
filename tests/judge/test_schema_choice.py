"""The answer schema is sent with $ref everywhere; a server that refuses it gets it inline
(one retry, remembered), through the official OpenAI SDK against the local fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.errors import ProviderError
from mast.judge.judge import Judge
from mast.judge.prompt.answer_format import answer_schema
from mast.judge.providers._base import CallConfig
from mast.judge.providers.schema_choice import inline_schema, refuses_schema
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_trace
from mast.traces.model import Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = "sk-schema-choice-test-00000000000QQ"
CODES = load_taxonomy().codes
# What llama.cpp's server says when it cannot resolve a reference (HTTP 400).
REFUSAL = "JSON schema conversion failed: Error resolving ref #/$defs/mode: not supported"


def compact_answer_text() -> str:
    modes: dict[str, Any] = {code: False for code in CODES}
    return json.dumps({"summary": "Nothing went wrong.", "modes": modes,
                       "decisive_error": None, "task_completed": True})  # fmt: skip


def schema_of(request: Recorded) -> dict[str, Any]:
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert isinstance(schema, dict)
    return schema


def refuse_refs(request: Recorded) -> Reply:
    """A server whose grammar compiler takes no $ref: 400 for it, an answer otherwise."""
    if "$defs" in json.dumps(request.body.get("response_format")):
        return Reply.error(400, REFUSAL)
    return Reply.text(compact_answer_text())


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(FIXTURES / "ag2" / "AG2_trace1.json")


def judge_for(server: FakeLLMServer, **kw: Any) -> Judge:
    return Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key=KEY, fewshot=0,
                 answer="compact", **kw)  # fmt: skip


# --------------------------------------------------------------------------- inlining


@pytest.mark.parametrize("answer", ["full", "compact"])
def test_inline_schema_accepts_exactly_what_the_ref_schema_accepts(answer: str) -> None:
    ref = answer_schema(answer=answer)  # type: ignore[arg-type]
    flat = inline_schema(ref)
    assert "$ref" not in json.dumps(flat) and "$defs" not in flat
    jsonschema.Draft202012Validator.check_schema(flat)
    absent: dict[str, Any] = {code: False for code in CODES}
    finding = {"evidence": [{"step_id": "s2", "quote": "the agents loop"}],
               "rationale": "It loops.", "present": True, "confidence": None,
               "first_step": "s2", "agent": "coder"}  # fmt: skip
    modes = {**absent, "1.3": finding} if answer == "compact" else dict.fromkeys(CODES, finding)
    good = {"summary": "", "modes": modes, "decisive_error": None, "task_completed": None}
    bad_mode = {**good, "modes": {**good["modes"], "1.1": "yes"}}
    bad_finding = {**good, "modes": {**good["modes"], "1.3": {**finding, "extra": 1}}}
    for value, valid in ((good, True), (bad_mode, False), (bad_finding, False)):
        for schema in (ref, flat):
            assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid


def test_inline_schema_refuses_what_it_cannot_resolve() -> None:
    with pytest.raises(ValueError, match="#/\\$defs/missing"):
        inline_schema({"properties": {"a": {"$ref": "#/$defs/missing"}}, "$defs": {}})
    loop = {"$ref": "#/$defs/a", "$defs": {"a": {"items": {"$ref": "#/$defs/a"}}}}
    with pytest.raises(ValueError, match="#/\\$defs/a"):
        inline_schema(loop)


def test_ref_schema_is_a_fifth_of_the_inline_one() -> None:
    ref, flat = answer_schema(answer="compact"), inline_schema(answer_schema(answer="compact"))
    assert len(json.dumps(ref)) * 4 < len(json.dumps(flat))


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (400, REFUSAL, True),
        (400, "The provided JSON schema contains features not supported by xgrammar.", True),
        (500, "invalid JSON schema in format", True),  # Ollama
        (400, "messages[1].content must be a string", False),
        (404, "model gpt-4.1 not found", False),
        (503, "schema service overloaded", False),
    ],
)
def test_refusal_is_read_from_status_and_message(status: int, message: str, refused: bool) -> None:
    config = CallConfig(model="m", json_schema=answer_schema())
    exc = ProviderError(message, provider="openai", status_code=status)
    assert refuses_schema(exc, config) is refused
    assert refuses_schema(exc, CallConfig(model="m", json_schema=None)) is False


# --------------------------------------------------------------------------- end to end


def test_compatible_server_gets_the_ref_schema(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.text(compact_answer_text()))
    ann = judge_for(fake_llm).annotate(trace)
    assert ann.status == "ok"
    (request,) = fake_llm.requests
    assert schema_of(request) == answer_schema(answer="compact")
    assert request.body["response_format"]["json_schema"]["strict"] is True


def test_refused_ref_schema_is_retried_inline_and_remembered(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    fake_llm.responder = refuse_refs
    judge = judge_for(fake_llm)
    first = judge.annotate(trace)
    assert first.status == "ok" and first.vector["1.1"] is False, first.error
    refused, retried = fake_llm.requests
    assert "$defs" in schema_of(refused)
    assert schema_of(retried) == inline_schema(answer_schema(answer="compact"))
    assert retried.body["messages"] == refused.body["messages"]
    # The next trace, and the judge's copy for another sample, go inline straight away.
    assert judge.annotate(trace).status == "ok"
    assert judge.for_sample(1).annotate(trace).status == "ok"
    assert len(fake_llm.requests) == 4
    assert all("$defs" not in schema_of(r) for r in fake_llm.requests[2:])


def test_other_errors_are_not_retried(fake_llm: FakeLLMServer, trace: Trace) -> None:
    fake_llm.enqueue(Reply.error(400, "messages: too many"))
    ann = judge_for(fake_llm).annotate(trace)
    assert ann.status == "error" and "too many" in (ann.error or "")
    assert len(fake_llm.requests) == 1


def test_server_refusing_every_schema_says_what_to_do(
    fake_llm: FakeLLMServer, trace: Trace
) -> None:
    fake_llm.default = Reply.error(400, "response_format json_schema is not supported")
    ann = judge_for(fake_llm).annotate(trace)
    assert ann.status == "error" and 'structured_output="none"' in (ann.error or "")
    assert len(fake_llm.requests) == 2
    fake_llm.reset()
    fake_llm.enqueue(Reply.text(compact_answer_text()))
    plain = judge_for(fake_llm, structured_output="none").annotate(trace)
    assert plain.status == "ok" and "response_format" not in fake_llm.requests[0].body
