"""Who and when: the decisive error of a failed run, and where each failure mode starts.

A judge's answer names, for each mode it finds, the *first* step where the mode shows
(``Finding.first_step``) and the agent responsible (``Finding.agent``), and, for a failed
run, one :class:`DecisiveError`: the agent and step of the earliest error that put the run
on its failing course, the mode(s) it starts, and a one-line reason. These ride along in
the same answer (no extra call); the dedicated methods of :mod:`mast.judge.attribute` fill
the same :class:`DecisiveError` with more calls.

This module reads those fields from JSON answers and from the MAST text format, merges
them across windows, and normalises agent names for comparison (:func:`normalize_agent`);
:mod:`mast.judge.reply.attribution_grounding` checks them against the trace. A field that is
missing or unreadable stays ``None``; it is never guessed.

>>> from mast.judge.reply.parse import normalize_step_id
>>> e = read_decisive_error({"agent": "Coder", "step_id": "S4", "modes": ["1.3", "9.9"],
...                          "reason": "re-ran the same search"}, ["1.3", "2.6"], [],
...                         normalize_step_id)
>>> e.agent, e.step_id, e.modes
('Coder', 's4', ['1.3'])
>>> normalize_agent("Orchestrator (-> WebSurfer)"), normalize_agent(" Verification_Expert ")
('orchestrator', 'verificationexpert')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "AttributionMethod",
    "DecisiveError",
    "decisive_error_schema",
    "earliest_error",
    "earliest_first_step",
    "find_decisive_value",
    "first_step_in_text",
    "normalize_agent",
    "read_decisive_error",
    "read_first_step",
    "read_text_attribution",
    "step_number",
]

AttributionMethod = Literal["verdict", "all-at-once", "step-by-step", "binary-search"]


class DecisiveError(BaseModel):
    """The one error that decided a failed run: who made it, when, and what it started."""

    agent: str | None = Field(default=None, description="Agent that made the error.")
    step_id: str | None = Field(default=None, description='Step id of the error, e.g. "s4".')
    modes: list[str] = Field(
        default_factory=list, description="Failure-mode codes this error starts."
    )
    reason: str | None = Field(default=None, description="One line: what went wrong there.")
    quote: str | None = Field(default=None, description="Short exact quote from that step.")
    grounded: bool | None = Field(
        default=None,
        description="True/False once checked against the trace (step exists, quote occurs "
        "in it, agent is an agent of the trace); None = unchecked or nothing to check.",
    )
    problem: str | None = Field(default=None, description="Why it is not grounded.")
    method: AttributionMethod = Field(
        default="verdict",
        description='"verdict": named in the MAST answer (no extra call); otherwise the '
        "dedicated method that produced it.",
    )
    calls: int | None = Field(
        default=None,
        description="Provider calls the method asked (repairs and answers from the response "
        "cache included; None for a verdict's own answer, which needs no extra call).",
    )

    @property
    def empty(self) -> bool:
        """True when neither an agent nor a step is known."""
        return self.agent is None and self.step_id is None


# --------------------------------------------------------------------------- schema

FIRST_STEP_PROPERTIES: dict[str, Any] = {
    "first_step": {
        "type": ["string", "null"],
        "description": 'For a present mode: the earliest step where it shows, e.g. "s3"; '
        "null when the mode is absent.",
    },
    "agent": {
        "type": ["string", "null"],
        "description": "For a present mode: the agent responsible for it, as named in the "
        "step headers; null when absent or not attributable to one agent.",
    },
}
"""Properties added to each mode's object in the verdict schema."""


def decisive_error_schema() -> dict[str, Any]:
    """The verdict schema's ``decisive_error`` property: one object, or null.

    >>> sorted(decisive_error_schema()["anyOf"][0]["required"])
    ['agent', 'modes', 'quote', 'reason', 'step_id']
    """
    return {
        "description": "For a failed run: the earliest error that put it on its failing "
        "course. null when the run did not fail.",
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "agent": {
                        "type": ["string", "null"],
                        "description": "The agent that made the error, as in the headers.",
                    },
                    "step_id": {
                        "type": ["string", "null"],
                        "description": 'The step where the error was made, e.g. "s4".',
                    },
                    "modes": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Codes of the present modes this error starts.",
                    },
                    "reason": {
                        "type": "string",
                        "description": "One line: what went wrong at that step.",
                    },
                    "quote": {
                        "type": "string",
                        "description": "A short exact quote from that step, or an empty string.",
                    },
                },
                "required": ["agent", "step_id", "modes", "reason", "quote"],
                "additionalProperties": False,
            },
            {"type": "null"},
        ],
    }


