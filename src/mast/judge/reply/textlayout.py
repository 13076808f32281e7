"""The layout of a plain-text judge answer: what surrounds and groups the per-mode answers.

:mod:`mast.judge.reply.textslot` reads the answer that belongs to one code; this module finds
the parts
of a reply that are *not* one code per item, so that their answers are bound to the right
codes and their text never leaks into a neighbour's item:

- **thinking blocks** (``<think>…</think>`` and friends) are dropped, and an
  ``<answer>…</answer>`` block or a "Final answer" section, when present, is the only part
  read for modes;
- **tables**: a row answers for the code in its code cell, read from the column whose header
  names the answer ("Present", "Detected", "Verdict", "Y/N", …) or else from the one cell
  that is nothing but an answer; a table whose header cells are codes is read by column;
- **code lists**: ``Present: 1.3, 2.5`` / ``Yes: 1.3`` / ``"absent": ["1.1", …]`` give every
  listed code the label's polarity;
- **sections**: bullets under a header such as ``**Detected:**`` or "The following failure
  modes are present:" take the header's polarity when the bullet has no answer of its own;
- **defaults**: "All other modes are absent", "None of the remaining modes apply" set the
  codes answered nowhere to False; "No failure modes were detected" / "Detected failure
  modes: none" does so for every code, unless some mode was answered yes (then it is a
  contradiction and is only reported);
- **task lines** such as ``Task completed: no``.

>>> layout = read_layout("Present: 1.3, 2.5\\nAll other modes are absent.", {"1.3", "2.5"})
>>> [(r.code, r.value) for r in layout.readings], layout.others
([('1.3', True), ('2.5', True)], False)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from mast.judge.reply.textdefaults import EXCEPT, NONE_AT_ALL, OTHERS, may_set_defaults
from mast.judge.reply.textslot import fold_case


class _Names(Protocol):
    """What this module needs of :class:`mast.judge.reply.textslot.NameIndex`."""

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None: ...


_CODE_AT = re.compile(r"[\"'\[(]?\s*(\d{1,2}\.\d{1,2})(?![\w]|\.\d)")
_CODE_ANY = re.compile(r"(?<![\w.])(\d{1,2}\.\d{1,2})(?![\w]|\.\d)")

# ---------------------------------------------------------------- thinking and answer blocks

_THINK_TAGS = r"think|thinking|reasoning|reflection|scratchpad|analysis_internal"
_THINK_BLOCK = re.compile(rf"<({_THINK_TAGS})>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(rf"<(?:{_THINK_TAGS})>", re.IGNORECASE)
_THINK_CLOSE = re.compile(rf"</(?:{_THINK_TAGS})\s*>", re.IGNORECASE)
_ANSWER_BLOCK = re.compile(
    r"<(answer|final_answer|final|verdict|output)>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL
)
_FINAL_MARKER = re.compile(
    r"^[ \t>#]*(?:final\s+(?:answer|verdict|labels?|classification|assessment|annotation)s?"
    r"|answers?|verdicts?)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def drop_thinking(text: str) -> tuple[str, int]:
    """``text`` without reasoning blocks, and how many were dropped.

    A closing tag without its opening (some servers strip the opening one) drops what comes
    before it; an opening tag without its closing drops the rest: tentative answers inside
    a model's reasoning are never read as its answer.
    """
    if "<" not in text:  # every tag starts with one (the echo search reads many such texts)
        return text, 0
    count = 0
    text, count = _THINK_BLOCK.subn("", text)
    close = _THINK_CLOSE.search(text)
    if close:
        text, count = text[close.end() :], count + 1
    opening = _THINK_OPEN.search(text)
    if opening:
        text, count = text[: opening.start()], count + 1
    return text, count


def answer_region(text: str) -> tuple[int, int, str | None]:
    """Where the per-mode answers are: an ``<answer>`` block, the part after a "Final
    answer" line that is followed by codes, or the whole text (with a note saying which)."""
    blocks = [m for m in _ANSWER_BLOCK.finditer(text) if _CODE_ANY.search(m.group(2))]
    if blocks:
        last = blocks[-1]
        return last.start(2), last.end(2), f"read the <{last.group(1).lower()}> block only"
    markers = [m for m in _FINAL_MARKER.finditer(text) if _CODE_ANY.search(text, m.end())]
    if markers:
        marker = markers[-1]
        before = _CODE_ANY.search(text, 0, marker.start())
        if before:
            return marker.end(), len(text), "read the final-answer section only"
    return 0, len(text), None


