"""Model providers, named ``"provider/model"``: ``openai/…``, ``anthropic/…``.

``"heuristic"`` is not a provider: the :class:`~mast.judge.judge.Judge` runs the rule-based
baseline itself, without a prompt or a network call.

>>> parse_model("openai/gpt-4.1"), parse_model("openai/meta-llama/Llama-3.1-8B")
(('openai', 'gpt-4.1'), ('openai', 'meta-llama/Llama-3.1-8B'))
"""

from __future__ import annotations

import importlib
from typing import Any

from mast.errors import ConfigError
from mast.judge.providers._base import CallConfig, Completion, Provider, StructuredMode

__all__ = [
    "CallConfig",
    "Completion",
    "Provider",
    "StructuredMode",
    "get_provider",
    "parse_model",
    "provider_names",
]

# Imported lazily so that `import mast` never imports an SDK.
_PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("mast.judge.providers.openai", "OpenAIProvider"),
    "anthropic": ("mast.judge.providers.anthropic", "AnthropicProvider"),
    "azure": ("mast.judge.providers.azure", "AzureOpenAIProvider"),
    "bedrock": ("mast.judge.providers.cloud_anthropic", "BedrockProvider"),
    "vertex": ("mast.judge.providers.cloud_anthropic", "VertexProvider"),
    "gemini": ("mast.judge.providers.gemini", "GeminiProvider"),
}


def provider_names() -> list[str]:
    """Provider prefixes accepted in model names (plus the special ``"heuristic"``)."""
    return sorted(_PROVIDERS)


def parse_model(spec: str) -> tuple[str, str]:
    """Split ``"provider/model"`` at the first slash; the model part may contain slashes.

    A name without its provider raises :class:`~mast.errors.ConfigError` with the
    corrected name (``openai:gpt-4o`` → ``openai/gpt-4o``; ``gpt-4.1`` → ``openai/gpt-4.1``).
    """
    provider, sep, model = spec.partition("/")
    if not sep or not provider or not model:
        head, colon, tail = spec.partition(":")
        if colon and head in _PROVIDERS and tail:
            raise ConfigError(
                f"model {spec!r} separates provider and model with ':'; write "
                f"'{head}/{tail}' (provider/model)"
            )
        guess = "anthropic" if spec.startswith("claude") else "openai"
        raise ConfigError(
            f"model {spec!r} does not name its provider: write '{guess}/{spec or 'gpt-4.1'}' "
            f"(provider/model, provider one of {', '.join(provider_names())}), or 'heuristic' "
            "for the offline baseline"
        )
    if provider not in _PROVIDERS:
        raise ConfigError(
            f"unknown provider {provider!r} in model {spec!r}: use one of {provider_names()}; "
            "for another OpenAI-compatible server use 'openai/<model>' with base_url=…"
        )
    return provider, model


def get_provider(
    name: str, *, api_key: str | None = None, base_url: str | None = None, **options: Any
) -> Provider:
    """Instantiate the provider ``name`` ("openai", "anthropic", "azure", "bedrock",
    "vertex", "gemini"). ``options`` go to that provider (e.g. ``api_version=`` and
    ``azure_ad_token_provider=`` for Azure, ``region=`` for Bedrock and Vertex,
    ``project_id=`` for Vertex)."""
    if name not in _PROVIDERS:
        raise ValueError(f"unknown provider {name!r}: use one of {provider_names()}")
    module_name, class_name = _PROVIDERS[name]
    cls: Any = getattr(importlib.import_module(module_name), class_name)
    provider: Provider = cls(api_key=api_key, base_url=base_url, **options)
    return provider
