"""A judge's answer as data: :class:`Verdict`, its findings and evidence, and the JSON schema
providers are asked to fill.

**The JSON verdict** (what :func:`verdict_json_schema` asks providers for; every property is
required and no other is allowed, so it is valid for OpenAI strict structured outputs and
for Anthropic tool input)::

    {
      "summary": "<two or three sentences on what went wrong, or that nothing did>",
      "modes": {
        "1.1": {
          "evidence": [{"step_id": "s3", "quote": "<short exact quote from step s3>"}],
          "rationale": "<why the mode is or is not present, citing steps>",
          "present": true | false | null,      # null = the trace does not allow a decision
          "confidence": 0.0 .. 1.0 | null
        },
        ...                                    # one object per taxonomy code, all required
      },
      "decisive_error": {"agent": …, "step_id": "s4", "modes": ["1.1"], "reason": …,
                         "quote": …} | null,
      "task_completed": true | false | null
    }

Evidence and rationale come before ``present`` so that models that write in schema order
reason before they decide. Each mode object also carries ``first_step`` (the earliest step
where a present mode shows) and ``agent`` (who is responsible), and the answer names one
``decisive_error`` for a failed run: who and when, in the same call (see
:mod:`mast.judge.attribution`).

Reading an answer into this shape is :mod:`mast.judge.reply.parse`; checking its evidence against
the trace is :mod:`mast.judge.reply.grounding`.

>>> schema = verdict_json_schema(load_taxonomy())
>>> sorted(schema["properties"]), len(schema["properties"]["modes"]["required"])
(['decisive_error', 'modes', 'summary', 'task_completed'], 14)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mast.errors import VerdictParseError
from mast.judge.attribution import FIRST_STEP_PROPERTIES, DecisiveError, decisive_error_schema
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import FailureVector

__all__ = [
    "DecisiveError",
    "Evidence",
    "Finding",
    "Verdict",
    "VerdictParseError",
    "example_answer",
    "verdict_json_schema",
]

VerdictFormat = Literal["json", "text", "rules"]


class Evidence(BaseModel):
    """One cited step, optionally with a short quote from it."""

    step_id: str = Field(description='Step id as shown in the prompt, e.g. "s12".')
    quote: str | None = Field(default=None, description="Short exact quote from that step.")
    grounded: bool | None = Field(
        default=None, description="True/False once checked against the trace; None = unchecked."
    )
    problem: str | None = Field(default=None, description="Why the evidence is not grounded.")
    fuzzy: bool = Field(
        default=False,
        description="The quote is near-verbatim, not exact: reported, not evidence.",
    )
    off_agent: bool = Field(
        default=False,
        description="The quote is from a step of another agent than the finding names.",
    )


class Finding(BaseModel):
    """The judge's answer for one failure mode."""

    code: str
    present: bool | None = Field(description="True/False, or None when unknown.")
    evidence: list[Evidence] = Field(default_factory=list)
    rationale: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    dropped: list[Evidence] = Field(
        default_factory=list,
        description="Ungrounded evidence removed by ground(..., drop_ungrounded=True).",
    )
    first_step: str | None = Field(
        default=None, description="Earliest step where the mode shows (None = not given)."
    )
    agent: str | None = Field(
        default=None, description="Agent responsible for the mode (None = not given)."
    )

    judged: bool | None = Field(
        default=None,
        description="What the judge answered, when an evidence policy changed `present` "
        "(None: `present` is the judge's own answer).",
    )

    @property
    def grounded(self) -> bool | None:
        """True if a quote of its evidence was found in a step it cites; False if a quote
        failed, or if a positive answer has no quote that held (a step citation alone
        proves nothing); None otherwise (nothing checked)."""
        checked = [e.grounded for e in (*self.evidence, *self.dropped) if e.grounded is not None]
        if any(checked):
            return True
        if any(e.grounded is None and (e.quote or "").strip() for e in self.evidence):
            return None  # a quote not checked yet (ground() has not run)
        if self.present is True or self.judged is True:
            return False  # a positive answer needs a quote that holds
        return False if checked else None


