"""Replace secrets in trace text with typed placeholders before the text leaves the machine.

Traces are logs: environment dumps, HTTP requests, config files and shell sessions, so
they often hold API keys, tokens and passwords. The judge sends trace text to a model
provider; by default it first replaces every secret it recognises with a placeholder
naming its type, e.g. ``[REDACTED:openai_key]``, counts them per type (the counts are
stored in ``Annotation.redactions``) and judges the redacted text, so quotes and evidence
refer to exactly what the model saw.

Redaction reads structure: a JSON string with escapes (tool arguments that hold JSON, a
JSON document inside a JSON string, at any depth) is decoded, redacted as text of its own
and encoded again, so ``{"cmd": "{\\"db_password\\": \\"…\\"}"}`` loses its password like
plain text does. What is recognised is listed in :mod:`mast.privacy.secret_patterns`: provider keys
by their documented prefixes, private key blocks, JWTs, authorization headers, passwords
in URLs, connection strings and command lines, and any value assigned to a name that says
it holds a secret. Add your own with ``Redactor(extra=...)``.

>>> text = 'curl -H "Authorization: Bearer sk-proj-4fQ9xT2mLr8ZkP1vW7aN3bC6dE0gH5jK" api'
>>> r = Redactor().redact(text)
>>> r.text, r.counts
('curl -H "Authorization: Bearer [REDACTED:openai_key]" api', {'openai_key': 1})
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mast.privacy.secret_patterns import DEFAULT_PATTERNS, SecretPattern, placeholder
from mast.traces.model import Step, Trace

__all__ = [
    "DEFAULT_PATTERNS",
    "Redaction",
    "Redactor",
    "SecretPattern",
    "placeholder",
    "redact",
]


@dataclass(frozen=True)
class Redaction:
    """Redacted text and how many secrets of each type were replaced."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Secrets replaced, all types together."""
        return sum(self.counts.values())


PatternLike = SecretPattern | tuple[str, str]

