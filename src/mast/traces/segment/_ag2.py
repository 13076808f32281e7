"""AG2 (AutoGen) runs: MathChat message lists, YAML-like dumps and console transcripts.

One step per message; the agent is the message's ``name`` (``mathproxyagent``,
``assistant``). A message with a fenced code block is a ``tool_call`` when the next message
comes from an executing proxy, whose reply is then the paired ``tool_result`` (AG2's
``UserProxyAgent`` runs the code it is sent and answers with the output).

>>> p = from_messages([
...     {"content": ["```python", "print(2+2)", "```"], "role": "user", "name": "assistant"},
...     {"content": "4", "role": "assistant", "name": "mathproxyagent"}])
>>> [(s.agent, s.kind.value, s.metadata["call_id"]) for s in p.steps]
[('assistant', 'tool_call', 'call_1'), ('mathproxyagent', 'tool_result', 'call_1')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import (
    Builder,
    Parsed,
    dedent,
    split_entries,
    split_separator,
    trim,
)
from mast.traces.segment._container import RAW

_CODE = re.compile(
    r"^[ \t]*```[ \t]*(?:python|py|sh|bash|shell)\b(?P<code>.*?)^[ \t]*```", re.M | re.S
)
# Agents that execute the code they receive (MathChat's proxy, AG2's UserProxyAgent).
_EXECUTOR = re.compile(r"proxy|executor", re.I)
_KNOWN = frozenset({"content", "role", "name", "tool_calls", "tool_call_id", "tool_responses"})


@dataclass
class _Msg:
    """One message, whatever shape it came in."""

    content: str
    agent: str | None
    role: str | None
    header: str = ""
    footer: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] | None = None  # the parsed dict, for tool-call fields


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)  # AG2 stores content as a list of lines
    return json.dumps(value, ensure_ascii=False)


def _opt(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def from_messages(messages: Iterable[Mapping[str, Any]]) -> Parsed:
    """Steps from parsed message dicts (JSON or Python-repr trajectories)."""
    msgs: list[_Msg | str] = []
    for m in messages:
        if RAW in m:
            msgs.append(str(m[RAW]))  # a block that could not be parsed: kept as text
            continue
        extra = {k: v for k, v in m.items() if k not in _KNOWN}
        msgs.append(
            _Msg(
                content=_text(m.get("content")),
                agent=_opt(m.get("name")) or _opt(m.get("role")),
                role=_opt(m.get("role")),
                metadata={"extra": extra} if extra else {},
                raw=dict(m),
            )
        )
    return Parsed(steps=_emit(msgs).build())


def _emit(msgs: Iterable[_Msg | str]) -> Builder:
    b = Builder()
    open_call: tuple[str, str | None] | None = None  # (call id, caller) awaiting execution
    for msg in msgs:
        if isinstance(msg, str):
            b.log(msg, mergeable=False, metadata={"unparsed": True})
            continue
        raw = msg.raw or {}
        common: dict[str, Any] = {
            "agent": msg.agent,
            "role": msg.role,
            "header": msg.header,
            "footer": msg.footer,
        }
        if raw.get("tool_calls"):
            if msg.content.strip():
                b.add(StepKind.MESSAGE, msg.content, metadata=dict(msg.metadata), **common)
                common["header"] = common["footer"] = ""
            for call in raw["tool_calls"]:
                fn = call.get("function", {}) if isinstance(call, Mapping) else {}
                args = fn.get("arguments") if isinstance(fn, Mapping) else None
                b.add(
                    StepKind.TOOL_CALL,
                    _text(args),
                    tool_name=_opt(fn.get("name")) if isinstance(fn, Mapping) else None,
                    tool_args=_json_or_text(args),
                    metadata={**msg.metadata, "call_id": _call_id(call, b)},
                    **common,
                )
            continue
        if msg.role == "tool" or "tool_call_id" in raw:
            cid = raw.get("tool_call_id")
            meta = {**msg.metadata, **({"call_id": cid} if cid else {})}
            b.add(StepKind.TOOL_RESULT, msg.content, metadata=meta, **common)
            continue
        if (
            open_call is not None
            and msg.agent != open_call[1]
            and _EXECUTOR.search(msg.agent or "")
        ):
            b.add(
                StepKind.TOOL_RESULT,
                msg.content,
                tool_name="python",
                metadata={**msg.metadata, "call_id": open_call[0]},
                **common,
            )
            open_call = None
            continue
        open_call = None
        code = [c.group("code").strip("\n") for c in _CODE.finditer(msg.content)]
        if code and not _EXECUTOR.search(msg.agent or ""):
            cid = b.new_call_id()
            b.add(
                StepKind.TOOL_CALL,
                msg.content,
                tool_name="python",
                tool_args={"code": "\n\n".join(code)},
                metadata={**msg.metadata, "call_id": cid},
                **common,
            )
            open_call = (cid, msg.agent)
            continue
        b.add(StepKind.MESSAGE, msg.content, metadata=dict(msg.metadata), **common)
    return b


def _call_id(call: Any, b: Builder) -> str:
    if isinstance(call, Mapping) and isinstance(call.get("id"), str) and call["id"]:
        return str(call["id"])
    return b.new_call_id()


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# --- text shapes ---------------------------------------------------------------------------

# YAML-like dump of the trajectory: "content:" then indented lines, then "role:" / "name:".
_YAML_BLOCK = re.compile(r"^(?P<indent>[ \t]*)(?:- )?content[ \t]*:[ \t]*(?P<inline>[^\n]*)$", re.M)
_TRAILER_LINE = re.compile(r"[ \t]*(?:role|name)[ \t]*:[^\n]*")
_YAML_FIELD = re.compile(r"^[ \t]*(?P<key>role|name)[ \t]*:[ \t]*(?P<value>[^\n]*?)[ \t]*$", re.M)
_HAS_TRAILER = re.compile(r"^[ \t]*role[ \t]*:[^\n]*\n[ \t]*name[ \t]*:", re.M)

# AutoGen console transcript: "sender (to recipient):" ... "-----" (80 dashes).
_CONSOLE = re.compile(
    r"^(?:(?P<sender>[\w.@-]+) \(to (?P<to>[\w.@-]+)\):|(?P<exec>>{4,} [^\n]*))[ \t]*$", re.M
)


def segment_text(text: str) -> Parsed | None:
    """A YAML-like trajectory (``content:`` / ``role:`` / ``name:``) or a console transcript."""
    if _YAML_BLOCK.search(text) and _HAS_TRAILER.search(text):
        return _from_yaml(text)
    preamble, entries = split_entries(text, _CONSOLE)
    if not any(m.group("sender") for m, _, _ in entries):
        return None
    msgs: list[_Msg | str] = []
    if preamble.strip():
        msgs.append(preamble)
    for m, a, z in entries:
        if m.group("exec"):
            msgs.append(m.group(0) + text[a:z])
            continue
        body, footer = split_separator(text[a:z])
        msgs.append(
            _Msg(
                content=trim(body),
                agent=m.group("sender"),
                role=None,
                header=m.group(0),
                footer=footer,
                metadata={"recipient": m.group("to")},
            )
        )
    return Parsed(steps=_emit(msgs).build(), metadata={"layout": "console"})


def _trailer_start(body: str) -> int:
    """Where the block's closing ``role:`` / ``name:`` lines begin (``len(body)`` if none).

    Walks back line by line from the end, so a block costs time linear in its length.
    """
    start = end = len(body.rstrip())
    while start > 0:
        newline = body.rfind("\n", 0, end)
        if not _TRAILER_LINE.fullmatch(body, newline + 1, end):
            break
        start = end = max(newline, 0)
    return start if start < len(body.rstrip()) else len(body)


def _from_yaml(text: str) -> Parsed:
    preamble, entries = split_entries(text, _YAML_BLOCK)
    msgs: list[_Msg | str] = []
    if preamble.strip():
        msgs.append(preamble)
    for m, a, z in entries:
        body = text[a:z]
        cut = _trailer_start(body)
        content, footer = body[:cut], body[cut:]
        inline = m.group("inline").strip()
        content = dedent((inline + "\n" if inline else "") + content)
        fields = {f.group("key"): f.group("value") for f in _YAML_FIELD.finditer(footer)}
        msgs.append(
            _Msg(
                content=content,
                agent=fields.get("name") or fields.get("role") or None,
                role=fields.get("role") or None,
                header=m.group(0),
                footer=footer,
            )
        )
    return Parsed(steps=_emit(msgs).build())
