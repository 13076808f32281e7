"""The annotation records a judgement ends in, and the two records every pass shares.

:class:`_Context` is what a trace's prompt is built from, :class:`_Outcome` what one prompt
returned (repairs included); :func:`answered`, :func:`failed` and :func:`heuristic_record`
build the :class:`~mast.judge.annotation.Annotation` of a trace from them, and :func:`price`
says what the answer cost. :class:`~mast.judge.judge.Judge` runs the calls.

>>> from mast.taxonomy import load_taxonomy
>>> from mast.traces.model import Trace
>>> ctx = _Context(examples=[], system="", notes=["a note"])
>>> ann = failed(Trace(id="t", steps=[]), load_taxonomy(), {}, ctx, 0.0, "no provider", [])
>>> ann.status, ann.problems, ann.vector["1.1"]
('error', ['a note'], None)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mast.judge.annotation import Annotation, Status
from mast.judge.prompt.shots import Shot
from mast.judge.prompt.types import Prompt
from mast.judge.providers import Completion
from mast.judge.providers.pricing import PriceTable
from mast.judge.providers.usage import Usage
from mast.judge.verdict import Verdict
from mast.taxonomy import Taxonomy
from mast.traces.model import FailureVector, Trace

__all__ = ["answered", "failed", "heuristic_record", "price"]


@dataclass(frozen=True)
class _Context:
    """What the prompt of one trace is built from."""

    examples: list[Shot]
    system: str
    notes: list[str]


@dataclass
class _Outcome:
    """Result of one prompt (one window or the whole trace), repairs included."""

    status: Status
    verdict: Verdict | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage.zero)
    raw: str | None = None
    problems: list[str] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)


def price(prices: PriceTable, key: str, usage: Usage) -> tuple[float | None, list[str]]:
    """Cost in USD of ``usage`` with the model ``key`` (``"provider/model"``), and a note
    saying why it is unknown when it is (never 0 for an unknown price)."""
    cost = prices.cost(key, usage)
    if cost is not None:
        return cost, []
    if key not in prices:
        return None, [f"no price for {key}: cost unknown (pass prices= to Judge to set one)"]
    return None, ["the provider did not report token usage: cost unknown"]


def answered(
    trace: Trace,
    taxonomy: Taxonomy,
    described: dict[str, Any],
    ctx: _Context,
    prompt: Prompt,
    outcome: _Outcome,
    start: float,
    cost: tuple[float | None, list[str]],
) -> Annotation:
    """The record of a trace judged in one prompt (``described``: the judge's settings)."""
    judge = dict(described)
    judge["fewshot"] = [ex.id for ex in ctx.examples]
    judge["static_prefix_hash"] = prompt.static_prefix_hash
    judge["prompt_hash"] = prompt.prompt_hash
    judge["response_ids"] = [c.response_id for c in outcome.completions]
    if outcome.completions:
        judge["response_model"] = outcome.completions[-1].model
    cost_usd, cost_note = cost
    verdict = outcome.verdict
    return Annotation(
        trace_id=trace.id,
        status=outcome.status,
        error=outcome.error,
        taxonomy=taxonomy.label,
        vector=verdict.vector if verdict else FailureVector(codes=taxonomy.codes),
        findings=dict(verdict.findings) if verdict else {},
        task_completed=verdict.task_completed if verdict else None,
        summary=verdict.summary if verdict else None,
        decisive_error=verdict.decisive_error if verdict else None,
        judge=judge,
        usage=outcome.usage,
        cost_usd=cost_usd,
        latency_s=time.perf_counter() - start,
        windows=1,
        problems=ctx.notes + outcome.problems + (verdict.problems if verdict else []) + cost_note,
        raw=outcome.raw,
    )


def failed(
    trace: Trace,
    taxonomy: Taxonomy,
    described: dict[str, Any],
    ctx: _Context,
    start: float,
    error: str,
    problems: list[str],
) -> Annotation:
    """The record of a trace no answer was read for: status ``"error"``, every mode unknown."""
    return Annotation(
        trace_id=trace.id,
        status="error",
        error=error,
        taxonomy=taxonomy.label,
        vector=FailureVector(codes=taxonomy.codes),
        judge=dict(described),
        usage=Usage.zero(),
        cost_usd=0.0,
        latency_s=time.perf_counter() - start,
        windows=0,
        problems=ctx.notes + problems,
    )


def heuristic_record(
    trace: Trace, taxonomy: Taxonomy, described: dict[str, Any], verdict: Verdict, start: float
) -> Annotation:
    """The record of the offline rule-based baseline's (grounded) verdict: no call, no cost."""
    return Annotation(
        trace_id=trace.id,
        status="ok",
        taxonomy=taxonomy.label,
        vector=verdict.vector,
        findings=dict(verdict.findings),
        task_completed=verdict.task_completed,
        summary=verdict.summary,
        judge=dict(described),
        usage=Usage.zero(),
        cost_usd=0.0,
        latency_s=time.perf_counter() - start,
        windows=1,
        problems=list(verdict.problems),
        raw=None,
    )