# ---------------------------------------------------------------- readings


@dataclass(frozen=True)
class LayoutReading:
    """One answer for one code found by the layout (a table cell, a list, a section)."""

    code: str
    value: bool | None
    source: str
    detail: str = ""
    rationale: str = ""


@dataclass
class Layout:
    """What the layout gave: readings, text spans already consumed, defaults, task line."""

    readings: list[LayoutReading] = field(default_factory=list)
    consumed: list[tuple[int, int]] = field(default_factory=list)  # table/list lines
    boundaries: list[int] = field(default_factory=list)  # line starts that end an item
    others: bool | None = None  # "all other modes are absent" -> False
    none_at_all: bool = False  # "no failure modes were detected"
    task_completed: bool | None = None
    task_found: bool = False
    problems: list[str] = field(default_factory=list)

    def is_consumed(self, pos: int) -> bool:
        return any(a <= pos < b for a, b in self.consumed)


# ---------------------------------------------------------------- polarity of labels

_NEGATIVE = re.compile(
    r"\b(?:absent|not\s+(?:present|detected|observed|found|identified|triggered|seen)"
    r"|undetected|unobserved|no|false|none|n)\b",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"\b(?:present|detected|observed|found|identified|triggered|exhibited|yes|true|y)\b",
    re.IGNORECASE,
)
_NOT_A_POLARITY = re.compile(
    r"\b(?:evidence|reason\w*|rationale|notes?|summary|task|confidence|explanation|why|comments?"
    r"|steps?|quotes?|related|see|similar|cf|unlike|example|analysis|context|legend)\b",
    re.IGNORECASE,
)


def label_polarity(label: str) -> bool | None:
    """True for "Detected failure modes", False for "Not present", None for other labels.

    >>> label_polarity("Failure modes present"), label_polarity("Absent"), label_polarity("Notes")
    (True, False, None)
    """
    words = label.strip(" \t\"'*_:[]{}()-").split()
    if not words or len(words) > 10 or _NOT_A_POLARITY.search(label):
        return None
    if _NEGATIVE.search(label):
        return False
    if _POSITIVE.search(label):
        return True
    return None


# ---------------------------------------------------------------- answer words in cells

_CELL_TRUE = {"yes", "y", "true", "present", "detected", "observed", "found", "1",
              "✅", "✔", "✔️", "✓", "☑", "☑️", "x"}  # fmt: skip
_CELL_FALSE = {"no", "n", "false", "absent", "not present", "not detected", "not observed",
               "not found", "0", "❌", "✗", "✘", "✖", "✖️", "-", "—", "–", "☐"}  # fmt: skip
_CELL_UNSURE = {"unclear", "unknown", "n/a", "na", "?", "uncertain", "unsure", "maybe",
                "partial", "partially", "cannot be determined", "not applicable", "☒"}  # fmt: skip
_CELL_WORD = re.compile(
    r"^\s*[\"'(\[]*\s*(?P<word>not\s+(?:present|detected|observed|found|applicable)"
    r"|cannot\s+be\s+determined|yes|no|true|false|present|absent|detected|observed|found"
    r"|unclear|unknown|uncertain|unsure|maybe|partial(?:ly)?|n/a|na|y|n|[01]"
    r"|✅|✔️?|✓|☑️?|❌|✗|✘|✖️?|☐|☒|\?)(?![\w/])",
    re.IGNORECASE,
)


def cell_answer(cell: str, *, whole: bool) -> tuple[bool | None, str] | None:
    """The answer a table cell holds: (value, word), or None when the cell is no answer.

    ``whole`` (a cell of a column that is not named as the answer) accepts only a cell
    that is an answer and nothing more but punctuation, a symbol or a short parenthesis.
    """
    match = _CELL_WORD.match(cell)
    if not match:
        return None
    word = " ".join(match.group("word").lower().split())
    rest = cell[match.end() :].strip()
    # "❌ No" / "Yes ✅": a symbol beside a word must say the same thing.
    extra = _CELL_WORD.match(rest) if rest and rest[0] not in "([" else None
    if extra:
        other = " ".join(extra.group("word").lower().split())
        if _cell_value(other) is not _cell_value(word) and other not in ("y", "n", "0", "1"):
            return None, f"{word} {other}"
        rest = rest[extra.end() :].strip()
    if word in ("-", "—", "–", "0", "1", "x") and rest:
        return None if whole else (None, word)
    if whole and rest and not re.fullmatch(r"[\s.!,;:]*(?:\([^)]{0,40}\))?[\s.!]*", rest):
        return None
    return _cell_value(word), word


