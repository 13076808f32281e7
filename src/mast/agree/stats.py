"""Agreement statistics: plain label vectors in, plain floats out.

Conventions shared by every function here:

* **Inputs.** Two-rater functions take two 1-D label vectors ``y1, y2`` of equal length; by
  convention ``y1`` is the *reference* (e.g. the human label) and ``y2`` the *candidate*
  (e.g. the LLM judge).  Multi-rater functions take one 2-D ``ratings`` array of shape
  ``items x raters`` (one row per item, one column per rater; note that the ``krippendorff``
  package uses the transposed layout).  Lists, tuples, numpy arrays and pandas objects are
  accepted.  A label is any hashable scalar (bool, int, float, str, ...); labels that compare
  equal are the same category, so ``True``, ``1`` and ``1.0`` are one category.
* **Missing values** are ``None``, NaN (Python or numpy) and ``pandas.NA``.  Two-rater
  functions take ``missing="drop"`` (default: drop every pair in which either label is
  missing) or ``missing="raise"`` (raise ``StatsInputError`` if any label is missing).
  Multi-rater functions use whatever ratings each item has; each function says how.
* **Binary functions** (:func:`confusion_counts`, :func:`accuracy`, :func:`precision`,
  :func:`recall`, :func:`f1`, :func:`specific_agreement`) require labels ``True``/``False``
  (or ``1``/``0``); ``True`` is the positive class ("the failure mode is present").  Every
  other function treats labels as nominal categories, binary being the common case.
* **Validation.** Malformed input (wrong shape, length mismatch, non-scalar labels,
  non-binary labels where binary is required, bad option values) raises
  :class:`~mast.errors.StatsInputError` (a :class:`~mast.errors.MastError` and a
  ``ValueError``) naming what was received and what was expected.
* **Undefined values.** When a statistic is mathematically undefined (a 0/0) the function
  emits :class:`UndefinedMetricWarning` and returns ``replace_undefined_by`` (default NaN).
  It never crashes on such data and never silently returns 1.0.  The cases are:

  ==========================  ===========================================================
  statistic                   undefined when
  ==========================  ===========================================================
  every statistic             no (complete) pair / no rated item is left after dropping
                              missing values
  Cohen's kappa               expected agreement is 1: both raters used one and the same
                              category throughout (e.g. a mode nobody flagged)
  Fleiss' kappa               no item has two ratings, or all ratings are one category
  Krippendorff's alpha        no item has two ratings, or all pairable values are one
                              category
  Gwet's AC1, PABAK           fewer than two categories are possible (see ``categories``)
  precision                   no predicted positives (tp + fp = 0)
  recall                      no reference positives (tp + fn = 0)
  F1                          no positives at all (tp + fp + fn = 0)
  positive/negative agreem.   no positive (resp. negative) label from either rater
  standard errors             kappa undefined (SE is NaN, no second warning), or fewer
                              than two pairs / rated items (SE is NaN, with a warning)
  ==========================  ===========================================================

  Gwet's AC1 and PABAK are *defined* (and equal 1.0) when two raters agree on a constant
  binary label: that is their documented behaviour, not a fallback.
* **Outputs** are Python ``float`` (or small frozen dataclasses of them).

>>> cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
0.6153846153846154
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from mast.agree.metrics_base import (
    _EMPTY,
    _FEWER_THAN_TWO,
    _NAN,
    ConfusionCounts,
    KappaEstimate,
    LabelsLike,
    Missing,
    SpecificAgreement,
    UndefinedMetricWarning,
    _check_confidence,
    _counts,
    _FloatArray,
    _IntArray,
    _n_categories,
    _pairs,
    _ratio,
    _undefined,
)
from mast.agree.multirater import (
    fleiss_kappa,
    fleiss_kappa_with_se,
    gwet_ac1_multi,
    krippendorff_alpha,
)

__all__ = [
    "ConfusionCounts",
    "KappaEstimate",
    "SpecificAgreement",
    "UndefinedMetricWarning",
    "accuracy",
    "cohen_kappa",
    "cohen_kappa_with_se",
    "confusion_counts",
    "f1",
    "fleiss_kappa",
    "fleiss_kappa_with_se",
    "gwet_ac1",
    "gwet_ac1_multi",
    "krippendorff_alpha",
    "pabak",
    "percent_agreement",
    "precision",
    "recall",
    "specific_agreement",
]


# --------------------------------------------------------------------------- input coercion


# ------------------------------------------------------------------------- undefined values


# ------------------------------------------------------------------------- binary metrics


def confusion_counts(
    y1: LabelsLike, y2: LabelsLike, *, missing: Missing = "drop"
) -> ConfusionCounts:
    """Count tp, fp, fn, tn of candidate ``y2`` against reference ``y1`` (binary labels).

    Pairs with a missing label are dropped (``missing="drop"``) or rejected
    (``missing="raise"``).  Empty input gives all-zero counts, without a warning.

    >>> c = confusion_counts([True, True, False, False, None], [True, False, True, False, True])
    >>> c
    ConfusionCounts(tp=1, fp=1, fn=1, tn=1)
    >>> c.n
    4
    """
    return _counts(y1, y2, missing, "confusion_counts")


def accuracy(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Accuracy ``(tp + tn) / n`` of binary candidate ``y2`` against reference ``y1``.

    Undefined (warning, ``replace_undefined_by``) when no complete pair is left.  For
    nominal labels use :func:`percent_agreement`, which is the same quantity.

    >>> accuracy([1, 1, 0, 0], [1, 0, 0, 0])
    0.75
    """
    c = _counts(y1, y2, missing, "accuracy")
    return _ratio(c.tp + c.tn, c.n, c.n, _EMPTY, replace_undefined_by)


