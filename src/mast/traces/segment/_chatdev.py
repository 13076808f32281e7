"""ChatDev logs: ``[YYYY-DD-MM HH:MM:SS INFO] <Role>: **<A><-><B> on : <Phase>, turn k**``.

Every entry starts with a bracketed timestamp (ChatDev writes day before month). A turn's
body opens with the *other* agent's system prompt in square brackets, which becomes its own
``system`` step so the message step holds only what the speaker said. Chatting parameter
tables, phase conclusions and code updates are ``system`` steps; ``[Test Reports]`` (the
output of running the generated program) is a ``tool_result``; HTTP request lines, token
usage and the ``flask app.py did not start`` lines are ``log`` steps.

>>> log = ("[2025-31-03 20:41:17 INFO] Programmer: **Programmer<->Code Reviewer on : "
...        "CodeReviewModification, turn 0**\\n\\n[You are a reviewer.]\\n\\nFixed the bug.\\n")
>>> [(s.agent, s.kind.value, s.content) for s in segment_text(log).steps]
[(None, 'system', 'You are a reviewer.'), ('Programmer', 'message', 'Fixed the bug.')]
"""

from __future__ import annotations

import re
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import Builder, Parsed, split_entries

_ENTRY = re.compile(
    r"^\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?P<level>[A-Z]+)\] (?P<rest>[^\n]*)$", re.M
)
_TURN = re.compile(
    r"(?P<speaker>[^:*\n]+?): \*\*(?P<a>[^*\n]+?)<->(?P<b>[^*\n]+?) on : (?P<phase>[^,*\n]+), "
    r"turn (?P<turn>\d+)\*\*"
)
_START_CHAT = re.compile(r"(?P<speaker>[^:*\n]+?): \*\*\[Start Chat\]\*\*")
_TAGGED = re.compile(r"(?:(?P<speaker>[^:*\n]+?): )?\*\*\[(?P<tag>[^\]\n]+)\]\*\*:?")
# The counterpart's system prompt that ChatDev prints in front of every utterance.
_SYSTEM_PROMPT = re.compile(r"\s*\[(?P<prompt>.*?)\]\n[ \t]*\n", re.S)
_TASK = re.compile(r"^\*\*task_prompt\*\*: *(?P<task>[^\n]+)$", re.M)
_NOISE = ("HTTP Request:", "flask app.py did not start")
_LOG_TAGS = ("OpenAI_Usage_Info",)
_RESULT_TAGS = ("Test Reports",)


def _iso(ts: str) -> str | None:
    """ChatDev's ``%Y-%d-%m %H:%M:%S`` timestamp as ISO 8601."""
    date, time = ts.split(" ")
    year, day, month = date.split("-")
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
        return None
    return f"{year}-{month}-{day}T{time}"


def segment_text(text: str) -> Parsed | None:
    preamble, entries = split_entries(text, _ENTRY)
    if not entries:
        return None
    b = Builder()
    if preamble.strip():
        b.log(preamble, mergeable=False)
    task: str | None = None
    for m, a, z in entries:
        header, rest, body = m.group(0), m.group("rest"), text[a:z]
        ts = m.group("ts")
        common: dict[str, Any] = {"timestamp": ts, "metadata": {}}
        iso = _iso(ts)
        if iso:
            common["metadata"]["time_iso"] = iso
        if rest.startswith(_NOISE):
            b.log(header + body, **common)
            continue
        turn = _TURN.fullmatch(rest)
        start = None if turn else _START_CHAT.fullmatch(rest)
        if turn or start:
            speaker = (turn or start).group("speaker").strip()  # type: ignore[union-attr]
            meta = common["metadata"]
            if turn:
                a_role, b_role = turn.group("a").strip(), turn.group("b").strip()
                role = "assistant" if speaker == a_role else "user"
                other = b_role if speaker == a_role else a_role
                meta.update(phase=turn.group("phase").strip(), turn=int(turn.group("turn")))
                meta["recipient"] = other
            else:
                role, other = "user", None
                meta["start_chat"] = True
            prompt = _SYSTEM_PROMPT.match(body)
            if prompt:
                b.add(
                    StepKind.SYSTEM,
                    prompt.group("prompt"),
                    header=header + "\n[",
                    footer="]",
                    role="system",
                    timestamp=ts,
                    metadata={**meta, "part": "system_prompt", "prompt_of": other},
                )
                b.add(StepKind.MESSAGE, body[prompt.end() :], agent=speaker, role=role, **common)
            else:
                b.add(StepKind.MESSAGE, body, agent=speaker, role=role, header=header, **common)
            continue
        tagged = _TAGGED.match(rest)
        tag = tagged.group("tag").strip() if tagged else None
        if tag:
            common["metadata"]["tag"] = tag
        if tag and tag.startswith(_LOG_TAGS):
            b.log(header + body, **common)
        elif tag in _RESULT_TAGS:
            b.add(StepKind.TOOL_RESULT, body, header=header, role="tool", **common)
        else:
            if tag == "Preprocessing" and task is None:
                found = _TASK.search(body)
                task = found.group("task").strip() if found else None
            b.add(StepKind.SYSTEM, body, header=header, role="system", **common)
    return Parsed(steps=b.build(), task=task)