# --------------------------------------------------------------------------- reading

_DECISIVE_KEYS = ("decisive_error", "decisive", "root_cause", "mistake", "attribution")
_AGENT_KEYS = ("agent", "responsible_agent", "agent_name", "mistake_agent", "who")
_STEP_KEYS = ("step_id", "step", "first_step", "mistake_step", "when")
_FIRST_KEYS = ("first_step", "first_step_id", "starts_at", "onset_step")
_REASON_KEYS = ("reason", "rationale", "why", "explanation", "mistake_reason")
_NULL_WORDS = {"", "null", "none", "n/a", "unknown", "-", "nobody"}


def _lower(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).strip().lower(): v for k, v in obj.items()}


def _pick(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (bool, Mapping, list)):
        return None
    text = " ".join(str(value).split())
    return None if text.lower() in _NULL_WORDS else text


Normalize = Callable[[object], str]
"""The step-id normaliser (``mast.judge.reply.parse.normalize_step_id``), passed in by the parser
so that this module stays below it."""


def _keep(value: object) -> str:
    return str(value).strip()


def _step(value: Any, normalize: Normalize) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
        if value is None:
            return None
    text = _text(value)
    return normalize(value if isinstance(value, int) else text) if text else None


def read_decisive_error(
    value: Any, codes: Sequence[str], problems: list[str], normalize: Normalize = _keep
) -> DecisiveError | None:
    """A :class:`DecisiveError` from the JSON answer's ``decisive_error`` value.

    ``null`` (no failure) and a value with neither agent nor step give ``None``; codes not
    in ``codes`` are dropped and reported in ``problems``.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        problems.append(f"decisive_error: expected an object, got {type(value).__name__}")
        return None
    item = _lower(value)
    raw_modes = item.get("modes", item.get("mode", item.get("codes", [])))
    modes: list[str] = []
    for raw in raw_modes if isinstance(raw_modes, list) else [raw_modes]:
        match = re.search(r"\d{1,2}\.\d{1,2}", str(raw)) if raw is not None else None
        if match and match.group(0) in codes:
            if match.group(0) not in modes:
                modes.append(match.group(0))
        elif raw not in (None, ""):
            problems.append(f"decisive_error: mode {raw!r} is not a code of this taxonomy")
    error = DecisiveError(
        agent=_text(_pick(item, _AGENT_KEYS)),
        step_id=_step(_pick(item, _STEP_KEYS), normalize),
        modes=modes,
        reason=_text(_pick(item, _REASON_KEYS)),
        quote=_text(item.get("quote")),
    )
    if error.empty:
        if error.reason or modes:
            problems.append("decisive_error: names neither an agent nor a step; unknown")
        return None
    return error


def find_decisive_value(top: Mapping[str, Any]) -> Any:
    """The decisive-error value of a JSON answer's top level (``None`` if absent)."""
    return _pick(_lower(top), _DECISIVE_KEYS)


def read_first_step(
    item: Mapping[str, Any], normalize: Normalize = _keep
) -> tuple[str | None, str | None]:
    """``(first_step, agent)`` from one mode's JSON object; ``None`` where not given."""
    lowered = _lower(item)
    return _step(_pick(lowered, _FIRST_KEYS), normalize), _text(_pick(lowered, _AGENT_KEYS))


# The text format: "D. Decisive error: agent=Coder; step=s4; modes=1.3, 2.6; reason=…" after
# the mode list, and "first step s4, agent Coder" inside a mode's line.
_D_LINE = re.compile(
    r"^[\s*#>|-]*D\s*[.):]\s*(?:\**\s*decisive\s+error\s*\**\s*[:\-–]?\s*)?(?P<body>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_D_FIELD = re.compile(
    r"(?P<key>agent|step(?:_id)?|modes?|reason)\s*[:=]\s*(?P<value>[^;\n]*)", re.IGNORECASE
)
_FIRST_IN_TEXT = re.compile(
    r"\bfirst(?:[\s_]+step)?\s*[:=]?\s*\[?(?P<step>s\d{1,6})\]?", re.IGNORECASE
)
_AGENT_IN_TEXT = re.compile(
    r"\b(?:responsible\s+)?agent\s*[:=]\s*(?P<agent>[^;,)\]\n]{1,80})", re.IGNORECASE
)