class Verdict(BaseModel):
    """A parsed judge answer: one value per taxonomy code plus what supports it.

    ``vector`` holds every code of the taxonomy (``None`` where unanswered); ``findings``
    holds a :class:`Finding` per code and always agrees with ``vector``.
    """

    vector: FailureVector
    findings: dict[str, Finding] = Field(default_factory=dict)
    task_completed: bool | None = None
    summary: str | None = None
    format: VerdictFormat = Field(
        description='"json" or "text" for parsed answers, "rules" for the heuristic judge.'
    )
    problems: list[str] = Field(
        default_factory=list, description="Everything the parser (and grounding) noticed."
    )
    raw: str = Field(default="", description="The answer exactly as received.")
    decisive_error: DecisiveError | None = Field(
        default=None,
        description="Who made the error that decided a failed run, and when (None = not "
        "named, or the run did not fail).",
    )

    @model_validator(mode="after")
    def _findings_match_vector(self) -> Verdict:
        for code, finding in self.findings.items():
            if finding.code != code:
                raise ValueError(f"finding stored under {code!r} has code {finding.code!r}")
            if code not in self.vector:
                raise ValueError(f"finding for {code!r}, which is not a code of the vector")
            if self.vector[code] is not finding.present:
                raise ValueError(
                    f"vector[{code!r}] is {self.vector[code]!r} but the finding says "
                    f"{finding.present!r}; build verdicts with Verdict.from_findings"
                )
        return self

    @classmethod
    def from_findings(
        cls,
        findings: Iterable[Finding],
        *,
        codes: Iterable[str],
        format: VerdictFormat,
        task_completed: bool | None = None,
        summary: str | None = None,
        problems: Iterable[str] = (),
        raw: str = "",
        decisive_error: DecisiveError | None = None,
    ) -> Verdict:
        """Build a verdict whose vector is taken from ``findings``; missing codes are None."""
        code_list = list(codes)
        by_code = {f.code: f for f in findings}
        stray = sorted(set(by_code) - set(code_list))
        if stray:
            raise ValueError(f"findings for codes {stray} that are not in {code_list}")
        full = {c: by_code.get(c) or Finding(code=c, present=None) for c in code_list}
        vector = FailureVector({c: f.present for c, f in full.items()}, codes=code_list)
        return cls(
            vector=vector,
            findings=full,
            task_completed=task_completed,
            summary=summary,
            format=format,
            problems=list(problems),
            raw=raw,
            decisive_error=decisive_error,
        )

    @property
    def answered(self) -> list[str]:
        """Codes with a True/False answer."""
        return [c for c, v in self.vector.items() if v is not None]

    @property
    def unknown(self) -> list[str]:
        """Codes without an answer (``None``)."""
        return self.vector.unknown

    @property
    def ungrounded(self) -> list[str]:
        """Codes judged present whose cited evidence all failed grounding."""
        return [c for c, f in self.findings.items() if f.present is True and f.grounded is False]

    def to_schema_dict(self) -> dict[str, Any]:
        """This verdict in the JSON verdict shape (``parse_response`` reads it back)."""
        return {
            "summary": self.summary or "",
            "modes": {
                code: {
                    "evidence": [
                        {"step_id": e.step_id, "quote": e.quote or ""} for e in f.evidence
                    ],
                    "rationale": f.rationale or "",
                    "present": f.present,
                    "confidence": f.confidence,
                    "first_step": f.first_step,
                    "agent": f.agent,
                }
                for code, f in self.findings.items()
            },
            "decisive_error": _decisive_dict(self.decisive_error),
            "task_completed": self.task_completed,
        }


def _decisive_dict(error: DecisiveError | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {
        "agent": error.agent,
        "step_id": error.step_id,
        "modes": list(error.modes),
        "reason": error.reason or "",
        "quote": error.quote or "",
    }


# --------------------------------------------------------------------------- schema


def verdict_json_schema(
    taxonomy: Taxonomy | None = None, *, inline: bool = False
) -> dict[str, Any]:
    """The JSON schema of the verdict for ``taxonomy`` (default: bundled MAST).

    Strict-mode compatible: every object lists all its properties as required and sets
    ``additionalProperties: false``; optional answers are nullable instead. The per-mode
    object is shared through ``$defs`` unless ``inline=True`` (for servers whose
    constrained decoding does not resolve ``$ref``).

    Examples
    --------
    >>> schema = verdict_json_schema()
    >>> schema["required"], len(schema["properties"]["modes"]["required"])
    (['summary', 'modes', 'decisive_error', 'task_completed'], 14)
    """
    tax = taxonomy or load_taxonomy()
    finding: dict[str, Any] = {
        "type": "object",
        "properties": {
            "evidence": {
                "type": "array",
                "description": "Steps that show the mode (empty when it is absent).",
                "items": {
                    "type": "object",
                    "properties": {
                        "step_id": {"type": "string", "description": 'Step id, e.g. "s12".'},
                        "quote": {
                            "type": "string",
                            "description": "A short exact quote from that step (under 200 "
                            "characters), or an empty string.",
                        },
                    },
                    "required": ["step_id", "quote"],
                    "additionalProperties": False,
                },
            },
            "rationale": {
                "type": "string",
                "description": "One to three sentences: why the mode is or is not present.",
            },
            "present": {
                "type": ["boolean", "null"],
                "description": "true if the trace shows this failure mode, false if it does "
                "not, null only if the trace does not allow a decision.",
            },
            "confidence": {
                "type": ["number", "null"],
                "description": "Your confidence in `present`, from 0 to 1.",
            },
            **FIRST_STEP_PROPERTIES,
        },
        "required": ["evidence", "rationale", "present", "confidence", *FIRST_STEP_PROPERTIES],
        "additionalProperties": False,
    }
    mode_props: dict[str, Any] = {}
    for mode in tax:
        entry: dict[str, Any] = dict(finding) if inline else {"$ref": "#/$defs/finding"}
        if inline:
            entry["description"] = f"{mode.code} {mode.name}"
        mode_props[mode.code] = entry
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "summary": {
                "type": "string",
                "description": "Two or three sentences on what went wrong in the run.",
            },
            "modes": {
                "type": "object",
                "description": "One entry per failure-mode code: "
                + "; ".join(f"{m.code} {m.name}" for m in tax),
                "properties": mode_props,
                "required": tax.codes,
                "additionalProperties": False,
            },
            "decisive_error": decisive_error_schema(),
            "task_completed": {
                "type": ["boolean", "null"],
                "description": "Whether the run achieved its task; null if it cannot be told.",
            },
        },
        "required": ["summary", "modes", "decisive_error", "task_completed"],
        "additionalProperties": False,
    }
    if not inline:
        schema["$defs"] = {"finding": finding}
    return schema


