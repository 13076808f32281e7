"""Compact, lossless rendering of trace steps for the judge prompt.

Agent logs repeat themselves: frameworks re-send role prompts every phase, print the same log
line dozens of times and put tool-call code both in the call's arguments and in the message.
:func:`compact_steps` shows each piece of text once and replaces a repeat by a reference:

- ``[same content as s5]``: the whole step repeats step ``s5``;
- ``[same content as s5 except line 1:]`` followed by that line: the same, apart from a
  few lines that differ from s5's only in ids, numbers or timestamps (shown in full);
- ``[lines 3-14 of s5, repeated]``: a run of lines that step ``s5`` shows, or that the
  same step shows above the reference (an unsegmented log printing a block again);
- ``[previous line repeated 95 more times]``: identical consecutive lines;
- a tool argument that occurs verbatim in the step's content becomes
  ``"[= content lines 4-17]"``.

Nothing is lost: every reference names text that the same rendering shows, and
:func:`expand_steps` rebuilds each step's exact text from the rendering alone. The renderer
checks that round trip for every step it compacts and keeps a step verbatim when the check
fails. Step ids never change, so evidence may cite any step.

>>> from mast.traces.model import Step
>>> line = "[INFO] server did not start"
>>> steps = [Step.make(0, "\\n".join([line] * 5)), Step.make(1, "\\n".join([line] * 5))]
>>> [s.text for s in compact_steps(steps)]
['[INFO] server did not start\\n[previous line repeated 4 more times]', '[same content as s1]']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mast.traces.model import Step

__all__ = ["RenderedStep", "compact_steps", "expand_steps", "plain_body"]

# A run of repeated lines is replaced only when it saves this many characters; shorter
# repeats cost less to show than to explain.
MIN_RUN_CHARS = 160
# Long lines (prompt tables, serialized state) often embed text shown earlier: a stretch of
# at least MIN_SPAN_CHARS inside a line of at least MIN_SPLIT_LINE characters is referenced.
MIN_SPLIT_LINE = 300
MIN_SPAN_CHARS = 150
_GRAM = 48
_GRAM_STRIDE = 8
# Lines shorter than this never start a reference (blank lines, "---", "```" are everywhere).
MIN_ANCHOR_CHARS = 12
# Consecutive identical lines collapse from this count on.
MIN_LINE_REPEATS = 3
# Whole-step "same except ..." references list at most this many changed values.
MAX_CHANGES = 4
MIN_NEAR_DUP_CHARS = 200
# How many earlier places of one line are tried as the start of a repeated run.
_MAX_CANDIDATES = 24

_VOLATILE = re.compile(
    # The lookahead (every alternative starts with a digit or hex letter) changes no match; it lets
    # the regex engine skip other characters fast (about 3x faster on trace text).
    r"(?=[\da-fA-F])(?:"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?Z?"  # ISO-ish timestamps
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"  # clock times
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"  # UUIDs
    r"|\b[0-9a-fA-F]{12,}\b"  # hex ids
    r"|\d+)"
)
_SAME = re.compile(r"^\[same content as (s\d+)\]$")
_SAME_EXCEPT = re.compile(r"^\[same content as (s\d+) except lines? ([\d, ]+):\]$")
_LINES = re.compile(r"^\[lines (\d+)-(\d+) of (s\d+), repeated\]$")
_SPAN = re.compile(r"\[…same text as (s\d+) line (\d+), characters (\d+)-(\d+)…\]")
_REPEAT = re.compile(r"^\[previous line repeated (\d+) more times?\]$")
_ARG_REF = re.compile(r"^\[= content lines (\d+)-(\d+)\]$")


@dataclass(frozen=True)
class RenderedStep:
    """A step as the prompt shows it: its id, its (possibly compacted) body and arguments."""

    id: str
    body: str
    tool_args: str | None = None
    """The step's tool arguments as JSON (with references), or ``None``."""
    compacted: bool = False

    @property
    def text(self) -> str:
        """What the prompt shows under the step's header."""
        return _join(self.tool_args, self.body) or "(no content)"


