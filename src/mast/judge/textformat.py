"""Read the MAST paper's text answer format, one mode code at a time.

The official annotation prompt asks for::

    @@
    A. <free-text summary>
    B. <yes or no>            (task completed)
    C. 1.1 Disobey Task Specification: <yes or no>
       1.2 ...
    @@

Models answer it with echoed names, markdown bold, bullets, tables, "Yes."/"NO", lines out of
order, everything on one line, rationales before or after the answer. The official parser
takes the first "yes"/"no" *substring* after a code, so "2.5 Ignored Other Agent's Input: yes"
reads "no" (Ig-no-red) and so does "3.2 No or Incomplete Verification: yes". This reader:

1. Finds **anchors**: a mode code at a word boundary (not inside ``11.1``, ``1.10``, ``v1.1``,
   a date or a version) that starts a line (after bullets, numbering, ``C.``, table bars) or
   is directly followed by an answer, a known mode name, or a ``name: answer`` label. A code
   merely mentioned in prose ("see 1.5,") is not an anchor. When a code has line-start
   anchors, its mid-line mentions are ignored.
2. Cuts the answer region into **segments**, each running from one anchor to the next.
3. In each segment, skips the echoed **name** (known names and aliases of every code, the
   official template's names, or any text before the first ``:``/``|``/`` - ``), then reads
   the **answer slot**: the first word must be an answer (yes/no/true/false/present/absent,
   or unclear/unknown/n/a which give ``None``). "yes/no", "yes or no" (an unfilled template)
   and a question mark give ``None``. If the first word is not an answer, an explicit
   ``Answer: yes`` / ``→ yes`` / ``(yes)`` in the segment, or a segment that ends in an
   answer word, is used. Anything else is ``None``.
4. Combines several anchors of one code: agreeing answers stand, disagreeing ones give
   ``None``. An echoed name that belongs to a different code is reported, and the answer is
   still read by code. Codes outside the taxonomy (the official example's 1.6 and 2.7) end
   the previous segment and are reported, never mapped.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

from mast.taxonomy import Taxonomy

# Names the official MAST files print next to codes that differ from the taxonomy's own
# names and aliases. The answer template lists "3.2 No or Incorrect Verification" and
# "3.3 Weak Verification": by meaning these describe the paper's 3.3 (a wrong check) and 3.2
# (a partial check). Used only to *report* a name/code mismatch; answers are read by code.
TEMPLATE_NAMES: dict[str, str] = {
    "No or Incorrect Verification": "3.3",
    "Weak Verification": "3.2",
    "Unaware of Stopping Conditions": "1.5",
    "Action-Reasoning Mismatch": "2.6",
}

_CODE = re.compile(r"(?<![\w.])(\d{1,2}\.\d{1,2})(?![\w]|\.\d)")
_TRUE = {"yes", "true", "present", "detected", "observed", "\u2705", "\u2714", "\u2714\ufe0f",
         "\u2713", "\u2611"}  # fmt: skip
_FALSE = {"no", "false", "absent", "not present", "not detected", "not observed", "\u274c",
          "\u2717", "\u2718", "\u2716"}  # fmt: skip
# Longer alternatives first: "not present" before "no", "none" before "no".
_ANSWER_WORDS = (
    r"not\s+present|not\s+detected|not\s+observed|not\s+applicable|not\s+sure|not\s+clear"
    r"|n/a|yes|none|no|true|false|present|absent|detected|observed|unclear|unknown"
    r"|uncertain|unsure|maybe|possibly|partially|partial|ambiguous|undetermined|indeterminate"
    r"|cannot\s+(?:be\s+)?determined?|can't\s+(?:tell|determine)"
    r"|\u2705|\u2714\ufe0f?|\u2713|\u2611|\u274c|\u2717|\u2718|\u2716"
)
_ANSWER = re.compile(rf"(?P<word>{_ANSWER_WORDS})(?!\w)", re.IGNORECASE)
_YES_NO = r"(?:yes|no|true|false)"
# "yes/no", "yes or no", "<yes or no>": a second, opposite answer right after the first. A
# slash or bar always pairs two answers; after a comma, "or" or "and" the second word must
# close the slot, so that "Yes, no tests were run" still reads as yes.
_BOTH = re.compile(
    rf"\s*(?:[/\\|]\s*(?P<paired>{_YES_NO})\b"
    rf"|(?:,|\bor\b|\band\b)\s*(?P<other>{_YES_NO})\b(?=[ \t]*(?:[\n.,;:)\]>]|$)))",
    re.IGNORECASE,
)
_STRONG_LABEL = re.compile(rf"\b(?:final\s+)?(?:answer|verdict)\s*[:=]\s*\(?\s*({_YES_NO})\b",
                           re.IGNORECASE)  # fmt: skip
_ANY_LABEL = re.compile(
    rf"\b(?:(?:final\s+)?answer|verdict|present|detected|label|decision)\s*[:=]\s*\(?\s*({_YES_NO})\b"
    rf"|(?:→|->|=>)\s*({_YES_NO})\b|\(\s*({_YES_NO})\s*\)",
    re.IGNORECASE,
)
_TAIL = re.compile(rf"\b({_YES_NO})\W*$", re.IGNORECASE)
_TAIL_BOTH = re.compile(rf"\b{_YES_NO}\s*(?:/|\\|\||,|\bor\b|\band\b)\s*$", re.IGNORECASE)
_LEAD_PUNCT = re.compile(r"[\s.)\]:(\[\-–—|=<>#]*")
_SEPARATOR_NAME = re.compile(r"([^\n:|=]{1,100}?)\s*(?::|=|\||\s[-–—]\s)")
_LINE_PREFIX = re.compile(
    r"[\s\-+•>|#\[(]*(?:(?:\d{1,2}|[a-zA-Z])[.)]\s+)?[\s\-+•>|#\[(]*(?:C\s*[.):]\s*)?[\s\-+•>|#\[(]*"
)
_MAX_PREFIX = 24
_DIRECT_ANSWER = re.compile(rf"[\s.)\]]*(?:[:=|\-–—]\s*)?[(<]?\s*(?:{_ANSWER_WORDS})(?!\w)",
                            re.IGNORECASE)  # fmt: skip
_NAMED_LABEL = re.compile(
    rf"[\s.)\]]*[(\[]?[A-Za-z][^\n:|=]{{0,80}}?[)\]]?\s*(?::|=|\||\s[-–—]\s?)\s*[(<]?\s*"
    rf"(?:{_ANSWER_WORDS})(?!\w)",
    re.IGNORECASE,
)
_C_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))C\s*[.):]", re.MULTILINE)
_B_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))B\s*[.):]", re.MULTILINE)
_A_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))A\s*[.):]", re.MULTILINE)
_SUMMARY_LABEL = re.compile(r"^\s*(?:free[- ]?form\s+text\s+summary[^:\n]*|summary)[ \t]*[:\n]\s*",
                            re.IGNORECASE)  # fmt: skip
_STEP_REF = re.compile(r"(?<![\w])\[?s(\d{1,6})\]?(?![\w])")
_TASK_NOT_DONE = re.compile(
    r"\bnot\s+(?:been\s+)?(?:successfully\s+|fully\s+)?(?:completed?|solved|successful|accomplished)\b"
    r"|\b(?:incomplete|unsuccessful|failed|failure)\b",
    re.IGNORECASE,
)
_TASK_DONE = re.compile(
    r"\b(?:was|is|has\s+been|were)\s+(?:successfully\s+|fully\s+)?(?:completed|solved|accomplished)\b"
    r"|^\W*(?:completed|successful|success|solved)\b",
    re.IGNORECASE,
)


@dataclass
class TextReading:
    """What the text format yielded: per-code answers plus everything noticed on the way."""

    answers: dict[str, bool | None] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    step_refs: dict[str, list[str]] = field(default_factory=dict)
    task_completed: bool | None = None
    summary: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """True when at least one mode or the task-completed line was actually answered."""
        return self.task_completed is not None or any(v is not None for v in self.answers.values())


@dataclass(frozen=True)
class _Anchor:
    code: str
    start: int
    end: int
    strong: bool


@dataclass(frozen=True)
class _SlotAnswer:
    value: bool | None
    status: str  # "ok" | "missing" | "unclear" | "ambiguous"
    detail: str = ""
    echoed_name: str | None = None
    rationale: str = ""


class NameIndex:
    """Every known spelling of every mode name, to skip echoed names and spot swapped ones."""

    def __init__(self, taxonomy: Taxonomy) -> None:
        names: dict[str, set[str]] = {}
        spellings: list[str] = []
        for mode in taxonomy:
            for name in (mode.name, *mode.aliases):
                names.setdefault(_squash(name), set()).add(mode.code)
                spellings.append(name)
        if taxonomy.name == "MAST":
            for name, code in TEMPLATE_NAMES.items():
                if code in taxonomy:
                    names.setdefault(_squash(name), set()).add(code)
                    spellings.append(name)
        self._codes = names
        patterns = sorted({_name_pattern(n) for n in spellings}, key=len, reverse=True)
        alternatives = "|".join(patterns)
        self._regex = re.compile(rf"(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """A known name starting exactly at ``pos``."""
        return self._regex.match(text, pos)

    def codes_for(self, name: str) -> set[str]:
        """Codes a name belongs to (empty when unknown)."""
        return self._codes.get(_squash(name), set())


def _squash(name: str) -> str:
    return "".join(re.findall(r"[a-z0-9]+", name.lower()))


def _name_pattern(name: str) -> str:
    # "Ignored Other Agent's Input" must also match "Agents' Input" and "Agent’s Input".
    tokens = re.findall(r"[a-z0-9]+", name.lower())
    return r"[\W_]*".join(re.escape(t) for t in tokens)


def normalize_markup(text: str) -> str:
    """Drop markdown emphasis and unify punctuation so that the layout rules see plain text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\uff1a", ":")
    text = re.sub(r"[\u2018\u2019\u201b\u2032]", "'", text)
    text = re.sub(r"[\u201c\u201d\u201e]", '"', text)
    text = re.sub(r"\*+|`+|~~|(?<!\w)__|__(?!\w)", "", text)
    text = re.sub(r"</?(?:b|strong|em|i|u)>", "", text, flags=re.IGNORECASE)
    # "FM-1.3" / "FM 1.3" / "FM1.3" are the same code; "C.1.1" is "C. 1.1".
    text = re.sub(r"\bFM[-\s]?(?=\d{1,2}\.\d)", "", text)
    text = re.sub(r"\b([ABC])\.(?=\d{1,2}\.\d)", r"\1. ", text)
    return text


