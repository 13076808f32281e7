"""The literal pre-check of the secret patterns: prefixes read from the regex, and no match
the regex finds on the redaction corpus starts with anything else (so the pre-check never
skips a secret)."""

from __future__ import annotations

import json
import re

import pytest

from mast.privacy.redact import DEFAULT_PATTERNS
from mast.privacy.regex_prefix import literal_prefixes
from mast.privacy.secret_patterns import SecretPattern
from redaction_corpus import lookalikes, secrets


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"sk-[a-z]{4}", ("sk-",)),
        (r"(?<![A-Za-z])AKIA[0-9A-Z]{16}", ("AKIA",)),
        (r"(?:ghp|gho)_x", ("ghp_x", "gho_x")),  # the parser makes it gh[po]_x
        (r"(ab|cd)[0-9]", ("ab", "cd")),
        (r"(?:ab|[cd])x", ("ab", "c", "d")),  # a class of a few characters: one each
        (r"[?&]sig=", ("?sig=", "&sig=")),
        (r"(?:ab|[c-e])x", None),  # a range is not expanded
        (r"[abcdef]x", None),  # nor a class of more than 4 characters
        (r"\d+:AA", None),
        (r"a?bc", None),
        (r"(?i)secret", None),  # case-insensitive: literal checks would miss "SECRET"
        (r"", None),
    ],
)
def test_prefixes_read_from_the_regex(pattern: str, expected: tuple[str, ...] | None) -> None:
    assert literal_prefixes(re.compile(pattern)) == expected


def test_the_pre_check_skips_texts_without_a_prefix() -> None:
    pattern = SecretPattern.make("ticket", r"TCK-\d{6}")
    assert pattern.needles == ("TCK-",)
    assert pattern.spans("no ticket here", "no ticket here") == []
    text = "see TCK-123456"
    assert pattern.spans(text, text) == [(4, 14)]


def test_every_corpus_match_starts_with_a_prefix_of_its_pattern() -> None:
    texts = []
    for case in (*secrets(), *lookalikes()):
        texts.append(case.text if case.text is not None else json.dumps(case.args))
    # (a pattern may be given context words instead, which need not start its matches)
    with_needles = [
        p
        for p in DEFAULT_PATTERNS
        if p.needles is not None and p.needles == literal_prefixes(p.regex)
    ]
    assert len(with_needles) >= len(DEFAULT_PATTERNS) * 3 // 4  # most patterns have one
    matched = 0
    for pattern in with_needles:
        assert pattern.needles is not None
        for text in texts:
            haystack = text.lower() if pattern.caseless else text
            for match in pattern.regex.finditer(haystack):
                matched += 1
                assert match.group(0).startswith(pattern.needles), (pattern.kind, match)
    assert matched > 100
