"""Shared step building for the tracing-platform readers (Langfuse, LangSmith, Inspect).

These platforms log each model call with the whole conversation so far as its input, so a
reader that turned every input message into a step would repeat the history once per call.
:class:`StepList` shows each message once and counts the repeats it skipped.

>>> steps = StepList()
>>> steps.history([{"role": "user", "content": "hi"}], agent="app")
>>> steps.output([{"role": "assistant", "content": "yo"}], agent="app")
>>> steps.history([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
>>> [(s.id, s.role, s.content) for s in steps.steps], steps.repeated
([('s1', 'user', 'hi'), ('s2', 'assistant', 'yo')], 2)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from mast.traces.model import Step, StepKind

# LangChain's serialized message classes and message "type" values, as chat roles.
_LC_ROLES = {
    "HumanMessage": "user",
    "human": "user",
    "AIMessage": "assistant",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "system": "system",
    "ToolMessage": "tool",
    "tool": "tool",
    "FunctionMessage": "tool",
    "function": "tool",
    "ChatMessage": "user",
}


def text_of(value: object) -> str:
    """Content as text: strings unchanged, text parts joined, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping):
                # OpenAI/Anthropic/Inspect parts: text, reasoning, or a media reference.
                for key in ("text", "reasoning", "content"):
                    if isinstance(part.get(key), str):
                        parts.append(part[key])
                        break
                else:
                    parts.append(json.dumps(part, ensure_ascii=False, default=str))
            else:
                parts.append(json.dumps(part, ensure_ascii=False, default=str))
        return "\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False, default=str)


def args_of(value: object) -> Any:
    """Tool arguments as JSON where a string holds JSON; otherwise unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def normalize_message(raw: object) -> dict[str, Any] | None:
    """An OpenAI-style ``{"role", "content", "tool_calls", "tool_call_id"}`` dict from an
    OpenAI, LangChain (serialized or plain) or Inspect message; ``None`` if not a message."""
    if not isinstance(raw, Mapping):
        return None
    if raw.get("lc") == 1 and isinstance(raw.get("kwargs"), Mapping):
        ids = raw.get("id") or []
        kwargs = dict(raw["kwargs"])
        cls = ids[-1] if isinstance(ids, list) and ids else kwargs.get("type")
        kwargs["role"] = _LC_ROLES.get(str(cls), _LC_ROLES.get(str(kwargs.get("type")), "user"))
        raw = kwargs
    role = raw.get("role")
    if role is None and isinstance(raw.get("type"), str) and raw["type"] in _LC_ROLES:
        role = _LC_ROLES[raw["type"]]
    if not isinstance(role, str):
        return None
    calls = []
    for call in raw.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        if isinstance(function, Mapping):  # OpenAI: {"function": {"name", "arguments"}}
            name, arguments = function.get("name"), function.get("arguments")
        elif isinstance(function, str):  # Inspect: {"function": name, "arguments": {…}}
            name, arguments = function, call.get("arguments")
        else:  # LangChain: {"name", "args"}
            name, arguments = call.get("name"), call.get("args", call.get("arguments"))
        calls.append({"id": call.get("id"), "name": name, "arguments": args_of(arguments)})
    return {
        "role": {"human": "user", "ai": "assistant"}.get(role, role),
        "content": text_of(raw.get("content")),
        "tool_calls": calls,
        "tool_call_id": raw.get("tool_call_id"),
        "name": raw.get("name") if isinstance(raw.get("name"), str) else raw.get("function"),
    }


class StepList:
    """Steps in order, with conversation history that was already shown skipped.

    ``history`` adds messages a platform logged as a model call's input (the i-th copy of a
    message in one input is new only when fewer copies were shown before, so a message the
    agent really repeated stays); ``output`` always adds (a repeated answer is data);
    ``tool`` adds a tool run, as the result of the pending call of that name when a model
    output already asked for it.
    """

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.repeated = 0
        self._shown: Counter[str] = Counter()
        self._pending: dict[str, list[str | None]] = {}

    def add(self, content: str, **fields: Any) -> Step:
        step = Step.make(len(self.steps), content, **fields)
        self.steps.append(step)
        return step

    def history(self, raw_messages: Iterable[object], **where: Any) -> None:
        """Add the messages of a model call's input that were not shown yet."""
        local: Counter[str] = Counter()
        for raw in raw_messages:
            msg = normalize_message(raw)
            if msg is None:
                continue
            key = _key(msg)
            local[key] += 1
            if local[key] <= self._shown[key]:
                self.repeated += 1
                continue
            self._message(msg, key, **where)

    def output(self, raw_messages: Iterable[object], **where: Any) -> None:
        """Add what a model call answered (always new)."""
        for raw in raw_messages:
            msg = normalize_message(raw)
            if msg is not None:
                self._message(msg, _key(msg), **where)

    def tool(
        self,
        name: str | None,
        arguments: object,
        result: object,
        *,
        call_id: str | None = None,
        error: str | None = None,
        **where: Any,
    ) -> None:
        """A tool run: a call (unless a model output already made it) and its result."""
        waiting = self._pending.get(name or "", [])
        if waiting:
            call_id = waiting.pop(0) or call_id
        else:
            self._call(name, arguments, call_id, **where)
        text = text_of(result) if result is not None else (error or "")
        key = _key({"role": "tool", "content": text})
        self._shown[key] += 1
        self.add(
            text,
            role="tool",
            kind=StepKind.TOOL_RESULT,
            tool_name=name,
            **_fields(where, {"call_id": call_id} if call_id else {}),
        )

    def _message(self, msg: Mapping[str, Any], key: str, **where: Any) -> None:
        self._shown[key] += 1
        role = msg["role"]
        if role == "tool":
            name = msg.get("name")
            waiting = self._pending.get(name or "", [])
            call_id = msg["tool_call_id"]
            if call_id in waiting:
                waiting.remove(call_id)
            self.add(
                msg["content"],
                role="tool",
                kind=StepKind.TOOL_RESULT,
                tool_name=name,
                **_fields(where, {"call_id": call_id} if call_id else {}),
            )
            return
        if msg["content"] or not msg["tool_calls"]:
            self.add(
                msg["content"],
                role=role,
                kind=StepKind.SYSTEM if role in ("system", "developer") else StepKind.MESSAGE,
                **_fields(where, {}),
            )
        for call in msg["tool_calls"]:
            self._call(call["name"], call["arguments"], call["id"], **where)
            self._pending.setdefault(call["name"] or "", []).append(call["id"])

    def _call(self, name: object, arguments: object, call_id: object, **where: Any) -> None:
        args = args_of(arguments)
        shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
        self.add(
            f"{name}({shown})",
            role="assistant",
            kind=StepKind.TOOL_CALL,
            tool_name=str(name) if name is not None else None,
            tool_args=args,
            **_fields(where, {"call_id": str(call_id)} if call_id else {}),
        )


def _key(msg: Mapping[str, Any]) -> str:
    if msg["role"] == "tool":
        return json.dumps(["tool", msg["content"]])
    calls = [[c.get("name"), c.get("arguments")] for c in msg.get("tool_calls") or []]
    return json.dumps([msg["role"], msg["content"], calls], default=str, sort_keys=True)


def _fields(where: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Step fields from ``agent=…, timestamp=…, metadata=…`` plus extra metadata."""
    return {
        "agent": where.get("agent"),
        "timestamp": where.get("timestamp"),
        "metadata": {**(where.get("metadata") or {}), **extra},
    }
