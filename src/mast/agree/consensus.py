"""Self-consistency of repeated and multiple judges: :func:`consensus`.

A run is one judge configuration: one model, one sample (``Judge(samples=K)`` makes K runs,
``mast annotate --models A,B`` one per model). For the traces judged by two runs or more,
:func:`consensus` gives

- the **majority** vector per trace: per cell, the answer most runs gave among those that
  answered; a tie, or no answer at all, is ``None``;
- the **flip rate** per mode: the share of traces (with two known answers or more) on
  which the runs did not all give the same answer;
- **kappa between runs**: Fleiss' kappa per mode and over all cells (runs as raters), and
  the mean of Cohen's kappa over pairs of runs, pooled over cells.

Failed annotations (status other than ``"ok"``) are left out and counted. Self-consistency
is not correctness: runs can agree on the same wrong answer; report it beside agreement
with people, not instead of it.

>>> from mast.judge.annotation import Annotation
>>> from mast.traces.model import FailureVector
>>> def ann(t, sample, v):
...     return Annotation(trace_id=t, status="ok", taxonomy="MAST 1.0",
...                       vector=FailureVector(v), judge={"model": "m", "sample": sample})
>>> rep = consensus([ann("t1", 0, {"1.1": True}), ann("t1", 1, {"1.1": True}),
...                  ann("t1", 2, {"1.1": False})])
>>> rep.majority["t1"]["1.1"], rep.per_mode["1.1"].flip_rate
(True, 1.0)
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.agree.metrics_base import UndefinedMetricWarning
from mast.agree.multirater import fleiss_kappa
from mast.agree.runs import run_name
from mast.agree.stats import cohen_kappa
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector

__all__ = ["ConsensusReport", "ModeConsistency", "consensus", "run_label"]


@dataclass(frozen=True)
class ModeConsistency:
    """How consistently the runs answered one mode."""

    n_traces: int
    """Traces with at least two known answers for this mode."""
    flips: int
    """Of those, traces whose runs did not all give the same answer."""
    fleiss_kappa: float
    """Fleiss' kappa over those traces, runs as raters (NaN when undefined)."""

    @property
    def flip_rate(self) -> float | None:
        """``flips / n_traces`` (None without such traces)."""
        return self.flips / self.n_traces if self.n_traces else None