def precision(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Precision ``tp / (tp + fp)`` of binary candidate ``y2`` against reference ``y1``.

    Undefined (warning, ``replace_undefined_by``) when ``y2`` has no positive.

    >>> precision([1, 1, 0, 0], [1, 0, 1, 1])
    0.3333333333333333
    """
    c = _counts(y1, y2, missing, "precision")
    return _ratio(
        c.tp,
        c.tp + c.fp,
        c.n,
        "precision: the candidate has no positive label",
        replace_undefined_by,
    )


def recall(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Recall ``tp / (tp + fn)`` of binary candidate ``y2`` against reference ``y1``.

    Undefined (warning, ``replace_undefined_by``) when ``y1`` has no positive.

    >>> recall([1, 1, 0, 0], [1, 0, 1, 1])
    0.5
    """
    c = _counts(y1, y2, missing, "recall")
    return _ratio(
        c.tp, c.tp + c.fn, c.n, "recall: the reference has no positive label", replace_undefined_by
    )


def f1(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """F1 score ``2tp / (2tp + fp + fn)`` of binary candidate ``y2`` against reference ``y1``.

    Computed directly from the counts, so it is 0.0 (not undefined) when only one of
    precision and recall is undefined.  Undefined (warning, ``replace_undefined_by``) when
    neither vector has a positive label.  F1 equals the positive specific agreement.

    >>> f1([1, 1, 0, 0], [1, 0, 1, 1])
    0.4
    """
    c = _counts(y1, y2, missing, "f1")
    return _ratio(
        2 * c.tp,
        2 * c.tp + c.fp + c.fn,
        c.n,
        "f1: neither the reference nor the candidate has a positive label",
        replace_undefined_by,
    )


def specific_agreement(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> SpecificAgreement:
    """Positive and negative specific agreement of two binary raters.

    ``positive = 2a / (2a + b + c)`` and ``negative = 2d / (2d + b + c)`` with
    ``a = tp, b = fp, c = fn, d = tn`` (Cicchetti & Feinstein 1990); both are symmetric in
    the two raters.  Each is undefined (warning, ``replace_undefined_by``) when neither rater
    used that label; ``n`` is the number of complete pairs.

    >>> specific_agreement([1, 1, 0, 0, 0], [1, 0, 0, 0, 0])
    SpecificAgreement(positive=0.6666666666666666, negative=0.8571428571428571, n=5)
    """
    c = _counts(y1, y2, missing, "specific_agreement")
    disagree = c.fp + c.fn
    return SpecificAgreement(
        positive=_ratio(
            2 * c.tp,
            2 * c.tp + disagree,
            c.n,
            "positive specific agreement: neither rater used the positive label",
            replace_undefined_by,
        ),
        negative=_ratio(
            2 * c.tn,
            2 * c.tn + disagree,
            c.n,
            "negative specific agreement: neither rater used the negative label",
            replace_undefined_by,
        ),
        n=c.n,
    )


# -------------------------------------------------------------------- two-rater agreement


def percent_agreement(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Proportion of complete pairs on which the two raters give the same (nominal) label.

    Undefined (warning, ``replace_undefined_by``) when no complete pair is left.

    >>> percent_agreement(["a", "b", "c", None], ["a", "b", "a", "c"])
    0.6666666666666666
    """
    a, b, _ = _pairs(y1, y2, missing)
    return _ratio(int(np.sum(a == b)), a.size, a.size, _EMPTY, replace_undefined_by)


def _cohen(
    y1: LabelsLike, y2: LabelsLike, missing: Missing, replace_undefined_by: float
) -> tuple[float, _FloatArray | None, int]:
    """Cohen's kappa, the cell proportions it came from (None if undefined) and n."""
    a, b, categories = _pairs(y1, y2, missing)
    n = a.size
    if n == 0:
        return _undefined(_EMPTY, replace_undefined_by), None, 0
    k = len(categories)
    table = np.bincount(a * k + b, minlength=k * k).reshape(k, k)
    # kappa = (po - pe) / (1 - pe), computed on integer counts so that it is exact until
    # the final division: po = trace / n, pe = sum_i row_i * col_i / n^2.
    chance = int(table.sum(axis=1) @ table.sum(axis=0))
    if chance == n * n:
        reason = "Cohen's kappa: both raters gave one and the same label to every item"
        return _undefined(f"{reason} (expected agreement is 1)", replace_undefined_by), None, n
    kappa = (n * int(np.trace(table)) - chance) / (n * n - chance)
    return kappa, table / n, n


def cohen_kappa(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Cohen's (1960) kappa for two raters and nominal labels: ``(po - pe) / (1 - pe)``.

    ``po`` is the observed agreement and ``pe = sum_k p1k * p2k`` the agreement expected from
    each rater's own label frequencies.  Symmetric in the raters.  Undefined (warning,
    ``replace_undefined_by``) when no complete pair is left, or when ``pe = 1``: both raters
    gave one and the same label to every item (e.g. a failure mode nobody flagged).

    >>> cohen_kappa(["y"] * 25 + ["n"] * 25, ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15)
    0.4
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cohen_kappa([False, False, False], [False, False, False])
    nan
    >>> caught[0].category.__name__
    'UndefinedMetricWarning'
    """
    return _cohen(y1, y2, missing, replace_undefined_by)[0]


def cohen_kappa_with_se(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    confidence: float = 0.95,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> KappaEstimate:
    """Cohen's kappa with its large-sample standard error and a Wald confidence interval.

    The standard error is the non-null asymptotic one of Fleiss, Cohen & Everitt (1969,
    *Psychological Bulletin* 72:323-327), with cell proportions ``p_ij`` (rows: ``y1``),
    margins ``p_i.`` and ``p_.j``, observed agreement ``po`` and expected agreement ``pe``::

        A = sum_i p_ii * (1 - (p_i. + p_.i) * (1 - kappa))**2
        B = (1 - kappa)**2 * sum_{i != j} p_ij * (p_.i + p_j.)**2
        C = (kappa - pe * (1 - kappa))**2
        se = sqrt((A + B - C) / (n * (1 - pe)**2))

    (the same formula as ``statsmodels.stats.inter_rater.cohens_kappa(...).std_kappa``).
    The interval is ``kappa -/+ z * se`` with the normal quantile ``z``, not truncated.
    When kappa is undefined (see :func:`cohen_kappa`), ``kappa`` is
    ``replace_undefined_by`` and ``se``/CI are NaN; with a single pair the SE is undefined
    too (warning, NaN).

    >>> est = cohen_kappa_with_se([1] * 25 + [0] * 25, [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15)
    >>> round(est.kappa, 4), round(est.se, 4), round(est.ci_low, 4), round(est.ci_high, 4), est.n
    (0.4, 0.127, 0.1511, 0.6489, 50)
    """
    z = _check_confidence(confidence)
    kappa, p, n = _cohen(y1, y2, missing, replace_undefined_by)
    if p is None:
        return KappaEstimate(kappa, _NAN, _NAN, _NAN, n)
    if n < 2:
        _undefined("Cohen's kappa standard error: needs at least two pairs", _NAN)
        return KappaEstimate(kappa, _NAN, _NAN, _NAN, n)
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_exp = float(rows @ cols)
    off = 1.0 - kappa
    term_a = float(np.sum(np.diag(p) * (1.0 - (rows + cols) * off) ** 2))
    spread = (cols[:, None] + rows[None, :]) ** 2  # cell (i, j): (p_.i + p_j.)^2
    np.fill_diagonal(spread, 0.0)
    term_b = off**2 * float(np.sum(p * spread))
    term_c = (kappa - p_exp * off) ** 2
    se = math.sqrt(max(term_a + term_b - term_c, 0.0) / (n * (1.0 - p_exp) ** 2))
    return KappaEstimate(kappa, se, kappa - z * se, kappa + z * se, n)


def _pairs_over_q(
    y1: LabelsLike,
    y2: LabelsLike,
    missing: Missing,
    categories: Sequence[Hashable] | None,
    what: str,
) -> tuple[_IntArray, _IntArray, int, str | None]:
    """Complete pairs, number of possible categories ``q``, and why undefined (or None)."""
    a, b, labels = _pairs(y1, y2, missing)
    q = _n_categories([labels[i] for i in np.unique(np.concatenate([a, b]))], categories)
    if a.size == 0:
        return a, b, q, _EMPTY
    return a, b, q, _FEWER_THAN_TWO.format(what) if q < 2 else None


def gwet_ac1(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    categories: Sequence[Hashable] | None = None,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Gwet's (2008) AC1 for two raters and nominal labels: ``(po - pe) / (1 - pe)``.

    ``pe = sum_k pi_k * (1 - pi_k) / (q - 1)`` where ``pi_k`` is the mean of the two raters'
    proportions of label ``k`` and ``q`` the number of possible categories.  ``q`` matters,
    so it is taken from ``categories`` if given (every label must be in it); otherwise it is
    2 when all labels are binary (True/False/1/0), else the number of distinct labels seen.
    Unlike kappa, AC1 is 1.0 when both raters give the same constant binary label.
    Undefined (warning, ``replace_undefined_by``) when no complete pair is left or ``q < 2``.

    >>> gwet_ac1([1, 1, 1, 1, 0], [1, 1, 1, 1, 1])
    0.7560975609756099
    >>> gwet_ac1([0, 0, 0], [0, 0, 0])
    1.0
    """
    a, b, q, reason = _pairs_over_q(y1, y2, missing, categories, "Gwet's AC1")
    if reason is not None:
        return _undefined(reason, replace_undefined_by)
    pi = np.bincount(np.concatenate([a, b])) / (2.0 * a.size)
    p_exp = float(np.sum(pi * (1.0 - pi))) / (q - 1)
    return (float(np.mean(a == b)) - p_exp) / (1.0 - p_exp)


def pabak(
    y1: LabelsLike,
    y2: LabelsLike,
    *,
    categories: Sequence[Hashable] | None = None,
    replace_undefined_by: float = _NAN,
    missing: Missing = "drop",
) -> float:
    """Prevalence- and bias-adjusted kappa: ``(q * po - 1) / (q - 1)``; ``2 * po - 1`` if binary.

    Byrt, Bishop & Carlin (1993) for binary labels; with ``q`` categories this is Brennan &
    Prediger's (1981) coefficient.  ``q`` is determined as in :func:`gwet_ac1`.  Undefined
    (warning, ``replace_undefined_by``) when no complete pair is left or ``q < 2``.

    >>> pabak([1, 1, 0, 0], [1, 0, 0, 0])
    0.5
    """
    a, b, q, reason = _pairs_over_q(y1, y2, missing, categories, "PABAK")
    if reason is not None:
        return _undefined(reason, replace_undefined_by)
    return (q * float(np.mean(a == b)) - 1.0) / (q - 1)


# ------------------------------------------------------------------ multi-rater agreement