def _cell_value(word: str) -> bool | None:
    if word in _CELL_TRUE:
        return True
    if word in _CELL_FALSE:
        return False
    return None


# ---------------------------------------------------------------- tables

_TABLE_LINE = re.compile(r"^[ \t]*\|.*\|?[ \t]*$", re.MULTILINE)
_SEPARATOR_CELL = re.compile(r"^\s*:?-{2,}:?\s*$")
_ANSWER_HEADER = re.compile(
    r"^\W*(?:present|detected|observed|found|answer|verdict|result|label|decision|status"
    r"|value|outcome|failure(?:\s+present)?|y\s*/\s*n|yes\s*/\s*no|present\s*\??\s*\(y(?:es)?/n(?:o)?\))\W*$",
    re.IGNORECASE,
)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _code_cell(cell: str, known: set[str]) -> str | None:
    match = _CODE_AT.match(cell.strip())
    if match and match.group(1) in known:
        return match.group(1)
    return None


def read_tables(text: str, known: set[str], names: _Names, layout: Layout) -> None:
    """Add the readings of every markdown table in ``text`` to ``layout``."""
    lines = list(re.finditer(r"[^\n]*\n?", text))
    i = 0
    while i < len(lines):
        if not _TABLE_LINE.fullmatch(lines[i].group(0).rstrip("\n")):
            i += 1
            continue
        j = i
        while j < len(lines) and _TABLE_LINE.fullmatch(lines[j].group(0).rstrip("\n")):
            j += 1
        rows = [_cells(m.group(0)) for m in lines[i:j]]
        if _read_table(rows, known, names, layout):
            layout.consumed.append((lines[i].start(), lines[j - 1].end()))
        i = j


def _read_table(rows: list[list[str]], known: set[str], names: _Names, layout: Layout) -> bool:
    header: list[str] | None = None
    body = rows
    if len(rows) >= 2 and all(_SEPARATOR_CELL.match(c) for c in rows[1] if c):
        header, body = rows[0], rows[2:]
    if header is not None:
        header_codes = [_code_cell(c, known) for c in header]
        if sum(1 for c in header_codes if c) >= 2:
            return _read_transposed(header_codes, body, layout)
    column = None
    if header is not None:
        named = [k for k, c in enumerate(header) if _ANSWER_HEADER.match(c)]
        column = named[0] if len(named) == 1 else None
    found = False
    for row in body:
        code_at = next((k for k, c in enumerate(row) if _code_cell(c, known)), None)
        if code_at is None:
            continue
        found = True
        layout.readings.append(_row_reading(row, code_at, column, known, names))
    return found


def _row_reading(
    row: list[str], code_at: int, column: int | None, known: set[str], names: _Names
) -> LayoutReading:
    code = _code_cell(row[code_at], known) or ""
    # The code cell may hold the name and even the answer: "| 1.3 Step Repetition: yes |".
    inline = _CODE_AT.match(row[code_at].strip())
    own = row[code_at].strip()[inline.end() :] if inline else ""
    named = names.match(own.strip(" \t-–—:()")) if own.strip() else None
    if named is not None:
        own = own.strip(" \t-–—:()")[named.end() :]
    cells = [(k, c) for k, c in enumerate(row) if k != code_at]
    notes = [c for k, c in cells if k != column and c.strip(" -–—") and not _is_name(c, names)]
    rationale = " ".join(" ".join(notes).split())
    if column is not None and column != code_at:
        cell = row[column] if column < len(row) else ""
        answer = cell_answer(cell, whole=False)
        if answer is None:
            why = "its answer cell is empty" if not cell.strip() else f"answer cell {cell!r}"
            return LayoutReading(code, None, "table", f"table row: {why}", rationale)
        value, word = answer
        detail = "" if value is not None else f"answered {word!r}"
        return LayoutReading(code, value, "table", detail, rationale)
    candidates = [c for _, c in cells]
    if own.strip(" \t-–—:|"):
        candidates.append(own.strip(" \t-–—:|"))
    answers = [a for c in candidates if (a := cell_answer(c, whole=True))]
    values = {v for v, _ in answers}
    if not answers:
        return LayoutReading(code, None, "table", "", rationale)
    if len(values) > 1:
        return LayoutReading(code, None, "table", "table row answers both ways", rationale)
    value, word = answers[0]
    return LayoutReading(code, value, "table", "" if value is not None else f"answered {word!r}",
                         rationale)  # fmt: skip


