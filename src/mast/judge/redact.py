"""Replace secrets in trace text with typed placeholders before the text leaves the machine.

Traces are logs: environment dumps, HTTP requests, config files and shell sessions, so
they often hold API keys, tokens and passwords. The judge sends trace text to a model
provider; by default it first replaces every secret it recognises with a placeholder
naming its type, e.g. ``[REDACTED:openai_key]``, counts them per type (the counts are
stored in ``Annotation.redactions``) and judges the redacted text, so quotes and evidence
refer to exactly what the model saw.

What is recognised (see :data:`DEFAULT_PATTERNS`): API keys of OpenAI, Anthropic, Google,
GitHub, Slack, Stripe and Hugging Face by their prefixes; AWS access key ids, and AWS
secret keys next to their variable name; bearer, basic and API-key authorization headers;
private key blocks (PEM, OpenSSH, PGP); JWTs; passwords in URLs (``scheme://user:pw@host``)
and in connection strings (``Password=…;``); and values assigned to names such as
``DB_PASSWORD``, ``client_secret`` or ``"api_key":``. Patterns look for the shape of a
secret, not for anything random-looking, so hex hashes, UUIDs and ordinary base64 are left
alone. Add your own with ``Redactor(extra=...)``.

>>> text = 'curl -H "Authorization: Bearer sk-proj-4fQ9xT2mLr8ZkP1vW7aN3bC6dE0gH5jK" api'
>>> r = Redactor().redact(text)
>>> r.text, r.counts
('curl -H "Authorization: Bearer [REDACTED:openai_key]" api', {'openai_key': 1})
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mast.traces.model import Step, Trace

__all__ = [
    "DEFAULT_PATTERNS",
    "Redaction",
    "Redactor",
    "SecretPattern",
    "placeholder",
    "redact",
]


def placeholder(kind: str) -> str:
    """The text that replaces a secret of type ``kind``.

    >>> placeholder("jwt")
    '[REDACTED:jwt]'
    """
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: a regular expression, the group that is the secret itself (the
    rest of the match is context and stays), and an optional ``check`` on the secret that
    rejects look-alikes (placeholders, type names, words without digits).

    >>> p = SecretPattern.make("ticket", r"TCK-\\d{6}")
    >>> p.kind, p.regex.pattern
    ('ticket', 'TCK-\\\\d{6}')
    """

    kind: str
    regex: re.Pattern[str]
    group: int | tuple[int, ...] = 0
    check: Callable[[str], bool] | None = None
    caseless: bool = False

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
        return cls(kind=kind, regex=regex, group=group, check=check, caseless=caseless)


@dataclass(frozen=True)
class Redaction:
    """Redacted text and how many secrets of each type were replaced."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Secrets replaced, all types together."""
        return sum(self.counts.values())


# --------------------------------------------------------------------------- checks

_PLACEHOLDER_LIKE = re.compile(
    r"""^(?:\[REDACTED|\$|%|\{|<|\*{3}|x{6}|X{6}|\.\.\.|…)"""  # $VAR, ${VAR}, <key>, ***
    r"""|^[A-Z]+(?:_[A-Z0-9]+)*$"""  # YOUR_API_KEY, PASSWORD (a name, not a value)
    r"""|^(?:[A-Za-z_][A-Za-z_]*\.)+[A-Za-z_]+$""",  # os.environ, settings.API_KEY (code)
)
# Values that follow "password:" in schemas, type hints and docs rather than a password.
_NOT_A_VALUE = {
    "str", "string", "text", "none", "null", "nil", "true", "false", "undefined", "required",
    "optional", "bool", "boolean", "int", "integer", "number", "any", "object", "secret",
    "password", "redacted", "hidden", "masked", "changeme", "example", "placeholder",
    "secretstr", "field", "input", "getpass", "env",
}  # fmt: skip


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
    return _has(text, "digit") and _has(text, "alpha")


def _mixed_case(text: str) -> bool:
    return _has(text, "upper") and _has(text, "lower")


def _not_placeholder(text: str) -> bool:
    return not _PLACEHOLDER_LIKE.search(text) and text.strip("\"'").lower() not in _NOT_A_VALUE


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
_PASSWORD_NAME = r"(?:passw(?:or)?d|pwd|passphrase)"
_SECRET_NAME = (
    r"(?:secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|auth[_\-]?key"
    r"|credentials?)"
)