def read_text_attribution(
    text: str, codes: Sequence[str], problems: list[str], normalize: Normalize = _keep
) -> DecisiveError | None:
    """The decisive error written as a ``D.`` line in a MAST text-format answer."""
    match = None
    for candidate in _D_LINE.finditer(text):
        if _D_FIELD.search(candidate.group("body")):
            match = candidate
    if match is None:
        return None
    fields: dict[str, Any] = {}
    for field in _D_FIELD.finditer(match.group("body")):
        key = field.group("key").lower().rstrip("s").replace("_id", "")
        fields["modes" if key == "mode" else key] = field.group("value").strip()
    if "modes" in fields:
        fields["modes"] = re.findall(r"\d{1,2}\.\d{1,2}", fields["modes"])
    return read_decisive_error(fields, codes, problems, normalize)


def first_step_in_text(
    rationale: str | None, normalize: Normalize = _keep
) -> tuple[str | None, str | None]:
    """``(first_step, agent)`` written inside a text-format mode line, if any."""
    if not rationale:
        return None, None
    # A "D." line read as the end of the last mode's segment is not that mode's.
    cut = _D_LINE.search(rationale)
    text = rationale[: cut.start()] if cut else rationale
    first = _FIRST_IN_TEXT.search(text)
    agent = _AGENT_IN_TEXT.search(text)
    return (
        _step(first.group("step"), normalize) if first else None,
        _text(agent.group("agent")) if agent else None,
    )


# --------------------------------------------------------------------------- names

_SUFFIX = re.compile(r"\s*[(\[][^()\[\]]*[)\]]\s*$")


def normalize_agent(name: str | None, aliases: Mapping[str, str] | None = None) -> str | None:
    """The comparison key of an agent name: case, spacing, ``_``/``-`` and a trailing
    parenthesised role note are ignored, so "Orchestrator (thought)", "orchestrator" and
    "Orchestrator (-> WebSurfer)" are one agent, and so are "Verification_Expert" and
    "VerificationExpert". ``aliases`` maps further names to a canonical one (compared by
    their keys too). ``None`` and blank names give ``None``.

    >>> normalize_agent("Web Surfer"), normalize_agent("bot", {"Bot": "Coder"})
    ('websurfer', 'coder')
    """
    if name is None:
        return None
    text = str(name).strip()
    while _SUFFIX.search(text) and _SUFFIX.sub("", text):
        text = _SUFFIX.sub("", text)
    key = re.sub(r"[\W_]+", "", text.casefold())
    if aliases:
        table = {normalize_agent(k): v for k, v in aliases.items()}
        if key in table:
            return normalize_agent(table[key])
    return key or None


def step_number(step_id: str | None) -> int | None:
    """The number of an ``s<N>`` step id (``None`` for other ids).

    >>> step_number("s12"), step_number("s3-s5"), step_number(None)
    (12, None, None)
    """
    if step_id is None:
        return None
    match = re.fullmatch(r"s(\d{1,7})", step_id)
    return int(match.group(1)) if match else None


# --------------------------------------------------------------------------- windows


def _order(step_id: str | None, order: Mapping[str, int]) -> int:
    if step_id is None:
        return 1 << 30
    if step_id in order:
        return order[step_id]
    number = step_number(step_id)
    return number - 1 if number is not None else (1 << 30) - 1


def earliest_error(
    errors: Iterable[DecisiveError | None], order: Mapping[str, int] | None = None
) -> DecisiveError | None:
    """The earliest of several windows' decisive errors (by the trace's step order).

    >>> earliest_error([DecisiveError(step_id="s9"), None, DecisiveError(step_id="s4")]).step_id
    's4'
    """
    found = [e for e in errors if e is not None]
    if not found:
        return None
    return min(found, key=lambda e: _order(e.step_id, order or {}))


def earliest_first_step(
    steps: Iterable[tuple[str | None, str | None]], order: Mapping[str, int] | None = None
) -> tuple[str | None, str | None]:
    """The earliest ``(first_step, agent)`` of several windows' findings for one mode."""
    known = [s for s in steps if s[0] is not None or s[1] is not None]
    if not known:
        return None, None
    return min(known, key=lambda s: _order(s[0], order or {}))
