"""Prevalence corrected for judge error (Rogan & Gladen 1978), with both uncertainties.

A judge with sensitivity Se and specificity Sp for a mode flags it in a share
``p = pi * Se + (1 - pi) * (1 - Sp)`` of traces whose true share is ``pi``.  Solved for ``pi``:

    pi = (p + Sp - 1) / (Se + Sp - 1)

clipped to [0, 1], and undefined when ``Se + Sp <= 1`` (a judge no better than a coin on
that mode).  Se and Sp come from an agreement report of the judge against people (people
are the truth: Se = tp / (tp + fn), Sp = tn / (tn + fp) per mode); p from the judge's labels
on the traces analysed.  The interval redraws p, Se and Sp from their binomial counts (a
parametric bootstrap: each mode has one cell per trace), so it carries the uncertainty of the
validation set as well as that of the sample; resamples where Se + Sp <= 1 are left out and
counted.

>>> round(float(rogan_gladen(23 / 150, 0.96, 0.89)), 3)  # epiR's epi.prev example: 5.1 %
0.051
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.errors import StatsInputError

__all__ = ["correct_table", "rogan_gladen"]

FloatArray = npt.NDArray[np.float64]


def rogan_gladen(p: Any, se: Any, sp: Any) -> FloatArray:
    """The Rogan–Gladen estimate of the true share, clipped to [0, 1]; NaN where
    ``se + sp - 1 <= 0``.  Works elementwise on arrays."""
    p_, se_, sp_ = (np.asarray(x, dtype=np.float64) for x in (p, se, sp))
    youden = se_ + sp_ - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(youden > 0, (p_ + sp_ - 1.0) / np.where(youden > 0, youden, 1.0), np.nan)
    out: FloatArray = np.clip(raw, 0.0, 1.0)
    return out


def _interval(
    present: int,
    known: int,
    counts: tuple[int, int, int, int],
    *,
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[float, float, int]:
    tp, fp, fn, tn = counts
    pos, neg = tp + fn, tn + fp
    if not bootstrap or not known or not pos or not neg:
        return float("nan"), float("nan"), 0
    p = rng.binomial(known, present / known, bootstrap) / known
    se = rng.binomial(pos, tp / pos, bootstrap) / pos
    sp = rng.binomial(neg, tn / neg, bootstrap) / neg
    draws = rogan_gladen(p, se, sp)
    defined = draws[~np.isnan(draws)]
    undefined = int(bootstrap - len(defined))
    if len(defined) < 2:
        return float("nan"), float("nan"), undefined
    alpha = 1.0 - confidence
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high), undefined


def correct_table(
    table: pd.DataFrame,
    report: Any,
    *,
    bootstrap: int,
    confidence: float,
    seed: int | None,
) -> tuple[pd.DataFrame, list[str]]:
    """Add ``sensitivity``, ``specificity``, ``corrected``, ``corrected_low`` / ``_high`` and
    ``corrected_undefined_resamples`` to a per-mode prevalence table, from ``report``
    (an :class:`~mast.agree.AgreementReport` of the judge against people)."""
    per_mode = getattr(report, "per_mode", None)
    if per_mode is None or not {"tp", "fp", "fn", "tn"} <= set(per_mode.columns):
        raise StatsInputError(
            "correct_with must be an agreement report of the judge (candidate) against people "
            f"(reference), e.g. mast.agreement(human, judge); got {type(report).__name__}"
        )
    rng = np.random.default_rng(seed)
    out = table.copy()
    columns: dict[str, list[float]] = {
        k: []
        for k in ("sensitivity", "specificity", "corrected", "corrected_low", "corrected_high")
    }
    undefined_draws: list[int] = []
    notes: list[str] = []
    no_rates: list[str] = []
    for _, row in table.iterrows():
        code = str(row["row"])
        if code not in per_mode.index or pd.isna(per_mode.at[code, "tp"]):
            no_rates.append(code)
            counts = (0, 0, 0, 0)
        else:
            counts = tuple(int(per_mode.at[code, k]) for k in ("tp", "fp", "fn", "tn"))  # type: ignore[assignment]
        tp, fp, fn, tn = counts
        se = tp / (tp + fn) if tp + fn else float("nan")
        sp = tn / (tn + fp) if tn + fp else float("nan")
        share = float(row["share_of_traces"])
        known, present = int(row["n_known"]), int(row["n_present"])
        low, high, bad = _interval(
            present, known, counts, bootstrap=bootstrap, confidence=confidence, rng=rng
        )
        columns["sensitivity"].append(se)
        columns["specificity"].append(sp)
        columns["corrected"].append(float(rogan_gladen(share, se, sp)))
        columns["corrected_low"].append(low)
        columns["corrected_high"].append(high)
        undefined_draws.append(bad)
    for name, values in columns.items():
        out[name] = values
    out["corrected_undefined_resamples"] = undefined_draws
    if no_rates:
        notes.append(
            "no sensitivity/specificity in the agreement report for "
            f"{', '.join(sorted(set(no_rates)))}: their corrected prevalence is undefined"
        )
    useless = out[(out["sensitivity"] + out["specificity"] <= 1)]["row"].tolist()
    if useless:
        notes.append(
            f"sensitivity + specificity <= 1 for {', '.join(sorted(set(map(str, useless))))}: "
            "the judge is no better than chance there, so no correction is possible (NaN)"
        )
    return out, notes
