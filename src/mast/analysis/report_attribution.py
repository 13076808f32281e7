"""Who and when in the HTML report: each run's decisive error beside its mode evidence, and
the trace's own attribution label (Who&When's ``mistake_agent`` / ``mistake_step``) beside it.

:func:`decisive_entry` and :func:`label_entry` feed the explorer's JSON (one per run, one
per trace); :data:`COLUMNS` adds "decisive error" and "labelled error" columns to its trace
list. The page script shows them above the run's findings and marks the labelled step in
the timeline (``kind="label"``), next to the run's decisive-error mark.

>>> from mast.judge.attribution import DecisiveError
>>> decisive_entry(DecisiveError(agent="WebSurfer", step_id="s5", modes=["3.2"]))["text"]
'WebSurfer at s5 (starts 3.2)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.traces.model import Trace

__all__ = ["COLUMNS", "decisive_entry", "label_entry"]


def _who_when(agent: str | None, step: str | None) -> str:
    return f"{agent or 'unknown agent'} at {step or 'unknown step'}"


def decisive_entry(error: DecisiveError | None) -> dict[str, Any] | None:
    """The decisive error as the page shows it (``None`` when the run named none)."""
    if error is None:
        return None
    text = _who_when(error.agent, error.step_id)
    if error.modes:
        text += f" (starts {', '.join(error.modes)})"
    return {
        "text": text,
        "agent": error.agent,
        "step": error.step_id,
        "modes": list(error.modes),
        "reason": error.reason,
        "quote": error.quote,
        "grounded": error.grounded,
        "problem": error.problem,
        "method": error.method,
        "calls": error.calls,
    }


def label_entry(trace: Trace | None) -> dict[str, Any] | None:
    """The trace's labelled decisive error (Who&When runs carry one), or ``None``."""
    if trace is None:
        return None
    meta = trace.metadata
    agent = meta.get("mistake_agent")
    step = meta.get("mistake_step_id")
    if not agent and not step:
        return None
    ids = {s.id for s in trace.steps}
    past_end = step is not None and step not in ids
    return {
        "text": _who_when(str(agent) if agent else None, str(step) if step else None)
        + (" (past the end of the trace)" if past_end else ""),
        "agent": agent,
        "step": step,
        "reason": meta.get("mistake_reason"),
        "past_end": past_end,
        "source": "Who&When label",
    }


def _decisive_column(runs: Mapping[str, Annotation], trace: Trace | None) -> str | None:
    parts = []
    for run, ann in runs.items():
        entry = decisive_entry(ann.decisive_error)
        if entry is not None:
            where = _who_when(entry["agent"], entry["step"])
            parts.append(where if len(runs) == 1 else f"{run}: {where}")
    return "; ".join(parts) or None


def _label_column(runs: Mapping[str, Annotation], trace: Trace | None) -> str | None:
    entry = label_entry(trace)
    return str(entry["text"]) if entry else None


COLUMNS: list[tuple[str, str, Callable[[Mapping[str, Annotation], Trace | None], Any]]] = [
    ("decisive", "decisive error", _decisive_column),
    ("labelled", "labelled error", _label_column),
]
"""Trace-list columns ``(key, title, fn)`` in the explorer's :data:`TRACE_COLUMNS` shape."""
