"""Read a plain-text judge answer, binding every answer to its own mode code.

Models that do not answer in JSON write the MAST paper's ``@@ A. … B. … C. 1.1 <name>: yes``
format, or headings, bold labels, bullets with tags or emoji before or after the code,
tables, numbered lists, YAML-like lines, lists of positive codes, thinking blocks. The
official parser takes the first "yes"/"no" *substring* after a code, so
"2.5 Ignored Other Agent's Input: yes" reads "no" (Ig-no-red). This reader:

1. Drops reasoning blocks and, when there is one, reads only the ``<answer>`` block or the
   "Final answer" section (see :mod:`mast.judge.reply.textlayout`), which also reads tables,
   code lists
   ("Present: 1.3, 2.5"), polarity sections and "all other modes are absent" sentences.
2. Finds **anchors**: a mode code at a word boundary (not inside ``11.1``, ``1.10``,
   ``v1.1``, a date or a version) that starts a line, after bullets, numbering, ``C.``,
   a tag (``[YES]``, ``- [x]``, ``✅``, ``No —``) or an echoed mode name, or that is
   directly followed by an answer, a known mode name or a ``name: answer`` label. A code
   merely mentioned in prose is not an anchor; a code with line-start anchors keeps only
   those.
3. Cuts the text into **items**, one per anchor: from the start of the anchor's line (or
   its tag) to the start of the next item, a heading, a table, a list or a closing ``@@``.
   A tag written before a code belongs to that code, never to the item before it.
4. Reads each item: the tag before the code, and after the code (skipping the echoed name)
   the **answer slot**: a first word that is an answer (yes/no/true/false/present/absent
   and symbols; "Present: no", "Detected = false", "present? no" read the value after the
   label), else an explicit ``Answer:``/``Verdict:``/``Present:``/``→ yes``/``(yes)`` label,
   else an answer word ending the item's first paragraph (not when a tag answered).
   "yes/no", a question mark, "unclear", "n/a" give ``None``.
5. Combines everything said about one code: agreeing answers stand, disagreeing ones give
   ``None`` with a note, never a neighbour's answer. A section's polarity fills in only
   for items without an answer of their own; "all other modes are absent" only for codes
   answered nowhere. Echoed names that belong to another code are reported (answers are
   read by code), codes outside the taxonomy are reported and ignored.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from mast.judge.reply import textlayout as _layout
from mast.judge.reply.symbol_legend import apply_legend
from mast.judge.reply.textdefaults import may_set_defaults
from mast.judge.reply.textnames import code_the_names, may_name_a_mode
from mast.judge.reply.textslot import (
    ANSWER_WORDS,
    CLOSES,
    CODE,
    FALSE_WORDS,
    LEAD_PUNCT,
    NO_NAMES,
    TEMPLATE_NAMES,
    TRUE_WORDS,
    NameIndex,
    SlotAnswer,
    fold_case,
    normalize_markup,
    read_answer_slot,
)
from mast.judge.reply.textwords import english_answers, join_label_lists, mark_columns
from mast.taxonomy import Taxonomy

__all__ = [
    "NO_NAMES",
    "TEMPLATE_NAMES",
    "NameIndex",
    "TextReading",
    "may_answer",
    "normalize_markup",
    "read_answer_slot",
    "read_text_format",
]

# Tags written before a code: checkboxes, bracketed words, symbols, a bare answer word.
_TAG = (
    r"\[\s*(?P<box>[xX\u2713\u2714\u2717\u2718]?)\s*\]"
    r"|\[\s*(?P<bword>yes|no|y|n|present|absent|detected|not\s+detected|not\s+present"
    r"|true|false|unclear)\s*\]"
    r"|(?P<sym>\u2705|\u274c|\u2714\ufe0f?|\u2713|\u2717|\u2718|\u2716\ufe0f?|\u2611\ufe0f?"
    r"|\u2610|\u2612)"
    r"|(?P<word>yes|no|true|false|present|absent|not\s+present|detected|not\s+detected)"
)
_TAG_VALUES: dict[str, bool | None] = {
    "x": True, "\u2713": True, "\u2714": True, "": False, "\u2717": False, "\u2718": False,
    "y": True, "n": False, "unclear": None, "\u2612": None,
}  # fmt: skip
_STRONG_PREFIX = re.compile(
    r"[ \t>|#]*(?:(?:[-+\u2022]|\d{1,2}[.)]|[a-zA-Z][.)])[ \t]+)?[ \t>|#]*"
    r"(?:C[ \t]*[.):][ \t]*)?"
    rf"(?:(?P<tag>{_TAG})[ \t]*(?:[:\-–—|][ \t]*)?)?"
    r"(?:(?:failure[ \t]+)?mode[ \t]+)?"
    # JSON Lines of mode objects: {"code": "1.4", "present": true}
    r"(?:\{[ \t]*[\"']?(?:code|mode|id|fm|failure_mode|mode_code)[\"']?[ \t]*:[ \t]*)?"
    r"[\"'\[(]?[ \t]*",
    re.IGNORECASE,
)
_NAME_LEAD = re.compile(r"[ \t>|#]*(?:(?:[-+\u2022]|\d{1,2}[.)])[ \t]+)?[ \t>|#]*")
_NAME_TO_CODE = re.compile(r"[ \t]*[(\[\-–—:,]?[ \t]*")
_MID_TAG = re.compile(
    r"(?:(?<=\s)|^)(?:\[\s*(?P<box>[xX\u2713\u2714\u2717\u2718]?)\s*\]"
    r"|\[\s*(?P<bword>yes|no|y|n|present|absent|detected|not\s+detected|not\s+present|true"
    r"|false|unclear)\s*\]"
    r"|(?P<sym>\u2705|\u274c|\u2714\ufe0f?|\u2713|\u2717|\u2718|\u2716\ufe0f?|\u2611\ufe0f?"
    r"|\u2610|\u2612))[ \t]*(?:[:\-–—|][ \t]*)?[\"'\[(]?[ \t]*$",
    re.IGNORECASE,
)
_MAX_PREFIX = 48
_DIRECT_ANSWER = re.compile(
    rf"[ \t.)\]\"']*(?:[:=|\-–—][ \t]*)?[(<\"']?[ \t]*(?:{ANSWER_WORDS})(?!\w){CLOSES}",
    re.IGNORECASE,
)
_NAMED_LABEL = re.compile(
    rf"[ \t.)\]]*[(\[]?[A-Za-z][A-Za-z '\-/&]{{0,80}}?[)\]]?[ \t]*(?::|=|\||[ \t][-–—][ \t]?)"
    rf"[ \t]*[(<]?[ \t]*(?:{ANSWER_WORDS})(?!\w){CLOSES}",
    re.IGNORECASE,
)
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]", re.MULTILINE)
_RULE_LINE = re.compile(r"^[ \t]*(?:-{3,}|_{3,}|={3,}|@@)[ \t]*$", re.MULTILINE)
# "C." at the start of the text or after a space or one of @#>(| (a line start included):
# the test of the character before comes after the literal, so the regex engine skips
# ahead to a "C" (the same matches as (?:^|(?<=[\s@#>(|]))C… with re.MULTILINE).
_C_MARKER = re.compile(r"C(?<![^\s@#>(|]C)\s*[.):]")
_B_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))B\s*[.):]", re.MULTILINE)
_A_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))A\s*[.):]", re.MULTILINE)
_SUMMARY_LABEL = re.compile(r"^\s*(?:free[- ]?form\s+text\s+summary[^:\n]*|summary)[ \t]*[:\n]\s*",
                            re.IGNORECASE)  # fmt: skip
_WORD_CHAR = re.compile(r"\w")
_B_CUE = re.compile(r"B\s*[.):]")  # _B_MARKER without its test of the character before
_B_BEFORE = re.compile(r"[\s@#>(|]")
_STEP_REF = re.compile(r"(?<![\w])\[?s(\d{1,6})\]?(?![\w])")


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
    item_start: int  # where this code's item begins (its line, or its tag)
    tag: SlotAnswer | None = None
    name: str | None = None  # a known name written before the code


def read_text_format(raw: str, taxonomy: Taxonomy, names: NameIndex) -> TextReading:
    """Read the text answer ``raw`` (see the module docstring)."""
    reading = TextReading()
    text, thoughts = _layout.drop_thinking(normalize_markup(raw))
    if thoughts:
        reading.problems.append(f"ignored {thoughts} reasoning block(s) in the answer")
    text, legend = apply_legend(text)
    if legend:
        reading.problems.append(legend)
    text = join_label_lists(mark_columns(english_answers(text)))
    text, unsure_names = code_the_names(text, taxonomy, names)
    reading.problems += unsure_names
    known = set(taxonomy.codes)
    start, end, note = _layout.answer_region(text)
    if note:
        reading.problems.append(note)
    c_marker = _find_c_marker(text, known)
    if c_marker and start <= c_marker[1] < end:
        start = c_marker[1]
    # A closing "@@" ends the answer; chatter after it is not part of any mode.
    first_code = CODE.search(text, start, end)
    if first_code:
        closing = text.find("@@", first_code.end(), end)
        end = closing if closing != -1 else end
    body = text[start:end]
    layout = _layout.read_layout(body, known, names)
    sections = _layout.read_sections(body, layout)
    anchors = _find_anchors(body, names, layout)
    head_end = (
        c_marker[0] if c_marker else start + (anchors[0].item_start if anchors else len(body))
    )
    _read_head(text[:head_end], reading)
    if reading.task_completed is None:
        _read_task_line(text, reading)
    per_code: dict[str, list[SlotAnswer]] = {}
    _read_items(body, anchors, layout, known, names, reading, per_code)
    for item in layout.readings:
        status = "ok" if item.value is not None else ("unclear" if item.detail else "missing")
        per_code.setdefault(item.code, []).append(
            SlotAnswer(
                item.value, status, item.detail, rationale=item.rationale, source=item.source
            )
        )
        _note_rationale(item.code, item.rationale, reading)
    for a_start, a_end, polarity in sections:
        for anchor in anchors:
            if a_start <= anchor.start < a_end:
                per_code.setdefault(anchor.code, []).append(
                    SlotAnswer(polarity, "ok", source="section", weak=True)
                )
    reading.problems += layout.problems
    for code, slots in per_code.items():
        if code in known:
            reading.answers[code] = _combine(code, slots, reading.problems)
    _apply_defaults(taxonomy.codes, per_code, layout, reading)
    for code in taxonomy.codes:
        if code not in reading.answers:
            reading.answers[code] = None
            reading.problems.append(f"{code}: not answered")
    return reading


_NAME_INDEXES: dict[int, tuple[Taxonomy, NameIndex]] = {}


def _name_index(taxonomy: Taxonomy) -> NameIndex:
    # By identity: taxonomies are frozen but not hashable. A race builds one index twice.
    found = _NAME_INDEXES.get(id(taxonomy))
    if found is None or found[0] is not taxonomy:
        if len(_NAME_INDEXES) >= 8:
            _NAME_INDEXES.clear()
        found = _NAME_INDEXES[id(taxonomy)] = (taxonomy, NameIndex(taxonomy))
    return found[1]


def may_answer(raw: str, taxonomy: Taxonomy) -> bool:
    """False only when :func:`read_text_format` surely finds no answer in ``raw``: after the
    same markup and thinking-block clean-up, the text holds no code of ``taxonomy``, no
    ``B.`` marker, no task line and no "all other modes are absent" sentence or
    "Detected: none" list. The echo search reads every block of a trace, and most are
    plain log text; this test costs a fraction of the full reading.

    >>> from mast.taxonomy import load_taxonomy
    >>> may_answer("ran pytest: 3 passed", load_taxonomy()), may_answer("1.3: yes", load_taxonomy())
    (False, True)
    """
    text, _ = _layout.drop_thinking(normalize_markup(raw))
    # Every answer the reader finds is bound to a code written in the text (item, table
    # cell, list), or comes from the task line, the "B." line or a default sentence.
    codes = _code_cue(tuple(taxonomy.codes))
    if any(_code_can_be_read(text, m.start()) for m in codes.finditer(text)):
        return True
    if may_name_a_mode(text, _name_index(taxonomy), taxonomy):
        return True  # a mode named without its code (see mast.judge.reply.textnames)
    if "B" in text and any(
        not m.start() or _B_BEFORE.match(text, m.start() - 1) for m in _B_CUE.finditer(text)
    ):
        return True  # _B_MARKER.search(text), with the literal "B" first
    lowered = fold_case(text)
    if lowered is not None:
        # Case-insensitive patterns: the same as lower-case ones on the folded text, and
        # these scan much faster.
        if "task" in lowered and _layout.find_task_line(text) is not None:
            return True
        return may_set_defaults(lowered, lowered=True)
    return _layout.find_task_line(text) is not None or may_set_defaults(text)


def _code_can_be_read(text: str, at: int) -> bool:
    """Whether some reader can take the code at ``at``: every one (CODE, a table cell, a
    list item) wants no letter, digit or "." right before it, except where the region read
    starts right after a "C ." marker ("22.2.2" and "1.1.4" hold no code)."""
    if not at:
        return True
    before = text[at - 1]
    if before == ".":
        i = at - 2
        while i >= 0 and text[i].isspace():
            i -= 1
        return i >= 0 and text[i] == "C"
    return _WORD_CHAR.match(before) is None


@lru_cache(maxsize=16)
def _code_cue(codes: tuple[str, ...]) -> re.Pattern[str]:
    # Where any reader of a code (CODE, a table cell, a list item) can take one of ``codes``:
    # never before a letter or digit or before ".<digit>" (what comes before: see
    # _code_can_be_read).
    alternatives = "|".join(re.escape(c) for c in sorted(codes, key=len, reverse=True))
    # (The "not after a word character" test is made on each match: as a lookbehind first
    # in the pattern it would keep the regex engine from skipping ahead to a literal.)
    return re.compile(rf"(?:{alternatives})(?![\w]|\.\d)")


def _note_rationale(code: str, rationale: str, reading: TextReading) -> None:
    refs = [f"s{n}" for n in _STEP_REF.findall(rationale)]
    if refs:
        known_refs = reading.step_refs.setdefault(code, [])
        known_refs += [r for r in refs if r not in known_refs]
    if rationale and code not in reading.rationales:
        reading.rationales[code] = rationale


def _apply_defaults(
    codes: list[str],
    per_code: dict[str, list[SlotAnswer]],
    layout: _layout.Layout,
    reading: TextReading,
) -> None:
    unnamed = [c for c in codes if c not in per_code]
    if layout.none_at_all:
        if any(v is True for v in reading.answers.values()):
            reading.problems.append(
                "the answer says no failure mode applies but also answers some mode yes; "
                "the modes it does not name stay unknown"
            )
            return
        for code in unnamed:
            reading.answers[code] = False
        return
    if layout.others is False:
        for code in unnamed:
            reading.answers[code] = False


def _find_c_marker(text: str, known: set[str]) -> tuple[int, int] | None:
    # "C." opens the mode list only if mode codes follow soon after it.
    for marker in _C_MARKER.finditer(text):
        window = text[marker.end() : marker.end() + 300]
        if any(m.group(1) in known for m in CODE.finditer(window)):
            return marker.start(), marker.end()
    return None


def _tag_value(match: re.Match[str]) -> SlotAnswer:
    for group in ("box", "bword", "sym", "word"):
        raw = match.group(group) if group in match.re.groupindex else None
        if raw is None:
            continue
        word = " ".join(raw.lower().split())
        if word in _TAG_VALUES:
            value = _TAG_VALUES[word]
        elif word in TRUE_WORDS:
            value = True
        elif word in FALSE_WORDS:
            value = False
        else:
            value = None
        if value is None:
            return SlotAnswer(None, "unclear", f"tagged {raw!r}", source="tag")
        return SlotAnswer(value, "ok", source="tag")
    return SlotAnswer(None, "missing", source="tag")


def _find_anchors(text: str, names: NameIndex, layout: _layout.Layout) -> list[_Anchor]:
    found: list[_Anchor] = []
    newlines = [m.start() for m in re.finditer("\n", text)]
    line_of_first: dict[int, _Anchor] = {}
    for match in CODE.finditer(text):
        if layout.is_consumed(match.start()):
            continue
        i = bisect_left(newlines, match.start())
        line_start = newlines[i - 1] + 1 if i else 0
        prefix = text[line_start : match.start()]
        first_on_line = line_of_first.get(line_start)
        tag: SlotAnswer | None = None
        name: str | None = None
        strong = False
        item_start = match.start()
        if first_on_line is None and len(prefix) <= _MAX_PREFIX:
            head = _STRONG_PREFIX.fullmatch(prefix)
            if head is not None:
                strong = True
                if head.group("tag"):
                    tag = _tag_value(head)
            else:
                lead = _NAME_LEAD.match(prefix)
                named = names.match(prefix, lead.end() if lead else 0)
                if named and _NAME_TO_CODE.fullmatch(prefix, named.end()):
                    strong, name = True, named.group(0)
        elif first_on_line is not None and first_on_line.tag is not None:
            # On a line that starts with a tag, a tag right before a later code is its own.
            mid = _MID_TAG.search(text, first_on_line.end, match.start())
            if mid is not None:
                tag, item_start = _tag_value(mid), mid.start()
        if not strong and tag is None and not _labels_an_answer(text, match.end(), names):
            continue
        if first_on_line is None:
            # Text before the first code of a line belongs to that code's item (its tag,
            # bullet or name), never to the item above.
            item_start = line_start
        anchor = _Anchor(match.group(1), match.start(), match.end(), strong, item_start, tag, name)
        found.append(anchor)
        line_of_first.setdefault(line_start, anchor)
    # A code with line-start anchors (or a table row or list) keeps only those: its
    # mid-line mentions are prose.
    strong_codes = {a.code for a in found if a.strong} | {r.code for r in layout.readings}
    return [a for a in found if a.strong or a.tag is not None or a.code not in strong_codes]


def _labels_an_answer(text: str, pos: int, names: NameIndex) -> bool:
    """A code in mid-line is an anchor only if an answer follows it (after its name)."""
    if _DIRECT_ANSWER.match(text, pos) or _NAMED_LABEL.match(text, pos):
        return True
    lead = LEAD_PUNCT.match(text, pos)
    name_at = lead.end() if lead else pos
    if "\n" in text[pos:name_at]:
        return False
    # "see 2.4 Information Withholding, which ..." names a mode without answering it.
    name = names.match(text, name_at)
    return name is not None and _DIRECT_ANSWER.match(text, name.end()) is not None


def _item_ends(
    text: str, anchors: list[_Anchor], region_end: int, layout: _layout.Layout
) -> list[int]:
    stops = sorted(
        {m.start() for m in _HEADING_LINE.finditer(text)}
        | {m.start() for m in _RULE_LINE.finditer(text)}
        | set(layout.boundaries)
        | {a for a, _ in layout.consumed}
    )
    ends: list[int] = []
    for i, anchor in enumerate(anchors):
        end = anchors[i + 1].item_start if i + 1 < len(anchors) else region_end
        k = bisect_right(stops, anchor.end)
        if k < len(stops) and stops[k] < end:
            end = stops[k]
        ends.append(max(end, anchor.end))
    return ends


def _read_items(
    text: str,
    anchors: list[_Anchor],
    layout: _layout.Layout,
    known: set[str],
    names: NameIndex,
    reading: TextReading,
    per_code: dict[str, list[SlotAnswer]],
) -> None:
    ends = _item_ends(text, anchors, len(text), layout)
    for anchor, end in zip(anchors, ends, strict=True):
        slot = read_answer_slot(text[anchor.end : end], names, tagged=anchor.tag is not None)
        if anchor.tag is not None:
            slot = _with_tag(anchor.tag, slot)
        if anchor.name and not slot.echoed_name:
            slot = SlotAnswer(slot.value, slot.status, slot.detail, anchor.name, slot.rationale,
                               slot.source)  # fmt: skip
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
        _note_rationale(anchor.code, slot.rationale, reading)


def _with_tag(tag: SlotAnswer, body: SlotAnswer) -> SlotAnswer:
    """The tag before a code and the answer after it must agree."""
    if body.status == "ok" and body.source not in ("tail", "sentence"):
        if tag.status == "ok" and tag.value is not body.value:
            return SlotAnswer(None, "ambiguous", "tag and answer disagree", body.echoed_name,
                               body.rationale, "tag")  # fmt: skip
        if tag.status != "ok":
            return SlotAnswer(None, tag.status, tag.detail, body.echoed_name, body.rationale, "tag")
        return body
    if body.status == "ambiguous" and body.source not in ("tail", "sentence"):
        return body
    return SlotAnswer(tag.value, tag.status, tag.detail, body.echoed_name, body.rationale, "tag")


def _combine(code: str, slots: list[SlotAnswer], problems: list[str]) -> bool | None:
    own = [s for s in slots if not s.weak]
    if not any(s.status == "ok" for s in own):
        # A section's polarity speaks only for items that gave no answer of their own.
        if any(s.status in ("unclear", "ambiguous") for s in own):
            slots = own
    else:
        slots = own
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


def _read_task_line(text: str, reading: TextReading) -> None:
    found = _layout.find_task_line(text)
    if found is None:
        return
    slot = read_answer_slot(found[1], NO_NAMES, task_line=True)
    if slot.value is not None:
        reading.task_completed = slot.value
        reading.problems = [p for p in reading.problems if not p.startswith("B (task completed)")]