def read_text_format(raw: str, taxonomy: Taxonomy, names: NameIndex) -> TextReading:
    """Read the MAST text format from ``raw`` (see the module docstring)."""
    reading = TextReading()
    text = normalize_markup(raw)
    known = set(taxonomy.codes)
    c_marker = _find_c_marker(text, known)
    region_start = c_marker[1] if c_marker else 0
    anchors = _find_anchors(text, region_start, names)
    head_end = c_marker[0] if c_marker else (anchors[0].start if anchors else len(text))
    _read_head(text[:head_end], reading)
    if anchors:
        # A closing "@@" ends the answer; chatter after it is not part of any mode.
        closing = text.find("@@", anchors[0].end)
        region_end = closing if closing != -1 else len(text)
        anchors = [a for a in anchors if a.start < region_end]
        _read_modes(text, anchors, region_end, known, names, reading)
    for code in taxonomy.codes:
        if code not in reading.answers:
            reading.answers[code] = None
            reading.problems.append(f"{code}: not answered")
    return reading


def _find_c_marker(text: str, known: set[str]) -> tuple[int, int] | None:
    # "C." opens the mode list only if mode codes follow soon after it.
    for marker in _C_MARKER.finditer(text):
        window = text[marker.end() : marker.end() + 300]
        if any(m.group(1) in known for m in _CODE.finditer(window)):
            return marker.start(), marker.end()
    return None


