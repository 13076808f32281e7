"""One judge run over the traces a validation scores: results file, budget and cache as asked.

:func:`mast.validate` and :func:`mast.validate_localisation` both annotate before they score;
this is the one place that decides where their results file goes (:func:`results_file`) and
how a stop is handled (the run returns what it has, so a budget stop still yields a report on
the traces done).

>>> from mast import Judge
>>> from mast.traces.model import Step, Trace
>>> run = judge_traces([Trace(id="t", steps=[Step.make(0, "hi")])], Judge("heuristic"),
...                    results=None, budget_usd=None, concurrency=1, cache=False, progress=False)
>>> [a.trace_id for a in run]
['t']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mast.bulk.runner import annotate_many
from mast.bulk.types import AnnotationRun
from mast.judge.judge import Judge
from mast.traces.model import Trace


def results_file(out: str | Path | None) -> Path | None:
    """Where a validation run writes its results: ``out/results.jsonl`` (folder created)."""
    if out is None:
        return None
    results = Path(out) / "results.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)
    return results


def judge_traces(
    traces: Sequence[Trace],
    judge: Judge,
    *,
    results: Path | None,
    budget_usd: float | None,
    concurrency: int,
    cache: bool | str | Path,
    progress: bool,
) -> AnnotationRun:
    """Annotate ``traces``, the results (resumable) in ``results`` when it is a path."""
    return annotate_many(
        list(traces),
        judge,
        out=results,
        budget_usd=budget_usd,
        concurrency=concurrency,
        cache=cache,
        progress=progress,
        on_stop="return",
    )
