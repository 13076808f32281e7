"""The persisted result of judging one trace: :class:`Annotation`.

One annotation is one line of a results file. Every record carries ``trace_id`` and
``status`` at its top level, so a runner can resume and a reader can filter without knowing
the rest of the schema. A failed call is a record too (``status="error"``, ``vector`` all
``None``), never a silent gap or a row of "no".

>>> from mast.traces.model import FailureVector
>>> ann = Annotation(trace_id="t1", status="ok", taxonomy="MAST 1.0",
...                  vector=FailureVector({"1.1": True}), judge={"model": "heuristic"})
>>> Annotation.model_validate_json(ann.model_dump_json()).vector["1.1"]
True
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mast.judge.attribution import DecisiveError
from mast.judge.providers.usage import Usage
from mast.judge.verdict import Finding
from mast.traces.model import FailureVector

SCHEMA_VERSION = 1

Status = Literal["ok", "parse_error", "error"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Annotation(BaseModel):
    """One judged trace: the failure vector, its evidence, and how it was obtained."""

    model_config = ConfigDict(use_attribute_docstrings=True, arbitrary_types_allowed=True)

    schema_version: int = SCHEMA_VERSION
    """Version of this record's layout (bumped on incompatible changes)."""

    trace_id: str
    """Id of the annotated trace (``Trace.id``)."""

    status: Status
    """``"ok"``: an answer was read; ``"parse_error"``: the answer stayed unreadable after the
    repair request(s); ``"error"``: the provider call failed (see ``error``)."""

    error: str | None = None
    """Why the status is not ``"ok"``, in words (never contains an API key)."""

    error_kind: str | None = None
    """Why the status is not ``"ok"``, as one word (``"connection"``, ``"timeout"``,
    ``"rate_limited"``, ``"server_error"``, ``"http_400"``, ``"parse_error"``, …): a rerun
    tries transport failures again and says what the others were."""

    taxonomy: str
    """Taxonomy name and version the vector uses, e.g. ``"MAST 1.0"``."""

    vector: FailureVector
    """``{code: True | False | None}`` for every mode; ``None`` = unknown, never "no"."""

    findings: dict[str, Finding] = Field(default_factory=dict)
    """Per-mode evidence (step ids and quotes, grounding checked), rationale, confidence."""

    task_completed: bool | None = None
    """Whether the judge thinks the run achieved its task (``None`` = could not tell)."""

    summary: str | None = None
    """The judge's short summary of what went wrong."""

    decisive_error: DecisiveError | None = None
    """Who made the error that decided a failed run, at which step, starting which modes,
    why, and whether that holds against the trace (``None`` = not named; see
    :mod:`mast.judge.attribution`). Filled by the judge's own answer or by a dedicated
    attribution method (``decisive_error.method``)."""

    judge: dict[str, Any] = Field(default_factory=dict)
    """How the verdict was made: provider, model, temperature actually sent, max_tokens,
    few-shot example ids, prompt hash, static-prefix hash, structured-output mode. No keys."""

    usage: Usage = Field(default_factory=Usage)
    """Tokens of all calls made for this trace (repairs and windows included)."""

    cost_usd: float | None = None
    """Cost of those calls from the price table; ``None`` when the price or usage is unknown."""

    shared_with: list[str] = Field(default_factory=list)
    """Traces of the same run whose records carry the cost of answers this record used
    (traces with the same text get the same answer: paid once, on the first record; this
    one is charged nothing for it)."""

    cached: bool = False
    """True when every answer came from the response cache (no provider call was made for
    this record); ``usage`` then still shows the tokens of the cached calls, ``cost_usd`` is 0."""

    latency_s: float | None = None
    """Wall time spent on this trace, in seconds."""

    windows: int = 1
    """Number of windows the trace was split into (1 = annotated whole)."""

    problems: list[str] = Field(default_factory=list)
    """Everything worth knowing that did not stop the annotation: unanswered modes,
    ungrounded evidence, repairs, windowing, unknown prices."""

    raw: str | None = None
    """The model's answer text as received (all windows, separated, when windowed)."""

    redactions: dict[str, int] = Field(default_factory=dict)
    """Secrets replaced in the trace before it was judged, by type (e.g.
    ``{"openai_key": 1}``; see :mod:`mast.privacy.redact`). Quotes and evidence refer to the
    redacted text, which holds ``[REDACTED:<type>]`` where each secret was."""

    created_at: datetime = Field(default_factory=_now)
    """When the annotation was made (UTC)."""

    @property
    def ok(self) -> bool:
        """True when an answer was read (``status == "ok"``)."""
        return self.status == "ok"

    @property
    def ungrounded(self) -> list[str]:
        """Codes judged present whose cited evidence all failed grounding."""
        return [c for c, f in self.findings.items() if f.present is True and f.grounded is False]