def _find_anchors(text: str, start: int, names: NameIndex) -> list[_Anchor]:
    found: list[_Anchor] = []
    newlines = [m.start() for m in re.finditer("\n", text)]
    for match in _CODE.finditer(text, start):
        line_start = newlines[i - 1] + 1 if (i := bisect_left(newlines, match.start())) else 0
        # Bullets, numbering and "C." are short: a long prefix is prose, not a label.
        strong = (
            line_start >= start
            and match.start() - line_start <= _MAX_PREFIX
            and _LINE_PREFIX.fullmatch(text, line_start, match.start()) is not None
        )
        if not strong and not _labels_an_answer(text, match.end(), names):
            continue
        found.append(_Anchor(match.group(1), match.start(), match.end(), strong))
    # A code with line-start anchors keeps only those: its mid-line mentions are prose.
    strong_codes = {a.code for a in found if a.strong}
    return [a for a in found if a.strong or a.code not in strong_codes]


def _labels_an_answer(text: str, pos: int, names: NameIndex) -> bool:
    if _DIRECT_ANSWER.match(text, pos) or _NAMED_LABEL.match(text, pos):
        return True
    lead = _LEAD_PUNCT.match(text, pos)
    name_at = lead.end() if lead else pos
    return names.match(text, name_at) is not None