def _is_name(cell: str, names: _Names) -> bool:
    stripped = cell.strip(" \t\"'")
    named = names.match(stripped) if stripped else None
    return named is not None and named.end() >= len(stripped.rstrip(" .:"))


def _read_transposed(codes: list[str | None], body: list[list[str]], layout: Layout) -> bool:
    for row in body:
        for k, code in enumerate(codes):
            if code is None or k >= len(row):
                continue
            answer = cell_answer(row[k], whole=False)
            value = answer[0] if answer else None
            detail = "" if value is not None else f"table cell {row[k]!r}"
            layout.readings.append(LayoutReading(code, value, "table", detail))
    return True


# ---------------------------------------------------------------- code lists and sections

_LIST_HEAD = re.compile(
    r"(?P<label>(?<![\w.])[\"']?[A-Za-z][A-Za-z /'()\-]{0,70}?[\"']?)[ \t]*(?::|=|[-–—][ \t])[ \t]*"
    r"[\[{(]?[ \t]*(?=[\"']?\d{1,2}\.\d{1,2}(?![\w]|\.\d)|(?:none|nothing)\b)",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(
    r"[ \t]*[\"']?(?P<code>\d{1,2}\.\d{1,2})(?![\w]|\.\d)[\"']?"
    r"(?:\s*\((?P<paren>[^()\n]{0,80})\))?"
)
_LIST_SEP = re.compile(r"[ \t]*(?:,|;|/|&|\band\b|\bor\b)[ \t]*", re.IGNORECASE)
_NONE_WORD = re.compile(r"\s*(?:none|nothing)\b(?!\s+of\b)", re.IGNORECASE)


# What every list head is followed by, on its own line: a code ("1.3") or none / nothing.
_LIST_CUE = re.compile(r"\d\.\d|none|nothing")
_LIST_CUE_ANY_CASE = re.compile(_LIST_CUE.pattern, re.IGNORECASE)


def _list_heads(text: str) -> Iterator[re.Match[str]]:
    """``_LIST_HEAD.finditer(text)``, searched only on lines that hold a cue. A head never
    spans a line break and is followed on its line by its cue; each search sees the text
    before the line (lookbehind) and the line break (lookaheads): the same matches."""
    folded = fold_case(text)
    cues = _LIST_CUE.finditer(folded) if folded is not None else _LIST_CUE_ANY_CASE.finditer(text)
    end = -1
    for cue in cues:
        if cue.start() < end:
            continue  # that line is searched already
        start = text.rfind("\n", 0, cue.start()) + 1
        line_break = text.find("\n", cue.end())
        end = len(text) if line_break == -1 else line_break + 1
        yield from _LIST_HEAD.finditer(text, start, end)


def read_code_lists(text: str, known: set[str], names: _Names, layout: Layout) -> None:
    """``Label: 1.3, 2.5`` lines: each listed code gets the label's polarity."""
    skip_name = names.match
    for head in _list_heads(text):
        if layout.is_consumed(head.start()):
            continue
        polarity = label_polarity(head.group("label"))
        if polarity is None:
            continue
        pos = head.end()
        if _NONE_WORD.match(text, pos):
            if polarity is True:
                layout.none_at_all = True
                layout.boundaries.append(_line_start(text, head.start()))
            continue
        listed: list[str] = []
        while True:
            item = _LIST_ITEM.match(text, pos)
            if not item:
                break
            listed.append(item.group("code"))
            pos = item.end()
            name = skip_name(text, _skip_spaces(text, pos)) if not item.group("paren") else None
            if name is not None:
                pos = name.end()
            sep = _LIST_SEP.match(text, pos)
            if not sep or not _LIST_ITEM.match(text, sep.end()):
                break
            pos = sep.end()
        # A single code followed by more prose ("Yes: 1.3 Step Repetition — the agent ...")
        # is still a list of one; a code that is itself labelled ("Present: 1.3: no") is not.
        if not listed or re.match(r"\s*[:=]", text[pos : pos + 3]):
            continue
        start = _line_start(text, head.start())
        layout.consumed.append((start, _line_end(text, pos)))
        for code in listed:
            if code in known:
                layout.readings.append(LayoutReading(code, polarity, "list"))
            else:
                layout.problems.append(f"{code}: not a code of this taxonomy (listed); ignored")


_SECTION_HEAD = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|[-*+•][ \t]+)?(?P<label>[^\n:]{1,80}?)[ \t]*(?::[ \t]*)?$",
    re.MULTILINE,
)
_BULLET_LINE = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,2}[.)]|\[[ xX]?\])[ \t]+\S")
_LINE = re.compile(r"[^\n]*\n?")


