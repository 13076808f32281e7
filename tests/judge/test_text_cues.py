"""The cheap tests in front of the text-format reader agree with the reader itself.

The echo search reads every block of a trace for planted verdicts; :func:`may_answer`
lets it skip the full reading of blocks that cannot hold one. It must never say "no
answer" where :func:`read_text_format` finds one, else a planted verdict would slip
through. Checked on every reply of the corpora, on pieces cut from them at random and on
generated answer-like texts. :func:`normalize_markup` skips rewrites a text cannot need; it
must give what the plain sequence of rewrites gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.judge.reply.echo import answer_blocks
from mast.judge.reply.parse import _code_of, _names
from mast.judge.reply.textformat import may_answer, normalize_markup, read_text_format
from mast.taxonomy import Taxonomy, load_taxonomy

TAX = load_taxonomy()
NAMES = _names(TAX)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPLIES = sorted(
    p
    for folder in ("replies", "responses")
    for p in (FIXTURES / folder).iterdir()
    if p.suffix in (".md", ".txt")
)


def reference_normalize(text: str) -> str:
    """normalize_markup as it was before its rewrites were made conditional."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\uff1a", ":")
    text = re.sub(r"[\u2018\u2019\u201b\u2032]", "'", text)
    text = re.sub(r"[\u201c\u201d\u201e]", '"', text)
    text = re.sub(r"^([ \t]*)\*(?=[ \t])", r"\1-", text, flags=re.MULTILINE)
    text = re.sub(r"\*+|`+|~~|(?<!\w)__|__(?!\w)", "", text)
    text = re.sub(r"</?(?:b|strong|em|i|u)>", "", text, flags=re.IGNORECASE)
    text = re.sub(r"\bFM[-\s_]?(?=\d{1,2}\.\d)", "", text)
    text = re.sub(r"\b([ABC])\.(?=\d{1,2}\.\d)", r"\1. ", text)
    return text


def readable(text: str, tax: Taxonomy = TAX) -> bool:
    return read_text_format(text, tax, NAMES if tax is TAX else _names(tax)).readable


def check(text: str, tax: Taxonomy = TAX) -> None:
    if not may_answer(text, tax):
        assert not readable(text, tax), f"may_answer said no answer in {text!r}"


# Pieces answers are made of, and pieces that only look like them.
PIECES = [
    "1.1", "1.3", "2.6", "3.3", "11.1", "1.10", "v1.1", "HTTP/1.1", "1.1.1", "4.4", "C.1.1",
    "C .1.1", "C:", "C)", "C.", "C\n.", "22.2.2", ".1.1", "x.1.1", "B.", "B:", "B )", "A.", "@@",
    "FM-", "FM", "**", "*", "`",
    "__", "~~", "<b>", "</b>", "<think>", "</think>", "<answer>", "</answer>", "Final answer",
    ":", ": ", " - ", " — ", "|", "| --- |", "(", ")", "[x]", "[ ]", "✅", "❌", "yes", "no",
    "Yes", "NO", "true", "false", "present", "absent", "not present", "detected", "none",
    "None", "nothing", "Present", "Detected", "Absent", "Task completed", "task complete",
    "Task", "TASK", "ta**sk", "was the task completed", "all other modes are absent",
    "The rest: no", "others - no", "everything else = none", "No failure modes were detected",
    "none of the 14 modes apply", "no other failure modes were observed", "remaining codes: n/a",
    "ſ", "\u212a", "\u0130", "\u2019", "\u201c", "\u00a0", "\uff1a", "\r\n", "\r", "\x0c",
    "\n", "\n\n", " ", "\t", "Step Repetition", "Disobey Task Specification", "# ", "- ",
    "1. ", "Answer:", "Verdict:", "→", "(yes)", "Present: 1.3, 2.5", "Absent: none",
]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=25).map("".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_may_answer_never_misses_an_answer_in_generated_text(text: str) -> None:
    check(text)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_normalize_markup_equals_the_plain_rewrites(text: str) -> None:
    assert normalize_markup(text) == reference_normalize(text)


@pytest.mark.parametrize("path", REPLIES, ids=lambda p: p.name)
def test_may_answer_on_the_reply_corpora(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert normalize_markup(text) == reference_normalize(text)
    check(text)
    assert may_answer(text, TAX) == readable(text) or not readable(text)
    for block in answer_blocks(text):
        check(block)
    for line in text.splitlines(keepends=True):
        check(line)


# Misspelt names the reader codes (code_the_names' loose reading): after any lead it takes,
# and with the answer after a separator, later on the line, on the next line or, for a long
# name, inside the letters ("o or Incomplete Verification yes" is close enough to "No or
# Incomplete Verification"). Found by the property test below, cut from the corpus.
@pytest.mark.parametrize(
    "text",
    [
        "o or Incomplete Verification yes",
        "Mode: Step Repetiton: yes",
        "a) Step Repetiton: yes",
        "Failure mode: Step Repetiton - yes",
        "Step Repetiton: the agent repeated itself, so yes",
        "Step Repetiton:\nyes",
        "sobey Role Specification\nAnswer: No\n",
        "sk Derailment\n- [NO] ",
    ],
)
def test_may_answer_sees_misspelt_names_the_reader_codes(text: str) -> None:
    assert readable(text)
    assert may_answer(text, TAX)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REPLIES), st.integers(0, 10_000), st.integers(1, 400))
