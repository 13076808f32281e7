"""What every agreement statistic shares: label encoding, missing values, result types, and the
warning for undefined values.
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


# The warning points at the first caller outside the statistics modules (the user's line).
_STATS_MODULES = ("mast.agree.metrics_base", "mast.agree.stats", "mast.agree.multirater")


def _undefined(reason: str, replace_undefined_by: float) -> float:
    """Warn that a statistic is undefined, pointing at the caller outside this module."""
    frame: FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_globals.get("__name__") in _STATS_MODULES:
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