def _assignments(kind: str, name: str) -> tuple[SecretPattern, SecretPattern]:
    """``name = "value"`` (quoted: the quotes stay) and ``name=value`` (unquoted); the name
    may carry a prefix (``DB_PASSWORD``, ``client_secret``), which stays as it is."""
    head = name + r"[\"']?[ \t]*(?:=>|:=|[:=])[ \t]*(?!\[redacted)"
    quoted = SecretPattern.make(
        kind,
        head + r"(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})')",
        group=(1, 2),
        check=_not_placeholder,
        caseless=True,
    )
    bare = SecretPattern.make(
        kind,
        head + r"([^\s\"',;(){}\[\]<>]{6,200})(?![^\s\"',;{}\[\]<>])",
        group=1,
        check=lambda s: _random_token(s) and _not_placeholder(s),
        caseless=True,
    )
    return quoted, bare


DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    # Blocks first: a key block may contain anything the token patterns would also match.
    SecretPattern.make(
        "private_key",
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        # A block cut off (log truncation): its header lines and base64 lines.
        r"|(?:(?:\s|\\[rn])+(?:[A-Za-z-]+:[^\n\\]*|[A-Za-z0-9+/=]{16,}))*)",
    ),
    SecretPattern.make(
        "jwt", _token("eyJ") + r"[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*" + _R
    ),
    # Provider keys by prefix. sk-ant- before the generic OpenAI sk- form.
    SecretPattern.make("anthropic_key", _token("sk-ant-") + r"[A-Za-z0-9_\-]{20,}"),
    SecretPattern.make(
        "openai_key",
        _token("sk-") + r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        check=_random_token,
    ),
    SecretPattern.make("gitlab_token", _token("glpat-") + r"[A-Za-z0-9_\-]{20,}" + _R),
    SecretPattern.make("google_api_key", _token("AIza") + r"[0-9A-Za-z_\-]{35}" + _R),
    SecretPattern.make(
        "github_token",
        r"(?:"
        + _token("gh[pousr]_", 4)
        + r"[A-Za-z0-9]{36,}|"
        + _token("github_pat_")
        + r"[A-Za-z0-9_]{22,})"
        + _R,
    ),
    SecretPattern.make(
        "slack_token",
        _token("xox[abposre]-", 5) + r"[A-Za-z0-9\-]{10,}",
        check=lambda s: _has(s, "digit"),
    ),
    SecretPattern.make(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
    ),
    SecretPattern.make(
        "stripe_key",
        _token("[srp]k_(?:live|test)_", 8) + r"[A-Za-z0-9]{16,}" + _R,
        check=_random_token,
    ),
    SecretPattern.make(
        "huggingface_token", _token("hf_") + r"[A-Za-z0-9]{30,}" + _R, check=_mixed_case
    ),
    SecretPattern.make(
        "aws_access_key_id",
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)(?<![A-Za-z0-9]....)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    SecretPattern.make(
        "aws_secret_key",
        r"(?:aws[_\-]?secret(?:[_\-]?access)?[_\-]?key|secret[_\-]?access[_\-]?key)"
        r"[\"']?[ \t]*(?:=>|[:=])[ \t]*[\"']?([a-z0-9/+]{40})(?![a-z0-9/+])",
        group=1,
        caseless=True,
    ),
    # Authorization headers (the scheme stays, the credential goes).
    SecretPattern.make(
        "bearer_token",
        r"bearer(?<![a-z0-9_]......)[ \t]+([a-z0-9._~+/\-]{16,}=*)(?![a-z0-9._~+/=\-])",
        group=1,
        check=_random_token,
        caseless=True,
    ),
    SecretPattern.make(
        "basic_auth",
        r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?[ \t]*basic[ \t]+([a-z0-9+/]{6,}={0,2})",
        group=1,
        caseless=True,
    ),
    SecretPattern.make(
        "api_key_header",
        r"(?:x-api-key|api-key|x-auth-token|x-goog-api-key)[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"([a-z0-9._~+/\-]{12,})",
        group=1,
        check=lambda s: _random_token(s) and _not_placeholder(s),
        caseless=True,
    ),
    # Passwords in URLs: scheme://user:password@host (user may be empty: redis://:pw@host).
    SecretPattern.make(
        "url_password",
        r"://[^\s:/?#@\"'<>\[\]]*:(?!\[redacted)([^\s@/?#\"'<>]+)@(?=[a-z0-9\[])",
        group=1,
        check=_not_placeholder,
        caseless=True,
    ),
    # Connection strings: Server=…;User Id=…;Password=…;  and --password=… on command lines.
    SecretPattern.make(
        "password",
        r"(?:password|pwd)[ \t]*=[ \t]*(?!\[redacted)([^;\s\"'&()]+)(?=[;\s\"'&]|$)",
        group=1,
        check=_not_placeholder,
        caseless=True,
    ),
    # NAME=value / "name": "value" / name: value, for names that say they hold a secret.
    *_assignments("password", _PASSWORD_NAME),
    *_assignments("secret", _SECRET_NAME),
)
"""The secret patterns the judge applies by default, most specific first."""


