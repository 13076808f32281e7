"""A reply's own key for check marks (judge/reply/symbol_legend.py): honoured when it inverts the
usual meaning, ignored when it is no legend or cannot be read. The reply corpus
(tests/fixtures/replies/71-*, 72-*) covers whole replies."""

from __future__ import annotations

import pytest

import mast
from mast.judge.reply.symbol_legend import apply_legend

CODES = mast.load_taxonomy().codes


def reply(marks: dict[str, str], head: str) -> str:
    lines = [head, ""] + [f"- {code} {marks.get(code, '✅')}" for code in CODES]
    return "\n".join(lines)


def test_an_inverted_legend_is_read_as_written() -> None:
    text = reply({"2.3": "❌"}, "Legend: ✅ = no failure, ❌ = failure present")
    verdict = mast.parse_response(text)
    assert verdict.vector.positives == ["2.3"]
    assert all(verdict.vector[c] is False for c in CODES if c != "2.3")
    assert any("legend" in p for p in verdict.problems)


@pytest.mark.parametrize(
    "head",
    [
        "Overall: ❌ - the run failed",  # a verdict on the run, not a key
        "✅ = present, ❌ = absent",  # the usual meaning
        "Key: ✅ = passed, ✅ = failure detected",  # contradicts itself
        "Key: ✅ = see notes, ❌ = see notes",  # says nothing readable
    ],
)
def test_no_legend_or_no_readable_one_leaves_the_usual_meaning(head: str) -> None:
    verdict = mast.parse_response(reply({"2.3": "❌"}, head))
    assert verdict.vector["2.3"] is False
    assert all(verdict.vector[c] is True for c in CODES if c != "2.3")


def test_an_answer_line_with_a_code_is_never_taken_for_a_legend() -> None:
    text = "1.1 ✅ - no failure here\n1.2 ❌ - failure"
    assert apply_legend(text) == (text, None)


def test_text_without_marks_is_returned_as_is() -> None:
    assert apply_legend("1.1 yes\n1.2 no") == ("1.1 yes\n1.2 no", None)
