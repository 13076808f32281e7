"""Agreement among several raters: Fleiss' kappa (with Gwet's standard error), Gwet's AC1 for
many raters and Krippendorff's alpha, on ``items x raters`` arrays.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from mast.agree.metrics_base import (
    _FEWER_THAN_TWO,
    _NAN,
    KappaEstimate,
    RatingsLike,
    _check_confidence,
    _FloatArray,
    _IntArray,
    _item_counts,
    _n_categories,
    _undefined,
)
from mast.errors import StatsInputError


@dataclass(frozen=True, slots=True)
class _MultiRater:
    """Per-item quantities shared by Fleiss' kappa and multi-rater AC1 (Gwet 2014)."""

    counts: _IntArray  # items (with >= 1 rating) x categories
    per_item: _IntArray  # ratings per item, r_i
    pa_item: _FloatArray  # per-item agreement; 0 for items with one rating
    pa: float  # mean of pa_item over items with >= 2 ratings
    pi: _FloatArray  # category prevalence: mean over items of r_ik / r_i
    n_pairable: int  # items with >= 2 ratings


def _multi_rater(ratings: RatingsLike) -> tuple[_MultiRater, tuple[Hashable, ...]]:
    counts, categories = _item_counts(ratings)
    per_item = counts.sum(axis=1)
    pairable = per_item >= 2
    agreeing = (counts * (counts - 1)).sum(axis=1)
    pa_item = np.zeros(per_item.shape, dtype=np.float64)
    pa_item[pairable] = agreeing[pairable] / (per_item[pairable] * (per_item[pairable] - 1))
    n_pairable = int(pairable.sum())
    pa = float(pa_item.sum() / n_pairable) if n_pairable else _NAN
    pi = (
        (counts / per_item[:, None]).mean(axis=0)
        if counts.shape[0]
        else np.zeros(len(categories), dtype=np.float64)
    )
    return _MultiRater(counts, per_item, pa_item, pa, pi, n_pairable), categories


def _no_pairable_item(m: _MultiRater, what: str) -> str | None:
    if m.counts.shape[0] == 0:
        return f"{what}: no rating at all (empty input, or every rating is missing)"
    if m.n_pairable == 0:
        return f"{what}: no item has at least two ratings"
    return None


def _gwet_se(m: _MultiRater, coef: float, p_exp: float, p_exp_item: _FloatArray) -> float:
    """Linearization standard error of Gwet (2008, 2014) for Fleiss' kappa and AC1."""
    n = m.counts.shape[0]
    coef_item = (n / m.n_pairable) * (m.pa_item - p_exp * (m.per_item >= 2)) / (1.0 - p_exp)
    coef_item = coef_item - 2.0 * (1.0 - coef) * (p_exp_item - p_exp) / (1.0 - p_exp)
    return math.sqrt(float(np.sum((coef_item - coef) ** 2)) / (n * (n - 1)))


def _fleiss(
    ratings: RatingsLike, replace_undefined_by: float
) -> tuple[float, _MultiRater, float | None]:
    """Fleiss' kappa, the item data and pe (None if undefined)."""
    m, _ = _multi_rater(ratings)
    reason = _no_pairable_item(m, "Fleiss' kappa")
    if reason is None and np.count_nonzero(m.counts.sum(axis=0)) < 2:
        reason = "Fleiss' kappa: every rating is the same label (expected agreement is 1)"
    if reason is not None:
        return _undefined(reason, replace_undefined_by), m, None
    p_exp = float(np.sum(m.pi**2))
    return (m.pa - p_exp) / (1.0 - p_exp), m, p_exp


def fleiss_kappa(ratings: RatingsLike, *, replace_undefined_by: float = _NAN) -> float:
    """Fleiss' (1971) kappa for any number of raters and nominal labels.

    ``ratings`` is ``items x raters``; ``None``/NaN mark missing ratings.  With complete
    data this is exactly Fleiss (1971).  With missing ratings it is Gwet's (2014, *Handbook
    of Inter-Rater Reliability*, 4th ed.) generalization, as in R ``irrCAC``:

    * items with no rating are dropped;
    * observed agreement ``pa`` averages ``sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))`` over the
      items with at least two ratings (``r_i`` ratings, ``r_ik`` of them label ``k``);
    * label prevalence ``pi_k`` averages ``r_ik / r_i`` over all items with a rating (so an
      item with a single rating counts for prevalence, not for agreement);
    * ``pe = sum_k pi_k**2`` and ``kappa = (pa - pe) / (1 - pe)``.

    Undefined (warning, ``replace_undefined_by``) when no item has two ratings or every
    rating is the same label.

    >>> fleiss_kappa([[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, None, 0]])
    0.6571428571428571
    """
    return _fleiss(ratings, replace_undefined_by)[0]


