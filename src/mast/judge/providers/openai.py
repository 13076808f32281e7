"""OpenAI Chat Completions (and any OpenAI-compatible server through ``base_url``).

Structured output is requested with ``response_format={"type": "json_schema", …,
"strict": True}``; the answer text is still parsed by :func:`mast.judge.verdict.parse_response`
because compatible servers may ignore the request. Reasoning models (o1/o3/o4, gpt-5) take
``max_completion_tokens`` and no ``temperature``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, ClassVar

from mast.judge.prompt.types import Prompt
from mast.judge.providers._base import CallConfig, Completion, Provider, import_sdk
from mast.judge.providers.usage import Usage

DEFAULT_URL = "https://api.openai.com/v1"
"""The OpenAI SDK's server when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set."""

# o1, o3, o4-mini, gpt-5, gpt-5-mini, gpt-5.4 … (optionally behind an "org/" prefix).
_REASONING = re.compile(r"^(?:.*/)?(?:o\d+(?:-|$)|gpt-5)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (no temperature, max_completion_tokens).

    >>> is_reasoning_model("o4-mini"), is_reasoning_model("gpt-5.4"), is_reasoning_model("gpt-4.1")
    (True, True, False)
    """
    return bool(_REASONING.match(model))


class OpenAIProvider(Provider):
    """``openai/<model>``: Chat Completions via the official ``openai`` SDK."""

    name = "openai"
    sdk = "openai"
    env_var = "OPENAI_API_KEY"
    install = "pip install openai"
    endpoint_env: ClassVar[str | None] = "OPENAI_BASE_URL"

    def default_url(self) -> str | None:
        return DEFAULT_URL

    def _make_client(self) -> Any:
        openai = import_sdk("openai", self.install)
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.url, max_retries=0)

    def effective_temperature(self, config: CallConfig) -> float | None:
        return None if is_reasoning_model(config.model) else config.temperature

    def request_body(self, prompt: Prompt, config: CallConfig) -> dict[str, Any]:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]
        messages += [{"role": role, "content": text} for role, text in prompt.turns]
        body: dict[str, Any] = {"model": config.model, "messages": messages}
        if is_reasoning_model(config.model):
            if config.max_tokens is not None:
                body["max_completion_tokens"] = config.max_tokens
        else:
            if config.temperature is not None:
                body["temperature"] = config.temperature
            if config.max_tokens is not None:
                body["max_tokens"] = config.max_tokens
        if config.json_schema is not None and config.structured != "none":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": config.schema_name,
                    "schema": config.json_schema,
                    "strict": True,
                },
            }
        if self.default_endpoint:
            # Routes requests sharing our static prefix to the same cache (api.openai.com
            # only: compatible servers, also one named by OPENAI_BASE_URL, may reject
            # unknown fields).
            body["prompt_cache_key"] = f"mast-{prompt.static_prefix_hash[:32]}"
        return body

    async def complete(self, prompt: Prompt, config: CallConfig) -> Completion:
        openai = import_sdk("openai", self.install)
        # The raw response: its headers carry the rate limits (x-ratelimit-limit-*).
        create = self.client().chat.completions.with_raw_response.create
        body = self.request_body(prompt, config)
        response, latency, stated = await self._send(create, body, config, openai.OpenAIError)
        if not hasattr(response, "choices"):
            raise self._unexpected_answer(response, config.model, "a chat completion")
        completion = completion_from_response(response, model=config.model, latency_s=latency)
        return replace(completion, stated_limits=stated) if stated else completion


def completion_from_response(response: Any, *, model: str, latency_s: float) -> Completion:
    """A chat completion (live or from a batch result) as a :class:`Completion`."""
    text, finish = "", None
    if response.choices:
        choice = response.choices[0]
        finish = choice.finish_reason
        message = choice.message
        # A refusal has no content; keep its words as the raw answer so the record
        # shows why nothing could be parsed.
        text = message.content or getattr(message, "refusal", None) or ""
    return Completion(
        text=text,
        usage=_usage(getattr(response, "usage", None)),
        model=getattr(response, "model", None) or model,
        response_id=getattr(response, "id", None),
        latency_s=latency_s,
        finish_reason=finish,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        input_tokens=getattr(usage, "prompt_tokens", None),
        cached_input_tokens=cached if cached is not None else 0,
        cache_write_input_tokens=0,
        output_tokens=getattr(usage, "completion_tokens", None),
    )
