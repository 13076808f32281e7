"""Providers through the official SDK clients, against the local fake server (no network)."""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, Reply
from mast.errors import (
    AuthError,
    ContextLengthError,
    MissingDependencyError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from mast.judge.prompt.render import render
from mast.judge.prompt.types import Prompt
from mast.judge.providers import CallConfig, Completion, Provider, get_provider, parse_model
from mast.judge.providers._errors import retry_after_seconds
from mast.judge.providers.anthropic import DEFAULT_MAX_TOKENS, TOOL_NAME, supports_json_output
from mast.judge.providers.openai import is_reasoning_model
from mast.judge.verdict import verdict_json_schema
from mast.traces.loaders import load_trace

KEY = "sk-test-0123456789abcdefXYZW"
SCHEMA = verdict_json_schema()
VERDICT = {
    "summary": "The assistant asked for missing data and the run kept going.",
    "modes": {
        code: {"evidence": [], "rationale": "", "present": False, "confidence": 0.9}
        for code in SCHEMA["properties"]["modes"]["required"]
    },
    "task_completed": False,
}


@pytest.fixture(scope="module")
def prompt() -> Prompt:
    trace = load_trace(Path(__file__).parents[1] / "fixtures" / "ag2" / "AG2_trace1.json")
    return render(trace, examples=())


def run(provider: Provider, prompt: Prompt, config: CallConfig) -> Completion:
    async def go() -> Completion:
        try:
            return await provider.complete(prompt, config)
        finally:
            await provider.aclose()

    return asyncio.run(go())


def openai(server: FakeLLMServer) -> Provider:
    return get_provider("openai", api_key=KEY, base_url=server.openai_base_url)


def anthropic(server: FakeLLMServer) -> Provider:
    return get_provider("anthropic", api_key=KEY, base_url=server.anthropic_base_url)


# --------------------------------------------------------------------------- OpenAI


def test_openai_request_and_response_shapes(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    fake_llm.enqueue(
        Reply.text(json.dumps(VERDICT), usage={"input": 3000, "cached": 2048, "output": 400})
    )
    config = CallConfig(model="gpt-4.1", temperature=0.0, max_tokens=2000, json_schema=SCHEMA)
    completion = run(openai(fake_llm), prompt, config)

    (request,) = fake_llm.requests
    body = request.body
    assert request.path == "/v1/chat/completions"
    assert body["model"] == "gpt-4.1"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # Static prefix (taxonomy) first, the trace last and only in the user message.
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert system == prompt.system and user == prompt.user
    assert "### 2.5 Ignored Other Agent's Input" in system
    assert "Monica is wrapping Christmas gifts" not in system
    assert "Monica is wrapping Christmas gifts" in user
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "mast_verdict", "schema": SCHEMA, "strict": True},
    }
    assert body["temperature"] == 0.0 and body["max_tokens"] == 2000
    assert "max_completion_tokens" not in body
    # The key travels in the Authorization header only.
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in request.raw.decode()
    # Compatible servers get no OpenAI-only fields.
    assert "prompt_cache_key" not in body

    assert json.loads(completion.text) == VERDICT
    assert completion.usage.input_tokens == 3000
    assert completion.usage.cached_input_tokens == 2048
    assert completion.usage.output_tokens == 400
    assert completion.model == "gpt-4.1"
    assert completion.response_id and completion.response_id.startswith("chatcmpl-")
    assert completion.finish_reason == "stop" and completion.latency_s > 0


