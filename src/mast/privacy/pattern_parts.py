"""The pieces the secret patterns are built from: :class:`SecretPattern`, the placeholder
text, the checks that reject look-alikes (placeholders, code, words, documented example
keys), and the regex helpers for tokens with a literal prefix.

>>> placeholder("vault_token")
'[REDACTED:vault_token]'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mast.privacy.regex_prefix import literal_prefixes

__all__ = ["SecretPattern", "placeholder"]


def placeholder(kind: str) -> str:
    """The text that replaces a secret of type ``kind``.

    >>> placeholder("jwt")
    '[REDACTED:jwt]'
    """
    return f"[REDACTED:{kind}]"


Locate = Callable[[re.Match[str], str], "tuple[int, int] | None"]


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: a regular expression, the group that is the secret itself (the
    rest of the match is context and stays), and an optional ``check`` on the secret that
    rejects look-alikes (placeholders, type names, words without digits).

    ``locate`` (for rules that need more than a regex) gets the match and the original text
    and returns the span of the secret, or ``None`` to leave this match alone.

    >>> p = SecretPattern.make("ticket", r"TCK-\\d{6}")
    >>> p.kind, p.regex.pattern
    ('ticket', 'TCK-\\\\d{6}')
    """

    kind: str
    regex: re.Pattern[str]
    group: int | tuple[int, ...] = 0
    check: Callable[[str], bool] | None = None
    caseless: bool = False
    locate: Locate | None = None
    needles: tuple[str, ...] | None = None
    """Literal strings one of which every match starts with (found from the regex by
    :func:`literal_prefixes`): a text holding none of them is skipped without running the
    regex, which is most texts for most patterns."""

    @classmethod
    def make(
        cls,
        kind: str,
        pattern: str,
        *,
        group: int | tuple[int, ...] = 0,
        flags: int = 0,
        check: Callable[[str], bool] | None = None,
        caseless: bool = False,
        locate: Locate | None = None,
    ) -> SecretPattern:
        """Compile ``pattern``; ``kind`` names the placeholder (letters, digits, ``_``).
        ``group`` may be a tuple of alternative groups: the first that matched is the secret.
        ``caseless=True`` runs a lower-case ``pattern`` on the lower-cased text (a faster
        ``re.IGNORECASE``); the secret and ``check`` still see the original text."""
        if not re.fullmatch(r"[A-Za-z0-9_]+", kind):
            raise ValueError(f"secret kind must be letters, digits or '_', got {kind!r}")
        regex = re.compile(pattern, flags)
        for number in group if isinstance(group, tuple) else (group,):
            if number > regex.groups:
                raise ValueError(f"pattern {pattern!r} has no group {number}")
        return cls(kind, regex, group, check, caseless, locate, literal_prefixes(regex))

    def spans(self, text: str, haystack: str) -> list[tuple[int, int]]:
        """Where the secrets of this pattern are in ``text`` (matched on ``haystack``, the
        text or its lower-cased copy of the same length)."""
        if self.needles is not None and not any(n in haystack for n in self.needles):
            return []  # cheap literal pre-check: no match can start anywhere in this text
        groups = self.group if isinstance(self.group, tuple) else (self.group,)
        out: list[tuple[int, int]] = []
        for match in self.regex.finditer(haystack):
            if self.locate is not None:
                span = self.locate(match, text)
                if span is not None and span[0] < span[1]:
                    out.append(span)
                continue
            number = next((g for g in groups if match.start(g) != -1), groups[0])
            a, b = match.span(number)
            if a < b and (self.check is None or self.check(text[a:b])):
                out.append((a, b))
        return out


# --------------------------------------------------------------------------- checks

