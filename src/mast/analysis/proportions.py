"""Intervals for proportions, their differences and odds ratios (used by :mod:`mast.analysis`).

Small closed-form statistics on counts, kept apart from the analysis functions so that each
can be checked against published values:

* :func:`wilson` — Wilson score interval for one proportion (Wilson 1927);
* :func:`newcombe` — Newcombe's hybrid score interval for a difference of two independent
  proportions (Newcombe 1998, method 10), which stays inside [-1, 1] and behaves at 0 and 1;
* :func:`odds_ratio` — odds ratio of a 2x2 table with Fisher's exact test, an exact
  (conditional) interval for small counts and Woolf's log interval otherwise, and the
  Haldane–Anscombe correction (add 0.5 to every cell) when a cell is zero.

>>> low, high = newcombe(56, 70, 48, 80)   # Newcombe (1998), table II, example (a)
>>> round(low, 4), round(high, 4)
(0.0524, 0.3339)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

__all__ = ["OddsRatio", "OrMethod", "newcombe", "odds_ratio", "wilson", "z_value"]

OrMethod = Literal["auto", "exact", "woolf"]
_NAN = float("nan")


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile for ``confidence`` (1.96 for 0.95)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(x: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``x`` successes out of ``n`` (NaN, NaN when ``n`` is 0).

    >>> [round(v, 4) for v in wilson(0, 10)]
    [0.0, 0.2775]
    """
    if n <= 0:
        return _NAN, _NAN
    z = z_value(confidence)
    p = x / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At x = 0 (x = n) the bound is exactly 0 (1); float rounding would give 1e-17.
    low = 0.0 if x == 0 else max(0.0, centre - half)
    high = 1.0 if x == n else min(1.0, centre + half)
    return low, high


def newcombe(x1: int, n1: int, x2: int, n2: int, confidence: float = 0.95) -> tuple[float, float]:
    """Interval for ``x1/n1 - x2/n2`` (independent samples), Newcombe's method 10.

    Each proportion gets its Wilson interval ``(l, u)``; the difference ``d = p1 - p2`` gets
    ``d - sqrt((p1-l1)^2 + (u2-p2)^2)`` to ``d + sqrt((u1-p1)^2 + (p2-l2)^2)``.
    NaN when either sample is empty.
    """
    if n1 <= 0 or n2 <= 0:
        return _NAN, _NAN
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, confidence)
    l2, u2 = wilson(x2, n2, confidence)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return max(-1.0, low), min(1.0, high)


@dataclass(frozen=True)
class OddsRatio:
    """Odds ratio of the 2x2 table ``[[a, b], [c, d]]`` (``a*d / (b*c)``) with its interval."""

    estimate: float
    """``a*d / (b*c)``; with a zero cell, the Haldane–Anscombe estimate (0.5 added to all)."""
    low: float
    high: float
    method: str
    """How the interval was made: ``"exact"`` (conditional, inverted Fisher test) or
    ``"woolf"`` (normal approximation on the log scale); ``""`` when undefined."""
    corrected: bool
    """True when a zero cell made the Haldane–Anscombe correction necessary."""
    p_value: float
    """Two-sided Fisher exact test of independence (odds ratio = 1)."""


def odds_ratio(
    a: int,
    b: int,
    c: int,
    d: int,
    *,
    confidence: float = 0.95,
    method: OrMethod = "auto",
    small: int = 5,
) -> OddsRatio:
    """Odds ratio of ``[[a, b], [c, d]]`` with a confidence interval and Fisher's exact p.

    ``method="auto"`` uses the exact conditional interval when any cell is below ``small``
    (where Woolf's normal approximation on the log scale is unreliable) and Woolf's
    interval otherwise.  A zero cell makes the plain estimate 0 or infinite: the point
    estimate then adds 0.5 to every cell (Haldane 1956, Anscombe 1956), and so does Woolf's
    interval; the exact interval needs no correction (one end is 0 or infinity).  A table
    with an empty row or column has no odds ratio: every value is NaN.

    >>> r = odds_ratio(3, 1, 1, 3)   # Fisher's tea-tasting table
    >>> round(r.estimate, 3), r.method, round(r.p_value, 4)
    (9.0, 'exact', 0.4857)
    """
    from scipy.stats import fisher_exact
    from scipy.stats.contingency import odds_ratio as scipy_odds_ratio

    cells = (a, b, c, d)
    if min(cells) < 0:
        raise ValueError(f"2x2 counts must be non-negative, got {cells}")
    if a + b == 0 or c + d == 0 or a + c == 0 or b + d == 0:
        return OddsRatio(_NAN, _NAN, _NAN, "", False, _NAN)
    p_value = float(fisher_exact([[a, b], [c, d]]).pvalue)
    corrected = min(cells) == 0
    fa, fb, fc, fd = (v + 0.5 for v in cells) if corrected else (float(v) for v in cells)
    estimate = fa * fd / (fb * fc)
    exact = method == "exact" or (method == "auto" and min(cells) < small)
    if exact:
        interval = scipy_odds_ratio([[a, b], [c, d]], kind="conditional").confidence_interval(
            confidence_level=confidence
        )
        low, high = float(interval.low), float(interval.high)
        return OddsRatio(estimate, low, high, "exact", corrected, p_value)
    se = math.sqrt(1 / fa + 1 / fb + 1 / fc + 1 / fd)
    z = z_value(confidence)
    log_or = math.log(estimate)
    return OddsRatio(
        estimate, math.exp(log_or - z * se), math.exp(log_or + z * se), "woolf", corrected, p_value
    )