def fleiss_kappa_with_se(
    ratings: RatingsLike,
    *,
    confidence: float = 0.95,
    replace_undefined_by: float = _NAN,
) -> KappaEstimate:
    """Fleiss' kappa (see :func:`fleiss_kappa`) with a standard error and confidence interval.

    The standard error is Gwet's (2008, *Br. J. Math. Stat. Psychol.* 61:29-48; 2014
    *Handbook*, ch. 5) linearization estimator, which does not assume kappa = 0 and allows
    missing ratings.  With ``n`` rated items, ``n2`` of them with two or more ratings::

        pe_i    = sum_k r_ik * pi_k / r_i
        kappa_i = (n / n2) * (pa_i - pe * [r_i >= 2]) / (1 - pe)
        kappa_i* = kappa_i - 2 * (1 - kappa) * (pe_i - pe) / (1 - pe)
        se      = sqrt(sum_i (kappa_i* - kappa)**2 / (n * (n - 1)))

    It equals ``coeff.se`` of R ``irrCAC::fleiss.kappa.raw`` (with ``N = Inf``).  (The
    Fleiss, Nee & Landis 1979 standard error is valid only under kappa = 0, for testing, and
    not for an interval; it is not used.)  The interval is ``kappa -/+ z * se`` with the
    normal quantile ``z``, not truncated.  ``n`` is the number of rated items.  If kappa is
    undefined, ``kappa`` is ``replace_undefined_by`` and ``se``/CI are NaN; with fewer than
    two rated items the SE is undefined too (warning, NaN).

    >>> est = fleiss_kappa_with_se([[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, None, 0]])
    >>> round(est.kappa, 4), round(est.se, 4), est.n
    (0.6571, 0.328, 4)
    """
    z = _check_confidence(confidence)
    kappa, m, p_exp = _fleiss(ratings, replace_undefined_by)
    n = m.counts.shape[0]
    if p_exp is None:
        return KappaEstimate(kappa, _NAN, _NAN, _NAN, n)
    if n < 2:
        _undefined("Fleiss' kappa standard error: needs at least two rated items", _NAN)
        return KappaEstimate(kappa, _NAN, _NAN, _NAN, n)
    se = _gwet_se(m, kappa, p_exp, (m.counts @ m.pi) / m.per_item)
    return KappaEstimate(kappa, se, kappa - z * se, kappa + z * se, n)


def gwet_ac1_multi(
    ratings: RatingsLike,
    *,
    categories: Sequence[Hashable] | None = None,
    replace_undefined_by: float = _NAN,
) -> float:
    """Gwet's (2008) AC1 for any number of raters and nominal labels.

    ``ratings`` is ``items x raters`` with ``None``/NaN for missing ratings, handled exactly
    as in :func:`fleiss_kappa` (Gwet 2014); ``pe = sum_k pi_k (1 - pi_k) / (q - 1)`` with
    ``q`` determined as in :func:`gwet_ac1`.  With two raters and no missing rating this
    equals :func:`gwet_ac1`.  Undefined (warning, ``replace_undefined_by``) when no item has
    two ratings or ``q < 2``.

    >>> round(gwet_ac1_multi([[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, None, 0]]), 6)
    0.675676
    """
    m, labels = _multi_rater(ratings)
    observed = [labels[k] for k in np.flatnonzero(m.counts.sum(axis=0))]
    q = _n_categories(observed, categories)
    reason = _no_pairable_item(m, "Gwet's AC1")
    if reason is None and q < 2:
        reason = _FEWER_THAN_TWO.format("Gwet's AC1")
    if reason is not None:
        return _undefined(reason, replace_undefined_by)
    p_exp = float(np.sum(m.pi * (1.0 - m.pi))) / (q - 1)
    return (m.pa - p_exp) / (1.0 - p_exp)


_LEVELS = ("nominal",)


def krippendorff_alpha(
    ratings: RatingsLike,
    *,
    level: str = "nominal",
    replace_undefined_by: float = _NAN,
) -> float:
    """Krippendorff's alpha for nominal labels, any number of raters, missing ratings allowed.

    ``ratings`` is ``items x raters`` (the transpose of Krippendorff's "reliability data
    matrix" and of the ``krippendorff`` package's default); ``None``/NaN mark missing
    values.  Following Krippendorff (2011, "Computing Krippendorff's Alpha-Reliability"),
    items with fewer than two values are not pairable and are ignored; the coincidence
    matrix ``o_ck = sum_u (number of c-k pairs in item u) / (m_u - 1)`` gives
    ``n_c = sum_k o_ck``, ``n = sum_c n_c`` and::

        alpha = 1 - (n - 1) * (n - sum_c o_cc) / (n**2 - sum_c n_c**2)

    Only ``level="nominal"`` is supported (binary labels are nominal); any other level
    raises ``StatsInputError`` rather than silently computing something else.  Undefined
    (warning, ``replace_undefined_by``) when no item has two values or all pairable values
    are the same label.

    >>> krippendorff_alpha([[1, 1], [1, 0], [0, 0], [0, 0], [None, 1]])
    0.5333333333333333
    """
    if level not in _LEVELS:
        raise StatsInputError(
            f"level must be one of {_LEVELS}; got {level!r}. Only nominal alpha is implemented "
            "(binary labels are nominal); ordinal, interval and ratio levels are not."
        )
    counts, _ = _item_counts(ratings)
    counts = counts[counts.sum(axis=1) >= 2]
    if counts.shape[0] == 0:
        return _undefined(
            "Krippendorff's alpha: no item has at least two values", replace_undefined_by
        )
    per_item = counts.sum(axis=1)
    n_c = counts.sum(axis=0)
    n = int(n_c.sum())
    disagreeing = n * n - int(np.sum(n_c**2))  # (n - 1) n D_e, in exact integers
    if disagreeing == 0:
        return _undefined(
            "Krippendorff's alpha: every pairable value is the same label "
            "(expected disagreement is 0)",
            replace_undefined_by,
        )
    o_diag_sum = float(np.sum(counts * (counts - 1) / (per_item[:, None] - 1)))
    return 1.0 - (n - 1) * (n - o_diag_sum) / disagreeing
