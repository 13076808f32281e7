"""Bootstrap over traces, vectorized: percentile and BCa intervals for agreement statistics.

Every statistic an agreement report gives is a function of *sums over traces* of small
per-trace feature vectors (2x2 cell counts for two sources; rating counts for many raters).
Resampling whole traces therefore reduces to weighting them: a resample is a vector of
multiplicities ``w`` (how often each trace was drawn), its sums are ``w @ features``, and
``B`` resamples are one matrix product.  Leave-one-trace-out (jackknife) sums, needed for the
BCa acceleration, are ``total - features[i]``.  All modes of a trace, and all its raters,
move together, so the within-trace correlation of the modes is kept.

The metric functions here mirror :mod:`mast.agree.stats` on counts (tests check they agree with
it exactly); they exist because calling :mod:`mast.agree.stats` once per resample would be
thousands of times slower.  Undefined values are NaN, without warnings.

>>> import numpy as np
>>> counts = np.array([[20.0, 10.0, 5.0, 15.0]])  # tp, fp, fn, tn
>>> binary_metrics(counts)["kappa"].round(4).tolist()
[0.4]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

__all__ = [
    "BINARY_FEATURES",
    "MULTI_FEATURES",
    "Intervals",
    "binary_metrics",
    "bootstrap_intervals",
    "multi_features",
    "multi_metrics",
    "resample_weights",
]

FloatArray = npt.NDArray[np.float64]
Metrics = Callable[[FloatArray], dict[str, FloatArray]]

BINARY_FEATURES = ("tp", "fp", "fn", "tn")
MULTI_FEATURES = ("rated", "pos_frac", "pairable", "pa", "n_pos", "n_neg", "a_n", "a_pos", "a_oo")


def _div(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)
    return np.asarray(out, dtype=np.float64)


def binary_metrics(sums: FloatArray) -> dict[str, FloatArray]:
    """Two-source statistics from summed ``(..., 4)`` cell counts ``tp, fp, fn, tn``.

    Same formulas and undefined cases as :mod:`mast.agree.stats` (kappa on exact integer counts;
    AC1 and PABAK with two possible categories).
    """
    tp, fp, fn, tn = (sums[..., k] for k in range(4))
    n = tp + fp + fn + tn
    agree = tp + tn
    ref_pos, cand_pos = tp + fn, tp + fp
    # Counts are exact integers in float64 (far below 2**53), so chance == n*n is exact.
    chance = ref_pos * cand_pos + (n - ref_pos) * (n - cand_pos)
    kappa = _div(n * agree - chance, n * n - chance)
    kappa = np.where(n > 0, kappa, np.nan)
    po = _div(agree, n)
    pi_pos = _div(2 * tp + fp + fn, 2 * n)
    pi_neg = _div(2 * tn + fp + fn, 2 * n)
    p_exp = pi_pos * (1 - pi_pos) + pi_neg * (1 - pi_neg)
    return {
        "kappa": kappa,
        "ac1": _div(po - p_exp, 1 - p_exp),
        "pabak": 2 * po - 1,
        "precision": _div(tp, tp + fp),
        "recall": _div(tp, tp + fn),
        "f1": _div(2 * tp, 2 * tp + fp + fn),
        "accuracy": po,
        "neg_agreement": _div(2 * tn, 2 * tn + fp + fn),
        "prevalence_reference": _div(ref_pos, n),
        "prevalence_candidate": _div(cand_pos, n),
    }


def multi_features(cells: npt.NDArray[np.int8]) -> FloatArray:
    """Per-item features of binary ratings ``(..., raters)`` (1 / 0 / -1 unknown).

    Returns ``(..., 9)`` in the order of :data:`MULTI_FEATURES`; summing them over items
    (and traces) is all :func:`multi_metrics` needs.
    """
    pos = (cells == 1).sum(axis=-1).astype(np.float64)
    r = (cells >= 0).sum(axis=-1).astype(np.float64)
    neg = r - pos
    rated = (r >= 1).astype(np.float64)
    pairable = (r >= 2).astype(np.float64)
    same_pairs = pos * (pos - 1) + neg * (neg - 1)
    out = np.stack(
        [
            rated,
            _div(pos, r),
            pairable,
            np.where(r >= 2, _div(same_pairs, r * (r - 1)), 0.0),
            pos,
            neg,
            r * pairable,
            pos * pairable,
            np.where(r >= 2, _div(same_pairs, r - 1), 0.0),
        ],
        axis=-1,
    )
    clean: FloatArray = np.nan_to_num(out, nan=0.0)
    return clean


def multi_metrics(sums: FloatArray) -> dict[str, FloatArray]:
    """Many-rater statistics from summed ``(..., 9)`` item features (see :func:`multi_features`).

    Fleiss' kappa and AC1 as in :func:`mast.agree.stats.fleiss_kappa` (Gwet's treatment of missing
    ratings) and nominal Krippendorff's alpha as in :func:`mast.agree.stats.krippendorff_alpha`.
    """
    rated, pos_frac, pairable, pa_sum, n_pos, n_neg, a_n, a_pos, a_oo = (
        sums[..., k] for k in range(9)
    )
    pa = _div(pa_sum, pairable)
    pi = _div(pos_frac, rated)
    p_exp = pi * pi + (1 - pi) * (1 - pi)
    fleiss = _div(pa - p_exp, 1 - p_exp)
    fleiss = np.where((pairable > 0) & (n_pos > 0) & (n_neg > 0), fleiss, np.nan)
    ac1_exp = pi * (1 - pi) + (1 - pi) * pi
    ac1 = np.where(pairable > 0, _div(pa - ac1_exp, 1 - ac1_exp), np.nan)
    a_neg = a_n - a_pos
    disagreeing = a_n * a_n - a_pos * a_pos - a_neg * a_neg
    alpha = 1 - _div((a_n - 1) * (a_n - a_oo), disagreeing)
    alpha = np.where((a_n > 0) & (disagreeing > 0), alpha, np.nan)
    return {
        "fleiss": fleiss,
        "alpha": alpha,
        "ac1": ac1,
        "percent_agreement": pa,
        "prevalence": _div(n_pos, n_pos + n_neg),
    }


def resample_weights(n: int, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    """``(n_resamples, n)`` multiplicities of ``n`` traces drawn with replacement, per resample."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=n_resamples * n)
    return counts.reshape(n_resamples, n).astype(np.float64)


