"""Which run of a judge a result record belongs to, and a results list split by run.

A *run* is one judge configuration: one model and one sample number (``Judge(samples=K)``
makes K runs, ``mast annotate --models A,B`` one per model).  A results file can hold several
runs of the same traces; agreement is scored per run (or on their majority), never on
whichever record of a trace came last.

>>> run_name({"provider": "openai", "model": "gpt-4.1", "sample": 2})
'openai/gpt-4.1#2'
>>> records = [{"trace_id": "t", "judge": {"model": m}} for m in ("a", "b")]
>>> list(split_runs(records))
['a', 'b']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = ["record_run", "run_name", "split_runs"]

_R = TypeVar("_R")


def run_name(judge: Mapping[str, object]) -> str:
    """The run of a record's ``judge`` settings: ``provider/model`` plus ``#k`` for sample
    k > 0 (``?`` when the model is not recorded)."""
    provider, model = judge.get("provider"), judge.get("model") or "?"
    name = f"{provider}/{model}" if provider and provider != model else str(model)
    sample = judge.get("sample") or 0
    return f"{name}#{sample}" if sample else name


def record_run(record: object) -> str | None:
    """The run of an annotation or a results-store dict; None for a record without judge
    settings (a human label row, a plain ``{code: label}`` mapping)."""
    judge = record.get("judge") if isinstance(record, Mapping) else getattr(record, "judge", None)
    return run_name(judge) if isinstance(judge, Mapping) and judge else None


def split_runs(records: Iterable[_R]) -> dict[str, list[_R]]:
    """Records grouped by run, in order of first appearance (records without judge settings
    go to the run ``""``)."""
    runs: dict[str, list[_R]] = {}
    for record in records:
        runs.setdefault(record_run(record) or "", []).append(record)
    return runs
