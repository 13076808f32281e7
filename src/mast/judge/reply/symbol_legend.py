"""Honour a reply's own key for check marks before the text format is read.

The text reader takes ✅ ✔ ✓ ☑ as "present" and ❌ ✗ ✘ ✖ as "absent", the way most replies
use them. Some replies use them the other way, as a checklist does (✅: this check passed,
no failure), and say so in a legend: "Legend: ✅ = not observed, ❌ = failure present". Read
with the usual meaning, every mode of such a reply would be inverted. :func:`apply_legend`
finds such a legend and rewrites each mark it explains into the usual mark for that
meaning, so the readers need no second set of symbols. A legend that gives the usual
meaning, or that cannot be read, changes nothing.

>>> text, note = apply_legend("Legend: ✅ = not present, ❌ = present\\n1.1 ✅\\n1.2 ❌")
>>> text.splitlines()[1:]
['1.1 ❌', '1.2 ✅']
>>> note
'a legend in the answer gives ✅ the meaning absent and ❌ the meaning present: read so'
"""

from __future__ import annotations

import re

__all__ = ["apply_legend"]

_YES_MARKS = ("✅", "✔️", "✔", "✓", "☑️", "☑")
_NO_MARKS = ("❌", "✗", "✘", "✖️", "✖")
_MARK = "|".join(re.escape(m) for m in (*_YES_MARKS, *_NO_MARKS))
# "✅ = not present", "❌: failure detected", "✓ – passed", "✅ means no failure", "✔ → OK"
_ENTRY = re.compile(
    rf"(?P<mark>{_MARK})\s*(?:=|:|–|—|-|→|->|means|indicates|denotes|is)\s*"
    r"(?P<meaning>[^,;|()\n✅✔✓☑❌✗✘✖]{1,60})",
    re.IGNORECASE,
)
# A line is a legend when it says so, or explains two different marks, or explains one
# in words ("✅ means …"): "Overall: ❌ - the run failed" is a verdict, not a legend.
_LEGEND_WORD = re.compile(r"\b(?:legend|key|symbols?|notation|marks?)\b", re.IGNORECASE)
_WORD_SEPARATOR = re.compile(r"\s*(?:means|indicates|denotes)\b", re.IGNORECASE)
_ABSENT = re.compile(
    r"\b(?:no|not|none|absent|pass(?:ed|es)?|ok(?:ay)?|fine|clean|without|negative|false"
    r"|did\s+not|didn't|does\s+not|doesn't)\b",
    re.IGNORECASE,
)
_PRESENT = re.compile(
    r"\b(?:yes|present|detected|observed|found|fail(?:ed|s|ure)?|issue|problem|violat\w*"
    r"|occur\w*|exhibit\w*|positive|true)\b",
    re.IGNORECASE,
)


def _meaning(phrase: str) -> bool | None:
    if _ABSENT.search(phrase):  # first: "no failure" is absence, though it says failure
        return False
    if _PRESENT.search(phrase):
        return True
    return None


def apply_legend(text: str) -> tuple[str, str | None]:
    """``text`` with the marks a legend inverts rewritten to their usual meaning, and a note
    saying so (``None`` when nothing was rewritten)."""
    if not any(m in text for m in ("✅", "✔", "✓", "☑", "❌", "✗", "✘", "✖")):
        return text, None
    declared: dict[str, bool] = {}
    legend_lines: set[int] = set()
    lines = text.split("\n")
    for number, line in enumerate(lines):
        entries = list(_ENTRY.finditer(line))
        # A legend line explains marks and answers no mode: a line with a mode code
        # ("1.1 ✅ - no failure") is an answer, whatever its words say.
        if not entries or re.search(r"(?<![\w.])[1-9]\.\d{1,2}(?![\w.])", line):
            continue
        explained = {e.group("mark") for e in entries}
        worded = any(_WORD_SEPARATOR.match(line, e.end("mark")) for e in entries)
        if len(explained) < 2 and not worded and not _LEGEND_WORD.search(line):
            continue
        for entry in entries:
            meaning = _meaning(entry.group("meaning"))
            mark = entry.group("mark")
            if meaning is None or declared.get(mark, meaning) is not meaning:
                return text, None  # unreadable or contradictory: keep the usual meaning
            declared[mark] = meaning
        legend_lines.add(number)
    inverted = {m: v for m, v in declared.items() if v is not (m in _YES_MARKS)}
    if not inverted:
        return text, None
    # One family explained the other way round ("✅ means not observed"): the other
    # family, left unexplained, means the opposite (❌: observed).
    for family, other in ((_YES_MARKS, _NO_MARKS), (_NO_MARKS, _YES_MARKS)):
        if any(m in inverted for m in family) and not any(m in declared for m in other):
            inverted.update({m: m not in _YES_MARKS for m in other})
    swap = {m: ("✅" if v else "❌") for m, v in inverted.items()}
    pattern = re.compile("|".join(re.escape(m) for m in sorted(swap, key=len, reverse=True)))
    out = [
        "" if number in legend_lines else pattern.sub(lambda m: swap[m.group(0)], line)
        for number, line in enumerate(lines)
    ]
    said = " and ".join(
        f"{m} the meaning {'present' if v else 'absent'}" for m, v in declared.items()
    )
    return "\n".join(out), f"a legend in the answer gives {said}: read so"
