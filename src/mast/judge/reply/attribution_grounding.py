"""Check a verdict's attribution against its trace (first steps, agents, the decisive error),
and merge it across the windows of a long trace.

Step ids must exist, a decisive error's quote must occur in its step (the same matcher as
evidence, :mod:`mast.judge.reply.grounding`), and named agents must speak in the trace (compared
with :func:`~mast.judge.attribution.normalize_agent`). Nothing is changed or dropped: the
decisive error gets ``grounded`` / ``problem``, everything else a line in ``problems``.

>>> from mast.judge.attribution import DecisiveError
>>> from mast.judge.verdict import Verdict
>>> from mast.traces.model import Step, Trace
>>> t = Trace(id="t", steps=[Step.make(0, "I will search.", agent="Planner")])
>>> v = Verdict.from_findings([], codes=[], format="json",
...                           decisive_error=DecisiveError(agent="Coder", step_id="s1"))
>>> ground_attribution(v, t).decisive_error.problem
"agent 'Coder' does not speak in trace 't'"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mast.judge.attribution import (
    DecisiveError,
    earliest_error,
    earliest_first_step,
    normalize_agent,
)
from mast.judge.reply.grounding import _norm, _quote_found, _step_text
from mast.judge.verdict import Finding, Verdict
from mast.traces.model import Trace

__all__ = ["ground_attribution", "merge_window_attribution"]


def ground_attribution(verdict: Verdict, trace: Trace, *, policy: str = "flag") -> Verdict:
    """Check first steps, agents and the decisive error against ``trace``.

    A first step that is not a step of the trace is reported in ``problems``; the decisive
    error gets ``grounded`` and ``problem`` (its step must exist, its quote occur in that
    step, its agent be one of the trace's agents). Values are not changed, except under the
    evidence policy ``"unknown"`` (``Judge(ungrounded="unknown")``), where an ungrounded
    decisive error becomes unknown (``None``, with a note), as ungrounded modes do.
    """
    ids = {s.id: s for s in trace.steps}
    agents = {normalize_agent(s.agent) for s in trace.steps if s.agent}
    agents |= {normalize_agent(s.role) for s in trace.steps if s.role}
    span = f"s1–s{len(trace.steps)}" if trace.steps else "none"
    problems = list(verdict.problems)
    for code, finding in verdict.findings.items():
        if finding.first_step is not None and finding.first_step not in ids:
            problems.append(
                f"grounding: {code} names first step {finding.first_step!r}, which is not "
                f"a step of trace {trace.id!r} (its steps are {span})"
            )
        if finding.agent is not None and agents and normalize_agent(finding.agent) not in agents:
            problems.append(
                f"grounding: {code} names agent {finding.agent!r}, who does not speak in "
                f"trace {trace.id!r}"
            )
    error = verdict.decisive_error
    if error is not None:
        problem = None
        if error.step_id is not None and error.step_id not in ids:
            problem = f"no step {error.step_id!r} in trace {trace.id!r} (its steps are {span})"
        elif (
            error.step_id is not None
            and error.quote
            and not _quote_found(error.quote, _norm(_step_text(ids[error.step_id])))
        ):
            problem = f"quote not found in {error.step_id}: {error.quote[:80]!r}"
        if (
            problem is None
            and error.agent is not None
            and agents
            and normalize_agent(error.agent) not in agents
        ):
            problem = f"agent {error.agent!r} does not speak in trace {trace.id!r}"
        checkable = error.step_id is not None or error.agent is not None
        error = error.model_copy(
            update={"grounded": (problem is None) if checkable else None, "problem": problem}
        )
        if problem:
            problems.append(f"grounding: decisive error: {problem}")
            if policy == "unknown":
                problems.append(
                    f"decisive error ({error.agent} at {error.step_id}) made unknown: not "
                    "grounded and the evidence policy is ungrounded='unknown'"
                )
                error = None
    return verdict.model_copy(update={"decisive_error": error, "problems": problems})


def merge_window_attribution(
    verdicts: Sequence[Verdict], findings: Mapping[str, Finding], trace: Trace
) -> tuple[dict[str, Finding], DecisiveError | None]:
    """Attribution across the windows of one trace: each present mode keeps the earliest
    first step (and its agent) any window gave, and the decisive error is the earliest one
    named by a window. ``findings`` are the merged findings, returned updated."""
    order = {s.id: i for i, s in enumerate(trace.steps)}
    merged: dict[str, Finding] = {}
    for code, finding in findings.items():
        if finding.present is True:
            first, agent = earliest_first_step(
                ((v.findings[code].first_step, v.findings[code].agent) for v in verdicts
                 if code in v.findings and v.findings[code].present is True),
                order,
            )  # fmt: skip
            finding = finding.model_copy(update={"first_step": first, "agent": agent})
        merged[code] = finding
    return merged, earliest_error((v.decisive_error for v in verdicts), order)
