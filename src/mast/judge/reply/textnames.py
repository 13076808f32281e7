"""Mode names written without their codes: ``Disobey Task Specification: yes``.

Answers are read by code (:mod:`mast.judge.reply.textformat`), so a line that opens with a
mode's name and no code gets that code written in front of the name
(:func:`code_the_names`) before it is read. The name must open the line (after bullets,
numbering, heading marks, table bars or a checkbox) and be followed by a separator, an
answer slot or the end of the line: a name in the middle of prose is not an answer.

A name is matched against every spelling the taxonomy knows (its names and aliases, and the
names of the MAST prompt template), tolerant of case and punctuation; when no spelling
matches exactly, one close spelling (a typo such as "Infromation Withholding", similarity
>= :data:`NAME_SIMILARITY` of the letters) is accepted. A name that fits two modes is
left alone and reported: the mode stays unknown, it is never a guess.

>>> from mast.taxonomy import load_taxonomy
>>> from mast.judge.reply.textslot import NameIndex
>>> tax = load_taxonomy()
>>> code_the_names("- Step Repetition: yes\\nStep repetition is common.", tax, NameIndex(tax))[0]
'- 1.3 Step Repetition: yes\\nStep repetition is common.'
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from mast.judge.reply.textslot import CODE, NameIndex, fold_case
from mast.taxonomy import Taxonomy

__all__ = ["NAME_SIMILARITY", "code_the_names", "may_name_a_mode"]

NAME_SIMILARITY = 0.9
"""Least letter similarity (difflib ratio) for a misspelt name to count as a mode's."""

# What may come before the name on its line.
_LEAD = re.compile(
    r"[ \t>|#]*(?:(?:[-+*\u2022]|\d{1,2}[.)]|[a-zA-Z][.)])[ \t]+)?[ \t>|#]*"
    r"(?:(?:\[[ \t]*[xX\u2713\u2714\u2717\u2718]?[ \t]*\]|\u2705|\u274c)[ \t]*)?"
    r"(?:(?:failure[ \t]+)?mode[ \t]*:?[ \t]+)?[\"'(\[]?[ \t]*",
    re.IGNORECASE,
)
# What may follow the name: a separator, an answer in brackets, or the end of the line.
_AFTER = re.compile(r"[\"')\]]?[ \t]*(?:[:=|?\-\u2013\u2014(\[]|\*|$)")
# The code written right after the name.
_CODE_AFTER = re.compile(r"[ \t]*[(\[\-\u2013\u2014:,]?[ \t]*(?:FM[-\s]?)?\d{1,2}\.\d{1,2}(?![\d])")
# A misspelt name: letters and spaces up to the separator.
_LOOSE_NAME = re.compile(
    r"([A-Za-z][A-Za-z'\u2019\- /&]{6,80}?)[ \t]*(?=[:=|?(\[]|[ \t][-\u2013\u2014][ \t]|$)"
)


def _squash(name: str) -> str:
    return "".join(_ALNUM_RUN.findall(name.lower()))


_ALNUM_RUN = re.compile(r"[a-z0-9]+")


def _close_codes(name: str, spellings: dict[str, set[str]]) -> set[str]:
    # Log lines repeat their labels ("Requirement already satisfied: …" on every line):
    # each name (as written, and squashed) is compared with the spellings once.
    memo = _CLOSE_MEMO.get(id(spellings))
    if memo is None or memo[0] is not spellings:
        if len(_CLOSE_MEMO) >= 8:
            _CLOSE_MEMO.clear()
        memo = _CLOSE_MEMO[id(spellings)] = (spellings, {})
    known = memo[1].get(name)
    if known is None:
        squashed = _squash(name)
        known = memo[1].get(squashed)
        if known is None:
            known = frozenset(_compare(squashed, spellings))
        if len(memo[1]) >= _MAX_CLOSE_MEMO:
            memo[1].clear()
        memo[1][name] = memo[1][squashed] = known
    return set(known)


# Per spellings dict (by identity, with the dict kept so that its id is not reused): the
# codes close to each squashed name.
_CLOSE_MEMO: dict[int, tuple[dict[str, set[str]], dict[str, frozenset[str]]]] = {}
_MAX_CLOSE_MEMO = 4096


def _compare(squashed: str, spellings: dict[str, set[str]]) -> set[str]:
    codes: set[str] = set()
    for spelling, owners in spellings.items():
        if abs(len(spelling) - len(squashed)) > 4:
            continue
        matcher = SequenceMatcher(None, squashed, spelling)
        # The two upper bounds of ratio() first (cheap), as difflib.get_close_matches does.
        if (
            matcher.real_quick_ratio() >= NAME_SIMILARITY
            and matcher.quick_ratio() >= NAME_SIMILARITY
            and matcher.ratio() >= NAME_SIMILARITY
        ):
            codes |= owners
    return codes


def _spellings(taxonomy: Taxonomy, names: NameIndex) -> dict[str, set[str]]:
    # Built once per taxonomy and index (both frozen; by identity, as the other indexes of
    # the readers are), so that _close_codes can remember its comparisons.
    key = (id(taxonomy), id(names))
    found = _SPELLINGS.get(key)
    if found is None or found[0] is not taxonomy or found[1] is not names:
        if len(_SPELLINGS) >= 8:
            _SPELLINGS.clear()
        found = _SPELLINGS[key] = (taxonomy, names, _make_spellings(taxonomy, names))
    return found[2]