# --------------------------------------------------------------------------- redactor

PatternLike = SecretPattern | tuple[str, str]


def _as_pattern(item: PatternLike) -> SecretPattern:
    if isinstance(item, SecretPattern):
        return item
    kind, pattern = item
    return SecretPattern.make(kind, pattern)


class Redactor:
    """Find secrets in text and replace them with ``[REDACTED:<kind>]`` placeholders.

    ``patterns`` replaces the default set (:data:`DEFAULT_PATTERNS`; pass ``()`` for none),
    ``extra`` adds patterns after it (a :class:`SecretPattern` or ``(kind, regex)``), and
    ``literals`` are exact strings to remove wherever they occur (the judge adds its own API
    key there, so that key never reaches a prompt or a result even with redaction off).

    >>> r = Redactor(extra=[("ticket", r"TCK-\\d{6}")])
    >>> r.redact("see TCK-123456 and ghp_" + "a1B2" * 9).text
    'see [REDACTED:ticket] and [REDACTED:github_token]'
    """

    def __init__(
        self,
        patterns: Iterable[PatternLike] | None = None,
        *,
        extra: Iterable[PatternLike] = (),
        literals: Mapping[str, str] | Iterable[str] = (),
    ) -> None:
        base = DEFAULT_PATTERNS if patterns is None else tuple(map(_as_pattern, patterns))
        self.patterns: tuple[SecretPattern, ...] = base + tuple(map(_as_pattern, extra))
        pairs = (
            literals.items() if isinstance(literals, Mapping) else ((s, "secret") for s in literals)
        )
        # Longest first, so a literal that contains another is replaced whole.
        self._literals = sorted(((s, k) for s, k in pairs if s), key=lambda p: -len(p[0]))

    @classmethod
    def off(cls, *, literals: Mapping[str, str] | Iterable[str] = ()) -> Redactor:
        """A redactor with no patterns (only ``literals``, if any)."""
        return cls(patterns=(), literals=literals)

    @property
    def enabled(self) -> bool:
        """Whether this redactor can change anything at all."""
        return bool(self.patterns or self._literals)

    @property
    def kinds(self) -> list[str]:
        """Placeholder types this redactor can produce, in pattern order."""
        kinds = [p.kind for p in self.patterns] + [k for _, k in self._literals]
        return list(dict.fromkeys(kinds))

    def with_literals(self, literals: Mapping[str, str]) -> Redactor:
        """A copy that also removes ``literals`` (exact string -> kind)."""
        clone = Redactor(patterns=self.patterns)
        clone._literals = sorted(
            [*self._literals, *((s, k) for s, k in literals.items() if s)], key=lambda p: -len(p[0])
        )
        return clone

    def __repr__(self) -> str:
        # Never show the literals: they are secrets.
        return f"Redactor(kinds={self.kinds!r})"

    def redact(self, text: str) -> Redaction:
        """Redact one text."""
        counts: Counter[str] = Counter()
        return Redaction(self._redact(text, counts), dict(counts))

    def _redact(self, text: str, counts: Counter[str]) -> str:
        if not text:
            return text
        for secret, kind in self._literals:
            if secret in text:
                counts[kind] += text.count(secret)
                text = text.replace(secret, placeholder(kind))
        lowered: str | None = None
        for pattern in self.patterns:
            haystack, ignorecase = text, False
            if pattern.caseless:
                if lowered is None:
                    lowered = text.lower()
                # lower() only ever lengthens a string (e.g. "İ"): same length, same offsets.
                if len(lowered) == len(text):
                    haystack = lowered
                else:
                    ignorecase = True
            new = _apply(pattern, text, haystack, counts, ignorecase=ignorecase)
            if new is not text:
                text, lowered = new, None
        return text

    # ------------------------------------------------------------------ traces
    def redact_trace(self, trace: Trace) -> tuple[Trace, dict[str, int]]:
        """A copy of ``trace`` with every text the judge shows redacted, and the counts.

        Redacted: the task, system and benchmark names, and each step's content, agent,
        role, tool name and tool arguments. Labels, ids and metadata are never sent to a
        model and stay as they are. Unchanged steps are shared, not copied.
        """
        counts: Counter[str] = Counter()
        if not self.enabled:
            return trace, {}
        updates: dict[str, Any] = {}
        for name in ("task", "system", "benchmark"):
            value = getattr(trace, name)
            if value:
                new = self._redact(value, counts)
                if new != value:
                    updates[name] = new
        steps: list[Step] = []
        changed = False
        for step in trace.steps:
            new_step = self._redact_step(step, counts)
            changed = changed or new_step is not step
            steps.append(new_step)
        if changed:
            updates["steps"] = steps
        if not updates:
            return trace, {}
        return trace.model_copy(update=updates), dict(counts)

    def _redact_step(self, step: Step, counts: Counter[str]) -> Step:
        updates: dict[str, Any] = {}
        for name in ("content", "agent", "role", "tool_name"):
            value = getattr(step, name)
            if value:
                new = self._redact(value, counts)
                if new != value:
                    updates[name] = new
        if step.tool_args is not None:
            args = self._redact_args(step.tool_args, counts)
            if args is not step.tool_args:
                updates["tool_args"] = args
        return step.model_copy(update=updates) if updates else step

    def _redact_args(self, args: Any, counts: Counter[str]) -> Any:
        """Tool arguments: redact their JSON text (so ``"aws_secret_access_key": "…"`` keeps
        its context), falling back to string by string if that breaks the JSON."""
        if isinstance(args, str):
            new = self._redact(args, counts)
            return args if new == args else new
        try:
            dumped = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return self._redact_each(args, counts)
        local: Counter[str] = Counter()
        new = self._redact(dumped, local)
        if new == dumped:
            return args
        try:
            loaded = json.loads(new)
        except ValueError:
            return self._redact_each(args, counts)
        counts.update(local)
        return loaded

    def _redact_each(self, value: Any, counts: Counter[str]) -> Any:
        if isinstance(value, str):
            return self._redact(value, counts)
        if isinstance(value, Mapping):
            return {k: self._redact_each(v, counts) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._redact_each(v, counts) for v in value]
        return value


