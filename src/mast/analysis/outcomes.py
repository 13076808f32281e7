"""Modes against outcomes and groups: :func:`outcome_analysis` (which modes go with failure) and
:func:`compare` (two groups' rates side by side).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mast.agree.table import UNKNOWN, natural_key
from mast.analysis.compare import (
    Level,
    association_label,
    boot_difference,
    check_options,
    count_unknown,
    group_label,
    level_rows,
    penalized_regression,
    read_outcomes,
    row_names,
)
from mast.analysis.data import (
    Excluded,
    collect,
)
from mast.analysis.proportions import OrMethod, newcombe, odds_ratio
from mast.analysis.results import (
    Comparison,
    OutcomeAnalysis,
)
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy

_OUTCOME_COLUMNS = [
    *("row", "name", "n_failure", "present_failure", "rate_failure"),
    *("n_success", "present_success", "rate_success", "difference", "diff_low", "diff_high"),
    *("lift", "odds_ratio", "or_low", "or_high", "or_ci", "corrected", "p_value"),
    *("n_unknown", "association"),
]

_COMPARE_COLUMNS = [
    *("row", "name", "n_a", "present_a", "rate_a", "unknown_a"),
    *("n_b", "present_b", "rate_b", "unknown_b"),
    *("difference", "diff_low", "diff_high", "ci_method", "ratio", "p_value"),
]


def outcome_analysis(
    data: object,
    *,
    outcome: str = "outcome",
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
    confidence: float = 0.95,
    or_ci: OrMethod = "auto",
    common: float = 0.5,
    C: float = 1.0,
    min_known: float = 0.8,
    bootstrap: int = 100,
    seed: int | None = 0,
) -> OutcomeAnalysis:
    """Which modes predict that a run fails, and which are common even in successful runs.

    ``outcome`` names the field holding each run's outcome: ``"success"`` / ``"failure"``
    (``Trace.outcome``; anything else, e.g. ``"unknown"``, is left out and listed in
    ``excluded.left_out``) or booleans with True = success (e.g. ``outcome="task_completed"``
    for the judge's own opinion in a results frame).

    Per mode, on the traces with a known outcome and a known value for the mode, the 2x2
    table (mode present / absent x run failed / succeeded) gives:

    * ``rate_failure`` and ``rate_success`` and their ``difference`` (Newcombe interval);
    * ``lift`` = P(failure | mode present) / P(failure);
    * the odds ratio of failure when the mode is present.  With ``or_ci="auto"`` its
      interval is exact (conditional maximum likelihood, inverting Fisher's test) when a
      cell is below 5 and Woolf's log interval otherwise.  A zero cell makes the plain
      odds ratio 0 or infinite; the point estimate then uses the Haldane–Anscombe
      correction (0.5 added to each cell, ``corrected=True``), while the exact interval
      stays uncorrected with one open end;
    * Fisher's exact two-sided ``p_value``.

    A mode frequent in both outcomes (step repetition was in over 90 % of Kimi-K2's
    *successful* ITBench runs) is labelled ``"common in successes"`` instead of being read
    as a cause of failure.

    The modes also go jointly into an L2-penalized logistic regression of failure
    (scikit-learn, ``C`` = inverse penalty strength), which separates modes that predict
    failure given the others from modes that merely co-occur with them.  It uses the modes
    known in at least ``min_known`` of the traces and that vary, on the traces where all of
    them are known (complete cases); ``sign_stability`` is the share of ``bootstrap`` refits
    (seeded) in which a coefficient keeps its sign.  Penalized coefficients are shrunk and
    have no classical interval: read them as a ranking, the odds ratios for sizes.

    >>> from mast import analysis
    >>> v = {f"t{i}": {"3.3": i < 4} for i in range(8)}
    >>> o = {f"t{i}": {"outcome": "failure" if i < 5 else "success"} for i in range(8)}
    >>> r = analysis.outcome_analysis(v, traces=o, modes=["3.3"], bootstrap=0)
    >>> r.table[["rate_failure", "rate_success", "odds_ratio", "corrected"]].values.tolist()
    [[0.8, 0.0, 21.0, True]]
    """
    check_options(bootstrap, confidence)
    if or_ci not in ("auto", "exact", "woolf"):
        raise StatsInputError(f"or_ci must be 'auto', 'exact' or 'woolf'; got {or_ci!r}")
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    result, reasons = read_outcomes(vd, outcome)
    usable = result != UNKNOWN
    vd = vd.subset(usable)
    y = result[usable].astype(np.int64)
    tax = vd.taxonomy
    records: list[dict[str, Any]] = []
    for j, code in enumerate(vd.codes):
        col = vd.values[:, j]
        ok = col != UNKNOWN
        x, yy = col[ok] == 1, y[ok] == 1
        a = int((x & yy).sum())  # present, failed
        b = int((x & ~yy).sum())  # present, succeeded
        c = int((~x & yy).sum())  # absent, failed
        d = int((~x & ~yy).sum())  # absent, succeeded
        n_f, n_s = a + c, b + d
        rate_f = a / n_f if n_f else np.nan
        rate_s = b / n_s if n_s else np.nan
        lo, hi = newcombe(a, n_f, b, n_s, confidence)
        p_fail = n_f / (n_f + n_s) if n_f + n_s else np.nan
        lift = (a / (a + b)) / p_fail if a + b and p_fail else np.nan
        ratio = odds_ratio(a, b, c, d, confidence=confidence, method=or_ci)
        records.append(
            {
                "row": code,
                "name": tax[code].name,
                "n_failure": n_f,
                "present_failure": a,
                "rate_failure": rate_f,
                "n_success": n_s,
                "present_success": b,
                "rate_success": rate_s,
                "difference": rate_f - rate_s,
                "diff_low": lo,
                "diff_high": hi,
                "lift": lift,
                "odds_ratio": ratio.estimate,
                "or_low": ratio.low,
                "or_high": ratio.high,
                "or_ci": ratio.method,
                "corrected": ratio.corrected,
                "p_value": ratio.p_value,
                "n_unknown": int((~ok).sum()),
                "association": association_label(ratio.low, ratio.high, rate_s, common),
            }
        )
    table = pd.DataFrame.from_records(records, columns=_OUTCOME_COLUMNS)
    notes: list[str] = []
    n_fail, n_succ = int((y == 1).sum()), int((y == 0).sum())
    if not n_fail or not n_succ:
        notes.append(
            f"{n_fail} failed and {n_succ} successful run(s) with a known outcome: comparing "
            "outcomes needs both"
        )
    regression, info = penalized_regression(
        vd, y, C=C, min_known=min_known, bootstrap=bootstrap, seed=seed
    )
    left_out = dict(reasons)
    if info.get("incomplete"):
        left_out["incomplete vector (regression only)"] = info.pop("incomplete")
    if info.get("reason"):
        notes.append(f"no regression: {info['reason']}")
    elif regression is not None and info["n"] < 30:
        notes.append(
            f"the regression rests on {info['n']} complete trace(s): read it as a rough ranking"
        )
    excluded = vd.excluded.replace(
        unknown_cells=count_unknown(vd.codes, vd.values), left_out=left_out
    )
    return OutcomeAnalysis(
        table,
        excluded,
        notes,
        regression=regression,
        regression_info=info,
        confidence=confidence,
    )


def compare(
    a: object,
    b: object = None,
    *,
    by: str | None = None,
    groups: tuple[object, object] | None = None,
    names: tuple[str, str] | None = None,
    level: Level = "mode",
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
    ci: Literal["newcombe", "bootstrap"] = "newcombe",
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> Comparison:
    """Change in each mode's prevalence between two groups of traces.

    Either two sources (``compare(before, after)``: e.g. results of the system before and
    after an intervention) or one source split by a field (``compare(results, by="model",
    groups=("gpt-4.1", "o3"))``; with exactly two values ``groups`` may be left out and the
    values are taken in sorted order).  The groups are treated as independent samples of
    traces; to compare two judges on the *same* traces, use :func:`mast.agreement`.

    ``difference`` is rate(b) - rate(a), each rate on the traces where the mode is known
    in that group; its interval is Newcombe's hybrid score interval (``ci="newcombe"``,
    good at small counts and at 0 %/100 %) or a percentile bootstrap resampling each group
    separately (``ci="bootstrap"``).  ``p_value`` is Fisher's exact test.

    >>> from mast import analysis
    >>> before = {f"t{i}": {"1.3": i < 6} for i in range(10)}
    >>> after = {f"u{i}": {"1.3": i < 2} for i in range(10)}
    >>> r = analysis.compare(before, after, names=("before", "after"), modes=["1.3"])
    >>> row = r.table.iloc[0]
    >>> [round(float(row[k]), 2) for k in ("rate_a", "rate_b", "difference")]
    [0.6, 0.2, -0.4]
    """
    from scipy.stats import fisher_exact

    check_options(bootstrap, confidence)
    if ci not in ("newcombe", "bootstrap"):
        raise StatsInputError(f"ci must be 'newcombe' or 'bootstrap'; got {ci!r}")
    left_out: dict[str, list[str]] = {}
    if b is not None:
        if by is not None or groups is not None:
            raise StatsInputError("give two sources, or one source with by=..., not both")
        da = collect(a, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
        db = collect(b, traces=traces, annotator=annotator, modes=modes, taxonomy=da.taxonomy)
        label = names or ("a", "b")
        excluded = _merge_excluded(da.excluded, db.excluded, label)
    else:
        if by is None:
            raise StatsInputError("give a second source b, or by=<field> to split one source")
        data = collect(a, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
        column = data.column(by).map(group_label)
        values = sorted(set(column.tolist()), key=lambda v: natural_key(str(v)))
        if groups is None:
            if len(values) != 2:
                raise StatsInputError(
                    f"{by!r} has {len(values)} values {values}; say which two to compare with "
                    "groups=(a, b)"
                )
            groups = (values[0], values[1])
        for g in groups:
            if g not in values:
                raise StatsInputError(f"no trace has {by} == {g!r}; the values are {values}")
        mask_a = (column == groups[0]).to_numpy()
        mask_b = (column == groups[1]).to_numpy()
        ids = data.ids
        rest = [ids[i] for i in np.flatnonzero(~(mask_a | mask_b)).tolist()]
        if rest:
            left_out[f"{by} in neither group"] = rest
        da, db = data.subset(mask_a), data.subset(mask_b)
        label = names or (str(groups[0]), str(groups[1]))
        excluded = data.excluded
    rows_a, va = level_rows(da, level)
    _, vb = level_rows(db, level)
    names_rows = row_names(da, rows_a, level)
    rng = np.random.default_rng(seed)
    if ci == "bootstrap":
        boot = boot_difference(va, vb, bootstrap, confidence, rng)
    records: list[dict[str, Any]] = []
    for j, row in enumerate(rows_a):
        ka, kb = va[:, j] != UNKNOWN, vb[:, j] != UNKNOWN
        n_a, n_b = int(ka.sum()), int(kb.sum())
        x_a, x_b = int((va[:, j] == 1).sum()), int((vb[:, j] == 1).sum())
        rate_a = x_a / n_a if n_a else np.nan
        rate_b = x_b / n_b if n_b else np.nan
        if ci == "newcombe":
            lo, hi = newcombe(x_b, n_b, x_a, n_a, confidence)
        else:
            lo, hi = boot[0][j], boot[1][j]
        p_value = (
            float(fisher_exact([[x_b, n_b - x_b], [x_a, n_a - x_a]]).pvalue)
            if n_a and n_b
            else np.nan
        )
        records.append(
            {
                "row": row,
                "name": names_rows[j],
                "n_a": n_a,
                "present_a": x_a,
                "rate_a": rate_a,
                "unknown_a": int((~ka).sum()),
                "n_b": n_b,
                "present_b": x_b,
                "rate_b": rate_b,
                "unknown_b": int((~kb).sum()),
                "difference": rate_b - rate_a,
                "diff_low": lo,
                "diff_high": hi,
                "ci_method": ci,
                "ratio": rate_b / rate_a if rate_a else np.nan,
                "p_value": p_value,
            }
        )
    table = pd.DataFrame.from_records(records, columns=_COMPARE_COLUMNS)
    unknown = {
        row: int((va[:, j] == UNKNOWN).sum() + (vb[:, j] == UNKNOWN).sum())
        for j, row in enumerate(rows_a)
    }
    excluded = excluded.replace(unknown_cells=unknown, left_out={**excluded.left_out, **left_out})
    notes = [f"a = {label[0]} ({len(da)} traces), b = {label[1]} ({len(db)} traces)"]
    if min(len(da), len(db)) < 30:
        notes.append("fewer than 30 traces in a group: intervals are wide, read them")
    return Comparison(
        table,
        excluded,
        notes,
        names=(str(label[0]), str(label[1])),
        level=level,
        confidence=confidence,
    )


def _merge_excluded(a: Excluded, b: Excluded, names: tuple[str, str]) -> Excluded:
    failed: dict[str, list[str]] = {}
    for name, ex in zip(names, (a, b), strict=True):
        for status, ids in ex.failed.items():
            failed[f"{name}: {status}"] = ids
    codes = dict(a.unknown_codes)
    for k, v in b.unknown_codes.items():
        codes[k] = codes.get(k, 0) + v
    return Excluded(
        failed=failed,
        no_fields=sorted({*a.no_fields, *b.no_fields}, key=natural_key),
        unknown_codes=codes,
        duplicates=a.duplicates + b.duplicates,
    )