_SPELLINGS: dict[tuple[int, int], tuple[Taxonomy, NameIndex, dict[str, set[str]]]] = {}


def _make_spellings(taxonomy: Taxonomy, names: NameIndex) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mode in taxonomy:
        for name in (mode.name, *mode.aliases):
            out.setdefault(_squash(name), set()).update(names.codes_for(name) or {mode.code})
    return out


def code_the_names(text: str, taxonomy: Taxonomy, names: NameIndex) -> tuple[str, list[str]]:
    """``text`` with the code written before every mode name that opens a line without a
    code, and notes on names that fit several modes (left unread)."""
    known = set(taxonomy.codes)
    out: list[str] = []
    problems: list[str] = []
    spellings: dict[str, set[str]] | None = None
    for line in text.splitlines(keepends=True):
        if not line.strip():
            out.append(line)
            continue
        lead = _LEAD.match(line)
        pos = lead.end() if lead else 0
        if CODE.search(line, 0, pos) or CODE.match(line, pos):
            out.append(line)  # the line starts with its code already
            continue
        match = names.match(line, pos)
        if match is not None and _CODE_AFTER.match(line, match.end()):
            out.append(line)  # "Step Repetition (1.3): yes": the code follows the name
            continue
        if match is not None and _AFTER.match(line, match.end()):
            written, codes = match.group(0), names.codes_for(match.group(0)) & known
        else:
            loose = _LOOSE_NAME.match(line, pos)
            if loose is None or not _AFTER.match(line, loose.end(1)):
                out.append(line)
                continue
            if spellings is None:
                spellings = _spellings(taxonomy, names)
            written, codes = loose.group(1), _close_codes(loose.group(1), spellings) & known
            if not codes:
                out.append(line)
                continue
        if len(codes) != 1:
            problems.append(
                f"{written.strip()!r} fits modes {', '.join(sorted(codes))}; not read "
                "(write the code)"
            )
            out.append(line)
            continue
        out.append(f"{line[:pos]}{next(iter(codes))} {line[pos:]}")
    return "".join(out), problems


# A line that opens with letters, then a separator and an answer word: maybe a misspelt name.
_NAMED_ANSWER = re.compile(
    r"^[ \t>|#*\-+\u2022\d.)\[\]xX]*[A-Za-z][A-Za-z'\u2019\- /&]{6,80}?[ \t]*[\"')\]]?[ \t]*"
    r"(?:[:=|?\-\u2013\u2014(\[])[ \t*\"'(\[|]*(?:yes|no|true|false|present|absent|detected"
    r"|not\b|x\b|[\u2705\u274c\u2713\u2714\u2716\u2717\u2718\u2610\u2611\u2612]"
    r"|ja\b|nein|oui|non\b|s[i\u00ed]\b|sim\b|n[a\u00e3]o\b|nee\b|[\uac00-\ud7a3]"
    r"|[\u4e00-\u9fff]|[\u3040-\u30ff])",
    re.MULTILINE | re.IGNORECASE,
)


def may_name_a_mode(text: str, names: NameIndex, taxonomy: Taxonomy) -> bool:
    """False only when no line of ``text`` could open with a mode name and a separator
    (a cheap test for the echo search, which reads every block of a trace)."""
    if _NAMED_ANSWER.search(text) is not None:
        return True
    # code_the_names' reading of a misspelt name, whatever comes before it (the lead) or
    # after it (a separator, or the end of the line: "No or Incomplete Verifcation yes").
    # Every line is read as code_the_names reads it (its lead, then a loose name there):
    # two anchored matches per line cost less than one search for a lead and a loose name
    # at any line start, whose backtracking tries every shorter lead on every line.
    spellings: dict[str, set[str]] | None = None
    for line in text.split("\n"):
        if not line or not (line[0].isalnum() or line[0] in _LEAD_FIRST):
            continue  # the lead takes nothing and no name starts here (a "{", a "}", …)
        lead = _LEAD.match(line)
        loose = _LOOSE_NAME.match(line, lead.end() if lead else 0)
        if loose is None:
            continue
        if spellings is None:
            spellings = _spellings(taxonomy, names)
        if _close_codes(loose.group(1), spellings) & set(taxonomy.codes):
            return True
    # A known name counts only where code_the_names would read it: opening its line.
    folded = fold_case(text)  # the same matches as names.search, found much faster
    pos = 0
    for _ in range(_MAX_NAME_HITS):
        hit = names.search(text, pos) if folded is None else names.search_folded(folded, pos)
        if hit is None:
            return False
        start = hit.start()
        line_start = text.rfind("\n", 0, start) + 1
        lead = _LEAD.match(text, line_start)
        if lead is not None and lead.end() >= start:
            return True
        pos = hit.end()
    return True  # many mentions: let the full reading decide


_MAX_NAME_HITS = 50
# The first characters of a line where _LEAD can take something, besides letters and digits.
_LEAD_FIRST = frozenset(" \t>|#-+*\u2022[\u2705\u274c\"'(")