def read_sections(text: str, layout: Layout) -> list[tuple[int, int, bool]]:
    """Spans of bullet lists under a polarity header: (start, end, polarity)."""
    spans: list[tuple[int, int, bool]] = []
    line_start = 0
    # A header is a whole line (no part of _SECTION_HEAD matches a line break, and it runs
    # from ^ to $) that ends with ":" or opens with "#": only such lines are tried.
    for line in text.split("\n"):
        at, line_start = line_start, line_start + len(line) + 1
        if not (line.rstrip().endswith(":") or line.lstrip().startswith("#")):
            continue
        head = _SECTION_HEAD.match(text, at)
        if head is None or _CODE_ANY.search(line):
            continue
        polarity = label_polarity(head.group("label"))
        if polarity is None:
            continue
        start = head.end()
        end = start
        seen_item = False
        for line_match in _LINE.finditer(text, start):
            raw = line_match.group(0)
            if not raw:
                break
            stripped = raw.strip()
            absolute = line_match.start()
            if not stripped:
                continue
            if _BULLET_LINE.match(raw) or (seen_item and raw[:1] in " \t"):
                seen_item = True
                end = absolute + len(raw)
                continue
            break
        if seen_item:
            spans.append((start, end, polarity))
            layout.boundaries.append(_line_start(text, head.start()))
    return spans


def read_defaults(text: str, layout: Layout) -> None:
    """Sentences that answer the modes not named elsewhere."""
    lowered = fold_case(text)
    if not may_set_defaults(text if lowered is None else lowered, lowered=lowered is not None):
        return  # one search instead of four on most texts
    for pattern in OTHERS:
        for match in pattern.finditer(text):
            layout.others = False
            layout.boundaries.append(_line_start(text, match.start()))
    for match in NONE_AT_ALL.finditer(text):
        sentence = text[_line_start(text, match.start()) : match.end()]
        if EXCEPT.search(sentence) or _CODE_ANY.search(sentence):
            continue
        layout.none_at_all = True
        layout.boundaries.append(_line_start(text, match.start()))


# ---------------------------------------------------------------- task line

_TASK_LINE = re.compile(
    r"^[ \t>*\-•#]*(?:was\s+the\s+)?task[ \t_]*(?:completed?|completion|complete|success(?:ful)?"
    r"|solved|accomplished|done)\b[ \t?]*(?:[:=\-–—][ \t]*)?(?P<rest>[^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)


def find_task_line(text: str) -> tuple[int, str] | None:
    """The last "Task completed: …" line (its start and the answer text after the label)."""
    found = None
    for match in _TASK_LINE.finditer(text):
        rest = match.group("rest").strip()
        if not rest:
            following = text[match.end() :].lstrip("\n")
            rest = following.split("\n", 1)[0].strip()
        found = (match.start(), rest)
    return found


# ---------------------------------------------------------------- helpers


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end == -1 else end + 1


def _skip_spaces(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


def read_layout(text: str, known: set[str], names: _Names | None = None) -> Layout:
    """Everything this module finds in ``text`` (see the module docstring)."""
    layout = Layout()
    names = names if names is not None else _NoNames()
    read_tables(text, known, names, layout)
    read_code_lists(text, known, names, layout)
    read_defaults(text, layout)
    task = find_task_line(text)
    if task is not None:
        layout.boundaries.append(task[0])
    return layout


class _NoNames:
    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return None
