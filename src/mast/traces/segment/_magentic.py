"""Magentic-One (AutoGen testbed) runs: ``---------- <speaker> ----------`` turns.

Turns sit between ``SCENARIO.PY STARTING !#!#`` and ``SCENARIO.PY COMPLETE !#!#``; the
``RUN.SH`` part around them (package installs, pip warnings) is kept as ``log`` steps. The
speaker is written either bare (``MagenticOneOrchestrator``) or, by newer AutoGen consoles,
with the event type (``TextMessage (WebSurfer)``); ``ToolCallRequestEvent`` and
``ToolCallExecutionEvent`` turns become ``tool_call`` / ``tool_result`` steps paired by the
call ids they print. A ``FINAL ANSWER:`` line is noted in the step's metadata.

>>> log = ("SCENARIO.PY STARTING !#!#\\n---------- user ----------\\nHow many?\\n"
...        "---------- MagenticOneOrchestrator ----------\\nFINAL ANSWER: 3\\n"
...        "SCENARIO.PY COMPLETE !#!#\\n")
>>> p = segment_text(log)
>>> [(s.agent, s.kind.value) for s in p.steps], p.task, p.metadata
([(None, 'system'), ('user', 'message'), ('MagenticOneOrchestrator', 'message'), \
(None, 'system')], 'How many?', {'final_answer': '3'})
"""

from __future__ import annotations

import re
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import Builder, Parsed, split_entries

_ENTRY = re.compile(
    r"^(?:-{10} (?P<speaker>[^\n]+?) -{10}"
    r"|(?P<marker>(?P<script>[A-Z][A-Z_.]*) (?:STARTING|COMPLETE|RUNTIME:[^\n]*?) !#!#))[ \t]*$",
    re.M,
)
_TYPED = re.compile(r"(?P<type>[A-Za-z]+) \((?P<source>[^)]+)\)")
_CALL_ID = re.compile(r"\b(?:id|call_id)=['\"](?P<id>[^'\"]+)['\"]")
_CALL_NAME = re.compile(r"\bname=['\"](?P<name>[^'\"]+)['\"]")
_FINAL = re.compile(r"^FINAL ANSWER:[ \t]*(?P<answer>[^\n]*)$", re.M)


def segment_text(text: str) -> Parsed | None:
    preamble, entries = split_entries(text, _ENTRY)
    if not any(m.group("speaker") for m, _, _ in entries):
        return None
    b = Builder()
    if preamble.strip():
        b.log(preamble)
    task: str | None = None
    meta_out: dict[str, Any] = {}
    for m, a, z in entries:
        header, body = m.group(0), text[a:z]
        if m.group("marker"):
            if m.group("script") == "SCENARIO.PY":
                b.add(StepKind.SYSTEM, header, role="system")
                if body.strip():
                    b.log(body)
            else:
                b.log(header + body)
            continue
        speaker = m.group("speaker").strip()
        typed = _TYPED.fullmatch(speaker)
        event = typed.group("type") if typed else None
        agent = typed.group("source").strip() if typed else speaker
        meta: dict[str, Any] = {"event": event} if event else {}
        kind = StepKind.MESSAGE
        tool_name = None
        if event in ("ToolCallRequestEvent", "ToolCallExecutionEvent"):
            kind = StepKind.TOOL_CALL if event == "ToolCallRequestEvent" else StepKind.TOOL_RESULT
            ids = [c.group("id") for c in _CALL_ID.finditer(body)]
            if ids:
                meta["call_id"] = ids[0]
                if len(ids) > 1:
                    meta["call_ids"] = ids
            name = _CALL_NAME.search(body)
            tool_name = name.group("name") if name else None
        final = _FINAL.search(body)
        if final:
            meta["final_answer"] = meta_out["final_answer"] = final.group("answer").strip()
        role = (
            "user" if agent == "user" else ("tool" if kind is StepKind.TOOL_RESULT else "assistant")
        )
        b.add(kind, body, header=header, agent=agent, role=role, tool_name=tool_name, metadata=meta)
        if task is None and agent == "user" and body.strip():
            task = body.strip()
    return Parsed(steps=b.build(), task=task, metadata=meta_out)
