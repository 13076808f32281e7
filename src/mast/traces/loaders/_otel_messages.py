"""OTel spans normalized (:class:`Span`) and the chat messages inside them, read from GenAI
semantic-convention attributes and events, OpenInference attributes, or indexed
prompt/completion attributes, whichever a span has.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Span:
    """One span, normalized from any of the accepted containers."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]
    events: list[tuple[str, int | None, dict[str, Any]]]
    status_code: str | None
    status_message: str | None
    resource: dict[str, Any]
    scope: str | None
    order: int


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


@dataclass
class _Msg:
    role: str
    content: str
    tool_calls: list[tuple[str | None, str | None, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: bool = False


def _maybe_json(value: object) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                return json.loads(stripped)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to read
                return value
    return value


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        parts = []
        for part in value:
            text = part.get("content", part.get("text"))
            parts.append(text if isinstance(text, str) else json.dumps(part, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _args_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _messages_from_parts(raw: object, default_role: str) -> list[_Msg]:
    """GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON (``parts``) and the
    plain chat shape ``[{role, content, tool_calls}]`` some instrumentations write instead."""
    value = _maybe_json(raw)
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, str):
        return [_Msg(default_role, value)] if value else []
    if not isinstance(value, list):
        return []
    out: list[_Msg] = []
    for item in value:
        if not isinstance(item, Mapping):
            continue
        if "message" in item and isinstance(item["message"], Mapping):  # gen_ai.choice body
            item = item["message"]
        role = str(item.get("role") or default_role)
        if isinstance(item.get("parts"), list):
            texts: list[str] = []
            msg = _Msg(role, "", name=item.get("name"))
            for part in item["parts"]:
                if not isinstance(part, Mapping):
                    continue
                kind = part.get("type")
                if kind == "text":
                    texts.append(_text(part.get("content")))
                elif kind == "reasoning":
                    out.append(_Msg(role, _text(part.get("content")), reasoning=True))
                elif kind == "tool_call":
                    msg.tool_calls.append((part.get("id"), part.get("name"), part.get("arguments")))
                elif kind == "tool_call_response":
                    out.append(
                        _Msg("tool", _text(part.get("response")), tool_call_id=part.get("id"))
                    )
                else:
                    texts.append(json.dumps(part, ensure_ascii=False))
            msg.content = "\n".join(texts)
            if msg.content or msg.tool_calls:
                out.append(msg)
            continue
        msg = _Msg(
            role,
            _text(item.get("content")),
            tool_call_id=item.get("tool_call_id") or (item.get("id") if role == "tool" else None),
            name=item.get("name"),
        )
        for call in item.get("tool_calls") or []:
            if isinstance(call, Mapping):
                function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
                assert isinstance(function, Mapping)
                msg.tool_calls.append(
                    (
                        call.get("id"),
                        function.get("name") or call.get("name"),
                        function.get("arguments", call.get("arguments")),
                    )
                )
        out.append(msg)
    return out


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.0.x.y = v`` attributes → ``[{"x.y": v}, …]`` in index order."""
    groups: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _openinference_messages(attributes: Mapping[str, Any], prefix: str) -> list[_Msg]:
    out = []
    for entry in _indexed(attributes, prefix):
        role = str(entry.get("message.role") or "user")
        content = entry.get("message.content")
        if content is None:
            parts = _indexed(entry, "message.contents")
            content = "\n".join(
                str(p.get("message_content.text", ""))
                for p in parts
                if p.get("message_content.text")
            )
        msg = _Msg(role, _text(content), tool_call_id=entry.get("message.tool_call_id"))
        msg.name = entry.get("message.name")
        for call in _indexed(entry, "message.tool_calls"):
            msg.tool_calls.append(
                (
                    call.get("tool_call.id"),
                    call.get("tool_call.function.name"),
                    call.get("tool_call.function.arguments"),
                )
            )
        out.append(msg)
    return out


def _indexed_messages(attributes: Mapping[str, Any], prefix: str, role: str) -> list[_Msg]:
    """OpenLLMetry-style ``gen_ai.prompt.N.role/content`` and ``gen_ai.completion.N.…``."""
    out = []
    for entry in _indexed(attributes, prefix):
        msg = _Msg(
            str(entry.get("role") or role),
            _text(entry.get("content")),
            tool_call_id=entry.get("tool_call_id"),
        )
        for call in _indexed(entry, "tool_calls"):
            msg.tool_calls.append((call.get("id"), call.get("name"), call.get("arguments")))
        out.append(msg)
    return out


def _event_messages(span: Span) -> tuple[list[_Msg], list[_Msg]]:
    """Messages from span events (the older GenAI conventions)."""
    inputs: list[_Msg] = []
    outputs: list[_Msg] = []
    for name, _, attrs in span.events:
        body = _maybe_json(attrs.get("gen_ai.event.content", attrs.get("body")))
        if not isinstance(body, Mapping):
            body = attrs
        if name in _EVENT_ROLES:
            role = _EVENT_ROLES[name]
            msgs = _messages_from_parts([{"role": body.get("role") or role, **body}], role)
            inputs.extend(msgs)
        elif name == "gen_ai.choice":
            message = _maybe_json(body.get("message"))
            if isinstance(message, Mapping):
                outputs.extend(
                    _messages_from_parts([{"role": "assistant", **message}], "assistant")
                )
            else:
                outputs.extend(_messages_from_parts([{"role": "assistant", **body}], "assistant"))
        elif name == "gen_ai.content.prompt":
            inputs.extend(_messages_from_parts(attrs.get("gen_ai.prompt"), "user"))
        elif name == "gen_ai.content.completion":
            outputs.extend(_messages_from_parts(attrs.get("gen_ai.completion"), "assistant"))
    return inputs, outputs


def _span_messages(span: Span) -> tuple[list[_Msg], list[_Msg], set[str]]:
    """(input messages, output messages, names of the conventions they were read from)."""
    a = span.attributes
    used: set[str] = set()
    inputs: list[_Msg] = []
    outputs: list[_Msg] = []
    system = a.get("gen_ai.system_instructions")
    if system:
        inputs.append(_Msg("system", _text(_maybe_json(system))))
        used.add("gen_ai.messages")
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        inputs.extend(_messages_from_parts(a.get("gen_ai.input.messages"), "user"))
        outputs.extend(_messages_from_parts(a.get("gen_ai.output.messages"), "assistant"))
        used.add("gen_ai.messages")
    elif any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in a):
        inputs.extend(_openinference_messages(a, "llm.input_messages"))
        outputs.extend(_openinference_messages(a, "llm.output_messages"))
        used.add("openinference")
    elif any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in a):
        inputs.extend(_indexed_messages(a, "gen_ai.prompt", "user"))
        outputs.extend(_indexed_messages(a, "gen_ai.completion", "assistant"))
        used.add("gen_ai.indexed")
    else:
        ins, outs = _event_messages(span)
        if ins or outs:
            used.add("gen_ai.events")
        inputs.extend(ins)
        outputs.extend(outs)
        if not ins and isinstance(a.get("gen_ai.prompt"), str):
            inputs.extend(_messages_from_parts(a["gen_ai.prompt"], "user"))
            outputs.extend(_messages_from_parts(a.get("gen_ai.completion"), "assistant"))
            used.add("gen_ai.indexed")
    return inputs, outputs, used


def _operation(span: Span) -> str:
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return op
    kind = a.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return kind.lower()
    if "gen_ai.tool.name" in a:
        return "execute_tool"
    return ""
