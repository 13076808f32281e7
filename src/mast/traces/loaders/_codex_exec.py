"""``codex exec --json`` event streams: one trace per captured run (stderr lines allowed)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._codex import AGENT, _text_of
from mast.traces.loaders._records import json_or_text
from mast.traces.loaders._session import Line, RawLine, raw_line_step
from mast.traces.model import Step, StepKind, Trace


def exec_stream(lines: Sequence[Line]) -> list[Trace]:
    """Convert a captured ``codex exec --json`` event stream into one trace."""
    if not any(
        isinstance(v, Mapping) and str(v.get("type", "")).split(".")[0] in {"thread", "item"}
        for _, v in lines
    ):
        raise TraceFormatError(
            "no codex exec events in the file",
            format="codex-exec",
            expected="JSON Lines with thread.started / item.completed events",
        )
    steps: list[Step] = []
    meta: dict[str, Any] = {}
    started: dict[str, tuple[int, Mapping[str, Any]]] = {}
    completed: set[str] = set()
    usage: dict[str, int] = {}
    stderr_lines: list[int] = []
    failures: list[str] = []

    def add(content: str, number: int, **fields: Any) -> None:
        metadata = {"line": number, **fields.pop("metadata", {})}
        steps.append(Step.make(len(steps), content, metadata=metadata, **fields))

    for number, value in lines:
        if isinstance(value, RawLine):
            stderr_lines.append(number)
            steps.append(raw_line_step(len(steps), number, value, agent="stderr"))
            continue
        if not isinstance(value, Mapping):
            continue
        event = value.get("type")
        if event == "thread.started":
            meta.setdefault("thread_id", value.get("thread_id"))
        elif event == "turn.completed":
            counts = value.get("usage")
            if isinstance(counts, Mapping):
                for key, count in counts.items():
                    if isinstance(count, int):
                        usage[key] = usage.get(key, 0) + count
        elif event in {"turn.failed", "error"}:
            error = value.get("error") if event == "turn.failed" else value
            message = error.get("message") if isinstance(error, Mapping) else None
            failures.append(str(message))
            add(f"{event}: {message}", number, agent="codex-harness", kind=StepKind.LOG)
        elif event in {"item.started", "item.updated"}:
            item = value.get("item")
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                started[item["id"]] = (number, item)
        elif event == "item.completed":
            item = value.get("item")
            if isinstance(item, Mapping):
                if isinstance(item.get("id"), str):
                    completed.add(item["id"])
                for fields in _exec_item_steps(item):
                    add(fields.pop("content"), number, **fields)
    # Items that started but never completed: the run was cut off while they ran.
    for item_id, (number, item) in started.items():
        if item_id not in completed:
            for fields in _exec_item_steps(item, incomplete=True)[:1]:
                add(fields.pop("content"), number, **fields)
    if usage:
        meta["usage"] = usage
    if stderr_lines:
        meta["non_json_lines"] = stderr_lines
    if failures:
        meta["errors"] = failures
    if not any(s.role == "assistant" and s.kind is StepKind.MESSAGE for s in steps):
        meta["no_assistant_text"] = True
    return [
        Trace(
            id=str(meta.get("thread_id") or ""),
            system="Codex CLI (exec)",
            steps=steps,
            metadata=meta,
        )
    ]


def _exec_item_steps(item: Mapping[str, Any], incomplete: bool = False) -> list[dict[str, Any]]:
    """Step fields for one exec ``item`` (a call item gives a call and a result)."""
    item_type = item.get("type") or item.get("item_type")
    item_id = item.get("id")
    base: dict[str, Any] = {"item_type": item_type, "call_id": item_id}
    if incomplete:
        base["incomplete"] = True
    if item_type in {"agent_message", "reasoning", "plan"}:
        return [
            {
                "content": _text_of(item.get("text")),
                "agent": AGENT,
                "role": "assistant",
                "metadata": {"item_type": item_type, "item_id": item_id},
            }
        ]
    if item_type == "command_execution":
        command = item.get("command")
        result: dict[str, Any] = {"exit_code": item.get("exit_code"), "status": item.get("status")}
        return [
            {
                "content": command if isinstance(command, str) else json.dumps(command),
                "agent": AGENT,
                "role": "assistant",
                "kind": StepKind.TOOL_CALL,
                "tool_name": "shell",
                "tool_args": {"command": command},
                "metadata": dict(base),
            },
            {
                "content": _text_of(item.get("aggregated_output")),
                "agent": "tool",
                "role": "tool",
                "kind": StepKind.TOOL_RESULT,
                "tool_name": "shell",
                "metadata": {**base, **result},
            },
        ]
    if item_type == "mcp_tool_call":
        name = (
            f"{item.get('server')}.{item.get('tool')}" if item.get("server") else item.get("tool")
        )
        arguments = json_or_text(item.get("arguments"))
        res = item.get("result")
        err = item.get("error")
        if isinstance(res, Mapping):
            out = _text_of(res.get("content"))
        elif isinstance(err, Mapping):
            out = f"error: {err.get('message')}"
        else:
            out = ""
        return [
            {
                "content": arguments
                if isinstance(arguments, str)
                else json.dumps(arguments, ensure_ascii=False),
                "agent": AGENT,
                "role": "assistant",
                "kind": StepKind.TOOL_CALL,
                "tool_name": name,
                "tool_args": arguments,
                "metadata": dict(base),
            },
            {
                "content": out,
                "agent": "tool",
                "role": "tool",
                "kind": StepKind.TOOL_RESULT,
                "tool_name": name,
                "metadata": {**base, "status": item.get("status"), "error": err is not None},
            },
        ]
    if item_type in {"file_change", "web_search", "todo_list"}:
        payload = {k: v for k, v in item.items() if k not in {"id", "type"}}
        return [
            {
                "content": json.dumps(payload, ensure_ascii=False),
                "agent": AGENT,
                "role": "assistant",
                "kind": StepKind.TOOL_CALL if item_type != "todo_list" else StepKind.MESSAGE,
                "tool_name": item_type if item_type != "todo_list" else None,
                "tool_args": payload if item_type != "todo_list" else None,
                "metadata": dict(base),
            }
        ]
    if item_type == "error":
        return [
            {
                "content": f"error: {item.get('message')}",
                "agent": "codex-harness",
                "kind": StepKind.LOG,
                "metadata": dict(base),
            }
        ]
    return [
        {
            "content": json.dumps(dict(item), ensure_ascii=False),
            "agent": AGENT,
            "kind": StepKind.LOG,
            "metadata": dict(base),
        }
    ]
