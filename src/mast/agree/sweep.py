"""The confidence cut-off that maximises agreement: :func:`sweep_confidence`.

A judge reports a confidence with each answer. With a cut-off ``t``, a positive answer
whose confidence is below ``t`` is read as "no"; positives without a confidence and
negative answers are kept as they are. For every cut-off worth trying (0, each distinct
confidence of a positive answer, and one above them all) the sweep computes Cohen's kappa
and F1 (positive class) against the reference, pooled over the (trace, mode) cells both
sides answered; unknown cells stay out, as everywhere in :mod:`mast.agree`.

**A cut-off chosen on the evaluation set overstates agreement**: it is fitted to those very
labels. Choose it on one labelled subset (``fit``) and report agreement on the rest; the
report keeps both numbers apart.

>>> from mast.judge.annotation import Annotation
>>> from mast.judge.verdict import Finding
>>> from mast.traces.model import FailureVector
>>> def ann(t, present, conf):
...     f = Finding(code="1.1", present=present, confidence=conf)
...     return Annotation(trace_id=t, status="ok", taxonomy="MAST 1.0",
...                       vector=FailureVector({"1.1": present}), findings={"1.1": f})
>>> ref = {"a": {"1.1": True}, "b": {"1.1": False}, "c": {"1.1": False}}
>>> rep = sweep_confidence(ref, [ann("a", True, 0.9), ann("b", True, 0.4), ann("c", False, 0.8)])
>>> rep.best.threshold, rep.best.kappa
(0.9, 1.0)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from mast.agree.metrics_base import UndefinedMetricWarning
from mast.agree.stats import cohen_kappa, f1
from mast.judge.annotation import Annotation

__all__ = ["OVERFIT_WARNING", "SweepPoint", "SweepReport", "sweep_confidence"]

Metric = Literal["kappa", "f1"]

OVERFIT_WARNING = (
    "The cut-off was chosen on the same labels it is scored on, so this agreement is an "
    "overestimate: choose the cut-off on one labelled subset (fit=…) and report agreement "
    "on the rest."
)


@dataclass(frozen=True)
class SweepPoint:
    """Agreement at one cut-off."""

    threshold: float
    kappa: float
    f1: float
    positives: int
    """Positive answers kept at this cut-off."""
    n_cells: int


@dataclass
class SweepReport:
    """The sweep (see the module docstring)."""

    metric: Metric
    points: list[SweepPoint]
    best: SweepPoint
    """The cut-off with the highest metric on the fitting cells (the lowest on ties)."""
    held_out: SweepPoint | None
    """Agreement at ``best.threshold`` on the traces not used to choose it (with ``fit``)."""
    warning: str | None
    """Set when the cut-off was chosen on the cells it is scored on."""

    def to_text(self) -> str:
        """A table for people, the chosen cut-off, and the warning."""
        lines = [f"{'cut-off':>8} {'kappa':>7} {'F1':>7} {'positives':>9} {'cells':>6}"]
        for p in self.points:
            mark = "  <- best" if p is self.best else ""
            lines.append(
                f"{p.threshold:>8.3f} {_num(p.kappa):>7} {_num(p.f1):>7} {p.positives:>9} "
                f"{p.n_cells:>6}{mark}"
            )
        lines.append(
            f"best cut-off by {self.metric}: {self.best.threshold:.3f} "
            f"(kappa {_num(self.best.kappa)}, F1 {_num(self.best.f1)})"
        )
        if self.held_out is not None:
            h = self.held_out
            lines.append(
                f"on the held-out traces at that cut-off: kappa {_num(h.kappa)}, "
                f"F1 {_num(h.f1)} over {h.n_cells} cells"
            )
        if self.warning:
            lines.append(f"warning: {self.warning}")
        return "\n".join(lines)


def sweep_confidence(
    reference: Mapping[str, Mapping[str, bool | None]],
    annotations: Iterable[Annotation],
    *,
    metric: Metric = "kappa",
    modes: Collection[str] | None = None,
    fit: Collection[str] | None = None,
) -> SweepReport:
    """Find the confidence cut-off that maximises ``metric`` ("kappa" or "f1").

    ``reference``: ``{trace_id: {code: True | False | None}}``; ``annotations``: the judge's
    (failed ones are skipped); ``fit``: trace ids to choose the cut-off on (the others are
    scored at that cut-off); without it the report carries :data:`OVERFIT_WARNING`.
    """
    if metric not in ("kappa", "f1"):
        raise ValueError(f"metric must be 'kappa' or 'f1', got {metric!r}")
    cells: list[tuple[str, bool, bool, float | None]] = []  # trace, reference, answer, conf
    for ann in annotations:
        labels = reference.get(ann.trace_id)
        if not ann.ok or labels is None:
            continue
        for code, answer in ann.vector.items():
            truth = labels.get(code)
            if answer is None or truth is None or (modes is not None and code not in modes):
                continue
            finding = ann.findings.get(code)
            cells.append((ann.trace_id, truth, answer, finding.confidence if finding else None))
    if not cells:
        raise ValueError("no (trace, mode) cell is answered by both the reference and the judge")
    chosen = [c for c in cells if fit is None or c[0] in fit]
    rest = [c for c in cells if fit is not None and c[0] not in fit]
    if not chosen:
        raise ValueError("none of the fit traces has a cell answered by both sides")
    confidences = sorted({c[3] for c in chosen if c[2] and c[3] is not None})
    thresholds = [0.0, *[t for t in confidences if t > 0.0]]
    if confidences:
        thresholds.append(math.nextafter(confidences[-1], math.inf))
    points = [_score(chosen, t) for t in thresholds]

    def rank(p: SweepPoint) -> tuple[float, float]:
        value = p.kappa if metric == "kappa" else p.f1
        return (-math.inf if math.isnan(value) else value, -p.threshold)

    best = max(points, key=rank)
    return SweepReport(
        metric=metric,
        points=points,
        best=best,
        held_out=_score(rest, best.threshold) if rest else None,
        warning=None if fit is not None else OVERFIT_WARNING,
    )


def _score(cells: list[tuple[str, bool, bool, float | None]], threshold: float) -> SweepPoint:
    truth = [c[1] for c in cells]
    said = [c[2] and (c[3] is None or c[3] >= threshold) for c in cells]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa(truth, said, replace_undefined_by=math.nan)
        f1_value = f1(truth, said, replace_undefined_by=math.nan)
    return SweepPoint(threshold, float(kappa), float(f1_value), sum(said), len(cells))


def _num(value: float) -> str:
    return "undef." if math.isnan(value) else f"{value:.3f}"
