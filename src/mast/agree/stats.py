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
import numbers
import sys
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from types import FrameType
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from mast.errors import StatsInputError

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

LabelsLike: TypeAlias = npt.ArrayLike | Sequence[object]
"""A 1-D sequence of labels; ``None``/NaN mark missing values."""
RatingsLike: TypeAlias = npt.ArrayLike | Sequence[object]
"""A 2-D ``items x raters`` array of labels; ``None``/NaN mark missing ratings.

(Typed loosely, because type checkers infer ``list[object]`` for a literal such as
``[[1, 0], [None, 1]]``; the shape is checked at run time.)
"""
Missing: TypeAlias = Literal["drop", "raise"]

_IntArray: TypeAlias = npt.NDArray[np.intp]
_FloatArray: TypeAlias = npt.NDArray[np.float64]
_NAN = float("nan")


class UndefinedMetricWarning(UserWarning):
    """A statistic is undefined (0/0) on the given data; ``replace_undefined_by`` is returned."""


@dataclass(frozen=True, slots=True)
class ConfusionCounts:
    """2x2 counts of a binary candidate (``y2``) against a binary reference (``y1``)."""

    tp: int
    """Reference positive, candidate positive."""
    fp: int
    """Reference negative, candidate positive."""
    fn: int
    """Reference positive, candidate negative."""
    tn: int
    """Reference negative, candidate negative."""

    @property
    def n(self) -> int:
        """Number of pairs counted (missing pairs excluded)."""
        return self.tp + self.fp + self.fn + self.tn


@dataclass(frozen=True, slots=True)
class KappaEstimate:
    """A kappa coefficient with its standard error and Wald confidence interval.

    ``ci_low, ci_high = kappa -/+ z * se`` with ``z`` the standard-normal quantile of
    ``(1 + confidence) / 2``; the interval is not truncated to ``[-1, 1]``.  ``n`` is the
    number of pairs (Cohen) or rated items (Fleiss) used.
    """

    kappa: float
    se: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True, slots=True)
class SpecificAgreement:
    """Proportions of specific agreement (Cicchetti & Feinstein 1990).

    With ``a = tp, b = fp, c = fn, d = tn``: ``positive = 2a / (2a + b + c)`` and
    ``negative = 2d / (2d + b + c)``.
    """

    positive: float
    negative: float
    n: int


# --------------------------------------------------------------------------- input coercion


def _is_missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")  # pandas.NA / NaT, without pandas


def _encode(
    arrays: Sequence[object], names: Sequence[str], ndim: int
) -> tuple[list[_IntArray], tuple[Hashable, ...]]:
    """Validate label arrays and factorize them jointly into integer codes (-1 = missing).

    Returns one code array per input (same shape as the input) and the categories, in order
    of first appearance, that the codes index.
    """
    lookup: dict[Hashable, int] = {}
    categories: list[Hashable] = []
    encoded: list[_IntArray] = []
    expected = "a 1-D sequence of labels" if ndim == 1 else "a 2-D items x raters array"
    for array, name in zip(arrays, names, strict=True):
        try:
            values = np.asarray(array, dtype=object)
        except ValueError as exc:  # ragged nesting numpy cannot even hold as objects
            raise StatsInputError(f"{name} must be {expected}; could not read it: {exc}") from None
        if ndim == 2 and values.ndim == 1 and values.size == 0:
            values = values.reshape(0, 0)
        if values.ndim != ndim:
            ragged = values.ndim == 1 and any(isinstance(v, (list, tuple)) for v in values)
            raise StatsInputError(
                f"{name} must be {expected}; got {type(array).__name__} read as an array of "
                f"shape {values.shape} ({values.ndim}-D)"
                + (" because its rows have unequal lengths" if ragged else "")
            )
        codes = np.empty(values.shape, dtype=np.intp)
        flat = codes.reshape(-1)
        for i, value in enumerate(values.flat):
            if isinstance(value, np.generic):
                value = value.item()
            if _is_missing(value):
                flat[i] = -1
                continue
            if isinstance(value, (tuple, frozenset)) or not isinstance(value, Hashable):
                where = np.unravel_index(i, values.shape)
                raise StatsInputError(
                    f"{name} must contain scalar labels (bool, int, str, ...) or None/NaN; "
                    f"got {value!r} of type {type(value).__name__} at index "
                    f"{tuple(int(w) for w in where) if ndim > 1 else int(where[0])}"
                )
            code = lookup.get(value)
            if code is None:
                code = lookup[value] = len(categories)
                categories.append(value)
            flat[i] = code
        encoded.append(codes)
    return encoded, tuple(categories)


