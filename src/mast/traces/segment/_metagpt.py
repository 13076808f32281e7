"""MetaGPT logs in either of the two shapes MAD holds (a log may even mix them).

(a) The agent communication log: ``=== MetaGPT Agent Communication Log - Started at … ===``,
then ``[ts] FROM: <sender> TO: <recipients>`` / ``ACTION: …`` / ``CONTENT:`` blocks and
``[ts] NEW MESSAGES:`` blocks of ``<Role>: <text>`` messages, each closed by a dashed line.

(b) loguru lines, ``… | INFO | metagpt.roles.role:_act:NNN - Alice(SimpleCoder): to do X``,
where the LLM's streamed answer follows as unprefixed lines; the agent is the role's
profile (``SimpleCoder``), as in shape (a), and its given name goes to metadata.

>>> log = ("[2025-03-27 01:21:11] NEW MESSAGES:\\n\\nSimpleCoder: \\nreturn 0\\n"
...        + "-" * 80 + "\\n")
>>> [(s.agent, s.content, s.metadata["footer"][:3]) for s in segment_text(log).steps]
[('SimpleCoder', 'return 0', '---')]
"""

from __future__ import annotations

import re
from typing import Any

from mast.traces.model import StepKind
from mast.traces.segment._common import (
    LOGURU,
    Builder,
    Parsed,
    is_noisy_level,
    split_entries,
    split_separator,
)

_ENTRY = re.compile(
    r"^(?:\[(?P<bts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\] "
    r"(?:FROM: (?P<sender>[^\n]*?) TO: (?P<to>[^\n]*)|(?P<news>NEW MESSAGES:))"
    r"|(?P<banner>=== [^\n]* ===)"
    r"|" + LOGURU + r")[ \t]*",
    re.M,
)
_FROM_HEAD = re.compile(r"[ \t]*\n?ACTION: (?P<action>[^\n]*)(?:\nCONTENT:[ \t]*)?")
_SPEAKER_NAMES = re.compile(r"NEW MESSAGES:[ \t]*\n\s*(?P<name>[A-Za-z_][\w.-]*):", re.M)
_ACT = re.compile(r"(?P<name>[^\s()]+)\((?P<profile>[^)]+)\): to do (?P<action>[^\n]*)")
_USERS = frozenset({"human", "user"})


def segment_text(text: str) -> Parsed | None:
    preamble, entries = split_entries(text, _ENTRY)
    relevant = [e for e in entries if not e[0].group("src") or _is_metagpt(e[0], text)]
    if not relevant:
        return None
    names = {m.group("name") for m in _SPEAKER_NAMES.finditer(text)}
    names.update(m.group("sender").strip() for m, _, _ in entries if m.group("sender"))
    speaker = (
        re.compile(r"^(?P<name>" + "|".join(map(re.escape, sorted(names))) + r"):[ \t]*", re.M)
        if names
        else None
    )
    b = Builder()
    if preamble.strip():
        b.log(preamble, mergeable=False)
    task: str | None = None
    for m, a, z in entries:
        header, body = m.group(0), text[a:z]
        if m.group("banner"):
            banner = m.group("banner")
            if "Communication Log" in banner:
                b.add(StepKind.SYSTEM, banner, role="system")
                if body.strip():
                    b.log(body)
            else:
                b.log(header + body)
        elif m.group("sender") is not None:
            sender = m.group("sender").strip()
            head = _FROM_HEAD.match(body)
            start = head.end() if head else 0
            content, footer = split_separator(body[start:])
            meta: dict[str, Any] = {"recipients": m.group("to").strip()}
            if head:
                meta["action"] = head.group("action").strip()
            b.add(
                StepKind.MESSAGE,
                content,
                header=header + body[:start],
                footer=footer,
                agent=sender,
                role="user" if sender.lower() in _USERS else "assistant",
                timestamp=m.group("bts"),
                metadata=meta,
            )
            if task is None and sender.lower() in _USERS and content.strip():
                task = content.strip()
        elif m.group("news"):
            _new_messages(b, header, body, m.group("bts"), speaker)
        else:
            _loguru(b, m, header, body, text)
    return Parsed(steps=b.build(), task=task)


def _is_metagpt(m: re.Match[str], text: str) -> bool:
    """A loguru line from MetaGPT: its package, or a role's ``X(Profile): to do`` line."""
    return m.group("src").startswith("metagpt") or _act(m, text) is not None


def _act(m: re.Match[str], text: str) -> re.Match[str] | None:
    # Role._act logs "<name>(<profile>): to do <action>"; scripts that subclass Role log it
    # from their own module ("__main__:_act:85"), so the function name is what counts.
    if m.group("src").split(":")[1] != "_act":
        return None
    return _ACT.match(text, m.end())


def _new_messages(
    b: Builder, header: str, body: str, ts: str, speaker: re.Pattern[str] | None
) -> None:
    body, footer = split_separator(body)
    starts = list(speaker.finditer(body)) if speaker else []
    if not starts:
        b.add(StepKind.MESSAGE, body, header=header, footer=footer, timestamp=ts)
        return
    lead = body[: starts[0].start()]
    for i, s in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        name = s.group("name")
        b.add(
            StepKind.MESSAGE,
            body[s.end() : end],
            header=(header + lead if i == 0 else "") + s.group(0),
            footer=footer if i == len(starts) - 1 else "",
            agent=name,
            role="user" if name.lower() in _USERS else "assistant",
            timestamp=ts,
        )


def _loguru(b: Builder, m: re.Match[str], header: str, body: str, text: str) -> None:
    level, ts = m.group("level"), m.group("ts")
    meta = {"level": level, "source": m.group("src")}
    act = _act(m, text)
    if act:
        b.add(
            StepKind.MESSAGE,
            body,
            header=header,
            agent=act.group("profile"),
            role="assistant",
            timestamp=ts,
            metadata={**meta, "name": act.group("name"), "action": act.group("action")},
        )
    else:
        b.log(header + body, mergeable=not is_noisy_level(level), timestamp=ts, metadata=meta)
