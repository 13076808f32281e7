"""Plain-text judge replies in the styles models produce: every answer bound to its own code.

The corpus in ``tests/fixtures/replies/`` holds replies written in those styles with their
truth (``truth.yaml``); it must be read with no misread cell. The property test writes
replies that mix styles line by line, in any order, and checks that no answer ever lands
on another code.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mast

REPLIES = Path(__file__).resolve().parents[1] / "fixtures" / "replies"
TRUTH: dict[str, dict[str, object]] = yaml.safe_load((REPLIES / "truth.yaml").read_text())
TAX = mast.load_taxonomy()
CODES = TAX.codes
NAMES = {m.code: m.name for m in TAX}


def _expected(spec: dict[str, object]) -> dict[str, bool | None]:
    present = set(spec["present"])  # type: ignore[call-overload]
    unknown = set(spec.get("unknown", []))  # type: ignore[call-overload]
    absent_spec = spec["absent"]
    absent = set(CODES) - present - unknown if absent_spec == "rest" else set(absent_spec)  # type: ignore[call-overload]
    return {c: True if c in present else False if c in absent else None for c in CODES}


def test_corpus_is_large_and_covers_every_mode() -> None:
    files = {p.name for p in REPLIES.iterdir() if p.name not in ("truth.yaml", "README.md")}
    assert files == set(TRUTH)
    assert len(TRUTH) >= 60
    seen = {c for spec in TRUTH.values() for c, v in _expected(spec).items() if v is True}
    assert seen == set(CODES)


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_reply_is_read_without_a_misread_cell(name: str) -> None:
    spec = TRUTH[name]
    raw = (REPLIES / name).read_text(encoding="utf-8")
    verdict = mast.parse_response(raw)
    wrong = {
        code: (want, verdict.vector[code])
        for code, want in _expected(spec).items()
        if verdict.vector[code] is not want
    }
    assert not wrong, (wrong, verdict.problems)
    if "task_completed" in spec:
        assert verdict.task_completed is spec["task_completed"]


def test_corpus_misread_cells_total_zero() -> None:
    # One number for reports: cells read differently from the truth, over the whole corpus.
    misread = 0
    for name, spec in TRUTH.items():
        verdict = mast.parse_response((REPLIES / name).read_text(encoding="utf-8"))
        misread += sum(verdict.vector[c] is not v for c, v in _expected(spec).items())
    assert misread == 0


# ---------------------------------------------------------------- property: no shifted code

_YES = {"word": "Yes", "tag": "[YES]", "emoji": "\u2705", "box": "[x]", "bool": "true"}
_NO = {"word": "No", "tag": "[NO]", "emoji": "\u274c", "box": "[ ]", "bool": "false"}
_RATIONALES = [
    "",
    "the agent said no to the plan in s4",
    "see 1.4 and 2.1 for related problems",
    "unlike 3.3, nothing was checked; yes, really",
    "s7 repeats s5 word for word",
    "no tests were run at all",
    "the reviewer simply said no",
    "close to 2.4 Information Withholding but not the same",
    "(s3) yes, the planner agreed",
]


def _item(style: str, code: str, value: bool, rationale: str) -> str:
    a = _YES if value else _NO
    name = NAMES[code]
    why = f" — {rationale}" if rationale else ""
    if style == "colon":
        return f"{code} {name}: {a['word']}{why}"
    if style == "bold":
        return f"**{code} {name}:** {a['word']}{why}"
    if style == "tag":
        return f"- {a['tag']} {code} {name}{why}"
    if style == "emoji_before":
        return f"- {a['emoji']} {code} {name}{why}"
    if style == "emoji_after":
        return f"{code} {name} {a['emoji']}"
    if style == "checkbox":
        return f"- {a['box']} {code} {name}{why}"
    if style == "word_first":
        return f"{a['word']} — {code} {name}" + (f": {rationale}" if rationale else "")
    if style == "heading_present":
        return f"\n### {code} {name}\n**Present:** {a['word']}\n" + (
            f"**Evidence:** {rationale}\n" if rationale else ""
        )
    if style == "heading_detected":
        return f"\n#### {code} — {name}\n- Detected: {a['bool']}\n" + (
            f"- Notes: {rationale}\n" if rationale else ""
        )
    if style == "heading_inline":
        return f"\n### {code} {name} — {a['word'].upper()}\n{rationale}\n"
    if style == "name_first":
        return f"\n### {name} ({code})\nPresent: {a['word']}\n"
    if style == "yaml":
        return f'"{code}": {a["word"].lower()}'
    if style == "yaml_nested":
        return f"{code}:\n  present: {a['bool']}\n  evidence: []"
    if style == "paren":
        return f"{code} {name} ({a['word']}): {rationale or 'see the trace'}"
    if style == "arrow":
        return f"{code} {name}: {rationale or 'as described'} → {a['word']}"
    if style == "fm":
        return f"FM-{code}: {a['word'].upper()}" + (f" ({rationale})" if rationale else "")
    if style == "name_only":  # the mode's name without its code
        return f"- {name}: {a['word']}{why}"
    if style.startswith("lang_"):  # yes / no in another language
        word = _LANGS[style[5:]][0 if value else 1]
        return f"{code} {name}: {word}{why}"
    if style == "numbered":
        return f"{CODES.index(code) + 1}. **{code}** — {name}: **{a['word']}**{why}"
    raise AssertionError(style)


_LANGS = {"de": ("Ja", "Nein"), "fr": ("Oui", "Non"), "es": ("Sí", "No"), "ko": ("예", "아니오"),
          "zh": ("是", "否"), "ja": ("はい", "いいえ")}  # fmt: skip
_STYLES = ["colon", "bold", "tag", "emoji_before", "emoji_after", "checkbox", "word_first",
           "heading_present", "heading_detected", "heading_inline", "name_first", "yaml",
           "yaml_nested", "paren", "arrow", "fm", "numbered", "name_only",
           *(f"lang_{lang}" for lang in _LANGS)]  # fmt: skip


@st.composite
def _mixed_replies(draw: st.DrawFn) -> tuple[str, dict[str, bool | None]]:
    states = {c: draw(st.sampled_from([True, False, False, None])) for c in CODES}
    order = draw(st.permutations(CODES))
    lines: list[str] = []
    rows: list[str] = []
    listed: dict[bool, list[str]] = {True: [], False: []}
    for code in order:
        value = states[code]
        if value is None:
            continue
        style = draw(st.sampled_from([*_STYLES, "table", "list"]))
        rationale = draw(st.sampled_from(_RATIONALES))
        if style == "table":
            rows.append(f"| {code} | {NAMES[code]} | {'Yes' if value else 'No'} | {rationale} |")
        elif style == "list":
            listed[value].append(code)
        else:
            lines.append(_item(style, code, value, rationale))
    blocks = ["\n".join(lines)]
    if rows:
        blocks.append("| Code | Mode | Present | Notes |\n|---|---|---|---|\n" + "\n".join(rows))
    for value, label in ((True, "Failure modes present"), (False, "Absent")):
        if listed[value]:
            blocks.append(f"{label}: {', '.join(listed[value])}")
    order_blocks = draw(st.permutations(range(len(blocks))))
    preamble = draw(
        st.sampled_from(["", "Here is my assessment of the trace.\n\n", "## Verdict\n"])
    )
    text = preamble + "\n\n".join(blocks[i] for i in order_blocks)
    return text, states


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mixed_replies())
def test_mixed_styles_never_shift_an_answer(case: tuple[str, dict[str, bool | None]]) -> None:
    text, truth = case
    if all(v is None for v in truth.values()):
        with pytest.raises(mast.VerdictParseError):
            mast.parse_response(text)
        return
    got = mast.parse_response(text).vector.to_dict()
    for code in CODES:
        # never the opposite answer, never an answer for a code the reply left out
        assert got[code] in (truth[code], None), (code, text)
    assert got == truth, text


# ---------------------------------------------------------------- the misreadings of issue 16


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("### 1.3 Step Repetition\n**Present:** No", False),
        ("1.3 Step Repetition\nDetected: false", False),
        ("1.3 Step Repetition: present = false", False),
        ("1.3 Step Repetition — Present? Yes.", True),
        ("1.3 Step Repetition — Present (the same call is made three times)", True),
        ("1.3 Step Repetition — Not present", False),
        ('"1.3": no', False),
        ("1.3: true", True),
    ],
)
def test_present_is_a_label_when_a_value_follows(line: str, expected: bool) -> None:
    verdict = mast.parse_response(f"1.1 Disobey Task Specification: no\n{line}\n")
    assert verdict.vector["1.3"] is expected, verdict.problems
    assert verdict.vector["1.1"] is False


@pytest.mark.parametrize("tag", [("[YES]", "[NO]"), ("✅", "❌"), ("Yes:", "No:"), ("[x]", "[ ]")])
def test_an_answer_before_the_code_is_never_read_one_code_off(tag: tuple[str, str]) -> None:
    yes, no = tag
    truth = {"1.3", "2.5", "3.2"}
    text = "\n".join(f"- {yes if c in truth else no} {c} {NAMES[c]}" for c in CODES)
    assert {c for c, v in mast.parse_response(text).vector.items() if v} == truth
    assert all(v is not None for v in mast.parse_response(text).vector.values())


def test_positive_list_with_and_without_an_others_sentence() -> None:
    closed = mast.parse_response("Failure modes present: 1.3, 2.5. All other modes are absent.")
    assert closed.vector.to_dict() == {c: c in ("1.3", "2.5") for c in CODES}
    open_list = mast.parse_response("Failure modes present: 1.3, 2.5.")
    assert {c: v for c, v in open_list.vector.items() if v is not None} == {
        "1.3": True,
        "2.5": True,
    }


def test_conflicting_readings_give_none_with_a_note() -> None:
    text = "- [YES] 1.3 Step Repetition: No\n1.4 Loss of Conversation History: no"
    verdict = mast.parse_response(text)
    assert verdict.vector["1.3"] is None
    assert verdict.vector["1.4"] is False
    assert any(p.startswith("1.3:") for p in verdict.problems)


def test_thinking_is_not_the_answer() -> None:
    text = "<think>1.3 Step Repetition: yes, maybe</think>\n1.3 Step Repetition: no"
    verdict = mast.parse_response(text)
    assert verdict.vector["1.3"] is False
    assert any("reasoning block" in p for p in verdict.problems)
