"""Speed-only rewrites give exactly what the plain versions gave.

Each fast path here replaced a slower but simpler form; the simple form is kept in this
file as the reference and both are run on generated text.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast.judge.prompt.compact import _VOLATILE
from mast.privacy.redact import Redactor
from mast.traces.model import Step, Trace
from redaction_corpus import lookalikes, secrets

# compact._VOLATILE before the lookahead that lets the regex engine skip ahead.
PLAIN_VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?Z?"
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\b[0-9a-fA-F]{12,}\b"
    r"|\d+"
)

VOLATILE_PIECES = [
    "2026-12-01T15:50:21.123Z", "2026-12-01 15:50", "15:50:21,5", "9:05:00",
    "123e4567-e89b-12d3-a456-426614174000", "deadbeefcafe00", "DEADBEEF", "0x1f", "42",
    "\u0663\u0664", "\uff11", "abc", "fed", " ", "\n", "-", ":", ".", "_", "é",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(VOLATILE_PIECES) | st.text(max_size=4), max_size=20).map("".join))
def test_volatile_values_are_found_as_before(text: str) -> None:
    assert _VOLATILE.sub("0", text) == PLAIN_VOLATILE.sub("0", text)


class _EveryPattern(Redactor):
    """Redaction without the per-trace pre-check: every pattern checks every text."""

    def _absent(self, texts: list[str]) -> tuple[bool, ...]:
        return (False,) * len(self.patterns)


CASES = [*secrets(), *lookalikes(), *secrets("holdout.yaml"), *lookalikes("holdout.yaml")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(CASES), min_size=1, max_size=6), st.booleans())
def test_trace_precheck_redacts_as_every_pattern_on_every_text(cases: list, key: bool) -> None:
    # Several cases in one trace: prefixes found in one text must not skip patterns in
    # another, and a replacement (which can create new prefixes) ends the pre-check.
    steps = [s for case in cases for s in case.trace().steps]
    steps = [s.model_copy(update={"index": i, "id": f"s{i + 1}"}) for i, s in enumerate(steps)]
    first = cases[0].trace()
    trace = Trace(id="t", task=first.task, system=first.system, steps=steps)
    literals = {"sk-test-literal-key-0123456789": "openai_key"} if key else {}
    fast, plain = Redactor(literals=literals), _EveryPattern(literals=literals)
    got, got_counts = fast.redact_trace(trace)
    want, want_counts = plain.redact_trace(trace)
    assert got.model_dump() == want.model_dump() and got_counts == want_counts


def test_trace_precheck_skips_patterns_whose_prefixes_are_absent() -> None:
    r = Redactor()
    absent = r._absent(["plain words only", "and more of them"])
    assert sum(absent) > len(r.patterns) // 2
    kinds = {
        p.kind for p, skip in zip(r.patterns, r._absent(["ghp_x", "x"]), strict=True) if not skip
    }
    assert "github_token" in kinds and "slack_token" not in kinds


@pytest.mark.parametrize(
    "text",
    [
        # The github_token placeholder brings the prefix "token" of the secret-by-name rule.
        "push with ghp_" + "a1B2" * 9 + "=abcdef1234 now",
        # The literal's placeholder brings the prefix "secret".
        "x Zq9vX2mK7wP4=abcdef1234",
    ],
)
def test_a_placeholder_can_bring_the_prefix_of_a_later_pattern(text: str) -> None:
    literals = {"Zq9vX2mK7wP4": "secret"}
    trace = Trace(id="t", steps=[Step.make(0, text, agent="a"), Step.make(1, "plain", agent="b")])
    got, counts = Redactor(literals=literals).redact_trace(trace)
    want, want_counts = _EveryPattern(literals=literals).redact_trace(trace)
    assert got.steps[0].content == want.steps[0].content
    assert got.steps[0].content.endswith(("=[REDACTED:secret] now", "=[REDACTED:secret]"))
    assert counts == want_counts


# The Discord token pattern as it was, with its lookbehind first.
PLAIN_DISCORD = re.compile(
    r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"
    r"(?![A-Za-z0-9_\-])"
)
TOKEN_CHARS = st.text("MNOab9_-.xZ\n ", min_size=0, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["M", "N", "O", "x", "_", "-", ".", " ", "\n", "a" * 23, "b" * 6, "c" * 27])
        | TOKEN_CHARS,
        max_size=30,
    ).map("".join)
)
def test_discord_pattern_matches_as_before(text: str) -> None:
    (discord,) = [p for p in Redactor().patterns if p.kind == "discord_token"]
    assert [m.span() for m in discord.regex.finditer(text)] == [
        m.span() for m in PLAIN_DISCORD.finditer(text)
    ]


# --------------------------------------------------------------- case folding (issue 37)
CASE_PIECES = [
    "Step Repetition", "STEP REPETITION", "step repetition", "Information Withholding",
    "Ignored Other Agent's Input", "No or Incomplete Verification", "other modes", "Others",
    "\u212a", "\u017f", "\u0131", "\u0130", "\u00c9", "\u00df", "\u00a0", "\u2014", "\u2013",
    "\U0001f6e0", "\u2501", "\u0663", ": ", " - ", "no", "none", "\n", " ", "\t", "=", "s",
]  # fmt: skip
case_texts = st.lists(st.sampled_from(CASE_PIECES) | st.text(max_size=3), max_size=16).map("".join)


def test_every_non_ascii_character_a_caseless_pattern_matches_to_ascii_is_folded() -> None:
    from mast.judge.reply.textslot import CASELESS_ASCII

    # Where lower() or upper() gives ASCII (the only way re.IGNORECASE pairs a non-ASCII
    # character with an ASCII letter), plus the pairs lower() leaves out (dotless and
    # dotted i: "İ".lower() is two characters; long s).
    candidates = {
        chr(cp)
        for cp in range(128, 0x110000)
        if chr(cp).lower().isascii() or chr(cp).upper().isascii()
    } | {"\u0130", "\u0131", "\u017f"}
    paired = {
        ch
        for ch in candidates
        for c in "abcdefghijklmnopqrstuvwxyz0123456789"
        if re.fullmatch(re.escape(c), ch, re.IGNORECASE)
    }
    assert paired == set(CASELESS_ASCII)


@settings(max_examples=400, deadline=None)
@given(case_texts)
def test_mode_names_are_found_in_folded_text_where_the_caseless_search_finds_them(
    text: str,
) -> None:
    from mast.judge.reply.textformat import _name_index
    from mast.judge.reply.textslot import fold_case
    from mast.taxonomy import load_taxonomy

    names = _name_index(load_taxonomy())
    folded = fold_case(text)
    if folded is None:
        return
    assert len(folded) == len(text)
    want = [m.span() for m in names._regex.finditer(text)]
    assert [m.span() for m in names._lowered.finditer(folded)] == want


@settings(max_examples=400, deadline=None)
@given(case_texts)
def test_may_set_defaults_on_folded_text_never_misses(text: str) -> None:
    from mast.judge.reply import textdefaults
    from mast.judge.reply.textslot import fold_case

    folded = fold_case(text)
    if folded is not None and textdefaults.DEFAULT_CUES.search(text):
        assert textdefaults.may_set_defaults(folded, lowered=True)


@settings(max_examples=300, deadline=None)
@given(case_texts)
def test_may_name_a_mode_is_what_the_slice_search_gave(text: str) -> None:
    from mast.judge.reply import textnames
    from mast.judge.reply.textformat import _name_index
    from mast.taxonomy import load_taxonomy

    tax = load_taxonomy()
    names = _name_index(tax)
    spellings = textnames._spellings(tax, names)

    def plain(text: str) -> bool:
        if textnames._NAMED_ANSWER.search(text) is not None:
            return True
        for line in text.split("\n"):  # a misspelt name, as code_the_names reads each line
            lead = textnames._LEAD.match(line)
            loose = textnames._LOOSE_NAME.match(line, lead.end() if lead else 0)
            if loose and textnames._close_codes(loose.group(1), spellings) & set(tax.codes):
                return True
        pos = 0
        for _ in range(textnames._MAX_NAME_HITS):
            hit = names._regex.search(text[pos:])
            if hit is None:
                return False
            start = pos + hit.start()
            lead = textnames._LEAD.match(text, text.rfind("\n", 0, start) + 1)
            if lead is not None and lead.end() >= start:
                return True
            pos += hit.end()
        return True

    for line_start in ("", "\n", "- "):
        assert textnames.may_name_a_mode(line_start + text, names, tax) == plain(line_start + text)


def test_leak_probes_follow_an_example_changed_in_place() -> None:
    from mast.judge.prompt.fewshot import FewShotExample
    from mast.judge.prompt.leak import leaked

    line = "the coder copies the list wrong and nobody checks the copy at all"
    other = "a second line of this run, long enough to be used as a probe too"
    example = FewShotExample.model_validate(
        {
            "id": "ex", "source": "run-a", "attribution": "written for this test",
            "rationale": "[s1] shows it.", "labels": {"1.1": True},
            "steps": [{"id": "s1", "content": line}, {"id": "s2", "content": other}],
        }
    )  # fmt: skip
    trace = Trace(id="t", steps=[Step.make(0, line), Step.make(1, other)])
    assert leaked([example], trace) == ["ex"]
    example.steps = [
        Step.make(0, "replaced by text the trace does not hold, long enough to probe"),
        Step.make(1, "and this one too: nothing of it is in the trace being judged"),
    ]
    assert leaked([example], trace) == []


# ------------------------------------------------- text-format reading (issue 37, item 5)
LAYOUT_PIECES = [
    "1.3", "2.5", "1.1.4", "C.", "C:", " C)", "(C.", "|C .", "xC.", "B.", "Present: ",
    "Absent: ", "Detected = ", "Not present - ", "none", "NONE", "Nothing", "n\u0131thing",
    "Yes: ", "- ", "* ", "# ", "## Present", "Detected failure modes:", "Absent:\n",
    "Summary:", ", ", " and ", "(x)", "\"", "'", "\n", "\n\n", " ", "\t", ":", "\u212a",
    "\u0130", "word", "Step Repetition", "\x0c", "\r", "\nPresent:\n", "\n## Absent\n",
    "\nThe following modes are present:\n", "- 1.3 Step Repetition\n", "- item\n", "  more\n",
    "1. first\n", "[x] done\n", "Present: 1.3, 2.5\n", "Absent: none\n", "No: 1.1 (why)",
]  # fmt: skip
layout_texts = st.lists(st.sampled_from(LAYOUT_PIECES) | st.text(max_size=3), max_size=24).map(
    "".join
)
PLAIN_C_MARKER = re.compile(r"(?:^|(?<=[\s@#>(|]))C\s*[.):]", re.MULTILINE)


@settings(max_examples=400, deadline=None)
@given(layout_texts)
def test_c_marker_matches_as_before(text: str) -> None:
    from mast.judge.reply.textformat import _C_MARKER

    assert [m.span() for m in _C_MARKER.finditer(text)] == [
        m.span() for m in PLAIN_C_MARKER.finditer(text)
    ]


@settings(max_examples=400, deadline=None)
@given(layout_texts)
def test_list_heads_searched_line_by_line_are_those_of_the_whole_text(text: str) -> None:
    from mast.judge.reply import textlayout

    want = [(m.span(), m.group("label")) for m in textlayout._LIST_HEAD.finditer(text)]
    assert [(m.span(), m.group("label")) for m in textlayout._list_heads(text)] == want


def _plain_sections(text: str, layout: object) -> list[tuple[int, int, bool]]:
    """read_sections as it was: every _SECTION_HEAD match, the rest of the text sliced."""
    from mast.judge.reply import textlayout as tl

    spans: list[tuple[int, int, bool]] = []
    for head in tl._SECTION_HEAD.finditer(text):
        line = head.group(0)
        if tl._CODE_ANY.search(line) or not (
            line.rstrip().endswith(":") or line.lstrip().startswith("#")
        ):
            continue
        polarity = tl.label_polarity(head.group("label"))
        if polarity is None:
            continue
        start = head.end()
        end = start
        seen_item = False
        for line_match in re.finditer(r"[^\n]*\n?", text[start:]):
            raw = line_match.group(0)
            if not raw:
                break
            stripped = raw.strip()
            absolute = start + line_match.start()
            if not stripped:
                continue
            if tl._BULLET_LINE.match(raw) or (seen_item and raw[:1] in " \t"):
                seen_item = True
                end = absolute + len(raw)
                continue
            break
        if seen_item:
            spans.append((start, end, polarity))
            layout.boundaries.append(tl._line_start(text, head.start()))  # type: ignore[attr-defined]
    return spans


SECTION_LINES = [
    "Detected failure modes:", "## Absent", "  # Present", "\x0cPresent:", "Present: \t",
    "Absent:\x0c", "Present 1.3:", "- 1.3 Step Repetition", "  more", "* x", "1. first",
    "[x] done", "", "prose", "Summary:", "\t- tabbed",
]  # fmt: skip
section_texts = st.lists(st.sampled_from(SECTION_LINES), max_size=12).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(layout_texts | section_texts)
def test_sections_are_read_as_before(text: str) -> None:
    from mast.judge.reply import textlayout

    fast, plain = textlayout.Layout(), textlayout.Layout()
    assert textlayout.read_sections(text, fast) == _plain_sections(text, plain)
    assert fast.boundaries == plain.boundaries


def test_close_name_comparisons_are_remembered_per_taxonomy() -> None:
    from mast.judge.reply import textnames
    from mast.judge.reply.textformat import _name_index
    from mast.taxonomy import load_taxonomy

    tax = load_taxonomy()
    names = _name_index(tax)
    spellings = textnames._spellings(tax, names)
    assert textnames._spellings(tax, names) is spellings
    for name in ["Infromation Withholding", "Step Repetitoin", "Requirement already satisfied"]:
        want = textnames._compare(textnames._squash(name), spellings)
        assert textnames._close_codes(name, spellings) == want
        assert textnames._close_codes(name, spellings) == want  # from the memo
    assert textnames._close_codes("Infromation Withholding", spellings) == {"2.4"}


PLAIN_NONE_LIST = re.compile(r"(?::|=|[-–—][ \t])[\[{(\s]*(?:none|nothing)")
NONE_PIECES = [
    "none", "nothing", "nonE", ":", "=", "-", "–", "—", " ", "\t", "\n", "\u00a0", "[", "{",
    "(", ")", "x", "- ", "-\t", "-x", ": [none", "=  {(none", "— nothing",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(NONE_PIECES) | st.text(max_size=2), max_size=14).map("".join))
def test_none_after_a_separator_is_found_as_by_the_regex(text: str) -> None:
    from mast.judge.reply.textdefaults import _none_after_separator

    assert _none_after_separator(text) is (PLAIN_NONE_LIST.search(text) is not None)


MARK_PIECES = ["*", "**", "`", "``", "~", "~~", "_", "__", "___", "a", "1", " ", "\n", "é", "-"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(MARK_PIECES), max_size=16).map("".join))
def test_emphasis_is_dropped_as_by_the_regex(text: str) -> None:
    from mast.judge.reply.textslot import _EMPHASIS, _drop_emphasis

    assert _drop_emphasis(text) == _EMPHASIS.sub("", text)


def test_hash_parts_with_a_remembered_long_head_is_the_plain_hash() -> None:
    import hashlib

    from mast.judge.prompt.types import hash_parts

    def plain(*parts: str) -> str:
        digest = hashlib.sha256()
        for part in parts:
            data = part.encode("utf-8")
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
        return digest.hexdigest()

    head = "\u00e9" * 5000 + "system"
    for parts in [(head,), (head, "user"), (head, "user", "[]"), ("a", "b"), (), (head, head)]:
        assert hash_parts(*parts) == plain(*parts)
        assert hash_parts(*parts) == plain(*parts)  # the head's state is copied, not changed


def _plain_answer_blocks(text: str) -> list[str]:
    """echo.answer_blocks as it was: every line read."""
    from mast.judge.reply import echo

    blocks: list[str] = []
    current: list[str] = []
    codes: set[str] = set()
    for line in text.splitlines(keepends=True):
        match = echo._LINE_CODE.match(line)
        fence = line.strip() == "@@"
        if current and (
            (match and match.group(1) in codes) or fence or len(current) >= echo._MAX_BLOCK_LINES
        ):
            blocks.append("".join(current))
            current, codes = [], set()
        current.append(line)
        if match:
            codes.add(match.group(1))
    if current:
        blocks.append("".join(current))
    return blocks


BLOCK_PIECES = [
    "1.1 A: yes",
    "2.5",
    "1.1.4",
    "x",
    "@@",
    " @@ ",
    "\n",
    "\r\n",
    "\x0c",
    "- ",
    "\u0663.\u0661",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(BLOCK_PIECES) | st.text(max_size=3), max_size=30).map("".join),
    st.sampled_from([0, 1, 199, 200, 201, 450]),
)
def test_answer_blocks_are_cut_as_before(text: str, extra_lines: int) -> None:
    from mast.judge.reply.echo import answer_blocks

    text = text + "line\n" * extra_lines
    assert answer_blocks(text) == _plain_answer_blocks(text)


def _plain_string(text: str, pos: int) -> tuple[str, int] | None:
    """lenient_json's string reader as it was: one character at a time (None: cut off)."""
    from mast.judge.reply.lenient_json import _ESCAPES

    quote, pos, parts, n = text[pos], pos + 1, [], len(text)
    while pos < n:
        ch = text[pos]
        if ch == quote:
            return "".join(parts), pos + 1
        if ch == "\\":
            if pos + 1 >= n:
                return None
            esc = text[pos + 1]
            if esc == "u":
                digits = text[pos + 2 : pos + 6]
                if len(digits) < 4:
                    return None
                parts.append(chr(int(digits, 16)))
                pos += 6
                continue
            parts.append(_ESCAPES.get(esc, esc))
            pos += 2
            continue
        parts.append(ch)
        pos += 1
    return None


STRING_PIECES = ['"', "'", "\\", '\\"', "\\'", "\\n", "\\u00e9", "\\u12", "a", "é", "\n", " "]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(['"', "'"]), st.lists(st.sampled_from(STRING_PIECES), max_size=12))
def test_lenient_strings_are_read_as_before(quote: str, pieces: list[str]) -> None:
    from mast.judge.reply.lenient_json import _EndOfText, _Invalid, _Reader

    text = quote + "".join(pieces)
    reader = _Reader(text, 0)
    try:
        got: object = (reader._string(), reader.pos)
    except _EndOfText:
        got = None
    except _Invalid:
        got = "bad escape"
    try:
        want: object = _plain_string(text, 0)
    except ValueError:
        want = "bad escape"
    assert got == want