def _check_option(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise StatsInputError(f"{name} must be one of {allowed}; got {value!r}")


def _pairs(
    y1: LabelsLike, y2: LabelsLike, missing: Missing
) -> tuple[_IntArray, _IntArray, tuple[Hashable, ...]]:
    """Codes of the complete pairs of two label vectors, plus the joint categories."""
    _check_option("missing", missing, ("drop", "raise"))
    (a, b), categories = _encode((y1, y2), ("y1", "y2"), ndim=1)
    if a.shape != b.shape:
        raise StatsInputError(
            f"y1 and y2 must have the same length; got {a.shape[0]} and {b.shape[0]} labels"
        )
    complete = (a >= 0) & (b >= 0)
    if missing == "raise" and not complete.all():
        first = int(np.flatnonzero(~complete)[0])
        raise StatsInputError(
            f"{int((~complete).sum())} of {a.shape[0]} pairs have a missing label (first at "
            f"index {first}) and missing='raise'; pass missing='drop' to ignore such pairs"
        )
    return a[complete], b[complete], categories


def _is_binary_label(value: Hashable) -> bool:
    return isinstance(value, (bool, int, float)) and value in (0, 1)


def _counts(y1: LabelsLike, y2: LabelsLike, missing: Missing, what: str) -> ConfusionCounts:
    """Confusion counts of two binary label vectors; ``what`` names the caller in errors."""
    a, b, categories = _pairs(y1, y2, missing)
    for value in categories:
        if not _is_binary_label(value):
            raise StatsInputError(
                f"{what} needs binary labels (True/False or 1/0, True = positive); got "
                f"{value!r}. Map the labels to booleans first, e.g. [x == 'yes' for x in y]."
            )
    positive = np.array([value == 1 for value in categories], dtype=bool)
    ref, cand = positive[a], positive[b]
    return ConfusionCounts(
        tp=int(np.sum(ref & cand)),
        fp=int(np.sum(~ref & cand)),
        fn=int(np.sum(ref & ~cand)),
        tn=int(np.sum(~ref & ~cand)),
    )


def _item_counts(ratings: RatingsLike) -> tuple[_IntArray, tuple[Hashable, ...]]:
    """``items x categories`` rating counts of the items that have at least one rating."""
    (codes,), categories = _encode((ratings,), ("ratings",), ndim=2)
    k = len(categories)
    counts = np.zeros((codes.shape[0], k), dtype=np.intp)
    rows, cols = np.nonzero(codes >= 0)
    np.add.at(counts, (rows, codes[rows, cols]), 1)
    return counts[counts.sum(axis=1) > 0], categories


def _n_categories(observed: Sequence[Hashable], categories: Sequence[Hashable] | None) -> int:
    """Number of possible categories for AC1 / PABAK (see :func:`gwet_ac1`)."""
    if categories is None:
        return 2 if all(_is_binary_label(v) for v in observed) else len(observed)
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
        raise StatsInputError(
            f"categories must be a sequence of labels or None; got {categories!r}"
        )
    try:
        allowed = set(categories)
    except TypeError:
        raise StatsInputError(f"categories must hold hashable labels; got {categories!r}") from None
    if len(allowed) != len(categories) or any(_is_missing(c) for c in allowed):
        raise StatsInputError(
            f"categories must list distinct, non-missing labels; got {list(categories)!r}"
        )
    unknown = [v for v in observed if v not in allowed]
    if unknown:
        raise StatsInputError(
            f"labels {unknown!r} are not among categories={list(categories)!r}; "
            "add them to categories or fix the labels"
        )
    return len(allowed)


def _check_confidence(confidence: float) -> float:
    valid = isinstance(confidence, numbers.Real) and not isinstance(confidence, bool)
    if not (valid and 0.0 < confidence < 1.0):
        raise StatsInputError(
            f"confidence must be a number strictly between 0 and 1; got {confidence!r}"
        )
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


# ------------------------------------------------------------------------- undefined values


def _undefined(reason: str, replace_undefined_by: float) -> float:
    """Warn that a statistic is undefined, pointing at the caller outside this module."""
    frame: FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
        level += 1
    warnings.warn(
        f"{reason}; returning replace_undefined_by={replace_undefined_by!r}",
        UndefinedMetricWarning,
        stacklevel=level,
    )
    return float(replace_undefined_by)


def _ratio(num: int, den: int, n: int, reason: str, replace_undefined_by: float) -> float:
    """``num / den``, or undefined for ``reason`` (or for emptiness when ``n == 0``)."""
    if den:
        return num / den
    return _undefined(reason if n else _EMPTY, replace_undefined_by)


_EMPTY = "no complete pair of labels (empty input, or every pair has a missing label)"
_FEWER_THAN_TWO = (
    "{}: fewer than two categories are possible; pass categories=[...] listing all labels"
)


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
