"""Machinery every framework segmenter shares: entry splitting, step building, round trips.

A segmenter finds where log *entries* start (one compiled, line-anchored regex), turns each
entry into one or more :class:`Piece` objects (header text it strips, the content it keeps,
agent/kind/tool fields) and lets :class:`Builder` number them into :class:`~mast.traces.model.Step`
objects. Stripped header (and footer) text goes to ``step.metadata["header"]`` /
``["footer"]`` so :func:`reassemble` can rebuild the source up to whitespace.

>>> import re
>>> text = "noise\\n# A: hi\\nthere\\n# B: bye\\n"
>>> pre, entries = split_entries(text, re.compile(r"^# (\\w+): ", re.M))
>>> pre, [(m.group(1), text[a:b]) for m, a, b in entries]
('noise\\n', [('A', 'hi\\nthere\\n'), ('B', 'bye\\n')])
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast.traces.model import Step, StepKind

# --- splitting ---------------------------------------------------------------------------


def split_entries(
    text: str, start: re.Pattern[str]
) -> tuple[str, list[tuple[re.Match[str], int, int]]]:
    """Cut ``text`` where ``start`` matches (a ``re.M`` pattern anchored with ``^``).

    Returns the text before the first match and, per match, ``(match, body_start, body_end)``:
    the body runs from the end of the match to the start of the next one, so every character
    belongs to exactly one preamble, header or body. One pass of ``finditer``: linear time.
    """
    matches = list(start.finditer(text))
    if not matches:
        return text, []
    entries = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        entries.append((m, m.end(), end))
    return text[: matches[0].start()], entries


_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


def trim(text: str) -> str:
    """Drop leading blank lines and trailing whitespace; keep the first line's indentation."""
    if text[:1] in (" ", "\t", "\r", "\n"):  # where a blank line can start (most do not)
        text = _LEADING_BLANK_LINES.sub("", text)
    return text.rstrip()


def dedent(text: str) -> str:
    """Trim, then remove the indentation common to all lines (AppWorld, YAML-ish dumps)."""
    return textwrap.dedent(_LEADING_BLANK_LINES.sub("", text)).rstrip()


_SEPARATOR_TAIL = re.compile(r"\n[ \t]*-{20,}[ \t]*\s*\Z")


def split_separator(body: str) -> tuple[str, str]:
    """Split a trailing dashed separator line (``-----…``) off ``body``: ``(body, footer)``."""
    m = _SEPARATOR_TAIL.search(body)
    if m is None:
        return body, ""
    return body[: m.start()], body[m.start() :]


# --- building steps ----------------------------------------------------------------------


@dataclass
class Piece:
    """One future step, still mutable so later entries can complete it (e.g. a tool name)."""

    kind: StepKind
    content: str
    header: str = ""
    footer: str = ""
    agent: str | None = None
    role: str | None = None
    tool_name: str | None = None
    tool_args: Any = None
    timestamp: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Consecutive mergeable pieces (log noise) become one step, headers kept inline.
    mergeable: bool = False


@dataclass
class Parsed:
    """What a framework segmenter returns: its steps, the task if the log states it, extras."""

    steps: list[Step]
    task: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class Builder:
    """Collects pieces in source order and numbers them into steps.

    >>> b = Builder()
    >>> _ = b.log("GET /a 200"); _ = b.log("GET /b 200")
    >>> _ = b.add(StepKind.MESSAGE, "\\nhi \\n", header="A:", agent="A")
    >>> [(s.id, s.kind.value, s.content) for s in b.build()]
    [('s1', 'log', 'GET /a 200\\nGET /b 200'), ('s2', 'message', 'hi')]
    """

    def __init__(self) -> None:
        self.pieces: list[Piece] = []
        self._calls = 0

    def add(self, kind: StepKind, content: str, **fields: Any) -> Piece:
        piece = Piece(kind=kind, content=content, **fields)
        self.pieces.append(piece)
        return piece

    def log(self, raw: str, *, mergeable: bool = True, **fields: Any) -> Piece:
        """Log noise, kept verbatim (headers included) as a ``log`` step."""
        return self.add(StepKind.LOG, raw, mergeable=mergeable, **fields)

    def new_call_id(self) -> str:
        """A call id unique within this trace, deterministic for the same input."""
        self._calls += 1
        return f"call_{self._calls}"

    def build(self) -> list[Step]:
        steps: list[Step] = []
        for piece in _merge(self.pieces):
            content = trim(piece.content)
            header, footer = piece.header.strip(), piece.footer.strip()
            if not (content or header or footer):
                continue  # whitespace only: nothing is lost by leaving it out
            if not content:  # a marker line alone ("Entering … loop"): it is the content
                content, header = header, ""
            metadata = dict(piece.metadata)
            if header:
                metadata["header"] = header
            if footer:
                metadata["footer"] = footer
            steps.append(
                Step.make(
                    len(steps),
                    content,
                    agent=piece.agent,
                    role=piece.role,
                    kind=piece.kind,
                    tool_name=piece.tool_name,
                    tool_args=piece.tool_args,
                    timestamp=piece.timestamp,
                    metadata=metadata,
                )
            )
        return steps


def _merge(pieces: Sequence[Piece]) -> Iterable[Piece]:
    run: list[Piece] = []
    for piece in pieces:
        if piece.mergeable and piece.kind is StepKind.LOG:
            run.append(piece)
            continue
        if run:
            yield _merged(run)
            run = []
        yield piece
    if run:
        yield _merged(run)


def _merged(run: list[Piece]) -> Piece:
    if len(run) == 1:
        return run[0]
    first = run[0]
    # Each part keeps its own header inline, so the merged text is still the source text.
    text = "\n".join(
        "\n".join(x for x in (p.header.strip(), trim(p.content), p.footer.strip()) if x)
        for p in run
    )
    return Piece(
        kind=StepKind.LOG,
        content=text,
        agent=first.agent,
        role=first.role,
        timestamp=first.timestamp,
        metadata={**first.metadata, "entries": len(run)},
    )


# --- round trip ---------------------------------------------------------------------------


def reassemble(steps: Iterable[Step]) -> str:
    """The source text again: each step's header, content and footer, in order.

    Equal to the segmented text up to whitespace (``squash(reassemble(s)) == squash(text)``).
    """
    parts: list[str] = []
    for s in steps:
        header = s.metadata.get("header")
        if header:
            parts.append(header)
        parts.append(s.content)
        footer = s.metadata.get("footer")
        if footer:
            parts.append(footer)
    return "\n".join(parts)


_WS = re.compile(r"\s+")


def squash(text: str) -> str:
    """``text`` without any whitespace: what "equal up to whitespace" compares."""
    return _WS.sub("", text)


# --- small shared parsers ------------------------------------------------------------------

# loguru's default format, used by OpenManus and MetaGPT:
# "2025-03-31 20:33:26.397 | WARNING  | __main__:run_flow:25 - Processing your request..."
LOGURU = (
    r"(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?) \| (?P<level>[A-Z]+) *\| "
    r"(?P<src>[\w.<>-]+:[\w<>-]+:\d+) - "
)
# Python's stdlib logging with a level column: "INFO     [browser_use] BrowserUse logging …"
STDLOG = r"(?P<std_level>DEBUG|INFO|WARNING|ERROR|CRITICAL) +\[(?P<std_name>[\w.-]+)\] "

_NOISY_LEVELS = {"WARNING", "ERROR", "CRITICAL"}


def is_noisy_level(level: str | None) -> bool:
    """Warnings and errors stay separate steps instead of merging into surrounding noise."""
    return level is not None and level.upper() in _NOISY_LEVELS
