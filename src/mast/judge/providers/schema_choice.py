"""Which spelling of the answer schema a judge sends: shared definitions first, inline if refused.

The answer schema repeats one per-mode object fourteen times. Written with ``$defs`` and
``$ref`` it is about 1.2k tokens; written out (every reference replaced by its definition)
about 6k, and it is part of every request's input. OpenAI, Azure OpenAI and Anthropic take
local references, and so do the usual engines behind OpenAI-compatible servers (vLLM's
xgrammar, guidance and outlines back-ends, llama.cpp's server and the Ollama builds that use
its schema converter). Some servers and older versions do not, and they answer with an
HTTP error that names the schema.

:class:`SchemaChoice` therefore sends the ``$ref`` schema first. When a server refuses it
(HTTP 400/422, or a 500 whose message names the schema, ``$ref``, ``$defs`` or a grammar),
the same request is sent once more with the inline schema, and once that works the judge
sends the inline schema for the rest of its life (its copies for other samples share the
choice). A refusal of the inline schema too says that the server does not take schemas at
all: the error then says to pass ``structured_output="none"``.

>>> schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}},
...           "$defs": {"x": {"type": "string"}}}
>>> inline_schema(schema)
{'type': 'object', 'properties': {'a': {'type': 'string'}}}
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mast.errors import AuthError, ContextLengthError, ProviderError, RateLimitError

if TYPE_CHECKING:
    from mast.judge.prompt.types import Prompt
    from mast.judge.providers._base import CallConfig, Completion, Provider

__all__ = ["SchemaChoice", "inline_schema", "refuses_schema"]

log = logging.getLogger(__name__)

# Words servers use when they cannot compile a response schema (vLLM: "features not
# supported by xgrammar"; llama.cpp: "JSON schema conversion failed … Error resolving ref";
# Ollama: "invalid JSON schema in format").
_SCHEMA_WORDS = re.compile(
    r"\$ref|\$defs|\bref\b|definitions|schema|grammar|response_format|xgrammar|guided",
    re.IGNORECASE,
)
_REFUSAL_STATUSES = (400, 422, 500)


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``#/$defs/<name>`` reference replaced by its definition
    (recursively) and ``$defs`` removed. Keywords beside a ``$ref`` are kept."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in defs:
                raise ValueError(f"cannot inline the schema reference {ref!r}")
            target = resolve(defs[name], (*seen, name))
            extra = {k: resolve(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    out = resolve(schema, ())
    assert isinstance(out, dict)
    return out


def refuses_schema(exc: ProviderError, config: CallConfig) -> bool:
    """Whether ``exc`` reads as the server refusing the response schema of ``config``."""
    if isinstance(exc, (AuthError, ContextLengthError, RateLimitError)):
        return False
    if config.json_schema is None or config.structured == "none":
        return False
    return exc.status_code in _REFUSAL_STATUSES and bool(_SCHEMA_WORDS.search(str(exc)))


class SchemaChoice:
    """The ``$ref`` schema until a server refuses it, then the inline one (see the module)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.inline = False
        self._last: tuple[CallConfig, CallConfig] | None = None  # (config, its inline form)

    def config(self, config: CallConfig) -> CallConfig:
        """``config`` with the schema spelled the way this judge currently sends it."""
        if not self.inline or "$defs" not in (config.json_schema or {}):
            return config
        return self._inline(config)

    async def complete(self, prompt: Prompt, config: CallConfig) -> Completion:
        """One call; if the server refuses the ``$ref`` schema, the same call inline."""
        provider = self.provider
        if self.inline or "$defs" not in (config.json_schema or {}):
            return await provider.complete(prompt, self.config(config))
        try:
            return await provider.complete(prompt, config)
        except ProviderError as exc:
            if not refuses_schema(exc, config):
                raise
            first = exc
        try:
            completion = await provider.complete(prompt, self._inline(config))
        except ProviderError as exc:
            if not refuses_schema(exc, config):
                raise
            raise ProviderError(
                f"{exc}; the server refused the answer schema with $ref ({first}) and "
                'written out: pass structured_output="none" to describe the answer in the '
                "prompt only",
                provider=exc.provider,
                status_code=exc.status_code,
            ) from exc
        if not self.inline:
            log.info("the server refused the $ref answer schema (%s); sending it inline", first)
        self.inline = True
        return completion

    def _inline(self, config: CallConfig) -> CallConfig:
        if self._last is None or self._last[0] is not config:
            assert config.json_schema is not None
            self._last = (config, replace(config, json_schema=inline_schema(config.json_schema)))
        return self._last[1]
