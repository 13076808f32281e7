"""Azure OpenAI, Gemini, and Claude on Bedrock and Vertex: each provider's official SDK
client talks to the local fake server over its own wire protocol (URL layout, auth header,
body); nothing is patched. Credentials are fake values in the environment."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply
from mast.errors import AuthError
from mast.judge.prompt.render import render
from mast.judge.prompt.types import Prompt
from mast.judge.providers import CallConfig, Completion, Provider, get_provider, parse_model
from mast.traces.loaders import load_trace

KEY = "sk-test-0123456789abcdefghij"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ENV = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_AD_TOKEN",
    "OPENAI_API_VERSION",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "ANTHROPIC_VERTEX_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    # boto3 must not find credentials or config of whoever runs the tests.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


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


def test_model_names_accept_the_new_providers() -> None:
    assert parse_model("azure/my-gpt-4.1") == ("azure", "my-gpt-4.1")
    assert parse_model("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0")[0] == "bedrock"
    assert parse_model("vertex/claude-sonnet-4-5@20250929") == (
        "vertex",
        "claude-sonnet-4-5@20250929",
    )
    assert parse_model("gemini/gemini-2.5-flash") == ("gemini", "gemini-2.5-flash")


# --------------------------------------------------------------------------- Azure OpenAI


def test_azure_routes_by_deployment_with_api_key_and_version(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", fake_llm.url)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    fake_llm.enqueue(Reply.text('{"ok": true}', usage={"input": 900, "cached": 512, "output": 9}))
    config = CallConfig(model="judge-deploy", json_schema=SCHEMA)
    completion = run(get_provider("azure"), prompt, config)
    (request,) = fake_llm.requests
    assert request.path == "/openai/deployments/judge-deploy/chat/completions"
    assert request.query == "api-version=2025-01-01-preview"
    assert request.headers["api-key"] == KEY and "authorization" not in request.headers
    assert request.body["response_format"]["type"] == "json_schema"
    assert "prompt_cache_key" not in request.body  # an api.openai.com field
    assert completion.text == '{"ok": true}' and completion.usage.cached_input_tokens == 512


def test_azure_entra_id_token_provider_and_token(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return "entra-token-abc"

    fake_llm.enqueue(Reply.text("{}"), Reply.text("{}"))
    provider = get_provider("azure", base_url=fake_llm.url, azure_ad_token_provider=token)
    run(provider, prompt, CallConfig(model="d1"))
    assert fake_llm.requests[0].headers["authorization"] == "Bearer entra-token-abc"
    assert calls and "api-key" not in fake_llm.requests[0].headers
    assert "entra-token-abc" not in repr(provider)
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "fetched-token")
    run(get_provider("azure", base_url=fake_llm.url), prompt, CallConfig(model="d1"))
    assert fake_llm.requests[1].headers["authorization"] == "Bearer fetched-token"


def test_azure_says_which_setting_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AuthError, match="AZURE_OPENAI_ENDPOINT"):
        get_provider("azure", api_key=KEY)
    if importlib.util.find_spec("azure") is None:  # azure-identity (the extra) not installed
        with pytest.raises(AuthError, match=r"AZURE_OPENAI_API_KEY.*mast-annotator\[azure\]"):
            get_provider("azure", base_url="https://example.invalid")


def test_azure_judge_end_to_end(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    verdict = {"summary": "fine", "task_completed": True, "modes": {}}
    fake_llm.enqueue(Reply.text(json.dumps(verdict)))
    judge = mast.Judge("azure/judge-deploy", base_url=fake_llm.url, fewshot=0)
    ann = judge.annotate(mast.traces.datasets.example_traces()[0])
    assert ann.status in ("ok", "parse_error") and ann.judge["provider"] == "azure"
    assert fake_llm.requests[0].path == "/openai/deployments/judge-deploy/chat/completions"


# --------------------------------------------------------------------------- Gemini


def test_gemini_speaks_chat_completions_on_its_openai_endpoint(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    fake_llm.enqueue(Reply.text('{"ok": false}', usage={"input": 100, "output": 5}))
    provider = get_provider("gemini", base_url=f"{fake_llm.url}/v1beta/openai/")
    completion = run(provider, prompt, CallConfig(model="gemini-2.5-flash", json_schema=SCHEMA))
    (request,) = fake_llm.requests
    assert request.path == "/v1beta/openai/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert request.body["temperature"] == 0.0 and "prompt_cache_key" not in request.body
    assert completion.text == '{"ok": false}' and completion.usage.input_tokens == 100


def test_gemini_reads_google_api_key_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AuthError, match="GEMINI_API_KEY"):
        get_provider("gemini")
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    assert get_provider("gemini")._api_key == KEY


# --------------------------------------------------------------------------- Bedrock


BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def test_bedrock_signs_with_sigv4_and_puts_the_model_in_the_url(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-fake-secret-fake-secret-000")
    fake_llm.enqueue(Reply.tool({"ok": True}, usage={"input": 50, "cached": 40, "output": 7}))
    provider = get_provider("bedrock", base_url=fake_llm.url)
    completion = run(provider, prompt, CallConfig(model=BEDROCK_MODEL, json_schema=SCHEMA))
    (request,) = fake_llm.requests
    assert request.path in (
        f"/model/{BEDROCK_MODEL}/invoke",
        "/model/" + BEDROCK_MODEL.replace(":", "%3A") + "/invoke",
    )
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE0001/")
    assert "/us-east-1/bedrock/aws4_request" in auth
    body = request.body
    # The platform body: the SDK's API version in the body, the model only in the URL.
    assert isinstance(body["anthropic_version"], str) and body["anthropic_version"]
    assert "model" not in body
    # The verdict comes through a forced tool on these platforms.
    assert body["tool_choice"]["type"] == "tool" and "output_config" not in body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert completion.via_tool and json.loads(completion.text) == {"ok": True}
    assert completion.usage.cached_input_tokens == 40


def test_bedrock_api_key_and_missing_region(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AuthError, match="AWS_REGION"):
        get_provider("bedrock")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-0123456789")
    fake_llm.enqueue(Reply.text("plain answer"))
    completion = run(
        get_provider("bedrock", base_url=fake_llm.url), prompt, CallConfig(model=BEDROCK_MODEL)
    )
    assert fake_llm.requests[0].headers["authorization"] == "Bearer bedrock-api-key-0123456789"
    assert completion.text == "plain answer"


# --------------------------------------------------------------------------- Vertex


def test_vertex_uses_raw_predict_with_an_access_token(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "my-project")
    fake_llm.enqueue(Reply.tool({"ok": False}))
    provider = get_provider("vertex", api_key="ya29.fake-access-token", base_url=fake_llm.url)
    model = "claude-sonnet-4-5@20250929"
    completion = run(provider, prompt, CallConfig(model=model, json_schema=SCHEMA))
    (request,) = fake_llm.requests
    assert request.path == (
        f"/projects/my-project/locations/us-east5/publishers/anthropic/models/{model}:rawPredict"
    )
    assert request.headers["authorization"] == "Bearer ya29.fake-access-token"
    assert request.body["anthropic_version"] and "model" not in request.body
    assert completion.via_tool and json.loads(completion.text) == {"ok": False}


def test_vertex_names_missing_settings() -> None:
    with pytest.raises(AuthError, match="CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID"):
        get_provider("vertex", api_key="token")


def test_cloud_errors_are_translated(
    fake_llm: FakeLLMServer, prompt: Prompt, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast.errors import RateLimitError

    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "p")
    fake_llm.enqueue(Reply.error(429, "quota", retry_after=3))
    with pytest.raises(RateLimitError) as info:
        run(
            get_provider("vertex", api_key="tok", base_url=fake_llm.url),
            prompt,
            CallConfig(model="claude-haiku-4-5@20251001"),
        )
    assert info.value.retry_after == 3 and "vertex/" in str(info.value)