def test_openai_reasoning_models_get_max_completion_tokens_and_no_temperature(
    fake_llm: FakeLLMServer, prompt: Prompt
) -> None:
    fake_llm.enqueue(Reply.text("{}"))
    run(openai(fake_llm), prompt, CallConfig(model="o4-mini", temperature=0.0, max_tokens=9000))
    body = fake_llm.requests[0].body
    assert body["max_completion_tokens"] == 9000
    assert "temperature" not in body and "max_tokens" not in body
    assert openai(fake_llm).effective_temperature(CallConfig(model="gpt-5-mini")) is None
    assert openai(fake_llm).effective_temperature(CallConfig(model="gpt-4.1")) == 0.0


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("o1", True),
        ("o3-mini", True),
        ("o4-mini-2025-04-16", True),
        ("gpt-5", True),
        ("gpt-5.4-mini", True),
        ("gpt-4.1", False),
        ("gpt-4o-mini", False),
        ("omni-moderation", False),
        ("meta-llama/Llama-3.1-8B", False),
    ],
)
def test_reasoning_model_detection(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


def test_openai_without_base_url_sets_prompt_cache_key(prompt: Prompt) -> None:
    provider = get_provider("openai", api_key=KEY)
    body = provider.request_body(prompt, CallConfig(model="gpt-4.1", json_schema=SCHEMA))
    assert body["prompt_cache_key"] == f"mast-{prompt.static_prefix_hash[:32]}"


def test_openai_structured_none_sends_no_response_format(prompt: Prompt) -> None:
    provider = get_provider("openai", api_key=KEY)
    config = CallConfig(model="llama3", json_schema=SCHEMA, structured="none")
    assert "response_format" not in provider.request_body(prompt, config)


def test_openai_missing_usage_is_unknown_not_zero(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    fake_llm.enqueue(Reply.no_usage("{}"))
    completion = run(openai(fake_llm), prompt, CallConfig(model="local"))
    assert completion.usage.input_tokens is None and completion.usage.output_tokens is None


def test_repair_turns_follow_the_user_message(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    fake_llm.enqueue(Reply.text("{}"), Reply.text("{}"))
    repaired = prompt.with_turns(("assistant", "oops"), ("user", "JSON only, please"))
    run(openai(fake_llm), repaired, CallConfig(model="gpt-4.1"))
    run(anthropic(fake_llm), repaired, CallConfig(model="claude-haiku-4-5"))
    oa, an = (r.body for r in fake_llm.requests)
    assert [m["role"] for m in oa["messages"]] == ["system", "user", "assistant", "user"]
    assert oa["messages"][2]["content"] == "oops"
    assert [m["role"] for m in an["messages"]] == ["user", "assistant", "user"]
    assert repaired.prompt_hash != prompt.prompt_hash
    assert repaired.static_prefix_hash == prompt.static_prefix_hash


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_tool_use_request_and_response(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    fake_llm.enqueue(
        Reply.tool(
            VERDICT, usage={"input": 5000, "cached": 3000, "cache_write": 500, "output": 700}
        )
    )
    config = CallConfig(model="claude-haiku-4-5", json_schema=SCHEMA, structured="tool")
    completion = run(anthropic(fake_llm), prompt, config)

    (request,) = fake_llm.requests
    body = request.body
    assert request.path == "/v1/messages"
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == [
        {"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [{"role": "user", "content": prompt.user}]
    assert body["tools"][0]["name"] == TOOL_NAME
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert "output_config" not in body
    # API version 2026-10-21 rejects sampling parameters: none is sent.
    assert "temperature" not in body
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS == 16_384
    assert request.headers["anthropic-version"]
    assert KEY in request.headers.get("authorization", "") + request.headers.get("x-api-key", "")
    assert KEY not in request.raw.decode()

    assert completion.via_tool
    assert json.loads(completion.text) == VERDICT
    # input_tokens counts fresh + cache reads + cache writes; the parts are kept apart.
    assert completion.usage.input_tokens == 5000
    assert completion.usage.cached_input_tokens == 3000
    assert completion.usage.cache_write_input_tokens == 500
    assert completion.usage.output_tokens == 700
    assert completion.finish_reason == "tool_use"
    assert completion.response_id and completion.response_id.startswith("msg_")


def test_anthropic_json_output_for_current_models(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    fake_llm.enqueue(Reply.text(json.dumps(VERDICT)))
    completion = run(
        anthropic(fake_llm), prompt, CallConfig(model="claude-sonnet-5-5", json_schema=SCHEMA)
    )
    body = fake_llm.requests[0].body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "tools" not in body and "tool_choice" not in body
    assert not completion.via_tool and json.loads(completion.text) == VERDICT


def test_anthropic_falls_back_to_text_when_no_tool_block(
    fake_llm: FakeLLMServer, prompt: Prompt
) -> None:
    fake_llm.enqueue(Reply.text("1.1 Disobey Task Specification: no"))
    config = CallConfig(model="claude-haiku-4-5", json_schema=SCHEMA, structured="tool")
    completion = run(anthropic(fake_llm), prompt, config)
    assert not completion.via_tool
    assert completion.text == "1.1 Disobey Task Specification: no"


@pytest.mark.parametrize(
    ("model", "json_output"),
    [
        ("claude-sonnet-4-5-20250929", True),
        ("claude-haiku-4-5", True),
        ("claude-opus-5", True),
        ("claude-sonnet-5-5", True),
        ("claude-sonnet-4", False),
        ("claude-opus-4-1", False),
        ("claude-3-5-haiku-latest", False),
        ("my-proxy-model", False),
    ],
)
def test_anthropic_structured_mode_by_model(model: str, json_output: bool) -> None:
    assert supports_json_output(model) is json_output


# --------------------------------------------------------------------------- errors


def _fail(
    server: FakeLLMServer, provider: Provider, prompt: Prompt, reply: Reply, **config: Any
) -> ProviderError:
    server.enqueue(reply)
    model = "claude-haiku-4-5" if provider.name == "anthropic" else "gpt-4.1"
    with pytest.raises(ProviderError) as info:
        run(provider, prompt, CallConfig(model=model, **config))
    # The SDKs' own retries are off: the runner owns retries.
    assert len(server.requests) == 1
    server.reset()
    return info.value


@pytest.mark.parametrize("make", [openai, anthropic])
def test_errors_are_mapped(make: Any, fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    provider = make(fake_llm)
    err = _fail(fake_llm, provider, prompt, Reply.error(401, "invalid x-api-key"))
    assert type(err) is AuthError and err.status_code == 401 and not err.retryable
    assert KEY not in str(err)
    assert provider.env_var in str(err)

    err = _fail(fake_llm, provider, prompt, Reply.error(403, "forbidden"))
    assert type(err) is AuthError

    err = _fail(fake_llm, provider, prompt, Reply.error(429, "slow down", retry_after=7))
    assert type(err) is RateLimitError and err.retry_after == 7.0 and err.retryable

    err = _fail(
        fake_llm, provider, prompt, Reply.error(429, "x", headers={"retry-after-ms": "1500"})
    )
    assert isinstance(err, RateLimitError) and err.retry_after == 1.5

    err = _fail(fake_llm, provider, prompt, Reply.error(500, "boom"))
    assert type(err) is ProviderError and err.status_code == 500 and err.retryable
    assert "boom" in str(err)

    err = _fail(
        fake_llm, provider, prompt, Reply.error(400, "prompt is too long: 210000 tokens > 200000")
    )
    assert type(err) is ContextLengthError and not err.retryable

    err = _fail(fake_llm, provider, prompt, Reply.error(404, "model not found"))
    assert type(err) is ProviderError and not err.retryable and err.status_code == 404

    err = _fail(fake_llm, provider, prompt, Reply.raw(200, b"{not json"))
    assert type(err) is ProviderError and "not valid JSON" in str(err)

    err = _fail(fake_llm, provider, prompt, Reply.text("late", delay=0.5), timeout=0.1)
    assert type(err) is ProviderTimeout and err.retryable


def test_openai_specific_errors(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    provider = openai(fake_llm)
    err = _fail(fake_llm, provider, prompt, Reply.error(429, "quota", code="insufficient_quota"))
    assert type(err) is ProviderError and not err.retryable
    err = _fail(
        fake_llm,
        provider,
        prompt,
        Reply.error(
            400,
            "This model's maximum context length is 128000 tokens",
            code="context_length_exceeded",
        ),
    )
    assert type(err) is ContextLengthError


def test_anthropic_overloaded_is_retryable(fake_llm: FakeLLMServer, prompt: Prompt) -> None:
    err = _fail(fake_llm, anthropic(fake_llm), prompt, Reply.error(529, "Overloaded"))
    assert type(err) is ProviderError and err.retryable and err.status_code == 529


def test_connection_refused_is_a_retryable_provider_error(prompt: Prompt) -> None:
    with FakeLLMServer() as server:
        url = server.openai_base_url
    provider = get_provider("openai", api_key=KEY, base_url=url)  # nobody listens any more
    with pytest.raises(ProviderError) as info:
        run(provider, prompt, CallConfig(model="gpt-4.1"))
    assert info.value.retryable and info.value.status_code is None


def test_retry_after_http_date() -> None:
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_provider_errors_pickle() -> None:
    err = RateLimitError("openai/x: rate limited", provider="openai", retry_after=2.5)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RateLimitError and back.retry_after == 2.5 and back.retryable
    assert str(back) == str(err)


# --------------------------------------------------------------------------- keys and setup


def test_keys_come_from_the_environment_and_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    provider = get_provider("anthropic")
    assert KEY not in repr(provider) and "XYZW" in repr(provider)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        get_provider("anthropic")


def test_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = get_provider("openai", base_url="http://127.0.0.1:9/v1")
    assert provider.base_url == "http://127.0.0.1:9/v1"


def test_missing_sdk_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, prompt: Prompt
) -> None:
    provider = get_provider("anthropic", api_key=KEY)
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(MissingDependencyError) as info:
        get_provider("anthropic", api_key=KEY)  # fails when the judge is made …
    assert str(info.value).endswith("pip install anthropic")
    assert isinstance(info.value, ImportError)
    with pytest.raises(MissingDependencyError, match=r"pip install anthropic$"):
        run(provider, prompt, CallConfig(model="claude-haiku-4-5"))  # … and when it is used


@pytest.mark.parametrize("spec", ["gpt-4.1", "claude-sonnet-5-5", "/x", "openai/", "mistral/x"])
def test_bad_model_names(spec: str) -> None:
    with pytest.raises(ValueError, match="provider"):
        parse_model(spec)