@dataclass
class ConsensusReport:
    """What :func:`consensus` found (see the module docstring)."""

    runs: list[str]
    """The runs, as labels (``provider/model`` and the sample number)."""
    majority: dict[str, FailureVector]
    """Per trace judged by two runs or more: the majority answer per cell."""
    per_mode: dict[str, ModeConsistency]
    pooled_flip_rate: float | None
    """Share of (trace, mode) cells with two known answers or more that flipped."""
    pooled_fleiss_kappa: float
    """Fleiss' kappa over all such cells, runs as raters."""
    pairwise_kappa: dict[tuple[str, str], float] = field(default_factory=dict)
    """Cohen's kappa of each pair of runs, pooled over the cells both answered."""
    excluded: dict[str, int] = field(default_factory=dict)
    """What was left out: failed records, traces judged by one run only."""

    @property
    def mean_pairwise_kappa(self) -> float:
        """Mean of :attr:`pairwise_kappa` over the pairs where it is defined (NaN if none)."""
        values = [v for v in self.pairwise_kappa.values() if not math.isnan(v)]
        return sum(values) / len(values) if values else math.nan

    def to_text(self) -> str:
        """A short table for people."""
        lines = [
            f"Self-consistency of {len(self.runs)} run(s) over {len(self.majority)} trace(s): "
            + ", ".join(self.runs),
            f"flip rate {_pct(self.pooled_flip_rate)}, Fleiss kappa "
            f"{_num(self.pooled_fleiss_kappa)}, mean pairwise Cohen kappa "
            f"{_num(self.mean_pairwise_kappa)}",
            f"{'mode':<6} {'traces':>6} {'flips':>6} {'flip rate':>9} {'Fleiss k':>9}",
        ]
        for code, mode in self.per_mode.items():
            lines.append(
                f"{code:<6} {mode.n_traces:>6} {mode.flips:>6} {_pct(mode.flip_rate):>9} "
                f"{_num(mode.fleiss_kappa):>9}"
            )
        left = ", ".join(f"{k} {v}" for k, v in self.excluded.items() if v)
        if left:
            lines.append(f"left out: {left}")
        lines.append(
            "Runs that agree can share the same mistake: read this beside agreement with "
            "people, not instead of it."
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (NaN as None) for JSON."""
        return {
            "runs": self.runs,
            "pooled": {
                "flip_rate": self.pooled_flip_rate,
                "fleiss_kappa": _none_nan(self.pooled_fleiss_kappa),
                "mean_pairwise_kappa": _none_nan(self.mean_pairwise_kappa),
            },
            "per_mode": {
                code: {
                    "n_traces": m.n_traces,
                    "flips": m.flips,
                    "flip_rate": m.flip_rate,
                    "fleiss_kappa": _none_nan(m.fleiss_kappa),
                }
                for code, m in self.per_mode.items()
            },
            "pairwise_kappa": [
                {"runs": list(pair), "kappa": _none_nan(k)}
                for pair, k in self.pairwise_kappa.items()
            ],
            "majority": {t: v.to_dict() for t, v in self.majority.items()},
            "excluded": self.excluded,
        }


def run_label(annotation: Annotation) -> str:
    """The run an annotation belongs to: ``provider/model`` plus ``#k`` for sample k > 0."""
    return run_name(annotation.judge)


def consensus(results: Iterable[Annotation] | str | Path) -> ConsensusReport:
    """Majority, flip rate and kappa between runs of the same traces (module docstring).

    ``results``: annotations, or the path of a results file holding several runs (samples
    or models) of the same traces.
    """
    if isinstance(results, (str, Path)):
        from mast.bulk.store import read_annotations

        results = read_annotations(results)
    votes: dict[str, dict[str, Annotation]] = {}
    failed = 0
    labels: list[str] = []
    for ann in results:
        if not ann.ok:
            failed += 1
            continue
        label = run_label(ann)
        if label not in labels:
            labels.append(label)
        votes.setdefault(ann.trace_id, {})[label] = ann  # a rerun's record replaces it
    single = [t for t, by_run in votes.items() if len(by_run) < 2]
    traces = {t: by_run for t, by_run in votes.items() if len(by_run) >= 2}
    codes: list[str] = []
    for by_run in traces.values():
        for ann in by_run.values():
            codes += [c for c in ann.vector if c not in codes]
    majority = {t: _majority(by_run, codes) for t, by_run in traces.items()}
    per_mode: dict[str, ModeConsistency] = {}
    all_rows: list[list[bool | None]] = []
    for code in codes:
        rows = [[by_run[r].vector.get(code) if r in by_run else None for r in labels]
                for by_run in traces.values()]  # fmt: skip
        known = [[v for v in row if v is not None] for row in rows]
        judged = [k for k in known if len(k) >= 2]
        flips = sum(len(set(k)) > 1 for k in judged)
        usable = [row for row, k in zip(rows, known, strict=True) if len(k) >= 2]
        all_rows += usable
        per_mode[code] = ModeConsistency(len(judged), flips, _fleiss(usable))
    n_cells = sum(m.n_traces for m in per_mode.values())
    pairwise = {}
    for a, b in itertools.combinations(labels, 2):
        x, y = [], []
        for by_run in traces.values():
            if a in by_run and b in by_run:
                for code in codes:
                    va, vb = by_run[a].vector.get(code), by_run[b].vector.get(code)
                    if va is not None and vb is not None:
                        x.append(va)
                        y.append(vb)
        if x:
            # An undefined kappa (one run always said the same) is reported as undef.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                pairwise[(a, b)] = cohen_kappa(x, y, replace_undefined_by=math.nan)
    return ConsensusReport(
        runs=labels,
        majority=majority,
        per_mode=per_mode,
        pooled_flip_rate=sum(m.flips for m in per_mode.values()) / n_cells if n_cells else None,
        pooled_fleiss_kappa=_fleiss(all_rows),
        pairwise_kappa=pairwise,
        excluded={"failed records": failed, "traces judged by one run only": len(single)},
    )


def _majority(by_run: dict[str, Annotation], codes: list[str]) -> FailureVector:
    cells: dict[str, bool | None] = {}
    for code in codes:
        known = [a.vector.get(code) for a in by_run.values()]
        yes = sum(v is True for v in known)
        no = sum(v is False for v in known)
        cells[code] = True if yes > no else False if no > yes else None
    return FailureVector(cells, codes=codes)


def _fleiss(rows: list[list[bool | None]]) -> float:
    if not rows:
        return math.nan
    ratings = [[None if v is None else int(v) for v in row] for row in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(fleiss_kappa(ratings, replace_undefined_by=math.nan))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _num(value: float) -> str:
    return "undef." if math.isnan(value) else f"{value:.3f}"


def _none_nan(value: float) -> float | None:
    return None if math.isnan(value) else value
