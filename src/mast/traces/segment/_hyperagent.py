"""HyperAgent logs: entries start ``HyperAgent_<instance> - INFO - ``; other lines continue them.

Agents are the Planner and its interns (Navigator, Editor, Executor): ``Planner's
Response:`` and ``Inner-Navigator-Assistant's Response:`` are their messages. A Planner
response that ends in ``Intern Name:`` / ``Subgoal:`` delegates work: that part is a
``tool_call`` to the intern, paired (same ``call_id``) with the intern's report
``Navigator->Planner:``, a ``tool_result``. An intern's ``Action:`` code block is a
``tool_call`` (the log does not record its observation). Indented lines, as in YAML-like
dumps, are accepted.

>>> log = ("HyperAgent_x - INFO - Planner's Response: Thought: look.\\n"
...        "Intern Name: Codebase Navigator\\nSubgoal: find it\\n"
...        "HyperAgent_x - INFO - Navigator->Planner: found it\\n")
>>> [(s.agent, s.kind.value, s.metadata.get("call_id")) for s in segment_text(log).steps]
[('Planner', 'message', None), ('Planner', 'tool_call', 'call_1'), \
('Navigator', 'tool_result', 'call_1')]
"""

from __future__ import annotations

import re
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import Builder, Parsed, is_noisy_level, split_entries

_ENTRY = re.compile(r"^[ \t]*(?P<logger>HyperAgent_[^\s]*) - (?P<level>[A-Z]+) - ", re.M)
_LABEL = re.compile(r"(?:(?P<who>[\w-]+)'s Response|(?P<src>[\w-]+)->(?P<dst>[\w-]+)):[ \t]*")
_PART = re.compile(r"^[ \t]*(?P<kind>Intern Name|Action)[ \t]*:", re.M)
_INTERN = re.compile(r"Intern Name[ \t]*:[ \t]*(?P<name>[^\n]*)")
_TOOL = re.compile(r"\b(?P<tool>\w+)\._run\(")
_FENCE = re.compile(r"```[ \t]*(?P<lang>\w+)")


def _agent(label: str) -> str:
    """``Inner-Navigator-Assistant`` -> ``Navigator``; ``Planner`` stays."""
    if label.startswith("Inner-"):
        label = label[len("Inner-") :]
    if label.endswith("-Assistant"):
        label = label[: -len("-Assistant")]
    return label


def segment_text(text: str) -> Parsed | None:
    preamble, entries = split_entries(text, _ENTRY)
    if not entries:
        return None
    b = Builder()
    if preamble.strip():
        b.log(preamble, mergeable=False)
    delegations: list[tuple[str, str | None]] = []  # open (call id, intern) pairs
    for m, a, z in entries:
        level = m.group("level")
        meta: dict[str, Any] = {"logger": m.group("logger"), "level": level}
        label = _LABEL.match(text, a, z)
        if label is None:
            b.log(m.group(0) + text[a:z], mergeable=not is_noisy_level(level), metadata=meta)
            continue
        header = m.group(0) + label.group(0)
        if label.group("src"):
            agent, to = _agent(label.group("src")), _agent(label.group("dst"))
            meta["recipient"] = to
            # A report answers the latest open delegation; without one it is a message.
            cid, intern = delegations.pop() if delegations else (None, None)
            b.add(
                StepKind.TOOL_RESULT if cid else StepKind.MESSAGE,
                text[label.end() : z],
                header=header,
                agent=agent,
                role="assistant",
                tool_name=intern,
                metadata={**meta, "call_id": cid} if cid else meta,
            )
            continue
        agent = _agent(label.group("who"))
        meta["speaker_label"] = label.group("who")
        parts = list(_PART.finditer(text, label.end(), z))
        first_end = parts[0].start() if parts else z
        b.add(
            StepKind.MESSAGE,
            text[label.end() : first_end],
            header=header,
            agent=agent,
            role="assistant",
            metadata=meta,
        )
        for i, p in enumerate(parts):
            end = parts[i + 1].start() if i + 1 < len(parts) else z
            chunk = text[p.start() : end]
            cid = b.new_call_id()
            args: dict[str, Any] | None = None
            extra: dict[str, Any] = {}
            if p.group("kind") == "Intern Name":
                named = _INTERN.match(chunk.lstrip())
                name = named.group("name").strip() if named else None
                args, extra = {"intern_name": name}, {"delegation": True}
                delegations.append((cid, name))
            else:
                # HyperAgent tools are called as ``<tool>._run(...)``; shell actions are fenced.
                found = _TOOL.search(chunk) or _FENCE.search(chunk)
                name = found.group(1) if found else None
            b.add(
                StepKind.TOOL_CALL,
                chunk,
                agent=agent,
                role="assistant",
                tool_name=name,
                tool_args=args,
                metadata={**meta, "call_id": cid, **extra},
            )
    return Parsed(steps=b.build())
