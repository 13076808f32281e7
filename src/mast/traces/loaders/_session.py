"""Session-shaped JSON Lines: files whose lines are the events of one run, not one trace each.

Codex rollouts, the ``codex exec --json`` event stream, Claude Code sessions and OTLP span
exports are all JSON Lines, but a whole file (or, for OTLP, a whole trace id) is one trace.
This module reads such files line by line, keeps lines that are not JSON instead of failing
(stderr mixed into an event stream, a last line cut short when the run was killed), detects
which session format a file holds from its first lines, and removes repeated instructions.

>>> sniff_session(b'{"type":"thread.started","thread_id":"t1"}\\n{"type":"turn.started"}\\n')
'codex-exec'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mast.traces.loaders._open import numbered_lines, open_text
from mast.traces.model import Step, StepKind


@dataclass(frozen=True)
class RawLine:
    """A line that is not valid JSON, kept verbatim so nothing in the run is lost."""

    text: str
    error: str


Line = tuple[int, Any]
"""(1-based line number, parsed JSON value or :class:`RawLine`)."""


def read_lines(path: Path) -> list[Line]:
    """Every non-blank line of ``path``, parsed as JSON where it is JSON."""
    out: list[Line] = []
    with open_text(path) as handle:  # gzip, BOM and UTF-16 aware
        for number, line in numbered_lines(handle, path):
            if not line.strip():
                continue
            try:
                out.append((number, json.loads(line)))
            except (ValueError, RecursionError) as exc:  # kept verbatim, also if too deep
                out.append((number, RawLine(line.rstrip("\r\n"), str(exc))))
    return out


def read_documents(text: str) -> Iterator[Any]:
    """The JSON values of a text holding one or more concatenated (pretty-printed) documents.

    OpenTelemetry's ``ConsoleSpanExporter`` writes one indented JSON object per span, one after
    the other, which is neither JSON nor JSON Lines.

    >>> list(read_documents('{"a": 1}\\n{\\n  "b": 2\\n}\\n'))
    [{'a': 1}, {'b': 2}]
    """
    decoder = json.JSONDecoder()  # raises ValueError, or RecursionError when nested too deep
    position = 0
    text = text.lstrip("\ufeff")
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return
        value, position = decoder.raw_decode(text, position)
        yield value


# --- detection ------------------------------------------------------------------------------

# One test per session format, on a parsed line. Kept strict: a line of a JSONL file of
# traces (chat, AG2, …) must never look like a session event.
_CODEX_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_EXEC_TYPES = {
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
}
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot"}


def _type(v: dict[str, Any]) -> str | None:
    # A "type" that is a list or an object must not reach a set lookup (unhashable).
    kind = v.get("type")
    return kind if isinstance(kind, str) else None


def _is_codex(v: dict[str, Any]) -> bool:
    return _type(v) in _CODEX_TYPES and "payload" in v


def _is_codex_exec(v: dict[str, Any]) -> bool:
    return _type(v) in _EXEC_TYPES


def _is_claude(v: dict[str, Any]) -> bool:
    if _type(v) not in _CLAUDE_TYPES:
        return False
    if v.get("type") == "summary":
        return "leafUuid" in v
    if v.get("type") == "file-history-snapshot":
        return "messageId" in v
    return "uuid" in v and ("sessionId" in v or "parentUuid" in v)


def is_span_record(value: object) -> bool:
    """True for a flat span record (SDK ``to_json`` shape or camelCase/snake_case ids)."""
    if not isinstance(value, Mapping) or "name" not in value:
        return False
    context = value.get("context")
    if isinstance(context, Mapping) and "trace_id" in context and "span_id" in context:
        return True
    has_trace = "traceId" in value or "trace_id" in value
    return has_trace and ("spanId" in value or "span_id" in value)


def is_document(value: object) -> bool:
    """True for a parsed OTLP trace document, a list of span records, or a Phoenix API page
    of spans (``{"data": [...]}``)."""
    if isinstance(value, Mapping):
        if isinstance(value.get("data"), list) and value["data"]:
            return all(is_span_record(v) for v in value["data"][:5])
        return "resourceSpans" in value or "resource_spans" in value or is_span_record(value)
    if isinstance(value, list):
        return bool(value) and all(is_span_record(v) or is_document(v) for v in value[:5])
    return False


def _is_otel(v: dict[str, Any]) -> bool:
    return "resourceSpans" in v or is_span_record(v)


def _is_langfuse(v: dict[str, Any]) -> bool:
    from mast.traces.loaders._langfuse import is_observation

    return "traceId" in v and is_observation(v)


def _is_langsmith(v: dict[str, Any]) -> bool:
    from mast.traces.loaders._langsmith import is_flat_run

    return is_flat_run(v)


DETECTORS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "codex": _is_codex,
    "codex-exec": _is_codex_exec,
    "claude-code": _is_claude,
    "otel": _is_otel,
    "langfuse": _is_langfuse,
    "langsmith": _is_langsmith,
}

# For the one line the sniff window cuts (a Codex session_meta line carrying the whole
# system prompt is often longer than the window), look at how the line starts instead.
_CUT_LINE_PATTERNS: dict[str, re.Pattern[bytes]] = {
    "codex": re.compile(
        rb'"type"\s*:\s*"(session_meta|turn_context|response_item|event_msg|compacted)"'
        rb'\s*,\s*"payload"'
    ),
    "codex-exec": re.compile(rb'^\{\s*"type"\s*:\s*"(thread|turn|item)\.[a-z]+"'),
    "claude-code": re.compile(rb'"sessionId"\s*:\s*"[^"]*".*"type"\s*:\s*"(user|assistant)"'),
    "otel": re.compile(rb'^\{\s*"resourceSpans"\s*:'),
}

SNIFF_LINES = 8


def sniff_session(head: bytes, *, whole_file: bool = True) -> str | None:
    """Name the session format of a file from its first bytes, or ``None``.

    Rule: look at the first 8 non-blank lines; each line that is a JSON object votes for
    the session format whose event shape it has (non-JSON lines, such as stderr in a
    ``codex exec --json`` capture, do not vote). The format with the most votes wins; with
    no votes the file is not a session file. A line cut by the sniff window votes by how it
    starts.
    """
    pieces = head.lstrip(b"\xef\xbb\xbf").split(b"\n")
    cut = None if whole_file else pieces.pop()  # the last piece may end mid-line
    votes: dict[str, int] = {}
    seen = 0
    for piece in pieces:
        if not piece.strip():
            continue
        seen += 1
        if seen > SNIFF_LINES:
            break
        try:
            value = json.loads(piece)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            for name, test in DETECTORS.items():
                if test(value):
                    votes[name] = votes.get(name, 0) + 1
                    break
    if cut is not None and cut.strip() and seen < SNIFF_LINES:
        start = cut[:4096]
        for name, pattern in _CUT_LINE_PATTERNS.items():
            if pattern.search(start):
                votes[name] = votes.get(name, 0) + 1
                break
    if not votes:
        return None
    return max(votes, key=lambda name: votes[name])


# --- de-duplication of repeated instructions -------------------------------------------------


def dedupe_instructions(steps: list[Step]) -> tuple[list[Step], dict[str, int]]:
    """Replace repeats of identical system/developer text with a short reference step.

    Harnesses such as Codex put the same instructions (often tens of kilobytes) in front of
    every turn and every resumed session; a judge should read them once. The first copy stays,
    each later identical copy becomes a ``system`` step ``[repeated instructions: same text as
    s<N>]`` with ``metadata["repeat_of"]``, so the order of events stays visible. Steps are
    re-indexed. Returns the new steps and ``{"count": repeats, "chars_removed": n}``.
    """
    first_seen: dict[str, str] = {}
    references: dict[str, str] = {}  # reference step id -> id of the text it repeats
    out: list[Step] = []
    repeats = 0
    removed = 0

    def resolve(step_id: str) -> str:
        for _ in range(len(references) + 1):
            if step_id not in references:
                break
            step_id = references[step_id]
        return step_id

    for step in steps:
        index = len(out)
        step_id = f"s{index + 1}"
        earlier = step.metadata.get("repeat_of")
        original: str | None = None
        if isinstance(earlier, str):
            original = resolve(earlier)  # already a reference (e.g. from one session)
        elif _is_instruction(step) and len(step.content) >= 40:
            original = first_seen.get(step.content)
            if original is None:
                first_seen[step.content] = step_id
            else:
                repeats += 1
                removed += len(step.content)
        if original is None:
            out.append(step.model_copy(update={"id": step_id, "index": index}))
            continue
        references[step_id] = original
        reference = f"[repeated instructions: same text as {original}]"
        if not isinstance(earlier, str):
            removed -= len(reference)
        out.append(
            step.model_copy(
                update={
                    "id": step_id,
                    "index": index,
                    "content": reference,
                    "metadata": {**step.metadata, "repeat_of": original},
                }
            )
        )
    return out, {"count": repeats, "chars_removed": max(removed, 0)}


def _is_instruction(step: Step) -> bool:
    return step.kind is StepKind.SYSTEM or step.role in {"system", "developer"}


def renumber(steps: list[Step]) -> list[Step]:
    """The same steps with ids and indexes ``s1…sN`` in list order."""
    return [
        s if s.index == i else s.model_copy(update={"id": f"s{i + 1}", "index": i})
        for i, s in enumerate(steps)
    ]


def raw_line_step(index: int, number: int, raw: RawLine, agent: str | None = None) -> Step:
    """A ``log`` step holding a non-JSON line verbatim."""
    return Step.make(
        index,
        raw.text,
        agent=agent,
        kind=StepKind.LOG,
        metadata={"line": number, "not_json": raw.error},
    )
