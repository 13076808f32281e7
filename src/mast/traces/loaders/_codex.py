"""Codex CLI sessions: rollout files (``rollout-*.jsonl``, ``session.jsonl``) and the
``codex exec --json`` event stream, each file one :class:`~mast.traces.model.Trace`.

Rollout lines are ``{timestamp, type, payload}`` with ``type`` one of ``session_meta``,
``turn_context``, ``response_item``, ``event_msg`` or ``compacted``. A ``function_call`` and
its ``function_call_output`` become a ``tool_call`` and a ``tool_result`` step sharing
``metadata["call_id"]``. Messages come from ``response_item`` lines; the ``event_msg`` copies
of the same text (``user_message``, ``agent_message``, ``agent_reasoning``) are used only when
a file has no ``response_item`` for them (older CLI versions).

The exec stream has ``thread.started``, ``turn.*`` and ``item.*`` events; a completed
``command_execution`` or ``mcp_tool_call`` item becomes a call step and a result step sharing
the item id; lines that are not JSON (stderr) become ``log`` steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._records import json_or_text
from mast.traces.loaders._session import Line, RawLine, dedupe_instructions, raw_line_step
from mast.traces.model import Outcome, Step, StepKind, Trace

AGENT = "codex"

# Text Codex itself puts in user-role messages to give the model context; not the user's words.
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
)


def _text_of(content: object) -> str:
    """Join the text parts of a Responses-API content list (input_text / output_text / …)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif part.get("type") in {"input_image", "output_image"}:
                    parts.append("[image]")
                else:
                    parts.append(json.dumps(part, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _output_text(output: object) -> tuple[str, bool | None]:
    """A function_call_output's text and success flag, across the three shapes Codex wrote:
    a plain string, a list of content items, or ``{"content": …, "success": …}``."""
    if isinstance(output, Mapping) and "content" in output:
        success = output.get("success")
        return _text_of(output.get("content")), success if isinstance(success, bool) else None
    return _text_of(output), None


# --- rollout files ------------------------------------------------------------------------


def rollout(lines: Sequence[Line]) -> list[Trace]:
    """Convert the lines of one Codex rollout file into one trace."""
    events = [(n, v) for n, v in lines if isinstance(v, Mapping)]
    if not any(v.get("type") in {"session_meta", "response_item", "event_msg"} for _, v in events):
        raise TraceFormatError(
            "no Codex session events in the file",
            format="codex",
            expected="JSON Lines of {timestamp, type, payload} with type session_meta, "
            "turn_context, response_item, event_msg or compacted",
        )
    response_texts = {
        (p.get("role"), _text_of(p.get("content")).strip())
        for _, v in events
        if v.get("type") == "response_item"
        and isinstance(p := v.get("payload"), Mapping)
        and p.get("type") == "message"
    }
    has_reasoning_items = any(
        v.get("type") == "response_item"
        and isinstance(v.get("payload"), Mapping)
        and v["payload"].get("type") == "reasoning"
        for _, v in events
    )
    builder = _RolloutBuilder(response_texts, has_reasoning_items)
    for number, value in lines:
        if isinstance(value, RawLine):
            builder.raw(number, value, last=number == lines[-1][0])
        elif isinstance(value, Mapping):
            builder.line(number, value)
        else:
            builder.unparsed.append(number)
    return [builder.finish()]


class _RolloutBuilder:
    def __init__(self, response_texts: set[tuple[Any, str]], has_reasoning: bool) -> None:
        self.response_texts = response_texts
        self.has_reasoning_items = has_reasoning
        self.steps: list[Step] = []
        self.meta: dict[str, Any] = {}
        self.models: list[str] = []
        self.calls: dict[str, Step] = {}
        self.instructions_seen: set[str] = set()
        self.dropped_turn_instructions = 0
        self.skipped: dict[str, int] = {}
        self.unparsed: list[int] = []
        self.usage: dict[str, Any] | None = None
        self.aborted: list[str] = []
        self.errors: list[str] = []
        self.truncated = False
        self.session_id: str | None = None

    def add(self, content: str, number: int, ts: object, **fields: Any) -> Step:
        metadata = {"line": number, **fields.pop("metadata", {})}
        step = Step.make(
            len(self.steps),
            content,
            timestamp=ts if isinstance(ts, str) else None,
            metadata=metadata,
            **fields,
        )
        self.steps.append(step)
        return step

    def harness(self, content: str, number: int, ts: object, item_type: str) -> Step:
        """A system step of the Codex harness (instructions, a compaction summary)."""
        return self.add(
            content,
            number,
            ts,
            agent="codex-harness",
            role="system",
            kind=StepKind.SYSTEM,
            metadata={"item_type": item_type},
        )

    def log(self, content: str, number: int, ts: object, metadata: dict[str, Any]) -> Step:
        """A log step of the Codex harness (an aborted turn, an error)."""
        return self.add(
            content, number, ts, agent="codex-harness", kind=StepKind.LOG, metadata=metadata
        )

    def thought(self, content: str, number: int, ts: object, item_type: str) -> Step:
        """The agent's reasoning text."""
        return self.add(
            content, number, ts, agent=AGENT, role="assistant", metadata={"item_type": item_type}
        )

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def raw(self, number: int, raw: RawLine, *, last: bool) -> None:
        if last:
            self.truncated = True  # the writer was killed mid-line: the run ended abruptly
        self.unparsed.append(number)
        self.steps.append(raw_line_step(len(self.steps), number, raw))

    def line(self, number: int, value: Mapping[str, Any]) -> None:
        kind = value.get("type")
        payload = value.get("payload")
        ts = value.get("timestamp")
        if not isinstance(payload, Mapping):
            self.skip(f"{kind} without payload")
            return
        if kind == "session_meta":
            self.session_meta(number, ts, payload)
        elif kind == "turn_context":
            self.turn_context(number, ts, payload)
        elif kind == "response_item":
            self.response_item(number, ts, payload)
        elif kind == "event_msg":
            self.event_msg(number, ts, payload)
        elif kind == "compacted":
            self.harness(_text_of(payload.get("message")), number, ts, "compacted")
        else:
            self.skip(str(kind))

    def session_meta(self, number: int, ts: object, p: Mapping[str, Any]) -> None:
        # A resumed or forked session can repeat session_meta lines: keep the first's fields.
        meta = p.get("meta") if isinstance(p.get("meta"), Mapping) else p
        assert isinstance(meta, Mapping)
        for key in ("id", "timestamp", "cwd", "originator", "cli_version", "model_provider"):
            if key in meta and f"session_{key}" not in self.meta:
                self.meta[f"session_{key}"] = meta[key]
        if self.session_id is None and isinstance(meta.get("id"), str):
            self.session_id = meta["id"]
        git = p.get("git")
        if isinstance(git, Mapping) and "git" not in self.meta:
            self.meta["git"] = dict(git)
        instructions = meta.get("instructions") or meta.get("base_instructions")
        if isinstance(instructions, Mapping):
            instructions = instructions.get("text")
        if isinstance(instructions, str) and instructions.strip():
            self.instruction_step(number, ts, instructions, "session_meta.instructions")

    def instruction_step(self, number: int, ts: object, text: str, origin: str) -> None:
        self.instructions_seen.add(text.strip())
        self.harness(text, number, ts, origin)

    def turn_context(self, number: int, ts: object, p: Mapping[str, Any]) -> None:
        model = p.get("model")
        if isinstance(model, str) and (not self.models or self.models[-1] != model):
            self.models.append(model)
        for key in ("effort", "approval_policy", "cwd"):
            if key in p and f"turn_{key}" not in self.meta:
                self.meta[f"turn_{key}"] = p[key]
        for field in ("user_instructions", "developer_instructions", "base_instructions"):
            text = p.get(field)
            if not isinstance(text, str) or not text.strip():
                continue
            # Every turn repeats the session's instructions: drop exact repeats here (they
            # are context settings, not messages) and keep only text that changed.
            if text.strip() in self.instructions_seen:
                self.dropped_turn_instructions += 1
            else:
                self.instruction_step(number, ts, text, f"turn_context.{field}")

    def response_item(self, number: int, ts: object, p: Mapping[str, Any]) -> None:
        item = p.get("type")
        if item == "message":
            role = str(p.get("role") or "assistant")
            text = _text_of(p.get("content"))
            injected = role == "user" and text.lstrip().startswith(_CONTEXT_PREFIXES)
            system = role in {"system", "developer"} or injected
            self.add(
                text,
                number,
                ts,
                agent=AGENT if role == "assistant" else "codex-harness" if system else role,
                role=role,
                kind=StepKind.SYSTEM if system else StepKind.MESSAGE,
                metadata={"item_type": "message", **({"injected": True} if injected else {})},
            )
        elif item == "reasoning":
            text = _reasoning_text(p)
            if text:
                self.thought(text, number, ts, "reasoning")
            else:
                self.skip("reasoning without readable text (encrypted)")
        elif item in {"function_call", "custom_tool_call"}:
            raw = p.get("arguments") if item == "function_call" else p.get("input")
            call_id = p.get("call_id") or p.get("id")
            step = self.add(
                raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False),
                number,
                ts,
                agent=AGENT,
                role="assistant",
                kind=StepKind.TOOL_CALL,
                tool_name=_str(p.get("name")),
                tool_args=json_or_text(raw),
                metadata={"item_type": item, "call_id": call_id},
            )
            if isinstance(raw, str) and step.tool_args is raw and raw.strip():
                step.metadata["arguments_not_json"] = True
            if isinstance(call_id, str):
                self.calls[call_id] = step
        elif item in {"function_call_output", "custom_tool_call_output"}:
            call_id = p.get("call_id")
            text, success = _output_text(p.get("output"))
            call = self.calls.get(call_id) if isinstance(call_id, str) else None
            metadata: dict[str, Any] = {"item_type": item, "call_id": call_id}
            if success is not None:
                metadata["success"] = success
            if call is None:
                metadata["unpaired"] = True
            self.add(
                text,
                number,
                ts,
                agent="tool",
                role="tool",
                kind=StepKind.TOOL_RESULT,
                tool_name=call.tool_name if call else None,
                metadata=metadata,
            )
        elif item == "local_shell_call":
            action = p.get("action")
            call_id = p.get("call_id") or p.get("id")
            step = self.add(
                json.dumps(action, ensure_ascii=False),
                number,
                ts,
                agent=AGENT,
                role="assistant",
                kind=StepKind.TOOL_CALL,
                tool_name="local_shell",
                tool_args=action,
                metadata={"item_type": item, "call_id": call_id, "status": p.get("status")},
            )
            if isinstance(call_id, str):
                self.calls[call_id] = step
        elif item == "web_search_call":
            action = p.get("action")
            self.add(
                json.dumps(action, ensure_ascii=False),
                number,
                ts,
                agent=AGENT,
                role="assistant",
                kind=StepKind.TOOL_CALL,
                tool_name="web_search",
                tool_args=action,
                metadata={"item_type": item, "status": p.get("status")},
            )
        else:
            self.skip(f"response_item.{item}")

    def event_msg(self, number: int, ts: object, p: Mapping[str, Any]) -> None:
        event = p.get("type")
        if event in {"user_message", "agent_message"}:
            role = "user" if event == "user_message" else "assistant"
            text = p.get("message")
            if not isinstance(text, str) or (role, text.strip()) in self.response_texts:
                self.skip(f"event_msg.{event} (copy of a response_item)")
                return
            self.add(
                text,
                number,
                ts,
                agent=AGENT if role == "assistant" else "user",
                role=role,
                metadata={"item_type": f"event_msg.{event}"},
            )
        elif event == "agent_reasoning":
            if self.has_reasoning_items:
                self.skip("event_msg.agent_reasoning (copy of a reasoning item)")
                return
            text = p.get("text")
            if isinstance(text, str) and text.strip():
                self.thought(text, number, ts, "event_msg.agent_reasoning")
        elif event == "token_count":
            info = p.get("info")
            if isinstance(info, Mapping) and isinstance(info.get("total_token_usage"), Mapping):
                self.usage = dict(info["total_token_usage"])
        elif event == "turn_aborted":
            reason = str(p.get("reason") or "unknown")
            self.aborted.append(reason)
            metadata = {"item_type": "event_msg.turn_aborted", "reason": reason}
            self.log(f"turn aborted: {reason}", number, ts, metadata)
        elif event in {"error", "stream_error"}:
            message = str(p.get("message") or "")
            self.errors.append(message)
            self.log(f"{event}: {message}", number, ts, {"item_type": f"event_msg.{event}"})
        elif event == "task_complete":
            last = p.get("last_agent_message")
            self.meta["task_complete"] = True
            if isinstance(last, str):
                self.meta["last_agent_message"] = last
        else:
            self.skip(f"event_msg.{event}")

    def finish(self) -> Trace:
        steps, dedupe = dedupe_instructions(self.steps)
        metadata: dict[str, Any] = dict(self.meta)
        repeated = dedupe["count"] + self.dropped_turn_instructions
        metadata["deduplicated_instructions"] = {
            "repeats_replaced": dedupe["count"],
            "turn_context_repeats_dropped": self.dropped_turn_instructions,
            "total": repeated,
            "chars_removed": dedupe["chars_removed"],
        }
        if len(self.models) > 1:
            metadata["models"] = list(self.models)
        if self.usage is not None:
            metadata["usage"] = self.usage
        if self.aborted:
            metadata["turn_aborted"] = self.aborted
        if self.errors:
            metadata["errors"] = self.errors
        if self.skipped:
            metadata["skipped"] = dict(sorted(self.skipped.items()))
        if self.unparsed:
            metadata["unparsed_lines"] = list(self.unparsed)
        if self.truncated:
            metadata["truncated"] = True
        if not any(s.role == "assistant" and s.kind is StepKind.MESSAGE for s in steps):
            metadata["no_assistant_text"] = True
        task = next(
            (
                s.content
                for s in steps
                if s.role == "user" and s.kind is StepKind.MESSAGE and s.content.strip()
            ),
            None,
        )
        return Trace(
            id=self.session_id or "",
            task=task,
            system="Codex CLI",
            model=self.models[0] if self.models else None,
            steps=steps,
            outcome=Outcome.UNKNOWN,
            metadata=metadata,
        )


def _reasoning_text(p: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for key in ("summary", "content"):
        value = p.get(key)
        if isinstance(value, list):
            for part in value:
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    parts.append(part["text"])
    return "\n".join(parts)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# --- codex exec --json ----------------------------------------------------------------------