def _read_modes(
    text: str,
    anchors: list[_Anchor],
    region_end: int,
    known: set[str],
    names: NameIndex,
    reading: TextReading,
) -> None:
    per_code: dict[str, list[_SlotAnswer]] = {}
    for i, anchor in enumerate(anchors):
        end = anchors[i + 1].start if i + 1 < len(anchors) else region_end
        slot = read_answer_slot(text[anchor.end : end], names)
        if anchor.code not in known:
            said = "unreadable" if slot.value is None else ("yes" if slot.value else "no")
            reading.problems.append(
                f"{anchor.code}: not a code of this taxonomy (answered {said}); ignored"
            )
            continue
        per_code.setdefault(anchor.code, []).append(slot)
        if slot.echoed_name:
            owners = names.codes_for(slot.echoed_name)
            if owners and anchor.code not in owners:
                reading.problems.append(
                    f"{anchor.code}: echoed name {slot.echoed_name.strip()!r} belongs to "
                    f"{', '.join(sorted(owners))}; answer read by code {anchor.code}"
                )
        refs = [f"s{n}" for n in _STEP_REF.findall(slot.rationale)]
        if refs:
            reading.step_refs.setdefault(anchor.code, [])
            reading.step_refs[anchor.code] += [
                r for r in refs if r not in reading.step_refs[anchor.code]
            ]
        if slot.rationale and anchor.code not in reading.rationales:
            reading.rationales[anchor.code] = slot.rationale
    for code, slots in per_code.items():
        reading.answers[code] = _combine(code, slots, reading.problems)


def _combine(code: str, slots: list[_SlotAnswer], problems: list[str]) -> bool | None:
    decided = [s for s in slots if s.status == "ok"]
    values = {s.value for s in decided}
    if len(values) == 1:
        return decided[0].value
    if len(values) > 1:
        problems.append(f"{code}: answered both yes and no in different places; unknown")
        return None
    for slot in slots:
        if slot.status != "missing":
            problems.append(f"{code}: {slot.detail}; unknown")
            return None
    problems.append(f"{code}: mentioned but no yes/no answer found; unknown")
    return None


def read_answer_slot(segment: str, names: NameIndex, *, task_line: bool = False) -> _SlotAnswer:
    """Read the answer that belongs to one code (or to the B line) from its segment."""
    pos, echoed = _skip_name(segment, names)
    value, status, detail, rationale = _read_slot(segment[pos:], task_line=task_line)
    return _SlotAnswer(value, status, detail, echoed, rationale)


def _skip_name(segment: str, names: NameIndex) -> tuple[int, str | None]:
    """Where the answer slot starts, and the echoed name if a known one was skipped."""
    pos = _skip_punct(segment, 0)
    echoed: str | None = None
    name = names.match(segment, pos)
    if name:
        echoed, pos = name.group(0), name.end()
    else:
        # An unknown name ends at the first separator, unless the "name" is the answer itself.
        label = _SEPARATOR_NAME.match(segment, pos)
        if label and not _ANSWER.match(label.group(1).strip()):
            pos = label.end()
    return _skip_punct(segment, pos), echoed


def _skip_punct(text: str, pos: int) -> int:
    match = _LEAD_PUNCT.match(text, pos)
    return match.end() if match else pos


_Slot = tuple["bool | None", str, str, str]