# A JSON string literal on one line. Those with escapes are decoded and redacted on their own.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# JSON inside a JSON string inside … : deeper than this is left to the plain patterns.
_MAX_DEPTH = 4


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
        # The distinct literal prefixes of the patterns: of those that run on the text as
        # written, and of those that run on its lower-cased copy.
        self._needles: tuple[frozenset[str], frozenset[str]] = (
            frozenset(n for p in self.patterns if not p.caseless for n in p.needles or ()),
            frozenset(n for p in self.patterns if p.caseless for n in p.needles or ()),
        )

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

    def _redact(
        self,
        text: str,
        counts: Counter[str],
        depth: int = 0,
        active: tuple[int, ...] | None = None,
    ) -> str:
        """``active`` (from :meth:`_active`, for a text that is part of a larger one): the
        indices of the patterns some of whose literal prefixes occur in the larger text,
        the only ones that can match. It holds only as long as ``text`` is unchanged, so
        every pattern runs after the first replacement."""
        if not text:
            return text
        before = text
        text = self._replace_literals(text, counts)
        if not self.patterns:
            return text
        if "\\" in text and depth < _MAX_DEPTH:
            text = self._redact_json_strings(text, counts, depth)
        if text is not before:
            active = None
        lowered: str | None = None
        patterns = self.patterns
        i = 0
        # After a replacement (which can bring a prefix, e.g. "secret" with a placeholder)
        # the rest of the patterns all run: ``active`` becomes None and ``i`` counts on.
        while True:
            if active is None:
                if i >= len(patterns):
                    return text
                index = i
            else:
                if i >= len(active):
                    return text
                index = active[i]
            i += 1
            pattern = patterns[index]
            haystack = text
            if pattern.caseless:
                if lowered is None:
                    lowered = text.lower()
                # lower() only ever lengthens a string (e.g. "İ"): same length, same offsets.
                haystack = lowered if len(lowered) == len(text) else _ascii_lower(text)
            spans = pattern.spans(text, haystack)
            if spans:
                text, lowered = _replace(text, spans, pattern.kind, counts), None
                if active is not None:
                    active, i = None, index + 1

    def _active(self, texts: list[str]) -> tuple[int, ...]:
        """The indices of the patterns that :meth:`_absent` does not rule out."""
        return tuple(i for i, skip in enumerate(self._absent(texts)) if not skip)

    def _absent(self, texts: list[str]) -> tuple[bool, ...]:
        """Per pattern, whether none of its literal prefixes occur in any of ``texts``: one
        substring test per distinct prefix for all the texts of a trace together, instead
        of one per pattern for each text."""
        joined = "\n".join(dict.fromkeys(texts))  # each distinct text once (repeats add nothing)
        lowered = joined.lower()  # contains the lower-cased form of each of the texts
        found = {n for n in self._needles[0] if n in joined}
        found |= {n for n in self._needles[1] if n in lowered}
        return tuple(p.needles is not None and found.isdisjoint(p.needles) for p in self.patterns)

    def _replace_literals(self, text: str, counts: Counter[str]) -> str:
        for secret, kind in self._literals:
            if secret in text:
                counts[kind] += text.count(secret)
                text = text.replace(secret, placeholder(kind))
        return text

    def _redact_json_strings(self, text: str, counts: Counter[str], depth: int) -> str:
        """Decode each JSON string literal that has escapes, redact it as a text of its own
        (so names and quotes inside it are seen as they are) and encode it again."""
        found: list[tuple[re.Match[str], str]] = []
        for match in _JSON_STRING.finditer(text):
            literal = match.group(0)
            if "\\" not in literal:
                continue
            try:
                found.append((match, json.loads(literal)))
            except ValueError:
                continue
        # The pre-check for all the decoded strings of this text together.
        active = self._active([decoded for _, decoded in found]) if len(found) > 1 else None
        pieces: list[str] = []
        pos = 0
        for match, decoded in found:
            new = self._redact(decoded, counts, depth + 1, active)
            if new != decoded:
                pieces += (text[pos : match.start()], json.dumps(new, ensure_ascii=False))
                pos = match.end()
        if not pieces:
            return text
        pieces.append(text[pos:])
        return "".join(pieces)

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
        texts = [v for v in (trace.task, trace.system, trace.benchmark) if v]
        for step in trace.steps:
            texts += [v for v in (step.content, step.agent, step.role, step.tool_name) if v]
            if isinstance(step.tool_args, str):
                texts.append(step.tool_args)
        memo = _Memo(self, self._active(texts), counts)
        updates: dict[str, Any] = {}
        for name in ("task", "system", "benchmark"):
            value = getattr(trace, name)
            if value:
                new = memo.redact(value)
                if new != value:
                    updates[name] = new
        steps: list[Step] = []
        changed = False
        for step in trace.steps:
            new_step = self._redact_step(step, memo)
            changed = changed or new_step is not step
            steps.append(new_step)
        if changed:
            updates["steps"] = steps
        if not updates:
            return trace, {}
        return trace.model_copy(update=updates), dict(counts)

    def _redact_step(self, step: Step, memo: _Memo) -> Step:
        updates: dict[str, Any] = {}
        for name in ("content", "agent", "role", "tool_name"):
            value = getattr(step, name)
            if value:
                new = memo.redact(value)
                if new != value:
                    updates[name] = new
        if step.tool_args is not None:
            args = self._redact_args(step.tool_args, memo)
            if args is not step.tool_args:
                updates["tool_args"] = args
        return step.model_copy(update=updates) if updates else step

    def _redact_args(self, args: Any, memo: _Memo) -> Any:
        """Tool arguments: redact their JSON text (so ``"aws_secret_access_key": "…"`` keeps
        its context), falling back to string by string if that breaks the JSON."""
        counts = memo.counts
        if isinstance(args, str):
            new = memo.redact(args)
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


class _Memo:
    """The texts of one trace redacted once each: agents, roles and tool names recur in
    every step, and so do repeated contents. A repeat adds the counts of its first time."""

    def __init__(self, redactor: Redactor, active: tuple[int, ...], counts: Counter[str]) -> None:
        self._redactor = redactor
        self._active = active
        self.counts = counts
        self._done: dict[str, tuple[str, Counter[str] | None]] = {}

    def redact(self, text: str) -> str:
        done = self._done.get(text)
        if done is None:
            local: Counter[str] = Counter()
            new = self._redactor._redact(text, local, active=self._active)
            done = self._done[text] = (new, local or None)
        if done[1]:
            self.counts.update(done[1])
        return done[0]


def _ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only: same length as ``text`` whatever it holds."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _replace(text: str, spans: list[tuple[int, int]], kind: str, counts: Counter[str]) -> str:
    pieces: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos:  # overlapping matches of one pattern: the first wins
            continue
        counts[kind] += 1
        pieces += (text[pos:a], placeholder(kind))
        pos = b
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
