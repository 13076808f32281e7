"""Two more ways of writing an answer, rewritten into ones the text reader knows.

- **Yes and no in other languages** (:func:`english_answers`): German, French, Spanish,
  Portuguese, Italian, Dutch, Korean, Chinese and Japanese answer words written where an
  answer goes (after ``:``, ``=``, ``|``, a dash, or in a table cell) and followed by the end
  of the line, punctuation or a dash become ``yes`` / ``no``. Elsewhere they are left alone
  ("non-trivial" is not an answer).
- **A label over a line of codes** (:func:`join_label_lists`): "None of these:" (or "Not
  present:", "Absent:") on its own line and the codes on the next line are read as one
  "label: codes" line, as if written so.
- **Marks in two columns** (:func:`mark_columns`): a table whose header has one column for
  "present" (Present, Yes, Detected, Observed …) and one for "absent" (Absent, No, Not
  present …) and rows with a mark (``x``, ``✓``, ``✔``, ``✅``, ``●``, ``•``, ``*``) in one of
  them becomes a table with one answer column. A row with marks in both columns or in
  neither is ``unclear`` (unknown), never a guess.

>>> english_answers("1.1 Disobey Task Specification: nein\\n1.3 Step Repetition: 예")
'1.1 Disobey Task Specification: no\\n1.3 Step Repetition: yes'
"""

from __future__ import annotations

import re

__all__ = ["english_answers", "join_label_lists", "mark_columns"]

_YES = ("ja", "vorhanden", "oui", "présent", "présente", "sí", "si", "presente", "sim",
        "예", "네", "있음", "是", "有", "存在", "はい", "あり", "有り")  # fmt: skip
_NO = ("nein", "nicht vorhanden", "non", "non présent", "absente", "no presente", "ausente",
       "não", "nee", "niet aanwezig", "아니오", "아니요", "아니", "없음", "否", "无", "無",
       "没有", "沒有", "不存在", "いいえ", "なし", "無し")  # fmt: skip
_WORDS = {w: "yes" for w in _YES} | {w: "no" for w in _NO}
_ALTERNATIVES = "|".join(re.escape(w) for w in sorted(_WORDS, key=len, reverse=True))
# Where an answer goes, the word, then what may end an answer.
_FOREIGN = re.compile(
    rf"(?P<lead>(?:[:=|\uff1a]|[ \t][-\u2013\u2014][ \t]?)[ \t*_\"'(\[\u300c]*)"
    rf"(?P<word>{_ALTERNATIVES})"
    r"(?=[ \t*_\"')\]\u300d]*"
    r"(?:$|[|.,;:!?()\[\]\u3002\uff0c\u3001\uff08\uff09\uff1a]|[ \t][-\u2013\u2014(]))",
    re.IGNORECASE | re.MULTILINE,
)


_ASCII_WORD = re.compile(
    r"\b(?:" + "|".join(re.escape(w) for w in _WORDS if w.isascii()) + r")\b", re.IGNORECASE
)


def english_answers(text: str) -> str:
    """``text`` with answer words of other languages, in answer position, as yes / no."""
    if text.isascii() and not _ASCII_WORD.search(text):
        return text
    return _FOREIGN.sub(lambda m: m.group("lead") + _WORDS[m.group("word").lower()], text)


_TRUE_HEADS = {"present", "yes", "detected", "observed", "found", "true", "y", "failure",
               "failed", "ja", "oui", "sí", "si", "예", "是", "はい"}  # fmt: skip
_FALSE_HEADS = {"absent", "no", "not present", "not detected", "not observed", "not found",
                "false", "n", "nein", "non", "아니오", "否", "いいえ", "ok", "pass",
                "passed"}  # fmt: skip
_MARKS = {"x", "\u2713", "\u2714", "\u2714\ufe0f", "\u2705", "\u25cf", "\u2022", "*", "+"}


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|") or stripped.count("|") < 3:
        return None
    return [c.strip().strip("*_` ").lower() for c in stripped.strip("|").split("|")]


def mark_columns(text: str) -> str:
    """``text`` with every two-column (present / absent) marked table rewritten to one
    answer column.

    >>> print(mark_columns("| Mode | Present | Absent |\\n|---|---|---|\\n| 1.1 | | x |"))
    | Mode | Answer |
    |---|---|
    | 1.1 | no |
    """
    if "|" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        head = _cells(lines[i])
        yes_at = no_at = None
        if head and i + 1 < len(lines) and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]):
            yes = [j for j, c in enumerate(head) if c in _TRUE_HEADS]
            no = [j for j, c in enumerate(head) if c in _FALSE_HEADS]
            if len(yes) == 1 and len(no) == 1:
                yes_at, no_at = yes[0], no[0]
        if head is None or yes_at is None or no_at is None:
            out.append(lines[i])
            i += 1
            continue
        keep = [j for j in range(len(head)) if j not in (yes_at, no_at)]
        out.append("| " + " | ".join([lines[i].strip().strip("|").split("|")[j].strip()
                                      for j in keep] + ["Answer"]) + " |")  # fmt: skip
        out.append("|" + "---|" * (len(keep) + 1))
        i += 2
        while i < len(lines) and (row := _cells(lines[i])) is not None:
            raw = lines[i].strip().strip("|").split("|")
            if len(row) != len(head):
                out.append(lines[i])
                i += 1
                continue
            marked_yes, marked_no = row[yes_at] in _MARKS, row[no_at] in _MARKS
            blank = {row[yes_at], row[no_at]} <= {"", "-", "\u2013"} | _MARKS
            answer = (
                "yes" if marked_yes and not marked_no
                else "no" if marked_no and not marked_yes
                else "unclear"
            )  # fmt: skip
            if not blank:
                answer = "unclear"  # something else than a mark: not ours to read
            out.append("| " + " | ".join([raw[j].strip() for j in keep] + [answer]) + " |")
            i += 1
    return "\n".join(out)


_LABEL_OVER_CODES = re.compile(
    r"^(?P<label>[ \t>#*_]*[^\W\d][^\n:|]{0,60}?[ \t*_]*:[ \t*_]*)\n[ \t]*"
    r"(?P<codes>(?:FM-?)?\d{1,2}\.\d{1,2}(?:[ \t]*(?:,|;|\band\b)[ \t]*(?:FM-?)?\d{1,2}\.\d{1,2})+"
    r"[ \t.]*)$",
    re.MULTILINE | re.IGNORECASE,
)


def join_label_lists(text: str) -> str:
    """``text`` with a label line followed by a line of codes joined into one line.

    >>> join_label_lists("None of these:\\n1.1, 1.2 and 2.3")
    'None of these: 1.1, 1.2 and 2.3'
    """
    if ":\n" not in text and ": \n" not in text:
        return text
    return _LABEL_OVER_CODES.sub(lambda m: f"{m.group('label').rstrip()} {m.group('codes')}", text)