def plain_body(step: Step) -> str:
    """A step's text as the prompt shows it without compaction: arguments, then content."""
    lines: list[str] = []
    if step.tool_args is not None:
        lines.append(f"arguments: {_dump(step.tool_args)}")
    if step.content:
        lines.append(step.content)
    return "\n".join(lines) or "(no content)"


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _arguments(step: Step, content_lines: list[str]) -> tuple[str, bool]:
    """Tool arguments as JSON, with string values that the content repeats as references."""
    args = step.tool_args
    if not isinstance(args, Mapping):
        return _dump(args), False
    changed = False
    shown: dict[str, Any] = {}
    for key, value in args.items():
        span = _line_span(value, content_lines) if isinstance(value, str) else None
        if span is not None and len(value) >= MIN_RUN_CHARS // 2:
            shown[str(key)] = f"[= content lines {span[0]}-{span[1]}]"
            changed = True
        else:
            shown[str(key)] = value
    return _dump(shown), changed


def _line_span(value: str, lines: list[str]) -> tuple[int, int] | None:
    """1-based first/last line of ``lines`` whose join equals ``value`` exactly, if any."""
    wanted = value.split("\n")
    n = len(wanted)
    for start in range(len(lines) - n + 1):
        if lines[start : start + n] == wanted:
            return start + 1, start + n
    return None


class _Index:
    """Where each line is shown verbatim so far: line -> [(step id, 1-based line number)]."""

    def __init__(self) -> None:
        self.places: dict[str, list[tuple[str, int]]] = {}
        self.lines: dict[str, list[str]] = {}
        # _GRAM-character pieces of visible long lines, every _GRAM_STRIDE characters:
        # piece -> (step id, 1-based line number, 0-based offset)
        self.grams: dict[str, tuple[str, int, int]] = {}

    def add(self, step_id: str, original: list[str], shown: list[bool]) -> None:
        self.lines[step_id] = original
        for number, (line, visible) in enumerate(zip(original, shown, strict=True), 1):
            if not visible:
                continue
            if len(line) >= MIN_ANCHOR_CHARS:
                places = self.places.setdefault(line, [])
                if len(places) < _MAX_CANDIDATES:
                    places.append((step_id, number))
            if len(line) >= MIN_SPAN_CHARS:
                for offset in range(0, len(line) - _GRAM + 1, _GRAM_STRIDE):
                    self.grams.setdefault(line[offset : offset + _GRAM], (step_id, number, offset))

    def spans(self, line: str) -> str:
        """``line`` with stretches shown earlier replaced by inline references."""
        out: list[str] = []
        literal = 0
        p = 0
        while p + _GRAM <= len(line):
            hit = self.grams.get(line[p : p + _GRAM])
            if hit is None:
                p += 1
                continue
            step_id, number, offset = hit
            source = self.lines[step_id][number - 1]
            n = _GRAM
            while (
                p + n < len(line) and offset + n < len(source) and line[p + n] == source[offset + n]
            ):
                n += 1
            if n < MIN_SPAN_CHARS:
                p += 1
                continue
            out.append(line[literal:p])
            out.append(
                f"[…same text as {step_id} line {number}, characters {offset + 1}-{offset + n}…]"
            )
            p += n
            literal = p
        out.append(line[literal:])
        return "".join(out)


def _longest_run(lines: list[str], at: int, index: _Index) -> tuple[str, int, int]:
    """The longest run of ``lines[at:]`` found verbatim in one earlier step: (id, start, n)."""
    best = ("", 0, 0)
    for step_id, number in index.places.get(lines[at], ()):
        earlier = index.lines[step_id]
        n = 0
        while (
            at + n < len(lines)
            and number - 1 + n < len(earlier)
            and lines[at + n] == earlier[number - 1 + n]
        ):
            n += 1
        if n > best[2]:
            best = (step_id, number, n)
    return best


def _own_run(
    lines: list[str], at: int, seen: Mapping[str, list[int]], visible: list[bool]
) -> tuple[int, int]:
    """The longest run of ``lines[at:]`` that repeats lines above it in the same step,
    starting at a visible one (as :func:`_longest_run` does across steps) and ending before
    ``at``, so that a reference never covers itself: (start, n)."""
    best = (0, 0)
    for number in seen.get(lines[at], ()):
        if not visible[number - 1]:
            continue
        n = 0
        while (
            at + n < len(lines) and number - 1 + n < at and lines[at + n] == lines[number - 1 + n]
        ):
            n += 1
        if n > best[1]:
            best = (number, n)
    return best