def _apply(
    pattern: SecretPattern,
    text: str,
    haystack: str,
    counts: Counter[str],
    *,
    ignorecase: bool = False,
) -> str:
    """Replace ``pattern``'s secrets in ``text``, matching on ``haystack`` (``text`` or its
    lower-cased copy, same offsets). Returns ``text`` itself when nothing changed."""
    groups = pattern.group if isinstance(pattern.group, tuple) else (pattern.group,)
    regex = pattern.regex
    if ignorecase:  # rare: lower() changed the length, so match the original text
        regex = re.compile(regex.pattern, regex.flags | re.IGNORECASE)
    pieces: list[str] = []
    pos = 0
    for match in regex.finditer(haystack):
        number = next((g for g in groups if match.start(g) != -1), groups[0])
        a, b = match.span(number)
        secret = text[a:b]
        if not secret or (pattern.check is not None and not pattern.check(secret)):
            continue
        counts[pattern.kind] += 1
        pieces += (text[pos:a], placeholder(pattern.kind))
        pos = b
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


_DEFAULT: Redactor | None = None


def _default() -> Redactor:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Redactor()
    return _DEFAULT


def redact(text: str) -> str:
    """``text`` with the default patterns redacted.

    >>> redact("postgres://app:s3cr3t-pw@db.internal:5432/prod")
    'postgres://app:[REDACTED:url_password]@db.internal:5432/prod'
    """
    return _default().redact(text).text
