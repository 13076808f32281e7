"""The sentences that answer every mode a text-format answer does not name: "All other
modes are absent", "None of the remaining modes apply", "No failure modes were detected",
"Detected failure modes: none"; and the cheap test of whether a text can hold one
(:func:`may_set_defaults`), which the echo search runs on every block of a trace. Read by
:func:`mast.judge.reply.textlayout.read_defaults`.

>>> may_set_defaults("All other modes are absent."), may_set_defaults("Step 3 ran.")
(True, False)
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_CUES", "EXCEPT", "NONE_AT_ALL", "OTHERS", "may_set_defaults"]


_S = r"[ \t]"  # the sentences these patterns read stay on one line
_MODES = rf"(?:(?:mast{_S}+)?(?:failure{_S}+)?(?:modes?|categories|codes|ones|fms?|items)|failures)"
_NEG_VALUE = (
    rf"(?:no|absent|false|not{_S}+(?:present|detected|observed|found|applicable|triggered|seen)"
    r"|negative|n/a|none)"
)
_VERB = rf"(?:(?:were|was|are|is|could{_S}+be|can{_S}+be){_S}+)?(?:\w+{_S}+)?"
_SEEN = r"(?:apply|applies|applied|present|detected|observed|found|identified|seen|triggered)"
_IS = rf"{_S}*(?:[:=]|[-–—]|{_S}(?:are|were|is|was)){_S}*"
# The sentences, each to be read between word boundaries (\b).
_OTHERS_SENTENCES = (
    rf"(?:all{_S}+(?:of{_S}+)?(?:the{_S}+)?)?(?:other|remaining){_S}+(?:\d+{_S}+)?{_MODES}"
    rf"{_IS}(?:all{_S}+|also{_S}+)?{_NEG_VALUE}",
    rf"(?:everything{_S}+else|the{_S}+rest|all{_S}+others|others|rest){_IS}(?:all{_S}+)?{_NEG_VALUE}",
    rf"(?:no|none{_S}+of{_S}+the){_S}+(?:other|remaining|additional|further){_S}+"
    rf"(?:\d+{_S}+)?{_MODES}{_S}+{_VERB}{_SEEN}",
)
_NONE_AT_ALL_SENTENCE = rf"(?:no|none{_S}+of{_S}+the(?:{_S}+\d+)?){_S}+{_MODES}{_S}+{_VERB}{_SEEN}"
OTHERS = [re.compile(rf"\b{s}\b", re.IGNORECASE) for s in _OTHERS_SENTENCES]
NONE_AT_ALL = re.compile(rf"\b{_NONE_AT_ALL_SENTENCE}\b", re.IGNORECASE)
# Whatever can set Layout.others or Layout.none_at_all, without the \b assertions (so it
# matches in any text that holds a part where the full patterns match) and with a
# "Detected: none" list head reduced to its separator: the cheap test of may_set_defaults.
_DEFAULT_CUES_SOURCE = "|".join(
    [*_OTHERS_SENTENCES, _NONE_AT_ALL_SENTENCE, r"(?::|=|[-–—][ \t])[\[{(\s]*(?:none|nothing)"]
)
DEFAULT_CUES = re.compile(_DEFAULT_CUES_SOURCE, re.IGNORECASE)
# The same test on a lower-cased ASCII text, as searches that each open with one literal
# word (the regex engine skips ahead to a literal; an alternation of optional prefixes
# makes it try every position). Each is what is left of one alternative above once the
# words before its first required literal are dropped, so together they match wherever
# _DEFAULT_CUES does (and in a few more texts, where the full reading decides).
_MODES_WORD = rf"(?:{_S}+(?:\d+{_S}+)?{_MODES})"
_OTHER_WORDS = ("other", "remaining", "additional", "further")
_MODE_WORDS = ("modes?", "categories", "codes", "ones", "fms?", "items", "failures")
_DEFAULT_CUE_PARTS = tuple(
    re.compile(part)
    for part in (
        *(rf"{w}{_MODES_WORD}{_IS}(?:all{_S}+|also{_S}+)?{_NEG_VALUE}" for w in _OTHER_WORDS[:2]),
        *(rf"{w}{_IS}(?:all{_S}+)?{_NEG_VALUE}" for w in ("else", "rest", "others")),
        *(rf"{w}{_MODES_WORD}{_S}+{_VERB}{_SEEN}" for w in _OTHER_WORDS),
        *(rf"{w}{_S}+{_VERB}{_SEEN}" for w in _MODE_WORDS),
    )
)
_NONE = re.compile(r"none|nothing")


def _none_after_separator(text: str) -> bool:
    """Whether ``(?::|=|[-–—][ \t])[\\[{(\\s]*(?:none|nothing)`` matches in ``text``, read
    back from each "none": ":" and "=" are not in the run of brackets and spaces before
    it, so one of them must come right before the run, or a dash followed by the run's
    first character, a space or tab (much faster than the regex, whose ":" is in every
    line of a log)."""
    for match in _NONE.finditer(text):
        i = match.start()
        while i and (text[i - 1].isspace() or text[i - 1] in "[{("):
            i -= 1
        if i and (
            text[i - 1] in ":=" or (text[i - 1] in "-–—" and i < match.start() and text[i] in " \t")
        ):
            return True
    return False


_DEFAULT_WORDS = (
    *("other", "remaining", "additional", "further", "else", "rest"),  # other modes
    *("mode", "categor", "code", "ones", "fm", "item", "failure"),  # no failure modes
    *("none", "nothing"),  # "Detected: none"
)
EXCEPT = re.compile(r"\b(?:other\s+than|except|besides|apart\s+from|beyond)\b", re.IGNORECASE)


def may_set_defaults(text: str, *, lowered: bool = False) -> bool:
    """False only when no part of ``text`` can set ``others`` or ``none_at_all`` of a
    :class:`~mast.judge.reply.textlayout.Layout` (its code lists and defaults): one regex search.
    ``lowered``: ``text`` is already lower-cased by
    :func:`~mast.judge.reply.textslot.fold_case` (a faster search).

    >>> may_set_defaults("All other modes are absent."), may_set_defaults("Step 3 ran.")
    (True, False)
    """
    if lowered:
        # Every alternative holds one of these words: most texts are ruled out by a few
        # substring tests.
        return any(w in text for w in _DEFAULT_WORDS) and (
            any(part.search(text) is not None for part in _DEFAULT_CUE_PARTS)
            or _none_after_separator(text)
        )
    return DEFAULT_CUES.search(text) is not None