def example_answer(
    *,
    labels: Mapping[str, bool],
    evidence: Mapping[str, Sequence[str]] | None = None,
    rationale: str = "",
    taxonomy: Taxonomy | None = None,
    notes: Mapping[str, str] | None = None,
    task_completed: bool | None = None,
    agents: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The answer a perfect judge gives on a few-shot example, in the JSON verdict shape.

    ``rationale`` becomes the summary, ``notes`` the per-mode rationales, ``evidence`` the
    cited steps (without quotes). Gold labels carry no confidence, so it is ``null``. A
    present mode's first step is its earliest cited step and its agent that step's speaker
    (``agents``: step id → agent); unless the run succeeded, the decisive error is the
    earliest first step, with the modes that start there.

    >>> ans = example_answer(labels={"1.3": True, "1.5": False}, evidence={"1.3": ["s4"]},
    ...                      rationale="[s4] repeats [s2].", taxonomy=None,
    ...                      agents={"s4": "Coder"}, notes={"1.3": "Reran the search."})
    >>> ans["modes"]["1.3"]["evidence"], ans["modes"]["1.1"]["present"]
    ([{'step_id': 's4', 'quote': ''}], None)
    >>> ans["modes"]["1.3"]["first_step"], ans["decisive_error"]["agent"]
    ('s4', 'Coder')
    """
    tax = taxonomy or load_taxonomy()
    evidence = evidence or {}
    notes = notes or {}
    agents = agents or {}

    def first(code: str) -> str | None:
        cited = [s for s in evidence.get(code, []) if labels.get(code) is True]
        numbered = [(int(s[1:]), s) for s in cited if s[:1] == "s" and s[1:].isdigit()]
        return min(numbered)[1] if numbered else None

    firsts = {code: first(code) for code in tax.codes}
    decisive: dict[str, Any] | None = None
    starts = sorted((int(s[1:]), code) for code, s in firsts.items() if s is not None)
    if starts and task_completed is not True:
        step = f"s{starts[0][0]}"
        modes = [code for n, code in starts if n == starts[0][0]]
        decisive = {
            "agent": agents.get(step),
            "step_id": step,
            "modes": modes,
            "reason": " ".join(notes.get(modes[0], "").split()),
            "quote": "",
        }
    return {
        "summary": " ".join(rationale.split()),
        "modes": {
            code: {
                "evidence": [{"step_id": s, "quote": ""} for s in evidence.get(code, [])],
                "rationale": notes.get(code, ""),
                "present": labels.get(code),
                "confidence": None,
                "first_step": firsts[code],
                "agent": _agent_at(agents, firsts[code]),
            }
            for code in tax.codes
        },
        "decisive_error": decisive,
        "task_completed": task_completed,
    }


def _agent_at(agents: Mapping[str, str | None], step: str | None) -> str | None:
    return agents.get(step) if step is not None else None


# --------------------------------------------------------------------------- parsing


# mast's fence lines (see mast.judge.prompt.render): <<<BEGIN MAST-TRACE-0123456789ABCDEF>>>.


# --------------------------------------------------------------------------- grounding
