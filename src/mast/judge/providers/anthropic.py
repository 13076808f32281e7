"""Anthropic Messages API via the official ``anthropic`` SDK.

The static part of the prompt goes into ``system`` as one text block marked
``cache_control: {"type": "ephemeral"}`` so repeated calls read it from the prompt cache.
The verdict is requested either through ``output_config.format`` (JSON schema; Claude 4.5
and later) or through a tool whose ``input_schema`` is the verdict schema with ``tool_choice``
forcing it (older models). The tool input is read when present, else the text.

The SDK (2.x, API version 2026-10-21) has no sampling parameters, so no temperature is sent:
the annotation records ``temperature: None`` for Anthropic models.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from mast.judge.prompt.types import Prompt
from mast.judge.providers._base import CallConfig, Completion, Provider, StructuredMode, import_sdk
from mast.judge.providers.usage import Usage

TOOL_NAME = "record_mast_verdict"
# Adaptive thinking (on by default in current models) spends output tokens before the answer.
DEFAULT_MAX_TOKENS = 16_384

_FAMILY_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d{1,2}))?\b")


def supports_json_output(model: str) -> bool:
    """Whether ``model`` takes ``output_config.format`` (Claude 4.5 and later, by its name).

    >>> supports_json_output("claude-sonnet-4-5-20250929"), supports_json_output("claude-sonnet-4")
    (True, False)
    >>> supports_json_output("claude-3-5-haiku-latest")
    False
    """
    match = _FAMILY_VERSION.search(model)
    if not match:
        return False
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return (major, minor) >= (4, 5)


class AnthropicProvider(Provider):
    """``anthropic/<model>``: the Messages API with prompt caching on the static prefix."""

    name = "anthropic"
    sdk = "anthropic"
    env_var = "ANTHROPIC_API_KEY"
    install = "pip install anthropic"
    endpoint_env = "ANTHROPIC_BASE_URL"

    def default_url(self) -> str | None:
        return "https://api.anthropic.com"

    def _make_client(self) -> Any:
        anthropic = import_sdk("anthropic", self.install)
        return anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self.url, max_retries=0)

    def effective_temperature(self, config: CallConfig) -> float | None:
        return None

    def structured_mode(self, config: CallConfig) -> StructuredMode:
        """How the schema is requested for ``config``: "json_schema", "tool" or "none"."""
        if config.json_schema is None or config.structured == "none":
            return "none"
        if config.structured == "auto":
            return "json_schema" if supports_json_output(config.model) else "tool"
        return config.structured

    def request_body(self, prompt: Prompt, config: CallConfig) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.user}]
        messages += [{"role": role, "content": text} for role, text in prompt.turns]
        body: dict[str, Any] = {
            "model": config.model,
            "max_tokens": config.max_tokens or DEFAULT_MAX_TOKENS,
            "system": [
                {"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": messages,
        }
        mode = self.structured_mode(config)
        if mode == "json_schema":
            body["output_config"] = {
                "format": {"type": "json_schema", "schema": config.json_schema}
            }
        elif mode == "tool":
            body["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record the MAST failure-mode verdict for the trace.",
                    "input_schema": config.json_schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    async def complete(self, prompt: Prompt, config: CallConfig) -> Completion:
        anthropic = import_sdk("anthropic", self.install)
        # The raw response: its headers carry the rate limits (anthropic-ratelimit-*).
        create = self.client().messages.with_raw_response.create
        body = self.request_body(prompt, config)
        sent = await self._send(create, body, config, anthropic.AnthropicError)
        response, latency, stated = sent
        if not hasattr(response, "content") or isinstance(response, (str, bytes)):
            raise self._unexpected_answer(response, config.model, "a Messages API message")
        completion = completion_from_message(response, model=config.model, latency_s=latency)
        return replace(completion, stated_limits=stated) if stated else completion


def completion_from_message(message: Any, *, model: str, latency_s: float) -> Completion:
    """A Messages API message (live or from a batch result) as a :class:`Completion`."""
    texts: list[str] = []
    tool_input: Any = None
    for block in message.content or []:
        kind = getattr(block, "type", None)
        if kind == "tool_use" and getattr(block, "name", None) == TOOL_NAME:
            tool_input = block.input
        elif kind == "text":
            texts.append(block.text)
    via_tool = tool_input is not None
    return Completion(
        text=json.dumps(tool_input, ensure_ascii=False) if via_tool else "".join(texts),
        usage=_usage(getattr(message, "usage", None)),
        model=getattr(message, "model", None) or model,
        response_id=getattr(message, "id", None),
        latency_s=latency_s,
        finish_reason=getattr(message, "stop_reason", None),
        via_tool=via_tool,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    fresh = getattr(usage, "input_tokens", None)
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(
        # Anthropic's input_tokens excludes cache reads and writes; ours counts every token.
        input_tokens=None if fresh is None else fresh + read + written,
        cached_input_tokens=read,
        cache_write_input_tokens=written,
        output_tokens=getattr(usage, "output_tokens", None),
    )
