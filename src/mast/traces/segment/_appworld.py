"""AppWorld supervisor runs: unindented headers, indented bodies, nested app-agent loops.

``**** Task N/M (<id>) ****`` opens a task (the lines below it are the instruction).
``Response from <X> Agent`` holds the Python code agent X runs: a ``tool_call``. Its
output is ``Code Execution Output`` and the ``Message to <X> Agent`` that hands it back to
X, both ``tool_result`` steps with the call's ``call_id``; so is ``Response from
send_message API`` (what a sub-agent loop returned to the caller). ``Entering <App> Agent
message loop`` … ``Exiting …`` wrap a sub-agent's turns, indented one level deeper; the
first ``Message to <App> Agent`` there is the caller's request (a ``message``).
``Evaluation`` and its JSON close the run.

A header counts only at the indentation of the loop it belongs to, so a body line that
happens to read ``Evaluation`` is left in its body.

>>> log = ("Response from Supervisor Agent\\n    print(1)\\nCode Execution Output\\n\\n    1\\n"
...        "Message to Supervisor Agent\\n    1\\n")
>>> [(s.kind.value, s.metadata.get("call_id")) for s in segment_text(log).steps]
[('tool_call', 'call_1'), ('tool_result', 'call_1'), ('tool_result', 'call_1')]
"""

from __future__ import annotations

import json
import re
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import Builder, Parsed, dedent

_HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:"
    r"(?P<banner>\*{3,} Task (?P<n>\d+)/(?P<total>\d+) \((?P<task_id>[^)\n]*)\)[ \t]*\*{3,})"
    r"|Response from (?P<resp>[^\n]+?) Agent"
    r"|Response from (?P<api>\w+) API"
    r"|Message to (?P<to>[^\n]+?) Agent"
    r"|Reply from (?P<reply>[^\n]+?) Agent to (?P<reply_to>[^\n]+?)"
    r"|(?P<output>Code Execution Output)"
    r"|Entering (?P<enter>[^\n]+?) Agent message loop"
    r"|Exiting (?P<exit>[^\n]+?) Agent message loop"
    r"|(?P<eval>Evaluation)"
    r")[ \t]*$",
    re.M,
)


def _accepted(text: str) -> list[tuple[re.Match[str], int]]:
    """Header matches at their loop's indentation, each with its loop depth."""
    levels = [0]
    entering = False
    out = []
    for m in _HEADER.finditer(text):
        indent = len(m.group("indent").expandtabs(4))
        if m.group("banner") or m.group("eval"):
            if indent != 0:
                continue
            levels = [0]
        elif entering and indent > levels[-1]:
            levels.append(indent)  # first header inside a new loop fixes its indentation
        elif indent in levels:
            del levels[levels.index(indent) + 1 :]  # back out of loops left without "Exiting"
        else:
            continue
        entering = bool(m.group("enter"))
        out.append((m, len(levels) - 1))
    return out


def segment_text(text: str) -> Parsed | None:
    headers = _accepted(text)
    if not headers:
        return None
    b = Builder()
    preamble = text[: headers[0][0].start()]
    if preamble.strip():
        b.log(preamble, mergeable=False)
    task: str | None = None
    meta_out: dict[str, Any] = {}
    owners: dict[int, str] = {}  # loop depth -> the agent acting there
    last_call: dict[str, str] = {}  # agent -> its latest call id
    awaiting: dict[str, str] = {}  # agent -> call id whose output has not been handed back
    for i, (m, depth) in enumerate(headers):
        end = headers[i + 1][0].start() if i + 1 < len(headers) else len(text)
        header, body = m.group(0), dedent(text[m.end() : end])
        common: dict[str, Any] = {"header": header, "metadata": {"depth": depth}}
        meta = common["metadata"]
        if m.group("banner"):
            meta.update(
                task_id=m.group("task_id"),
                task_index=int(m.group("n")),
                task_count=int(m.group("total")),
            )
            b.add(StepKind.MESSAGE, body, agent="user", role="user", **common)
            task = task or (body.strip() or None)
        elif m.group("resp"):
            agent = m.group("resp").strip()
            owners[depth] = agent
            cid = b.new_call_id()
            last_call[agent] = awaiting[agent] = cid
            meta["call_id"] = cid
            b.add(
                StepKind.TOOL_CALL,
                body,
                agent=agent,
                role="assistant",
                tool_name="python",
                **common,
            )
        elif m.group("output"):
            cid = last_call.get(owners.get(depth, ""), "")
            if cid:
                meta["call_id"] = cid
            b.add(StepKind.TOOL_RESULT, body, role="tool", tool_name="python", **common)
        elif m.group("to"):
            agent = m.group("to").strip()
            meta["recipient"] = agent
            if agent in awaiting:
                meta["call_id"] = awaiting.pop(agent)
                b.add(StepKind.TOOL_RESULT, body, role="tool", **common)
            else:
                sender = owners.get(depth - 1) if depth else "user"
                b.add(StepKind.MESSAGE, body, agent=sender, role="user", **common)
        elif m.group("reply"):
            agent = m.group("reply").strip()
            awaiting.pop(agent, None)  # its reply(...) call ends its loop
            meta["recipient"] = m.group("reply_to").strip()
            b.add(StepKind.MESSAGE, body, agent=agent, role="assistant", **common)
        elif m.group("api"):
            cid = last_call.get(owners.get(depth, ""), "")
            if cid:
                meta["call_id"] = cid
            b.add(StepKind.TOOL_RESULT, body, role="tool", tool_name=m.group("api"), **common)
        elif m.group("enter") or m.group("exit"):
            app = (m.group("enter") or m.group("exit")).strip()
            meta.update(loop=app, event="enter" if m.group("enter") else "exit")
            if m.group("enter"):
                owners[depth + 1] = app
            b.add(StepKind.SYSTEM, body, role="system", **common)
        else:  # Evaluation
            try:
                result = json.loads(body)
            except ValueError:
                result = None
            if isinstance(result, dict) and isinstance(result.get("success"), bool):
                meta["success"] = meta_out["evaluation_success"] = result["success"]
            b.add(StepKind.SYSTEM, body, role="system", **common)
    return Parsed(steps=b.build(), task=task, metadata=meta_out)