@dataclass(frozen=True)
class Intervals:
    """Bootstrap intervals per metric, each an array over the report's rows."""

    estimate: Mapping[str, FloatArray]
    """The statistic on the full sample (same function as the resamples)."""
    percentile: Mapping[str, tuple[FloatArray, FloatArray]]
    bca: Mapping[str, tuple[FloatArray, FloatArray]]
    undefined: Mapping[str, FloatArray]
    """Number of resamples in which the statistic was undefined (left out of the interval)."""
    n_resamples: int


def bootstrap_intervals(
    features: FloatArray,
    metrics: Metrics,
    *,
    n_resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> Intervals:
    """Percentile and BCa intervals of ``metrics`` over traces resampled with replacement.

    ``features`` is ``(traces, rows, k)``: per trace, per report row (a mode, the pooled
    cells, a merged mode…), the ``k`` additive features ``metrics`` reads; ``metrics`` maps
    ``(..., rows, k)`` sums to ``{name: (..., out_rows)}`` (it may append derived rows).
    Resamples in which a statistic is undefined are left out of its interval and counted.
    Intervals are NaN when the full-sample statistic is undefined, with fewer than two
    traces, with fewer than two defined resamples, or (BCa only) when the bias correction is
    infinite.  Quantiles interpolate linearly (numpy's default).
    """
    n, rows, k = features.shape
    total = features.sum(axis=0)
    estimate = metrics(total)
    names = list(estimate)
    out_rows = estimate[names[0]].shape[-1]  # ``metrics`` may append derived rows (macro)
    if n < 2 or n_resamples < 2:
        nan_rows = np.full(out_rows, np.nan)
        empty = {m: (nan_rows, nan_rows) for m in names}
        return Intervals(estimate, empty, empty, {m: nan_rows for m in names}, 0)
    weights = resample_weights(n, n_resamples, rng)
    boot = metrics((weights @ features.reshape(n, rows * k)).reshape(n_resamples, rows, k))
    jack = metrics(total[None, :, :] - features)
    alpha = 1.0 - confidence
    percentile: dict[str, tuple[FloatArray, FloatArray]] = {}
    bca: dict[str, tuple[FloatArray, FloatArray]] = {}
    undefined: dict[str, FloatArray] = {}
    for name in names:
        theta = estimate[name]
        values = np.sort(boot[name], axis=0)  # NaN (undefined resamples) sort last
        defined = (~np.isnan(values)).sum(axis=0)
        undefined[name] = (n_resamples - defined).astype(np.float64)
        usable = ~np.isnan(theta) & (defined >= 2)
        levels = np.full(out_rows, alpha / 2), np.full(out_rows, 1 - alpha / 2)
        percentile[name] = _masked(_quantiles(values, defined, levels), usable)
        bca_levels, ok = _bca_levels(theta, boot[name], jack[name], defined, alpha)
        bca[name] = _masked(_quantiles(values, defined, bca_levels), usable & ok)
    return Intervals(estimate, percentile, bca, undefined, n_resamples)


def _masked(
    bounds: tuple[FloatArray, FloatArray], keep: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    return np.where(keep, bounds[0], np.nan), np.where(keep, bounds[1], np.nan)


def _quantiles(
    values: FloatArray, defined: npt.NDArray[np.intp], levels: tuple[FloatArray, FloatArray]
) -> tuple[FloatArray, FloatArray]:
    """Per-column quantiles (linear interpolation) of sorted columns with NaNs at the end."""
    columns = np.arange(values.shape[1])
    last = np.maximum(defined - 1, 0)
    out = []
    for level in levels:
        position = np.clip(np.nan_to_num(level), 0.0, 1.0) * last
        below = np.floor(position).astype(np.intp)
        above = np.minimum(below + 1, last)
        frac = position - below
        low, high = values[below, columns], values[above, columns]
        value = np.where(frac > 0, low + frac * (high - low), low)
        out.append(np.where(np.isnan(level), np.nan, value))
    return out[0], out[1]


def _bca_levels(
    theta: FloatArray,
    boot: FloatArray,
    jack: FloatArray,
    defined: npt.NDArray[np.intp],
    alpha: float,
) -> tuple[tuple[FloatArray, FloatArray], npt.NDArray[np.bool_]]:
    """Efron's (1987) BCa quantile levels per row, and which rows have them."""
    # Bias correction.  Ties with the estimate count half: the statistics are discrete, and
    # a strict "<" would bias z0 whenever many resamples reproduce the estimate exactly.
    with np.errstate(invalid="ignore"):
        below = (boot < theta).sum(axis=0) + 0.5 * (boot == theta).sum(axis=0)
    share = below / np.maximum(defined, 1)
    ok = (share > 0) & (share < 1)
    normal = NormalDist()
    z0 = np.array(
        [normal.inv_cdf(p) if good else np.nan for p, good in zip(share, ok, strict=True)]
    )
    # Acceleration from the jackknife (leave one trace out), undefined values left out.
    jack_ok = ~np.isnan(jack)
    count = jack_ok.sum(axis=0)
    mean = np.where(jack_ok, jack, 0.0).sum(axis=0) / np.maximum(count, 1)
    d = np.where(jack_ok, mean - jack, 0.0)
    spread = (d * d).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        accel = np.where(spread > 0, (d**3).sum(axis=0) / (6.0 * spread**1.5), 0.0)
    levels = []
    for zq in (normal.inv_cdf(alpha / 2), normal.inv_cdf(1 - alpha / 2)):
        den = 1.0 - accel * (z0 + zq)
        ok &= den > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            arg = z0 + (z0 + zq) / den
        levels.append(np.array([normal.cdf(a) if a == a else np.nan for a in arg.tolist()]))
    return (levels[0], levels[1]), ok