def test_may_answer_on_pieces_cut_from_replies(path: Path, start: int, size: int) -> None:
    text = path.read_text(encoding="utf-8")
    start %= max(1, len(text))
    check(text[start : start + size])


def test_may_answer_skips_plain_log_text() -> None:
    log = "pandas: 1.4.1\nran 12 tests in 3.2s (v2.1), glibc2.31\nplan: step 11.1 then 1.10\n"
    assert not may_answer(log, TAX)
    # "HTTP/1.1 200" could be a list item ("Present: 2.1/1.1"): read in full.
    assert may_answer('GET /v1/models "HTTP/1.1 200 OK"', TAX)
    assert may_answer(log + "Task completed: yes\n", TAX)
    assert may_answer(log + "No failure modes were detected.", TAX)
    assert may_answer("C .1.1: yes", TAX) and readable("C .1.1: yes")
    assert may_answer("C\n .1.1: yes", TAX) and readable("C\n .1.1: yes")
    # Version numbers hold no code: pip 22.2.2 (2.2 after "."), >=1.1.4 (1.1 before ".4").
    versions = "pip: 22.2.2\nsetuptools>=62.3.2\nrequires numpy>=1.1.4 (2.2.3)\n"
    assert not may_answer(versions, TAX) and not readable(versions)


def test_may_answer_reads_the_codes_of_its_taxonomy() -> None:
    small = Taxonomy.model_validate(
        {
            "name": "Tiny",
            "version": "1",
            "categories": [{"code": "FC1", "name": "All"}],
            "modes": [
                {
                    "id": "odd",
                    "code": "7.12",
                    "name": "Odd Mode",
                    "category": "FC1",
                    "definition": "d",
                },
            ],
        }
    )
    assert may_answer("7.12: yes", small) and readable("7.12: yes", small)
    assert not may_answer("1.1: yes", small)
    check("1.1: yes", small)


def test_mode_names_are_read_as_code_for_name_reads_them() -> None:
    for mode in TAX:
        for name in (mode.name, *mode.aliases):
            for variant in (name, name.upper(), f"  {name.lower()}  ", name.replace(" ", "_")):
                assert _code_of(variant, TAX, NAMES) in (TAX.code_for_name(variant), mode.code)
                if len(NAMES.codes_for(variant)) != 1:
                    assert _code_of(variant, TAX, NAMES) == TAX.code_for_name(variant)
    for other in ("summary", "task_completed", "notes", "Step Repetitions", ""):
        assert _code_of(other, TAX, NAMES) == TAX.code_for_name(other) or NAMES.codes_for(other)


@pytest.mark.parametrize(
    "module", ["textformat", "textslot", "textlayout", "parse", "echo"], ids=str
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"mast.judge.reply.{module}"))
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize(
    "text",
    ["x__y", "__init__", "a__ b", "__a", "_ __", "a___b", "**x**", "`a`", "~~s~~", "C.1.1",
     "xC.1.1", "(B.2.3", "AB.1.1", "B.12.3", "FM-1.3", "xFM1.3", "* item", "  * b", "*x"],
)  # fmt: skip
def test_normalize_markup_edge_cases(text: str) -> None:
    assert normalize_markup(text) == reference_normalize(text)
    assert normalize_markup(text + " \u2019x\u201d") == reference_normalize(text + " \u2019x\u201d")