def _compact_lines(
    lines: list[str], index: _Index, step_id: str = ""
) -> tuple[list[str], list[bool]]:
    """Body lines with repeated runs as references, and which original lines stay visible.

    A run may repeat an earlier step or, in a long step (an unsegmented log), visible lines
    above it in the same step."""
    out: list[str] = []
    visible = [True] * len(lines)
    seen: dict[str, list[int]] = {}  # visible line of this step -> 1-based line numbers
    i = 0
    while i < len(lines):
        line = lines[i]
        if len(line) >= MIN_ANCHOR_CHARS:
            source, start, n = _longest_run(lines, i, index)
            own_start, own_n = _own_run(lines, i, seen, visible) if step_id else (0, 0)
            if own_n > n:
                source, start, n = step_id, own_start, own_n
            if n and sum(len(x) + 1 for x in lines[i : i + n]) >= MIN_RUN_CHARS:
                out.append(f"[lines {start}-{start + n - 1} of {source}, repeated]")
                for k in range(i, i + n):
                    visible[k] = False
                i += n
                continue
            places = seen.setdefault(line, [])
            if len(places) < _MAX_CANDIDATES:
                places.append(i + 1)
        same = 1
        while i + same < len(lines) and lines[i + same] == line:
            same += 1
        if len(line) >= MIN_SPLIT_LINE and index.grams:
            spanned = index.spans(line)
            if spanned != line:
                visible[i] = False
            out.append(spanned)
        else:
            out.append(line)
        if same >= MIN_LINE_REPEATS:
            more = same - 1
            out.append(f"[previous line repeated {more} more time{'s' if more > 1 else ''}]")
            for k in range(i + 1, i + same):
                visible[k] = False
            i += same
        else:
            i += 1
    return out, visible


def _skeleton(text: str) -> str:
    return _VOLATILE.sub("0", text)


def _near_duplicate(skeleton: str | None, earlier: Mapping[str, str]) -> str | None:
    """The step whose text differs from this one's only in ids, numbers or timestamps (for
    ``[same content as sN except lines 1, 4:]``), given this text's skeleton (volatile
    values replaced; ``None`` for a text too short to bother).

    ``earlier`` maps the skeleton of each step shown whole to the step's id, so the lookup
    costs one dictionary access.
    """
    return None if skeleton is None else earlier.get(skeleton)


def _changed_lines(step_id: str, text: str, other: str) -> str | None:
    lines, theirs = text.split("\n"), other.split("\n")
    if len(lines) != len(theirs):
        return None
    changed = [i for i, (a, b) in enumerate(zip(theirs, lines, strict=True)) if a != b]
    if not 0 < len(changed) <= MAX_CHANGES:
        return None
    numbers = ", ".join(str(i + 1) for i in changed)
    plural = "s" if len(changed) > 1 else ""
    head = f"[same content as {step_id} except line{plural} {numbers}:]"
    return "\n".join([head, *(lines[i] for i in changed)])


def compact_steps(steps: Sequence[Step]) -> list[RenderedStep]:
    """Render ``steps`` with repeats replaced by references (see the module docstring).

    Only steps in ``steps`` are referenced, so a window of a long trace refers to nothing
    outside the window. Each compacted step is checked to expand back to its exact text and
    is shown verbatim otherwise.
    """
    index = _Index()
    whole: dict[str, str] = {}  # original text -> id of the first step shown whole
    skeletons: dict[str, str] = {}  # skeleton of a step shown whole -> its id
    rendered: list[RenderedStep] = []
    originals: dict[str, str] = {}
    for step in steps:
        content = step.content or ""
        lines = content.split("\n")
        plain_args = None if step.tool_args is None else _dump(step.tool_args)
        args_text, _ = (None, False) if step.tool_args is None else _arguments(step, lines)
        options: list[tuple[str, list[bool]]] = []
        if content and content in whole:
            options.append((f"[same content as {whole[content]}]", [False] * len(lines)))
        skeleton = _skeleton(content) if len(content) >= MIN_NEAR_DUP_CHARS else None
        near_id = _near_duplicate(skeleton, skeletons)
        near = None if near_id is None else _changed_lines(near_id, content, originals[near_id])
        if near is not None:
            options.append((near, [False] * len(lines)))
        compact_lines, visible = _compact_lines(lines, index, step.id)
        options.append(("\n".join(compact_lines), visible))
        chosen = RenderedStep(step.id, content, plain_args)
        shown = [True] * len(lines)
        for body, body_visible in options:
            candidate = RenderedStep(step.id, body, args_text, compacted=True)
            if body == content and args_text == plain_args:
                break
            if _expands_to(originals, candidate, plain_args, content):
                chosen, shown = candidate, body_visible
                break
        index.add(step.id, lines, shown)
        if content and content not in whole:
            # Any step can stand for its whole text, however it is shown itself.
            whole[content] = step.id
        if skeleton is not None and all(shown):
            # "except line N" needs a step whose lines are all shown, to count them.
            skeletons.setdefault(skeleton, step.id)
        rendered.append(chosen)
        originals[step.id] = content
    return rendered


