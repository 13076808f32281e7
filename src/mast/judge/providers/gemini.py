"""Google Gemini: ``gemini/<model>`` through Google's OpenAI-compatible endpoint.

Why the openai client and not the google-genai SDK: Gemini's OpenAI-compatible endpoint
takes the same ``response_format={"type": "json_schema", …}`` request our verdict schema
already uses, and answers in the Chat Completions shape, so structured output, usage
(``prompt_tokens``, cached tokens), error translation and the batch-free runner path are the
ones the OpenAI provider has tested; google-genai would add a dependency and a second
schema dialect (its ``response_schema`` is an OpenAPI subset) for no gain in what the judge
receives. The answer is parsed as text either way.

Environment: ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``); ``base_url=…`` overrides the
endpoint (default ``https://generativelanguage.googleapis.com/v1beta/openai/``).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from mast.judge.providers._base import import_sdk
from mast.judge.providers.openai import OpenAIProvider

ENDPOINT = "https://generativelanguage.googleapis.com/v1beta/openai/"


class GeminiProvider(OpenAIProvider):
    """``gemini/<model>``: Gemini through its OpenAI-compatible Chat Completions endpoint."""

    name = "gemini"
    sdk = "openai"
    env_var = "GEMINI_API_KEY"
    install = "pip install openai"

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None) -> None:
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        super().__init__(api_key=key or None, base_url=base_url)

    # The openai SDK's OPENAI_BASE_URL names an OpenAI server, not Gemini's.
    endpoint_env: ClassVar[str | None] = None

    def default_url(self) -> str | None:
        return ENDPOINT

    def _make_client(self) -> Any:
        openai = import_sdk("openai", self.install)
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.url, max_retries=0)

    def request_body(self, prompt: Any, config: Any) -> dict[str, Any]:
        body = super().request_body(prompt, config)
        body.pop("prompt_cache_key", None)  # an api.openai.com field
        return body
