"""Arize Phoenix span exports: what differs from the OTLP spans :mod:`._otel` reads.

Phoenix's REST API (``GET /v1/projects/{id}/spans``, ``{"data": [...], "next_cursor"}``)
and its span JSON carry the OpenTelemetry ids in ``context`` and OpenInference attributes,
but (1) attributes are **nested** objects the way Phoenix stores them
(``{"llm": {"input_messages": [{"message": {"role": …}}]}}``) instead of the flat dotted
keys OTLP uses (``llm.input_messages.0.message.role``), (2) the span kind is a top-level
``span_kind`` instead of the ``openinference.span.kind`` attribute, and (3) the status is a
top-level ``status_code`` / ``status_message``. :func:`normalize` turns such a record into
the flat shape; everything else is the OTel reader's.

>>> normalize({"name": "llm", "span_kind": "LLM", "status_code": "OK",
...            "context": {"trace_id": "ab", "span_id": "cd"},
...            "attributes": {"llm": {"input_messages": [{"message": {"role": "user"}}]}}}
...           )["attributes"]
{'llm.input_messages.0.message.role': 'user', 'openinference.span.kind': 'LLM'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAX_DEPTH = 64


def is_listing(value: object) -> bool:
    """A Phoenix API page of spans: ``{"data": [span, …]}``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("data"), list):
        return False
    items = value["data"]
    return bool(items) and all(
        isinstance(s, Mapping) and isinstance(s.get("context"), Mapping) and "name" in s
        for s in items[:5]
    )


def is_phoenix_span(raw: Mapping[str, Any]) -> bool:
    """Whether a span record has any of the Phoenix-only traits."""
    attributes = raw.get("attributes")
    nested = isinstance(attributes, Mapping) and any(
        isinstance(v, Mapping) or (isinstance(v, list) and any(isinstance(i, Mapping) for i in v))
        for v in attributes.values()
    )
    return nested or "span_kind" in raw or "status_code" in raw


def flatten(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Nested attribute objects as flat dotted keys (list items by index); lists of plain
    values stay lists, as OTLP array attributes are."""
    out: dict[str, Any] = {}

    def visit(prefix: str, value: Any, depth: int) -> None:
        if depth > _MAX_DEPTH:
            out[prefix] = value
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                visit(f"{prefix}.{key}" if prefix else str(key), inner, depth + 1)
        elif isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value):
            for i, inner in enumerate(value):
                visit(f"{prefix}.{i}", inner, depth + 1)
        else:
            out[prefix] = value

    visit("", attributes, 0)
    return out


def normalize(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A Phoenix span record in the flat OTel span-record shape."""
    record = dict(raw)
    attributes = raw.get("attributes")
    flat = flatten(attributes) if isinstance(attributes, Mapping) else {}
    kind = raw.get("span_kind")
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":
        flat.setdefault("openinference.span.kind", kind.upper())
    record["attributes"] = flat
    if "status" not in raw and raw.get("status_code") is not None:
        record["status"] = {"code": raw.get("status_code"), "message": raw.get("status_message")}
    return record
