"""Azure OpenAI: ``azure/<deployment>`` through the openai SDK's own ``AsyncAzureOpenAI``.

The model part of the name is your **deployment** name (Azure routes by deployment, not by
model). Environment variables read:

* ``AZURE_OPENAI_ENDPOINT``: ``https://<resource>.openai.azure.com`` (or ``base_url=…``);
* ``AZURE_OPENAI_API_KEY``: an API key; **or** Microsoft Entra ID: ``AZURE_OPENAI_AD_TOKEN``
  (a bearer token you fetched), or, with neither set and ``azure-identity`` installed
  (``pip install "mast-annotator[azure]"``), ``DefaultAzureCredential`` (az login, managed
  identity, workload identity…) for the ``https://cognitiveservices.azure.com/.default`` scope;
* ``OPENAI_API_VERSION``: the API version (default ``2024-10-21``, which has structured outputs).

Requests and answers are the Chat Completions shape, so everything else (structured output,
usage, error translation) is the OpenAI provider's.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from mast.errors import AuthError
from mast.judge.providers._base import import_sdk
from mast.judge.providers.openai import OpenAIProvider

DEFAULT_API_VERSION = "2024-10-21"
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"

TokenProvider = Callable[[], str] | Callable[[], Awaitable[str]]


class AzureOpenAIProvider(OpenAIProvider):
    """``azure/<deployment>``: Azure OpenAI with an API key or a Microsoft Entra ID token."""

    name = "azure"
    sdk = "openai"
    env_var = "AZURE_OPENAI_API_KEY"
    install = "pip install openai"
    endpoint_env = "AZURE_OPENAI_ENDPOINT"

    def default_url(self) -> str | None:
        return None  # every Azure resource has its own endpoint

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str | None = None,
        azure_ad_token_provider: TokenProvider | None = None,
    ) -> None:
        endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise AuthError(
                "no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT to "
                "https://<resource>.openai.azure.com or pass base_url=…",
                provider=self.name,
            )
        self.api_version = (
            api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_API_VERSION
        )
        key = api_key or os.environ.get(self.env_var) or None
        self._ad_token = None if key else os.environ.get("AZURE_OPENAI_AD_TOKEN") or None
        self._token_provider = None if key or self._ad_token else azure_ad_token_provider
        if not key and not self._ad_token and self._token_provider is None:
            self._token_provider = _default_credential()
        self.auth = "api-key" if key else "entra-id"
        # The base class keeps a secret for scrubbing error messages; with Entra ID there is
        # no key, so a marker stands in (it is never sent).
        super().__init__(api_key=key or self._ad_token or "entra-id-token", base_url=endpoint)

    def _make_client(self) -> Any:
        openai = import_sdk("openai", self.install)
        options: dict[str, Any] = {
            "azure_endpoint": self.url,
            "api_version": self.api_version,
            "max_retries": 0,
        }
        if self.auth == "api-key":
            options["api_key"] = self._api_key
        elif self._ad_token:
            options["azure_ad_token"] = self._ad_token
        else:
            options["azure_ad_token_provider"] = self._token_provider
        return openai.AsyncAzureOpenAI(**options)

    def request_body(self, prompt: Any, config: Any) -> dict[str, Any]:
        body = super().request_body(prompt, config)
        body.pop("prompt_cache_key", None)  # an api.openai.com field
        return body


def _default_credential() -> TokenProvider:
    try:
        from azure.identity import (  # type: ignore[import-not-found,unused-ignore]
            DefaultAzureCredential,
            get_bearer_token_provider,
        )
    except ImportError as exc:
        raise AuthError(
            "no Azure OpenAI credentials: set AZURE_OPENAI_API_KEY, or AZURE_OPENAI_AD_TOKEN, "
            'or install azure-identity (pip install "mast-annotator[azure]") to sign in with '
            "Microsoft Entra ID (az login, managed identity)",
            provider="azure",
        ) from exc
    provider: TokenProvider = get_bearer_token_provider(DefaultAzureCredential(), ENTRA_SCOPE)
    return provider
