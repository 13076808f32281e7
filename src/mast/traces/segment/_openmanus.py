"""OpenManus runs: loguru lines ``YYYY-MM-DD HH:MM:SS.mmm | LEVEL | module:func:line - msg``.

``Executing step k/N`` starts a turn (a ``system`` step). ``Manus's thoughts:`` is the
agent's message; ``Tool arguments: {json}`` is the ``tool_call`` (named by the preceding
``Tools being prepared`` list), ``Tool '<name>' completed its mission! Result:`` with its
multi-line output the paired ``tool_result``. A tool activated without a logged argument
line (the second of two selected tools) gets its ``tool_call`` at ``Activating tool``.
The planning flow's plan and its closing ``Plan completed:`` summary are messages of
``PlanningFlow``. Token counts, browser set-up lines and the like are ``log`` steps.

>>> def line(src, msg):
...     return f"2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:{src} - {msg}\\n"
>>> log = (line("think:81", "✨ Manus's thoughts: go")
...        + line("think:86", "🧰 Tools being prepared: ['terminate']")
...        + line("think:89", '🔧 Tool arguments: {"status": "success"}')
...        + line("execute_tool:180", "🔧 Activating tool: 'terminate'...")
...        + line("act:150", "🎯 Tool 'terminate' completed its mission! Result: done"))
>>> [(s.kind.value, s.tool_name, s.metadata.get("call_id")) for s in segment_text(log).steps]
[('message', None, None), ('log', None, None), ('tool_call', 'terminate', 'call_1'), \
('log', None, None), ('tool_result', 'terminate', 'call_1')]
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import (
    LOGURU,
    STDLOG,
    Builder,
    Parsed,
    Piece,
    is_noisy_level,
    split_entries,
)

_ENTRY = re.compile(
    r"^(?:(?P<prompt>Enter your prompt:[ \t]*)?(?:" + LOGURU + "|" + STDLOG + r")"
    r"|(?P<ask>Enter your prompt:)"
    r"|(?P<done>Plan completed:))",
    re.M,
)
_STEP = re.compile(r"Executing step (?P<k>\d+)/(?P<n>\d+)")
_THOUGHTS = re.compile(r"\W*(?P<agent>[\w .-]+?)'s thoughts:[ \t]*")
_SELECTED = re.compile(r"\W*(?P<agent>[\w .-]+?) selected (?P<count>\d+) tools? to use")
_PREPARED = re.compile(r"\W*Tools being prepared: (?P<names>\[[^\n]*\])")
_ARGS = re.compile(r"\W*Tool arguments:[ \t]*")
_ACTIVATING = re.compile(r"\W*Activating tool: '(?P<name>[^'\n]+)'")
_RESULT = re.compile(
    r"\W*Tool '(?P<name>[^'\n]+)' "
    r"(?:completed its mission! Result:|(?P<err>encountered a problem:))[ \t]*"
)
_PLAN = re.compile(r"Plan creation result:")


@dataclass
class _Call:
    cid: str
    piece: Piece
    activated: bool = False


def segment_text(text: str) -> Parsed | None:
    preamble, entries = split_entries(text, _ENTRY)
    if not any(m.group("src") for m, _, _ in entries):
        return None
    b = Builder()
    if preamble.strip():
        b.log(preamble, mergeable=False)
    task: str | None = None
    asked = False
    agent = "Manus"
    prepared: list[str] = []
    calls: list[_Call] = []  # issued and not yet answered, oldest first
    for m, a, z in entries:
        header, body = m.group(0), text[a:z]
        asked = asked or bool(m.group("prompt"))  # the question, and no typed answer logged
        if m.group("ask"):
            line, _, rest = body.partition("\n")
            b.add(StepKind.MESSAGE, line, header=header, agent="user", role="user")
            if rest.strip():
                b.log(rest, mergeable=False)
            task = task or (line.strip() or None)
            asked = True
            continue
        if m.group("done"):
            b.add(
                StepKind.MESSAGE,
                body,
                header=header,
                agent="PlanningFlow",
                role="assistant",
                metadata={"plan_completed": True},
            )
            continue
        if m.group("std_level"):
            level = m.group("std_level")
            b.log(header + body, mergeable=not is_noisy_level(level), metadata={"level": level})
            continue
        level, src, ts = m.group("level"), m.group("src"), m.group("ts")
        meta: dict[str, Any] = {"level": level, "source": src}
        common: dict[str, Any] = {"timestamp": ts, "metadata": meta}
        if (step := _STEP.match(body)) is not None:
            meta.update(turn=int(step.group("k")), max_turns=int(step.group("n")))
            b.add(StepKind.SYSTEM, body, header=header, role="system", **common)
        elif (th := _THOUGHTS.match(body)) is not None:
            agent = th.group("agent").strip()
            rest = body[th.end() :]
            if rest.strip():
                b.add(
                    StepKind.MESSAGE,
                    rest,
                    header=header + body[: th.end()],
                    agent=agent,
                    role="assistant",
                    **common,
                )
            else:  # an empty thought: the agent went straight to its tools
                b.log(header + body, **common)
        elif (sel := _SELECTED.match(body)) is not None:
            agent = sel.group("agent").strip()
            b.log(header + body, **common)
        elif (prep := _PREPARED.match(body)) is not None:
            prepared = _names(prep.group("names"))
            b.log(header + body, **common)
        elif (args := _ARGS.match(body)) is not None:
            raw = body[args.end() :]
            cid = b.new_call_id()
            meta["call_id"] = cid
            piece = b.add(
                StepKind.TOOL_CALL,
                raw,
                header=header + body[: args.end()],
                agent=agent,
                role="assistant",
                tool_name=prepared[0] if prepared else None,
                tool_args=_json_or_text(raw.strip()),
                **common,
            )
            calls.append(_Call(cid, piece))
        elif (act := _ACTIVATING.match(body)) is not None:
            name = act.group("name")
            call = next(
                (c for c in calls if not c.activated and c.piece.tool_name in (name, None)), None
            )
            if call is None:
                cid = b.new_call_id()
                meta["call_id"] = cid
                piece = b.add(
                    StepKind.TOOL_CALL,
                    body,
                    header=header,
                    agent=agent,
                    role="assistant",
                    tool_name=name,
                    **common,
                )
                calls.append(_Call(cid, piece, activated=True))
            else:
                call.activated = True
                call.piece.tool_name = call.piece.tool_name or name
                meta["activates"] = call.cid
                b.log(header + body, mergeable=False, **common)
        elif (res := _RESULT.match(body)) is not None:
            name = res.group("name")
            call = next((c for c in calls if c.piece.tool_name == name), None)
            if call is not None:
                calls.remove(call)
                meta["call_id"] = call.cid
            if res.group("err"):
                meta["error"] = True
            b.add(
                StepKind.TOOL_RESULT,
                body[res.end() :],
                header=header + body[: res.end()],
                role="tool",
                tool_name=name,
                **common,
            )
        elif _PLAN.match(body) or src.startswith("app.flow.planning:_create_initial_plan"):
            kind = StepKind.MESSAGE if _PLAN.match(body) else StepKind.LOG
            if kind is StepKind.LOG:
                b.log(header + body, **common)
            else:
                b.add(kind, body, header=header, agent="PlanningFlow", role="assistant", **common)
        elif src.startswith("app.flow."):
            b.add(
                StepKind.SYSTEM, body, header=header, agent="PlanningFlow", role="system", **common
            )
        elif src.startswith("__main__:") and "\n" in body.strip():
            # The flow's final report: every step's result, printed once the run ends.
            meta["final_output"] = True
            b.add(StepKind.SYSTEM, body, header=header, role="system", **common)
        else:
            b.log(header + body, mergeable=not is_noisy_level(level), **common)
    # OpenManus reads the prompt from stdin: the log shows the question, not what was typed.
    missing = {"task_missing": "the log asks 'Enter your prompt:' but does not record the answer"}
    return Parsed(steps=b.build(), task=task, metadata=missing if asked and task is None else {})


def _names(listing: str) -> list[str]:
    try:
        value = ast.literal_eval(listing)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