def _read_slot(rest: str, *, task_line: bool) -> _Slot:
    first = _ANSWER.match(rest)
    if first:
        return _read_first_word(rest, first)
    why = _clean_rationale(rest)
    heading, _, below = rest.partition("\n")
    if below and _looks_like_heading(heading):
        # "### B. Task completed\nNo" / "#### 1.3 Custom Name\nYes": the answer opens the next line.
        nested = _read_slot(below.lstrip(" \t-*>:"), task_line=task_line)
        if nested[1] != "missing":
            return nested
    labelled = [_read_labelled(rest, m) for m in _ANY_LABEL.finditer(rest)]
    if labelled:
        for slot in labelled:
            if slot[1] != "ok":
                return slot[0], slot[1], slot[2], why
        if len({slot[0] for slot in labelled}) > 1:
            return None, "ambiguous", "gave both yes and no", why
        return labelled[0][0], "ok", "", why
    if task_line:
        if _TASK_NOT_DONE.search(rest):
            return False, "ok", "", why
        if _TASK_DONE.search(rest):
            return True, "ok", "", why
    tail = _TAIL.search(rest.strip())
    if tail:
        if _TAIL_BOTH.search(rest.strip()[: tail.start()]):
            return None, "ambiguous", "gave both yes and no", why
        return tail.group(1).lower() in _TRUE, "ok", "", why
    if rest.strip():
        return None, "missing", "no yes/no answer found", why
    return None, "missing", "no answer given", ""


def _read_labelled(rest: str, label: re.Match[str]) -> _Slot:
    # "Answer: yes" / "→ yes" / "(yes)": read the word after the label like a first word,
    # so that "Answer: yes/no" stays ambiguous.
    group = next(i for i, g in enumerate(label.groups(), start=1) if g)
    tail = rest[label.start(group) :]
    first = _ANSWER.match(tail)
    if first is None:  # cannot happen: the label's group is an answer word
        return None, "missing", "no yes/no answer found", ""
    return _read_first_word(tail, first)


def _read_first_word(rest: str, first: re.Match[str]) -> _Slot:
    word = " ".join(first.group("word").lower().split())
    after = rest[first.end() :]
    why = _clean_rationale(after)
    if word not in _TRUE and word not in _FALSE:
        return None, "unclear", f"answered {word!r}", why
    value = word in _TRUE
    both = _BOTH.match(after)
    if both and ((both.group("paired") or both.group("other")).lower() in _TRUE) != value:
        said = rest[: first.end() + both.end()].strip()
        return None, "ambiguous", f"answered {said!r}", why
    if after.lstrip().startswith("?"):
        return None, "unclear", f"answered {word!r} with a question mark", why
    if any((m.group(1).lower() in _TRUE) != value for m in _STRONG_LABEL.finditer(after)):
        return None, "ambiguous", "first answer contradicted later in the same item", why
    return value, "ok", "", why


def _looks_like_heading(line: str) -> bool:
    words = line.split()
    return 0 < len(words) <= 8 and not re.search(r"[.,;!?]", line)


def _clean_rationale(text: str) -> str:
    text = re.sub(r"^[\s.,;:)\]\-–—|]+", "", text)
    text = re.sub(r"@@.*\Z", "", text, flags=re.DOTALL)
    text = re.sub(r"[\s\-+•>|#(\[]+\Z", "", text)
    return " ".join(text.split())[:1000]


def _read_head(head: str, reading: TextReading) -> None:
    a_match = _A_MARKER.search(head)
    b_search_from = a_match.end() if a_match else 0
    b_matches = list(_B_MARKER.finditer(head, b_search_from))
    b_match = b_matches[-1] if b_matches else None
    if a_match:
        summary_end = b_match.start() if b_match else len(head)
        summary = _SUMMARY_LABEL.sub("", head[a_match.end() : summary_end]).strip()
        summary = re.sub(r"[\s@#|]+$", "", summary)
        reading.summary = summary or None
    if b_match:
        segment = head[b_match.end() :]
        slot = read_answer_slot(segment, NO_NAMES, task_line=True)
        reading.task_completed = slot.value
        if slot.value is None:
            reading.problems.append(f"B (task completed): {slot.detail or 'unreadable'}; unknown")
    else:
        reading.problems.append("B (task completed): not answered")


class _NoNames(NameIndex):
    # The B line has a label ("Whether the task is ... :") but no mode names.
    def __init__(self) -> None:
        self._codes = {}
        self._regex = re.compile(r"(?!)")


NO_NAMES: NameIndex = _NoNames()
