"""Matching a judge's quote against step text, for :mod:`mast.judge.reply.grounding`.

Both sides are normalised the same way before matching (:func:`norm`): case, runs of
whitespace, typographic quote marks and dashes, and escaping (a model that writes
``\\\\boxed`` or ``\\"`` for ``\\boxed`` or ``"``, or ``\\n`` for a line break, quotes the
same text). An ellipsis in a quote separates fragments that must all occur in order
(:func:`fragments_at`). A quote that is not found verbatim but shares at least
:data:`FUZZY_OVERLAP` of its words, in order, with one stretch of the step is
*near-verbatim* (:func:`near_verbatim`): a paraphrase or a misremembered quote, reported as
such and never evidence.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

__all__ = [
    "FUZZY_OVERLAP",
    "MAX_ELLIPSIS_GAP",
    "fragments_at",
    "near_verbatim",
    "norm",
    "quote_parts",
]

MAX_ELLIPSIS_GAP = 300
"""Most characters an ellipsis in a quote may stand for between two fragments."""

FUZZY_OVERLAP = 0.9
"""Least share of a quote's words, in order, that one stretch of a step must hold for the
quote to be near-verbatim (``fuzzy``)."""

# A near-verbatim quote needs this many words: on fewer, 90% means all of them.
_MIN_FUZZY_WORDS = 6
# Start positions tried per step (bounded: a step can be long, a quote appear often).
_MAX_FUZZY_STARTS = 400

_QUOTE_CHARS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2032": "'",
                              "\u2013": "-", "\u2014": "-", "\u00a0": " ", "`": "'"})  # fmt: skip
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.+|…|\[\s*(?:\.\.\.|…)\s*\])\s*")
_WORD = re.compile(r"\w+")


def norm(text: str) -> str:
    """``text`` lower-cased, with whitespace collapsed, quote marks and dashes unified and
    runs of backslashes taken as one.

    >>> norm("The  \\u201cfinal\\u201d answer: \\\\\\\\boxed{3}")
    'the "final" answer: \\\\boxed{3}'
    """
    text = text.translate(_QUOTE_CHARS)
    # Escapes a model adds (or drops) when it writes a quote inside JSON: \\ -> \,
    # \" -> ", a literal \n or \t -> whitespace.
    if "\\" in text:
        text = re.sub(r"\\[nrt](?![a-z])", " ", text)
        text = re.sub(r"\\+", r"\\", text)
        text = text.replace('\\"', '"').replace("\\'", "'")
    return " ".join(text.casefold().split())


def quote_parts(quote: str) -> list[str]:
    """The fragments of ``quote`` between ellipses, normalised and trimmed."""
    return [p for p in (norm(x).strip(" \"'.,;:") for x in _ELLIPSIS.split(quote)) if p]


def fragments_at(parts: list[str], haystack: str, before: int | None = None) -> bool:
    """All ``parts`` in ``haystack`` in order, each close enough after the previous one,
    the first starting before ``before`` (any start when None)."""
    limit = len(haystack) if before is None else before
    start = haystack.find(parts[0])
    while start != -1 and start < limit:
        pos, ok = start + len(parts[0]), True
        for part in parts[1:]:
            found = haystack.find(part, pos)
            if found == -1 or found - pos > MAX_ELLIPSIS_GAP:
                ok = False
                break
            pos = found + len(part)
        if ok:
            return True
        start = haystack.find(parts[0], start + 1)
    return False


def near_verbatim(quote: str, haystack: str) -> float | None:
    """The share of ``quote``'s words found in order in the best stretch of ``haystack``
    (both normalised), when it is at least :data:`FUZZY_OVERLAP`; else None.

    >>> near_verbatim("the unit tests pass on every platform that we support today",
    ...               "said: the unit tests passed on every platform that we support today")
    0.9090909090909091
    >>> near_verbatim("the tests pass", "the tests pass") is None  # too short to tell
    True
    """
    words = _WORD.findall(quote)
    if len(words) < _MIN_FUZZY_WORDS:
        return None
    hay = _WORD.findall(haystack)
    heads = set(words[:3])
    n = len(words)
    best = 0
    starts = [i for i, w in enumerate(hay) if w in heads][:_MAX_FUZZY_STARTS]
    for i in starts:
        window = hay[max(0, i - 2) : i + n + 3]
        matcher = SequenceMatcher(None, words, window, autojunk=False)
        best = max(best, sum(block.size for block in matcher.get_matching_blocks()))
        if best == n:
            break
    share = best / n
    return share if share >= FUZZY_OVERLAP else None