def _expands_to(
    originals: Mapping[str, str], candidate: RenderedStep, args: str | None, content: str
) -> bool:
    # The steps before are known to expand to their originals, so resolve against those.
    try:
        text = _expand_body(candidate.body, originals, candidate.id)
        shown_args = (
            None if candidate.tool_args is None else _expand_args(candidate.tool_args, text)
        )
    except (KeyError, ValueError, IndexError):
        return False
    return _join(shown_args, text) == _join(args, content)


def _join(args: str | None, body: str) -> str:
    if args is None:
        return body
    return f"arguments: {args}\n{body}" if body else f"arguments: {args}"


def expand_steps(rendered: Sequence[RenderedStep]) -> dict[str, str]:
    """Rebuild every step's text (``arguments: <json>`` line, then content) from a rendering.

    References are resolved against the steps before them, so this proves that a rendering
    from :func:`compact_steps` lost nothing:

    >>> from mast.traces.model import Step
    >>> steps = [Step.make(i, "x" * 300) for i in range(3)]
    >>> expand_steps(compact_steps(steps)) == {s.id: s.content for s in steps}
    True
    """
    content: dict[str, str] = {}
    result: dict[str, str] = {}
    for step in rendered:
        # A step shown verbatim may contain text that looks like a reference: leave it be.
        text = _expand_body(step.body, content, step.id) if step.compacted else step.body
        content[step.id] = text
        args = step.tool_args
        if args is not None and step.compacted:
            args = _expand_args(args, text)
        result[step.id] = _join(args, text)
    return result


def _expand_body(body: str, content: Mapping[str, str], own: str = "") -> str:
    if (m := _SAME.match(body)) is not None:
        return content[m.group(1)]
    head, _, rest = body.partition("\n")
    if (m := _SAME_EXCEPT.match(head)) is not None:
        lines = content[m.group(1)].split("\n")
        numbers = [int(n) for n in m.group(2).split(", ")]
        replacements = rest.split("\n")
        if len(replacements) != len(numbers):
            raise ValueError("changed lines do not match the list")
        for number, line in zip(numbers, replacements, strict=True):
            lines[number - 1] = line
        return "\n".join(lines)
    out: list[str] = []
    for line in body.split("\n"):
        if (m := _LINES.match(line)) is not None:
            start, end, step_id = int(m.group(1)), int(m.group(2)), m.group(3)
            # A reference to the step itself names lines above it, already rebuilt.
            source = out if step_id == own else content[step_id].split("\n")
            if end > len(source):
                raise IndexError(f"{step_id} has no line {end}")
            out.extend(source[start - 1 : end])
        elif (m := _REPEAT.match(line)) is not None and out:
            out.extend([out[-1]] * int(m.group(1)))
        else:
            out.append(_SPAN.sub(lambda s: _span_text(s, content), line))
    return "\n".join(out)


def _span_text(match: re.Match[str], content: Mapping[str, str]) -> str:
    step_id, number, first, last = match.group(1), *map(int, match.group(2, 3, 4))
    line = content[step_id].split("\n")[number - 1]
    if last > len(line):
        raise IndexError(f"{step_id} line {number} has no character {last}")
    return line[first - 1 : last]


def _expand_args(args: str, content: str) -> str:
    data = json.loads(args)
    if isinstance(data, dict):
        lines = content.split("\n")
        for key, value in data.items():
            if isinstance(value, str) and (m := _ARG_REF.match(value)) is not None:
                data[key] = "\n".join(lines[int(m.group(1)) - 1 : int(m.group(2))])
    return _dump(data)
