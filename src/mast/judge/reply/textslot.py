"""Reading the answer slot of one mode: the words after a code that say yes, no or unknown.

:mod:`mast.judge.reply.textformat` finds which text belongs to which code; this module reads that
text. After the echoed mode name (known names and aliases of every code, the official
template's names, or a short label before ``:``/``|``/`` - ``) comes the **answer slot**:

- a first word that is an answer: yes/no/true/false/present/absent/not present and the
  symbols ✅ ❌ ✓ ✗; "Present: no", "Detected = false", "present? no" read the value after
  the label (the label word is not the answer); "unclear", "n/a", "cannot be determined"
  give ``None``, and so do "yes/no", "yes or no" (an unfilled template) and "yes?";
- else an explicit label in the item (``Answer: yes``, ``Verdict: no``, ``Present: yes``,
  ``→ yes``, ``(yes)``); labels that disagree give ``None``;
- else an answer word that ends the item's first paragraph.

A first word that runs on into a sentence ("no tests were run") is marked as such: it gives
way to an explicit label later in the item and never overrides a tag written before the code.

>>> from mast.taxonomy import load_taxonomy
>>> names = NameIndex(load_taxonomy())
>>> read_answer_slot(" Ignored Other Agent's Input: **Present:** no", names).value
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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

CODE = re.compile(r"(?<![\w.])(\d{1,2}\.\d{1,2})(?![\w]|\.\d)")
TRUE_WORDS = {"yes", "true", "present", "detected", "observed", "found", "\u2705", "\u2714",
         "\u2714\ufe0f", "\u2713", "\u2611", "\u2611\ufe0f"}  # fmt: skip
FALSE_WORDS = {"no", "false", "absent", "not present", "not detected", "not observed", "not found",
          "\u274c", "\u2717", "\u2718", "\u2716", "\u2716\ufe0f", "\u2610"}  # fmt: skip
# Longer alternatives first: "not present" before "no", "none" before "no".
ANSWER_WORDS = (
    r"not\s+present|not\s+detected|not\s+observed|not\s+found|not\s+applicable|not\s+sure"
    r"|not\s+clear|n/a|yes|none|no|true|false|present|absent|detected|observed|unclear"
    r"|unknown|uncertain|unsure|maybe|possibly|partially|partial|ambiguous|undetermined"
    r"|indeterminate|cannot\s+(?:be\s+)?determined?|can't\s+(?:tell|determine)"
    r"|\u2705|\u2714\ufe0f?|\u2713|\u2611\ufe0f?|\u274c|\u2717|\u2718|\u2716\ufe0f?|\u2610|\u2612"
)
_ANSWER = re.compile(rf"(?P<word>{ANSWER_WORDS})(?!\w)", re.IGNORECASE)
_YES_NO = r"(?:yes|no|true|false)"
_VALUE = r"(?:yes|no|true|false|not\s+present|not\s+detected|absent|present)"
# "Present: No", "Detected = false", "present? no", "Found - yes": the label is not the answer.
_LABEL_WORDS = (
    r"present|detected|found|observed|identified|exists|occurred|answer|final\s+answer"
    r"|verdict|result|label|decision|status|value|judg(?:e)?ment|assessment|failure\s+present"
)
_LABELLED = re.compile(
    rf"[\"']?(?:{_LABEL_WORDS})[\"']?(?:\s*\?\s*|\s*[:=]\s*|\s+[-–—]\s*|\s+is\s+)"
    rf"[(<\"']?\s*(?P<value>{_VALUE})(?!\w)",
    re.IGNORECASE,
)
# "yes/no", "yes or no", "<yes or no>": a second, opposite answer right after the first. A
# slash or bar always pairs two answers; after a comma, "or" or "and" the second word must
# close the slot, so that "Yes, no tests were run" still reads as yes.
_BOTH = re.compile(
    rf"\s*(?:[/\\|]\s*(?P<paired>{_YES_NO})\b"
    rf"|(?:,|\bor\b|\band\b)\s*(?P<other>{_YES_NO})\b(?=[ \t]*(?:[\n.,;:)\]>]|$)))",
    re.IGNORECASE,
)
_STRONG_LABEL = re.compile(
    rf"\b(?:(?:final\s+)?answer|verdict|present|detected)[\"']?\s*[:=?]\s*\(?\s*({_YES_NO})\b",
    re.IGNORECASE,
)
_ANY_LABEL = re.compile(
    rf"(?<!\w)[\"']?(?:(?:final\s+)?answer|verdict|present|detected|found|observed|label|decision"
    rf"|result|status)[\"']?\s*[:=?]\s*[(\"']?\s*({_VALUE})\b"
    rf"|(?:→|->|=>)\s*({_YES_NO})\b|\(\s*({_YES_NO})\s*\)",
    re.IGNORECASE,
)
_TAIL = re.compile(rf"\b({_YES_NO})\W*$", re.IGNORECASE)
_TAIL_BOTH = re.compile(rf"\b{_YES_NO}\s*(?:/|\\|\||,|\bor\b|\band\b)\s*$", re.IGNORECASE)
LEAD_PUNCT = re.compile(r"[\s.,;)\]:(\[\-–—|=<>#\"']*")
# An unknown echoed name: a short phrase without sentence punctuation before a separator.
_SEPARATOR_NAME = re.compile(r"([^\n:|=;.!?]{1,80}?)\s*(?::|=|\||\s[-–—]\s)")


# A code in the middle of a line answers only if an answer closes right after it: in
# "3.2: no check was run" the "no" is part of a sentence, in "3.2: no; 3.3: yes" it is not.
CLOSES = r"(?=[ \t]*(?:[.,;:!)\]|\n]|$|[-–—(]|\d{1,2}\.\d))"

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


@dataclass(frozen=True)
class SlotAnswer:
    value: bool | None
    status: str  # "ok" | "missing" | "unclear" | "ambiguous"
    detail: str = ""
    echoed_name: str | None = None
    rationale: str = ""
    source: str = "first"  # "first" | "label" | "tail" | "nested" | "tag" | "table" | "list"
    weak: bool = False


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
        # The same pattern, case-sensitive: every literal in it is lower-case ASCII, so on
        # a lower-cased ASCII text it matches where the other matches on the original text
        # (same positions), and it scans many times faster; its alternatives are factored
        # by their leading letters (see _factored), which halves the time again.
        self._lowered = re.compile(rf"(?:{_factored(patterns)})(?![A-Za-z0-9])")

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """A known name starting exactly at ``pos``."""
        return self._regex.match(text, pos)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """The first known name anywhere in ``text`` (from ``pos`` on)."""
        return self._regex.search(text, pos)

    def search_folded(self, folded: str, pos: int = 0) -> re.Match[str] | None:
        """:meth:`search` from ``pos``, on ``fold_case(text)``: the same matches (spans)."""
        return self._lowered.search(folded, pos)

    def codes_for(self, name: str) -> set[str]:
        """Codes a name belongs to (empty when unknown)."""
        return self._codes.get(_squash(name), set())


# The non-ASCII characters that a case-insensitive pattern matches to an ASCII letter
# (dotted and dotless i, long s, Kelvin sign), as lower-cased text should have them.
CASELESS_ASCII = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}


def fold_case(text: str) -> str | None:
    """``text`` lower-cased, the same length, so that a case-sensitive pattern whose
    literals are lower-case ASCII (classes such as ``\\w``, ``\\s``, ``\\d`` and
    ``[A-Za-z0-9]`` allowed) matches it exactly where the case-insensitive one matches
    ``text``, and much faster (an IGNORECASE alternation defeats the regex engine's skip
    to a first character). None when lower-casing would change the length.

    >>> fold_case("Step REPETITION")
    'step repetition'
    """
    if text.isascii():
        return text.lower()
    folded = text.replace("\u0130", "i").lower()
    if "\u0131" in folded or "\u017f" in folded:
        folded = folded.replace("\u0131", "i").replace("\u017f", "s")
    return folded if len(folded) == len(text) else None


def _squash(name: str) -> str:
    return "".join(_ALNUM_RUN.findall(name.lower()))


_ALNUM_RUN = re.compile(r"[a-z0-9]+")


def _factored(alternatives: list[str]) -> str:
    """``"|".join(alternatives)`` with common leading letters taken out: ``ab|ac|b`` ->
    ``a(?:b|c)|b``. Only literal letters and digits are factored, and alternatives that
    start with different ones cannot match at the same place, so grouping them changes no
    match; inside a group the order stays as given. The regex engine then tests one
    letter per group instead of one per alternative at each position of the text."""
    if len(alternatives) < 2 or not all(a[:1].isalnum() and a[:1].isascii() for a in alternatives):
        return "|".join(alternatives)
    groups: dict[str, list[str]] = {}
    for a in alternatives:
        groups.setdefault(a[0], []).append(a[1:])
    parts = []
    for first, rests in groups.items():
        if len(rests) == 1:
            parts.append(first + rests[0])
        else:
            parts.append(f"{first}(?:{_factored(rests)})")
    return "|".join(parts)


def _name_pattern(name: str) -> str:
    # "Ignored Other Agent's Input" must also match "Agents' Input" and "Agent’s Input".
    tokens = re.findall(r"[a-z0-9]+", name.lower())
    return r"[\W_]*".join(re.escape(t) for t in tokens)


_PUNCTUATION = {"\u00a0": " ", "\uff1a": ":"}
_PUNCTUATION |= dict.fromkeys("\u2018\u2019\u201b\u2032", "'") | dict.fromkeys(
    "\u201c\u201d\u201e", '"'
)
_ODD_PUNCTUATION = re.compile("[" + "".join(_PUNCTUATION) + "]")
_STAR_BULLET = re.compile(r"^([ \t]*)\*(?=[ \t])", re.MULTILINE)
# Lookbehinds after the literal they guard (same matches): every alternative then starts
# with a literal character, so the regex engine can skip ahead to one.
_EMPHASIS = re.compile(r"\*+|`+|~~|__(?<!\w__)|__(?!\w)")
_HTML_EMPHASIS = re.compile(r"</?(?:b|strong|em|i|u)>", re.IGNORECASE)
_FM_PREFIX = re.compile(r"\bFM[-\s_]?(?=\d{1,2}\.\d)")
_LETTER_CODE = re.compile(r"([ABC])(?<!\w[ABC])\.(?=\d{1,2}\.\d)")


_PAIRED_EMPHASIS = re.compile(r"~~|__(?<!\w__)|__(?!\w)")


def _drop_emphasis(text: str) -> str:
    """``_EMPHASIS.sub("", text)``: the ``~~`` and ``__`` marks by a regex on the text as it
    is (removing one can bring two characters of another together), then every ``*`` and
    backtick by plain replacement, as the regex removes them wherever they are (what
    their removal brings together, the regex never removes either)."""
    if "~~" in text or "__" in text:
        text = _PAIRED_EMPHASIS.sub("", text)
    return text.replace("*", "").replace("`", "")


def normalize_markup(text: str) -> str:
    """Drop markdown emphasis and unify punctuation so that the layout rules see plain text.

    >>> normalize_markup("* **1.3** Step Repetition: \u201cyes\u201d")
    '- 1.3 Step Repetition: "yes"'
    """
    # Each rewrite runs only on a text that holds what it rewrites (the echo search
    # normalizes every block of a trace, most of which hold none of it).
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii() and _ODD_PUNCTUATION.search(text):
        text = _ODD_PUNCTUATION.sub(lambda m: _PUNCTUATION[m.group()], text)
    if "*" in text:
        # A "*" bullet is a bullet; other asterisks are emphasis.
        text = _STAR_BULLET.sub(r"\1-", text)
    if "*" in text or "`" in text or "~~" in text or "__" in text:
        text = _drop_emphasis(text)
    if "<" in text:
        text = _HTML_EMPHASIS.sub("", text)
    # "FM-1.3" / "FM 1.3" / "FM1.3" / "FM_1.3" are the same code; "C.1.1" is "C. 1.1".
    if "FM" in text:
        text = _FM_PREFIX.sub("", text)
    if "A." in text or "B." in text or "C." in text:
        text = _LETTER_CODE.sub(r"\1. ", text)
    return text


def read_answer_slot(
    segment: str, names: NameIndex, *, task_line: bool = False, tagged: bool = False
) -> SlotAnswer:
    """Read the answer that belongs to one code (or to the B line) from its segment."""
    pos, echoed = _skip_name(segment, names)
    value, status, detail, rationale, source = _read_slot(segment[pos:], task_line=task_line)
    return SlotAnswer(value, status, detail, echoed, rationale, source)


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
        if (
            label
            and not _ANSWER.match(label.group(1).strip())
            and not _LABELLED.match(segment, pos)
        ):
            pos = label.end()
    return _skip_punct(segment, pos), echoed


def _skip_punct(text: str, pos: int) -> int:
    match = LEAD_PUNCT.match(text, pos)
    return match.end() if match else pos


_Slot = tuple["bool | None", str, str, str, str]


def _read_slot(rest: str, *, task_line: bool, nested: bool = False) -> _Slot:
    labelled = _LABELLED.match(rest)
    if labelled:
        value_text = rest[labelled.start("value") :]
        first = _ANSWER.match(value_text)
        if first is not None:
            return (*_read_first_word(value_text, first), "label")
    first = _ANSWER.match(rest)
    # "none → No": a bare "none" is no answer when an explicit label follows it.
    if first and not (first.group("word").lower() == "none" and _ANY_LABEL.search(rest)):
        value, status, detail, why = _read_first_word(rest, first)
        # "No tests were run": a first word that runs on into a sentence is a weaker answer.
        closed = re.match(CLOSES, rest[first.end() :]) is not None
        if closed:
            return value, status, detail, why, "first"
        # ...and gives way to an explicit label later in the item ("no tests ran → Yes").
        labels = [_read_labelled(rest, m) for m in _ANY_LABEL.finditer(rest, first.end())]
        if labels and all(s[1] == "ok" for s in labels) and len({s[0] for s in labels}) == 1:
            return labels[0][0], "ok", "", why, "label"
        return value, status, detail, why, "sentence"
    heading, _, below = rest.partition("\n")
    if below and _looks_like_heading(heading):
        # "### B. Task completed\nNo" / "#### 1.3 Custom Name\nYes": the answer opens the next line.
        inner = _read_slot(below.lstrip(" \t-*>:"), task_line=task_line, nested=True)
        if inner[1] != "missing":
            return (*inner[:4], "nested")
    labels = [_read_labelled(rest, m) for m in _ANY_LABEL.finditer(rest)]
    if labels:
        why = _clean_rationale(rest)
        for slot in labels:
            if slot[1] != "ok":
                return slot[0], slot[1], slot[2], why, "label"
        if len({slot[0] for slot in labels}) > 1:
            return None, "ambiguous", "gave both yes and no", why, "label"
        return labels[0][0], "ok", "", why, "label"
    if task_line:
        if _TASK_NOT_DONE.search(rest):
            return False, "ok", "", _clean_rationale(rest), "first"
        if _TASK_DONE.search(rest):
            return True, "ok", "", _clean_rationale(rest), "first"
    paragraph = rest.strip().split("\n\n", 1)[0].strip()
    ending = _TAIL.search(paragraph)
    if ending:
        if _TAIL_BOTH.search(paragraph[: ending.start()]):
            return None, "ambiguous", "gave both yes and no", _clean_rationale(rest), "tail"
        return ending.group(1).lower() in TRUE_WORDS, "ok", "", _clean_rationale(rest), "tail"
    if rest.strip():
        # A nested reading that finds nothing is dropped by its caller: no rationale needed
        # (cleaning it at every level of a long run of heading-like lines was quadratic).
        why = "" if nested else _clean_rationale(rest)
        return None, "missing", "no yes/no answer found", why, "first"
    return None, "missing", "no answer given", "", "first"


def _read_labelled(rest: str, label: re.Match[str]) -> tuple[bool | None, str, str, str]:
    # "Answer: yes" / "→ yes" / "(yes)": read the word after the label like a first word,
    # so that "Answer: yes/no" stays ambiguous.
    group = next(i for i, g in enumerate(label.groups(), start=1) if g)
    tail = rest[label.start(group) :]
    first = _ANSWER.match(tail)
    if first is None:  # cannot happen: the label's group is an answer word
        return None, "missing", "no yes/no answer found", ""
    # Callers read the answer of each label, never its rationale (cleaning one per label
    # of a long item was quadratic).
    return _read_first_word(tail, first, rationale=False)


def _read_first_word(
    rest: str, first: re.Match[str], *, rationale: bool = True
) -> tuple[bool | None, str, str, str]:
    word = " ".join(first.group("word").lower().split())
    after = rest[first.end() :]
    why = _clean_rationale(after) if rationale else ""
    if word not in TRUE_WORDS and word not in FALSE_WORDS:
        return None, "unclear", f"answered {word!r}", why
    value = word in TRUE_WORDS
    both = _BOTH.match(after)
    if both and ((both.group("paired") or both.group("other")).lower() in TRUE_WORDS) != value:
        said = rest[: first.end() + both.end()].strip()
        return None, "ambiguous", f"answered {said!r}", why
    if after.lstrip().startswith("?"):
        return None, "unclear", f"answered {word!r} with a question mark", why
    if any((m.group(1).lower() in TRUE_WORDS) != value for m in _STRONG_LABEL.finditer(after)):
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


class _NoNames(NameIndex):
    # The B line has a label ("Whether the task is ... :") but no mode names.
    def __init__(self) -> None:
        self._codes = {}
        self._regex = re.compile(r"(?!)")


NO_NAMES: NameIndex = _NoNames()
