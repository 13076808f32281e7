"""Failure profiles: how often each mode occurs (:func:`prevalence`), how many modes a trace has
(:func:`modes_per_trace`) and which modes occur together (:func:`cooccurrence`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mast.agree.table import UNKNOWN
from mast.analysis.compare import (
    By,
    Level,
    boot_ratios,
    by_columns,
    check_options,
    count_unknown,
    groups_of,
    key_columns,
    level_rows,
    mean_interval,
    read_outcomes,
    row_names,
    safe_div,
)
from mast.analysis.correction import correct_table
from mast.analysis.data import (
    collect,
)
from mast.analysis.proportions import wilson
from mast.analysis.results import (
    Cooccurrence,
    ModesPerTrace,
    Prevalence,
)
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy

_PREVALENCE_COLUMNS = [
    *("row", "name", "n_traces", "n_known", "n_present", "n_unknown"),
    *("share_of_traces", "traces_low", "traces_high"),
    *("n_flags", "total_flags", "share_of_flags", "flags_low", "flags_high"),
]

_MPT_COLUMNS = [
    *("n_traces", "mean", "mean_low", "mean_high", "median", "max"),
    *("n_with_unknown", "mean_unknown"),
    *("n_failed", "mean_failed", "failed_low", "failed_high"),
    *("n_success", "mean_success", "success_low", "success_high", "n_outcome_unknown"),
]

_PAIR_COLUMNS = [
    *("a", "b", "name_a", "name_b", "n_known", "n_a", "n_b", "n_both"),
    *("phi", "p_b_given_a", "p_a_given_b", "p_value"),
]


def frame(
    data: object,
    *,
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
) -> pd.DataFrame:
    """The usable vectors joined with trace fields: one row per trace.

    Columns: ``trace_id``, the trace fields, then one nullable-boolean column per mode
    (``True``/``False``/``<NA>`` = unknown).  Failed annotations are not rows (see
    :func:`collect` ``.excluded``).

    >>> from mast import analysis
    >>> analysis.frame({"t1": {"1.1": True}}, traces={"t1": {"model": "m"}},
    ...                modes=["1.1", "1.2"])
      trace_id model   1.1   1.2
    0       t1     m  True  <NA>
    """
    data = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    out: pd.DataFrame = data.fields.copy()
    for j, code in enumerate(data.codes):
        column = data.values[:, j]
        out[code] = pd.array(
            [None if v == UNKNOWN else bool(v) for v in column.tolist()], dtype="boolean"
        )
    return out


def prevalence(
    data: object,
    *,
    by: By = None,
    level: Level = "mode",
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
    ci: Literal["bootstrap", "wilson"] = "bootstrap",
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    correct_with: object = None,
) -> Prevalence:
    """Prevalence of each mode (or category) per group, as share of traces and of flags.

    *Share of traces*: the fraction of traces (with a known value) in which the mode is
    present.  *Share of flags*: the mode's flags over all flags of the selected modes in the
    group — the MAST paper's convention for category shares (FC1 41.8 %, FC2 36.9 %,
    FC3 21.3 % of all flags); shares of flags add up to 1 per group.  At ``level="category"``
    a category is present in a trace when any of its modes is (unknown when none is present
    and some are unknown), and its flags are the flags of its modes.

    Intervals: ``ci="bootstrap"`` resamples traces within each group (``bootstrap``
    resamples, percentile, seeded); ``ci="wilson"`` uses Wilson's score interval for the
    share of traces, which stays informative at 0 % and 100 % where a percentile bootstrap
    collapses to a point.  The share of flags is a ratio of sums over traces and always
    gets the bootstrap.  Unknown cells hide flags, so a share of flags is computed on the
    known flags only: check ``n_unknown``.

    ``correct_with``: an agreement report of this judge against people
    (``mast.agreement(human, judge)``).  Each mode's share of traces is then also corrected
    for the judge's errors with the Rogan–Gladen estimator, using the judge's sensitivity and
    specificity for that mode from the report (columns ``sensitivity``, ``specificity``,
    ``corrected`` with ``corrected_low``/``corrected_high``; the interval carries the
    uncertainty of the report's counts too, see :mod:`mast.analysis.correction`).  Only at
    ``level="mode"``.  Plain prevalence stays the default.

    >>> from mast import analysis
    >>> v = {"t1": {"1.1": True, "2.1": True}, "t2": {"1.1": True, "2.1": False}}
    >>> cats = analysis.prevalence(v, level="category", modes=["1.1", "2.1"], bootstrap=0)
    >>> cats.table[["row", "n_flags", "share_of_flags"]].values.tolist()
    [['FC1', 2, 0.6666666666666666], ['FC2', 1, 0.3333333333333333]]
    """
    check_options(bootstrap, confidence)
    if ci not in ("bootstrap", "wilson"):
        raise StatsInputError(f"ci must be 'bootstrap' or 'wilson'; got {ci!r}")
    if correct_with is not None and level != "mode":
        raise StatsInputError("correct_with needs level='mode' (rates are per mode)")
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    by_cols = by_columns(by)
    rows, values = level_rows(vd, level)
    names = row_names(vd, rows, level)
    mode_flags = (vd.values == 1).astype(np.float64)
    if level == "mode":
        row_flags = mode_flags
    else:
        tax = vd.taxonomy
        row_flags = (
            np.column_stack(
                [
                    mode_flags[
                        :, [j for j, m in enumerate(vd.codes) if tax[m].category == cat]
                    ].sum(axis=1)
                    for cat in rows
                ]
            )
            if rows
            else np.empty((len(vd), 0))
        )
    rng = np.random.default_rng(seed)
    records: list[dict[str, Any]] = []
    for key, mask in groups_of(vd, by_cols):
        v = values[mask]
        present = (v == 1).astype(np.float64)
        known = (v != UNKNOWN).astype(np.float64)
        flags = row_flags[mask]
        total = np.repeat(mode_flags[mask].sum(axis=1, keepdims=True), len(rows), axis=1)
        n_present, n_known = present.sum(axis=0), known.sum(axis=0)
        share = safe_div(n_present, n_known)
        share_flags = safe_div(flags.sum(axis=0), total.sum(axis=0))
        # Both shares from the same resampled traces.
        (t_low, t_high), (f_low, f_high) = boot_ratios(
            [(present, known), (flags, total)],
            bootstrap=bootstrap,
            confidence=confidence,
            rng=rng,
        )
        if ci == "wilson":
            bounds = [
                wilson(int(x), int(n), confidence) for x, n in zip(n_present, n_known, strict=True)
            ]
            t_low = np.array([b[0] for b in bounds])
            t_high = np.array([b[1] for b in bounds])
        n_group = int(mask.sum())
        for j, row in enumerate(rows):
            records.append(
                {
                    **key_columns(by_cols, key),
                    "row": row,
                    "name": names[j],
                    "n_traces": n_group,
                    "n_known": int(n_known[j]),
                    "n_present": int(n_present[j]),
                    "n_unknown": n_group - int(n_known[j]),
                    "share_of_traces": float(share[j]),
                    "traces_low": float(t_low[j]),
                    "traces_high": float(t_high[j]),
                    "n_flags": int(flags[:, j].sum()),
                    "total_flags": int(total[:, 0].sum()) if len(total) else 0,
                    "share_of_flags": float(share_flags[j]),
                    "flags_low": float(f_low[j]),
                    "flags_high": float(f_high[j]),
                }
            )
    table = pd.DataFrame.from_records(records, columns=[*by_cols, *_PREVALENCE_COLUMNS])
    notes = _small_sample_notes(table, by_cols)
    if ci == "bootstrap" and bootstrap:
        edge = table[(table["n_known"] > 0) & table["share_of_traces"].isin([0.0, 1.0])]
        if len(edge):
            notes.append(
                f"{len(edge)} row(s) have a share of 0 or 1: a percentile bootstrap interval "
                "collapses to a point there; use ci='wilson' for an informative interval"
            )
    if correct_with is not None:
        table, more = correct_table(
            table, correct_with, bootstrap=bootstrap, confidence=confidence, seed=seed
        )
        notes += more
    excluded = vd.excluded.replace(unknown_cells=count_unknown(rows, values))
    return Prevalence(table, excluded, notes, level=level, by=by_cols, ci=ci, confidence=confidence)


def _small_sample_notes(table: pd.DataFrame, by: list[str]) -> list[str]:
    if table.empty:
        return ["no usable trace: every statistic is undefined"]
    sizes = table.drop_duplicates(by or ["n_traces"])["n_traces"] if by else table["n_traces"][:1]
    small = int((sizes < 30).sum())
    if small:
        return [
            f"{small} group(s) with fewer than 30 traces: intervals from so few traces are rough"
        ]
    return []


def modes_per_trace(
    data: object,
    *,
    by: By = None,
    outcome: str = "outcome",
    complete: bool = False,
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> ModesPerTrace:
    """Number of modes present per trace, and per failed (and successful) trace, per group.

    The question of the IBM/Berkeley ITBench study, which counted 2.6 modes per failed trace
    for Gemini-3-Flash against 4.7 for Kimi-K2 and 5.3 for GPT-OSS-120B: with annotations of
    such runs and their traces, ``modes_per_trace(results, traces=traces, by="model")``
    gives ``mean_failed`` per model with a bootstrap interval.

    A trace's count is its number of modes judged present.  With unknown cells that count
    is a lower bound: ``n_with_unknown`` and ``mean_unknown`` say how much is unknown, and
    ``complete=True`` keeps only traces without unknown cells (the others are listed in
    ``excluded.left_out``).  The per-outcome columns need an ``outcome`` field
    (``"success"``/``"failure"``); traces with another outcome are counted in
    ``n_outcome_unknown``.

    >>> from mast import analysis
    >>> v = {"t1": {"1.1": True, "1.2": True}, "t2": {"1.1": True, "1.2": None}}
    >>> r = analysis.modes_per_trace(v, modes=["1.1", "1.2"], bootstrap=0,
    ...                              traces={"t1": {"outcome": "failure"},
    ...                                      "t2": {"outcome": "success"}})
    >>> r.table[["mean", "mean_failed", "mean_success"]].values.tolist()
    [[1.5, 2.0, 1.0]]
    """
    check_options(bootstrap, confidence)
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    by_cols = by_columns(by)
    left_out: dict[str, list[str]] = {}
    unknown_all = (vd.values == UNKNOWN).sum(axis=1)
    if complete:
        keep = unknown_all == 0
        ids = vd.ids
        left_out["incomplete vector (complete=True)"] = [
            ids[i] for i in np.flatnonzero(~keep).tolist()
        ]
        vd = vd.subset(keep)
    counts = (vd.values == 1).sum(axis=1).astype(np.float64)
    known = (vd.values != UNKNOWN).sum(axis=1)
    unknown = len(vd.codes) - known
    has_outcome = outcome in vd.fields.columns
    if has_outcome:
        result, reasons = read_outcomes(vd, outcome)
    else:
        result, reasons = np.full(len(vd), UNKNOWN, dtype=np.int8), {}
    rng = np.random.default_rng(seed)
    records: list[dict[str, Any]] = []
    for key, mask in groups_of(vd, by_cols):
        c = counts[mask]
        mean, low, high = mean_interval(c, bootstrap, confidence, rng)
        fail = counts[mask & (result == 1)]
        succ = counts[mask & (result == 0)]
        m_f, f_low, f_high = mean_interval(fail, bootstrap, confidence, rng)
        m_s, s_low, s_high = mean_interval(succ, bootstrap, confidence, rng)
        records.append(
            {
                **key_columns(by_cols, key),
                "n_traces": int(mask.sum()),
                "mean": mean,
                "mean_low": low,
                "mean_high": high,
                "median": float(np.median(c)) if c.size else np.nan,
                "max": int(c.max()) if c.size else 0,
                "n_with_unknown": int((unknown[mask] > 0).sum()),
                "mean_unknown": float(unknown[mask].mean()) if c.size else np.nan,
                "n_failed": int(fail.size),
                "mean_failed": m_f,
                "failed_low": f_low,
                "failed_high": f_high,
                "n_success": int(succ.size),
                "mean_success": m_s,
                "success_low": s_low,
                "success_high": s_high,
                "n_outcome_unknown": int((result[mask] == UNKNOWN).sum()),
            }
        )
    table = pd.DataFrame.from_records(records, columns=[*by_cols, *_MPT_COLUMNS])
    per_trace = vd.fields[["trace_id", *[b for b in by_cols if b != "trace_id"]]].copy()
    if has_outcome and outcome not in per_trace.columns:
        per_trace[outcome] = vd.fields[outcome]
    per_trace["n_modes"] = counts.astype(int)
    per_trace["n_known"] = known
    per_trace["n_unknown"] = unknown
    notes = [] if has_outcome else [f"no {outcome!r} field: per-outcome columns are empty"]
    if int((unknown_all > 0).sum()) and not complete:
        notes.append(
            f"{int((unknown_all > 0).sum())} trace(s) have unknown cells: their counts are "
            "lower bounds (complete=True keeps only fully known vectors)"
        )
    excluded = vd.excluded.replace(
        unknown_cells=count_unknown(vd.codes, vd.values),
        left_out={**left_out, **({} if not has_outcome else _named(reasons, "outcome"))},
    )
    return ModesPerTrace(table, excluded, notes, per_trace=per_trace, by=by_cols)


def _named(reasons: dict[str, list[str]], what: str) -> dict[str, list[str]]:
    """Reasons for the per-outcome columns (the traces stay in the overall mean)."""
    return {
        f"{reason} (in overall counts, not in per-{what} ones)": ids
        for reason, ids in reasons.items()
    }


def cooccurrence(
    data: object,
    *,
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
) -> Cooccurrence:
    """Phi correlation and conditional rates P(B | A) between modes.

    Each pair is computed on the traces where both modes are known (pairwise deletion), so
    pairs may rest on different traces: ``known`` says on how many.  Phi is NaN when either
    mode is constant on those traces (e.g. never flagged).  Fisher's exact test gives each
    pair a p-value (not corrected for the many pairs tested).  To study one group, pass
    its subset (e.g. filter the frame first).

    >>> from mast import analysis
    >>> v = {"t1": {"1.1": True, "1.3": True}, "t2": {"1.1": False, "1.3": False},
    ...      "t3": {"1.1": True, "1.3": False}}
    >>> co = analysis.cooccurrence(v, modes=["1.1", "1.3"])
    >>> co.conditional.values.tolist()   # row A, column B: P(B | A)
    [[1.0, 0.5], [1.0, 1.0]]
    """
    from scipy.stats import fisher_exact

    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    codes = vd.codes
    v = vd.values
    present = (v == 1).astype(np.int64)
    known = (v != UNKNOWN).astype(np.int64)
    # Pairwise counts over traces where both are known, as matrix products:
    # both known = K'K; A present & B known = P'K; both present = P'P.
    n_known = known.T @ known
    a_present = present.T @ known  # [A, B]: A present among traces where both are known
    both = present.T @ present
    n = n_known.astype(np.float64)
    pa = a_present.astype(np.float64)
    pb = a_present.T.astype(np.float64)
    n11 = both.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = pa * (n - pa) * pb * (n - pb)
        phi = np.where(
            denom > 0, (n * n11 - pa * pb) / np.sqrt(np.where(denom > 0, denom, 1)), np.nan
        )
    conditional = safe_div(n11, pa)
    frames = {
        name: pd.DataFrame(matrix, index=codes, columns=codes)
        for name, matrix in (
            ("phi", phi),
            ("conditional", conditional),
            ("joint", both),
            ("known", n_known),
        )
    }
    for name in frames:
        frames[name].index.name = "A"
        frames[name].columns.name = "B"
    tax = vd.taxonomy
    records: list[dict[str, Any]] = []
    for i, a in enumerate(codes):
        for j in range(i + 1, len(codes)):
            b = codes[j]
            total, x_a, x_b, x_ab = (
                int(n_known[i, j]),
                int(a_present[i, j]),
                int(a_present[j, i]),
                int(both[i, j]),
            )
            table2 = [[x_ab, x_a - x_ab], [x_b - x_ab, total - x_a - x_b + x_ab]]
            p_value = float(fisher_exact(table2).pvalue) if total else np.nan
            records.append(
                {
                    "a": a,
                    "b": b,
                    "name_a": tax[a].name,
                    "name_b": tax[b].name,
                    "n_known": total,
                    "n_a": x_a,
                    "n_b": x_b,
                    "n_both": x_ab,
                    "phi": float(phi[i, j]),
                    "p_b_given_a": float(conditional[i, j]),
                    "p_a_given_b": float(conditional[j, i]),
                    "p_value": p_value,
                }
            )
    pairs = pd.DataFrame.from_records(records, columns=_PAIR_COLUMNS)
    pairs = pairs.sort_values("phi", ascending=False, na_position="last", kind="stable")
    pairs = pairs.reset_index(drop=True)
    excluded = vd.excluded.replace(unknown_cells=count_unknown(codes, v))
    notes = []
    if len(vd) < 30:
        notes.append(f"only {len(vd)} traces: co-occurrence estimates are rough")
    return Cooccurrence(
        pairs,
        excluded,
        notes,
        phi=frames["phi"],
        conditional=frames["conditional"],
        joint=frames["joint"],
        known=frames["known"],
    )
