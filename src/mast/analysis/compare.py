"""Shared machinery of :mod:`mast.analysis`: grouping, outcome reading, the bootstrap over
traces and the penalized regression.  Private: the public names live in ``mast.analysis``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.agree.resample import resample_weights
from mast.agree.table import UNKNOWN, natural_key
from mast.analysis.data import MISSING, VectorData, category_values, scalar
from mast.errors import StatsInputError

Level = Literal["mode", "category"]
By = str | Sequence[str] | None
FloatArray = npt.NDArray[np.float64]

_CHUNK = 250  # bootstrap resamples per matrix product (bounds memory on large runs)


def check_options(bootstrap: int, confidence: float) -> None:
    if not isinstance(bootstrap, int) or bootstrap < 0:
        raise StatsInputError(f"bootstrap must be a non-negative integer; got {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise StatsInputError(f"confidence must be between 0 and 1; got {confidence!r}")


def by_columns(by: By) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else [str(b) for b in by]


def group_label(value: object) -> object:
    value = scalar(value)
    return MISSING if value is None else value


def groups_of(data: VectorData, by: list[str]) -> list[tuple[tuple[object, ...], Any]]:
    """(group key, boolean row mask) per group, in natural order of the keys."""
    if not by:
        return [((), np.ones(len(data), dtype=bool))]
    columns = [data.column(b).map(group_label).tolist() for b in by]
    keys = list(zip(*columns, strict=True)) if columns else []
    unique = sorted(set(keys), key=lambda k: tuple(natural_key(str(v)) for v in k))
    return [(key, np.array([k == key for k in keys], dtype=bool)) for key in unique]


def safe_div(num: Any, den: Any) -> Any:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def boot_ratios(
    pairs: Sequence[tuple[FloatArray, FloatArray]],
    *,
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> list[tuple[FloatArray, FloatArray]]:
    """Percentile bootstrap intervals of ``sum(num) / sum(den)`` per column, over rows, for
    each ``(num, den)`` pair, all from the same resamples.

    Rows (traces) are resampled with replacement, all columns together.  Resamples whose
    denominator is 0 are left out; an interval is NaN with fewer than two rows, fewer than
    two usable resamples, or an undefined full-sample ratio.
    """
    n = pairs[0][0].shape[0]
    nans = [np.full(num.shape[1], np.nan) for num, _ in pairs]
    if bootstrap < 2 or n < 2:
        return [(nan, nan.copy()) for nan in nans]
    parts: list[list[FloatArray]] = [[] for _ in pairs]
    for start in range(0, bootstrap, _CHUNK):
        w = resample_weights(n, min(_CHUNK, bootstrap - start), rng)
        for k, (num, den) in enumerate(pairs):
            parts[k].append(safe_div(w @ num, w @ den))
    alpha = 1.0 - confidence
    out = []
    for (num, den), chunks, nan in zip(pairs, parts, nans, strict=True):
        estimate = safe_div(num.sum(axis=0), den.sum(axis=0))
        ratios = np.vstack(chunks)
        low, high = nan.copy(), nan.copy()
        for j in range(num.shape[1]):
            col = ratios[:, j]
            col = col[~np.isnan(col)]
            if col.size >= 2 and not np.isnan(estimate[j]):
                low[j], high[j] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
        out.append((low, high))
    return out


def boot_ratio(
    num: FloatArray,
    den: FloatArray,
    *,
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """:func:`boot_ratios` for one ``(num, den)`` pair."""
    return boot_ratios([(num, den)], bootstrap=bootstrap, confidence=confidence, rng=rng)[0]


def row_names(data: VectorData, rows: Sequence[str], level: Level) -> list[str]:
    tax = data.taxonomy
    if level == "mode":
        return [tax[c].name for c in rows]
    return [tax.category(c).name for c in rows]


def level_rows(data: VectorData, level: Level) -> tuple[list[str], npt.NDArray[np.int8]]:
    if level == "mode":
        return list(data.codes), data.values
    if level == "category":
        return category_values(data)
    raise StatsInputError(f"level must be 'mode' or 'category'; got {level!r}")


def count_unknown(rows: Sequence[str], values: npt.NDArray[np.int8]) -> dict[str, int]:
    return {r: int((values[:, j] == UNKNOWN).sum()) for j, r in enumerate(rows)}


_OUTCOME_WORDS = {"success": 0, "failure": 1}


def read_outcomes(
    data: VectorData, column: str
) -> tuple[npt.NDArray[np.int8], dict[str, list[str]]]:
    """1 failure, 0 success, -1 unknown per row; and the rows left out, by reason."""
    values = data.column(column).tolist()
    out = np.full(len(values), UNKNOWN, dtype=np.int8)
    left: dict[str, list[str]] = {}
    for i, (trace_id, value) in enumerate(zip(data.ids, values, strict=True)):
        if isinstance(value, bool):  # e.g. the judge's task_completed: True = success
            out[i] = 0 if value else 1
            continue
        word = str(getattr(value, "value", value)).strip().lower() if value is not None else ""
        if word in _OUTCOME_WORDS:
            out[i] = _OUTCOME_WORDS[word]
        else:
            reason = (
                f"{column} unknown"
                if word in ("", "unknown", "none")
                else f"{column} {value!r} is neither 'success' nor 'failure'"
            )
            left.setdefault(reason, []).append(trace_id)
    return out, left


def key_columns(by: list[str], key: tuple[object, ...]) -> dict[str, object]:
    return dict(zip(by, key, strict=True))


def mean_interval(
    x: FloatArray, bootstrap: int, confidence: float, rng: np.random.Generator
) -> tuple[float, float, float]:
    if x.size == 0:
        return np.nan, np.nan, np.nan
    low, high = boot_ratio(
        x[:, None], np.ones((x.size, 1)), bootstrap=bootstrap, confidence=confidence, rng=rng
    )
    return float(x.mean()), float(low[0]), float(high[0])


def boot_difference(
    va: npt.NDArray[np.int8],
    vb: npt.NDArray[np.int8],
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """Percentile interval of rate(b) - rate(a), resampling each group on its own."""
    m = va.shape[1]
    nan = np.full(m, np.nan)
    if bootstrap < 2 or len(va) < 2 or len(vb) < 2:
        return nan, nan.copy()

    def rates(v: npt.NDArray[np.int8]) -> FloatArray:
        w = resample_weights(len(v), bootstrap, rng)
        return np.asarray(
            safe_div(w @ (v == 1).astype(np.float64), w @ (v != UNKNOWN).astype(np.float64)),
            dtype=np.float64,
        )

    diff = rates(vb) - rates(va)
    alpha = 1 - confidence
    low, high = nan.copy(), nan.copy()
    for j in range(m):
        col = diff[:, j][~np.isnan(diff[:, j])]
        if col.size >= 2:
            low[j], high[j] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
    return low, high


def association_label(low: float, high: float, rate_success: float, common: float) -> str:
    if np.isnan(low) or np.isnan(high):
        return "not estimable"
    if low > 1:
        return "predicts failure"
    if high < 1:
        return "more common in successes"
    if not np.isnan(rate_success) and rate_success >= common:
        return "common in successes"
    return "no clear association"


def penalized_regression(
    vd: VectorData,
    y: npt.NDArray[np.int64],
    *,
    C: float,
    min_known: float,
    bootstrap: int,
    seed: int | None,
) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    """L2-penalized logistic regression of failure on the modes (complete cases)."""
    info: dict[str, Any] = {"C": C, "penalty": "l2"}
    v = vd.values
    dropped: dict[str, str] = {}
    used: list[int] = []
    for j, code in enumerate(vd.codes):
        # A mode unknown in many traces would shrink the complete cases to nothing (a judge
        # that answers only some modes): leave it out of the model instead, and say so.
        share = float((v[:, j] != UNKNOWN).mean()) if len(v) else 0.0
        if share < min_known:
            dropped[code] = f"known in {share:.0%} of traces (< min_known {min_known:.0%})"
        else:
            used.append(j)
    complete = (v[:, used] != UNKNOWN).all(axis=1) if used else np.zeros(len(vd), dtype=bool)
    ids = vd.ids
    info["incomplete"] = [ids[i] for i in np.flatnonzero(~complete).tolist()]
    x_all, y_c = v[complete][:, used].astype(np.float64), y[complete]
    varying = []
    for k, j in enumerate(used):
        if np.unique(x_all[:, k]).size < 2:
            dropped[vd.codes[j]] = "constant on the complete cases"
        else:
            varying.append(k)
    info["dropped_modes"] = dropped
    info["n"] = int(complete.sum())
    info["n_failure"] = int(y_c.sum())
    if not len(vd):
        info["reason"] = "no trace has a known outcome"
        return None, info
    if not varying:
        info["reason"] = "no mode varies on the traces with a fully known vector"
        return None, info
    if np.unique(y_c).size < 2:
        info["reason"] = "the complete cases are all failures or all successes"
        return None, info
    from sklearn.linear_model import LogisticRegression

    x = x_all[:, varying]
    codes = [vd.codes[used[k]] for k in varying]

    # Newton-Cholesky: exact on a handful of binary features and ~10x faster than lbfgs here,
    # which matters for the bootstrap refits.  Same objective: L2 penalty, intercept free.
    model = LogisticRegression(C=C, solver="newton-cholesky", max_iter=200)

    def fit(xs: FloatArray, ys: npt.NDArray[np.int64]) -> tuple[FloatArray, float]:
        model.fit(xs, ys)
        return np.asarray(model.coef_[0], dtype=np.float64).copy(), float(model.intercept_[0])

    coef, intercept = fit(x, y_c)
    info["intercept"] = intercept
    stability = np.full(len(codes), np.nan)
    if bootstrap:
        rng = np.random.default_rng(seed)
        same = np.zeros(len(codes))
        fits = 0
        for _ in range(bootstrap):
            idx = rng.integers(0, len(y_c), size=len(y_c))
            if np.unique(y_c[idx]).size < 2:
                continue  # a resample with one outcome cannot be fitted
            boot, _ = fit(x[idx], y_c[idx])
            same += np.sign(boot) == np.sign(coef)
            fits += 1
        info["bootstrap_fits"] = fits
        if fits:
            stability = same / fits
    tax = vd.taxonomy
    regression = pd.DataFrame(
        {
            "row": codes,
            "name": [tax[c].name for c in codes],
            "coef": coef,
            "odds_multiplier": np.exp(coef),
            "sign_stability": stability,
            "n_present": x.sum(axis=0).astype(int),
        }
    )
    regression = regression.sort_values("coef", ascending=False, kind="stable")
    return regression.reset_index(drop=True), info
