"""TRAIL's own measures: where the errors are (span ids) and what they are (categories).

:func:`trail_scores` compares predicted errors ``(location, category)`` with the labelled
errors of each trace (``metadata["trail"]["errors"]``, from :func:`mast.datasets.load_trail`):

* **location accuracy**: the share of a trace's labelled error locations (distinct span ids)
  that the prediction names, averaged over the labelled traces;
* **joint accuracy**: the same for (location, category) pairs: the span *and* its category;
* **category F1**: per category, F1 of "the trace has an error of this category" over the
  traces, then averaged with the labelled counts as weights (weighted F1), and the
  unweighted (macro) mean beside it.

These follow the measures the TRAIL paper (arXiv 2505.08638) reports as location accuracy,
joint accuracy and weighted category F1, as mast reads them; mast has not checked its numbers
against TRAIL's own scoring script. A trace without a prediction record is counted as
predicting nothing (and listed). Predictions come from annotations made with the TRAIL
taxonomy (each positive mode with its first step, mapped back to the step's span id) or as
TRAIL-shaped ``{trace_id: [{"category", "location"}]}`` mappings.

>>> labels = {"t": [("a1", "1.8"), ("b2", "2.6")]}
>>> rep = trail_scores({"t": [("a1", "1.8"), ("b2", "1.5")]}, labels)
>>> rep.location_accuracy, rep.joint_accuracy
(1.0, 0.5)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast.judge.annotation import Annotation
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Trace

__all__ = ["TrailReport", "trail_labels", "trail_predictions", "trail_scores"]

Pair = tuple[str | None, str | None]
"""(location span id, category code); either may be unknown (None)."""


def trail_labels(traces: Iterable[Trace]) -> dict[str, list[Pair]]:
    """Labelled ``(location, category)`` pairs of each trace carrying TRAIL labels."""
    out: dict[str, list[Pair]] = {}
    for trace in traces:
        data = trace.metadata.get("trail")
        if isinstance(data, Mapping):
            out[trace.id] = [(e.get("location"), e.get("category")) for e in data["errors"]]
    return out


def trail_predictions(
    annotations: Iterable[Annotation], traces: Iterable[Trace]
) -> dict[str, list[Pair]]:
    """Predicted pairs from annotations: each positive mode at its first step's span id
    (``None`` when the judge gave no step or the step is not a span)."""
    spans = {t.id: {s.id: s.metadata.get("span_id") for s in t.steps} for t in traces}
    out: dict[str, list[Pair]] = {}
    for ann in annotations:
        pairs: list[Pair] = []
        for code in ann.vector.positives:
            finding = ann.findings.get(code)
            step = finding.first_step if finding is not None else None
            span = spans.get(ann.trace_id, {}).get(step) if step else None
            pairs.append((str(span) if span else None, code))
        out[ann.trace_id] = pairs
    return out


@dataclass
class TrailReport:
    """What :func:`trail_scores` found (see the module docstring)."""

    location_accuracy: float
    joint_accuracy: float
    category_f1_weighted: float
    category_f1_macro: float
    per_category: dict[str, dict[str, float | int]]
    rows: list[dict[str, Any]]
    not_predicted: list[str] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    category_names: dict[str, str] = field(default_factory=dict)

    def to_text(self) -> str:
        """A plain-text summary with the per-category table."""
        lines = [
            f"TRAIL measures over {len(self.rows)} labelled traces",
            f"location accuracy (span ids):              {_fmt(self.location_accuracy)}",
            f"joint accuracy (span id and category):     {_fmt(self.joint_accuracy)}",
            f"category F1, weighted by labelled traces:  {_fmt(self.category_f1_weighted)}",
            f"category F1, macro:                        {_fmt(self.category_f1_macro)}",
            "",
            f"{'category':<36} {'labelled':>8} {'predicted':>9} {'both':>5} {'F1':>6}",
        ]
        for code, row in self.per_category.items():
            name = f"{code} {self.category_names.get(code, '')}".strip()
            lines.append(
                f"{name[:36]:<36} {row['support']:>8} {row['predicted']:>9} {row['both']:>5} "
                f"{_fmt(float(row['f1'])):>6}"
            )
        lines.append("")
        lines.append(
            f"labelled but not predicted (no record, counted as empty): {len(self.not_predicted)}"
        )
        lines.append(f"predicted but not labelled (ignored): {len(self.unlabelled)}")
        return "\n".join(lines)

    def to_json(self, **kwargs: Any) -> str:
        """The report as JSON (NaN as null)."""
        data = {
            "location_accuracy": _num(self.location_accuracy),
            "joint_accuracy": _num(self.joint_accuracy),
            "category_f1_weighted": _num(self.category_f1_weighted),
            "category_f1_macro": _num(self.category_f1_macro),
            "per_category": {
                c: {k: _num(v) if isinstance(v, float) else v for k, v in r.items()}
                for c, r in self.per_category.items()
            },
            "not_predicted": self.not_predicted,
            "unlabelled": self.unlabelled,
            "traces": self.rows,
        }
        return json.dumps(data, ensure_ascii=False, **kwargs)

    def __str__(self) -> str:
        return self.to_text()


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _pairs(value: object) -> list[Pair]:
    out: list[Pair] = []
    for item in value if isinstance(value, Sequence) and not isinstance(value, str) else []:
        if isinstance(item, Mapping):
            out.append((item.get("location"), item.get("category")))
        elif isinstance(item, Sequence) and len(item) == 2:
            out.append((item[0], item[1]))
    return out


def trail_scores(
    predictions: Mapping[str, object],
    labels: Mapping[str, Sequence[Pair]] | Iterable[Trace],
    *,
    taxonomy: Taxonomy | None = None,
) -> TrailReport:
    """TRAIL's location, joint and category measures of ``predictions`` against ``labels``.

    ``predictions``: ``{trace_id: [(location, category), …] | [{"location", "category"}]}``
    (see :func:`trail_predictions`); categories are codes of ``taxonomy/trail.yaml`` or
    TRAIL's category names. ``labels``: traces from :func:`mast.datasets.load_trail` or
    ``{trace_id: [(location, category), …]}``.
    """
    tax = taxonomy or load_taxonomy("trail")
    gold = dict(labels) if isinstance(labels, Mapping) else trail_labels(labels)

    def code(value: object) -> str | None:
        if value is None:
            return None
        text = str(value).strip()
        return text if text in tax else tax.code_for_name(text)

    preds = {k: [(loc, code(cat)) for loc, cat in _pairs(v)] for k, v in predictions.items()}
    rows: list[dict[str, Any]] = []
    support = dict.fromkeys(tax.codes, 0)
    predicted = dict.fromkeys(tax.codes, 0)
    both = dict.fromkeys(tax.codes, 0)
    for tid, pairs in gold.items():
        g_pairs = [(str(loc) if loc else None, code(cat)) for loc, cat in pairs]
        p_pairs = preds.get(tid, [])
        g_locs = {loc for loc, _ in g_pairs if loc}
        p_locs = {str(loc) for loc, _ in p_pairs if loc}
        g_joint = {(loc, cat) for loc, cat in g_pairs if loc and cat}
        p_joint = {(str(loc), cat) for loc, cat in p_pairs if loc and cat}
        g_cats = {cat for _, cat in g_pairs if cat}
        p_cats = {cat for _, cat in p_pairs if cat}
        for c in g_cats:
            support[c] += 1
        for c in p_cats:
            predicted[c] += 1
        for c in g_cats & p_cats:
            both[c] += 1
        rows.append(
            {
                "trace_id": tid,
                "predicted": tid in preds,
                "location": len(g_locs & p_locs) / len(g_locs) if g_locs else None,
                "joint": len(g_joint & p_joint) / len(g_joint) if g_joint else None,
                "label_locations": sorted(g_locs),
                "predicted_locations": sorted(p_locs),
                "label_categories": sorted(g_cats),
                "predicted_categories": sorted(p_cats),
            }
        )
    per_category: dict[str, dict[str, float | int]] = {}
    for c in tax.codes:
        if not support[c] and not predicted[c]:
            continue
        precision = both[c] / predicted[c] if predicted[c] else 0.0
        recall = both[c] / support[c] if support[c] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_category[c] = {
            "support": support[c],
            "predicted": predicted[c],
            "both": both[c],
            "f1": f1,
        }
    weighted = [(r["f1"], r["support"]) for r in per_category.values() if r["support"]]
    total = sum(w for _, w in weighted)
    return TrailReport(
        location_accuracy=_mean(r["location"] for r in rows),
        joint_accuracy=_mean(r["joint"] for r in rows),
        category_f1_weighted=(
            sum(float(f) * float(w) for f, w in weighted) / total if total else math.nan
        ),
        category_f1_macro=_mean(float(r["f1"]) for r in per_category.values()),
        per_category=per_category,
        rows=rows,
        not_predicted=[tid for tid in gold if tid not in preds],
        unlabelled=[tid for tid in preds if tid not in gold],
        category_names={m.code: m.name for m in tax.modes},
    )


def _mean(values: Iterable[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else math.nan