_PLACEHOLDER_LIKE = re.compile(
    # A reference or mask, not a value: [PAD], $VAR, ${VAR}, $(cmd), %VAR%, {{ x }}, <key>,
    # ***, xxxxxx, "# comment". A bare leading $ or % is not enough: "$F!HiVT" is a password.
    r"""^(?:\$\w+\b(?![^\w/.:\-])|\$\{[^}]*\}|\$\([^)]*\)|%\w+%)"""
    r"""|^(?:\[[^\]]*\]|\{\{?[^}]*\}\}?|<[^>]*>)$"""
    r"""|^(?:\*{3}|x{6}|X{6}|\.\.\.|…|#(?:\s|$))"""
    r"""|^[A-Z]+(?:_[A-Z0-9]+)*$"""  # YOUR_API_KEY, PASSWORD (a name, not a value)
    r"""|^(?:[A-Za-z_][A-Za-z_]*\.)+[A-Za-z_]+$""",  # os.environ, settings.API_KEY (code)
)
# Values that follow "password:" in schemas, type hints and docs rather than a password.
_NOT_A_VALUE = {
    "str", "string", "text", "none", "null", "nil", "true", "false", "undefined", "required",
    "optional", "bool", "boolean", "int", "integer", "number", "any", "object", "secret",
    "password", "redacted", "hidden", "masked", "changeme", "example", "placeholder",
    "secretstr", "field", "input", "getpass", "env", "bearer", "basic", "token", "dummy",
    "test", "none needed", "not needed", "not set", "unset", "empty", "optional[str]",
}  # fmt: skip
_PATH = re.compile(r"^(?:/|~/|\.\.?/|[A-Za-z]:\\)")  # PWD=/home/agent, C:\\Users
# AWS's documented example keys.
# Keys vendors print in their own documentation, so they occur in traces of agents that
# read docs or copy samples: not secrets (AWS's, and Stripe's published test keys).
_EXAMPLES = {
    "AKIAIOSFODNN7EXAMPLE",
    "AKIAI44QH8DHBEXAMPLE",
    "wJalrXUtnFI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "pk_test_TYooMQauvdEDq54NiTphI7jx",
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2",
}
_CALL = re.compile(r"^[A-Za-z_][\w.]*\((?:.*\))?[,;]?$")  # input(, getpass.getpass()
_CALL_START = re.compile(r"^([A-Za-z_][\w.]*)\(")  # get_token(scope=… (cut at a quote)
_IDENTIFIER = re.compile(r"^[a-z]+(?:_[a-z]+)+(?:_\d+)?$")  # user_input_42
_WORDS = re.compile(r"^(?:[A-Za-z][a-z]*|\d+)(?:[-_.](?:[A-Za-z][a-z]*|\d+))*$")


def _has(text: str, kind: str) -> bool:
    if kind == "digit":
        return any(c.isdigit() for c in text)
    if kind == "upper":
        return any(c.isupper() for c in text)
    if kind == "lower":
        return any(c.islower() for c in text)
    return any(c.isalpha() for c in text)


def _random_token(text: str) -> bool:
    """A key body: letters and digits mixed, as random keys are (not a kebab-case name)."""
    return _has(text, "digit") and _has(text, "alpha") and not _WORDS.match(text)


def _mixed_case(text: str) -> bool:
    return _has(text, "upper") and _has(text, "lower")


def _base64ish(text: str) -> bool:
    return _has(text, "digit") and _mixed_case(text)


def _not_placeholder(text: str) -> bool:
    value = text.strip("\"'` ")
    return (
        bool(value)
        and not _PLACEHOLDER_LIKE.search(value)
        and value.lower() not in _NOT_A_VALUE
        and not _CALL.match(value)
        and not _IDENTIFIER.match(value)
        and value not in _EXAMPLES
    )


_EXAMPLE_BODY = re.compile(r"^(?:[A-Za-z0-9]+[_\-.]){1,4}EXAMPLE")  # sk_test_EXAMPLE…


def _is_call(value: str) -> bool:
    """Code calling a function by a word-like name (``get_token(``), not a random value
    with a parenthesis in it (``Ab3dE9xQ(x)…``)."""
    match = _CALL_START.match(value)
    return match is not None and not _random_token(match.group(1))


def _not_example(text: str) -> bool:
    """Not a documented example key: one of the vendors' published ones, a key that ends in
    EXAMPLE (AKIAIOSFODNN7EXAMPLE, …EXAMPLEKEY) or whose body after the prefix starts with
    it (sk_test_EXAMPLE…)."""
    return not (
        text.endswith(("EXAMPLE", "EXAMPLEKEY")) or _EXAMPLE_BODY.match(text) or text in _EXAMPLES
    )


def _vendor_token(text: str) -> bool:
    """A vendor token with a random body that is not one of the documented examples."""
    return _random_token(text) and _not_example(text)


# --------------------------------------------------------------------------- patterns
# Speed: a pattern that starts with a literal is found by a fast substring scan, so the
# "not part of a longer identifier" test comes right after the literal, as a lookbehind.
# Case-insensitive patterns are written in lower case and run on the lower-cased text
# (``caseless=True``), several times faster than ``re.IGNORECASE`` on megabyte logs.


def _token(prefix: str, width: int | None = None) -> str:
    """``prefix`` (a regex of fixed ``width``) not preceded by an identifier character."""
    width = len(prefix) if width is None else width
    return prefix + r"(?<![A-Za-z0-9_\-]" + "." * width + ")"


_R = r"(?![A-Za-z0-9_\-])"


def _prefixed(
    kind: str, regex: str, check: Callable[[str], bool] | None = _vendor_token
) -> SecretPattern:
    return SecretPattern.make(kind, regex + _R, check=check)
