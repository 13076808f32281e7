"""From failure vectors to findings: prevalence, modes per trace, co-occurrence, outcomes,
and two-group comparisons.

Every function takes the failure vectors in whatever form you have them — a results frame
(``mast.to_frame(annotations)``), a list of :class:`~mast.judge.annotation.Annotation`, a
``{trace_id: {code: True | False | None}}`` mapping, traces that carry labels (with
``annotator=``) — and joins trace fields by trace id from ``traces=`` (a list of
:class:`~mast.traces.model.Trace`, or a DataFrame with a ``trace_id`` column or index).  Group with
``by=`` any trace field: ``"system"``, ``"model"``, ``"benchmark"``, ``"outcome"``, ``"run"``
or a column of your own.

**Unknown is not "no".**  A ``None`` cell is in no numerator and no denominator: a mode's
share is ``present / known``.  Annotations that failed (status not ``"ok"``) are left out.
Every result carries ``.excluded`` (:class:`Excluded`) with what was left out and why, and
every table has an ``n_unknown`` column.

Intervals are seeded and reproducible: bootstrap over traces (percentile) for shares and
means, Newcombe's score interval for differences of two proportions, exact or Woolf
intervals for odds ratios (see each function).

Results are small objects with a tidy ``.table`` (one row per group x mode), ``.excluded``,
``.notes``, ``.to_frame()`` and ``.plot()`` (matplotlib figure, never shown).

>>> import mast
>>> from mast import analysis
>>> vectors = {"t1": {"1.1": True, "1.3": True}, "t2": {"1.1": False, "1.3": True},
...            "t3": {"1.1": None, "1.3": False}}
>>> fields = {"t1": {"system": "A"}, "t2": {"system": "A"}, "t3": {"system": "B"}}
>>> prev = analysis.prevalence(vectors, traces=fields, by="system", modes=["1.1", "1.3"],
...                            bootstrap=0)
>>> prev.table[["system", "row", "n_present", "n_known", "share_of_traces"]]
  system  row  n_present  n_known  share_of_traces
0      A  1.1          1        2              0.5
1      A  1.3          2        2              1.0
2      B  1.1          0        0              NaN
3      B  1.3          0        1              0.0
>>> prev.excluded.unknown_cells
{'1.1': 1, '1.3': 0}
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mast.agree.table import UNKNOWN, natural_key
from mast.analysis.compare import (
    By,
    Level,
    association_label,
    boot_difference,
    boot_ratios,
    by_columns,
    check_options,
    count_unknown,
    group_label,
    groups_of,
    key_columns,
    level_rows,
    mean_interval,
    penalized_regression,
    read_outcomes,
    row_names,
    safe_div,
)
from mast.analysis.data import (
    Excluded,
    VectorData,
    collect,
    trace_fields,
)
from mast.analysis.proportions import OrMethod, newcombe, odds_ratio, wilson
from mast.analysis.results import (
    Comparison,
    Cooccurrence,
    ModesPerTrace,
    OutcomeAnalysis,
    Prevalence,
)
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy

__all__ = [
    "Comparison",
    "Cooccurrence",
    "Excluded",
    "ModesPerTrace",
    "OutcomeAnalysis",
    "Prevalence",
    "VectorData",
    "collect",
    "compare",
    "cooccurrence",
    "frame",
    "modes_per_trace",
    "outcome_analysis",
    "prevalence",
    "trace_fields",
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

    >>> from mast import analysis
    >>> v = {"t1": {"1.1": True, "2.1": True}, "t2": {"1.1": True, "2.1": False}}
    >>> cats = analysis.prevalence(v, level="category", modes=["1.1", "2.1"], bootstrap=0)
    >>> cats.table[["row", "n_flags", "share_of_flags"]].values.tolist()
    [['FC1', 2, 0.6666666666666666], ['FC2', 1, 0.3333333333333333]]
    """
    check_options(bootstrap, confidence)
    if ci not in ("bootstrap", "wilson"):
        raise StatsInputError(f"ci must be 'bootstrap' or 'wilson'; got {ci!r}")
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
    excluded = vd.excluded.replace(unknown_cells=count_unknown(rows, values))
    return Prevalence(table, excluded, notes, level=level, by=by_cols, ci=ci, confidence=confidence)


_PREVALENCE_COLUMNS = [
    *("row", "name", "n_traces", "n_known", "n_present", "n_unknown"),
    *("share_of_traces", "traces_low", "traces_high"),
    *("n_flags", "total_flags", "share_of_flags", "flags_low", "flags_high"),
]


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


_MPT_COLUMNS = [
    *("n_traces", "mean", "mean_low", "mean_high", "median", "max"),
    *("n_with_unknown", "mean_unknown"),
    *("n_failed", "mean_failed", "failed_low", "failed_high"),
    *("n_success", "mean_success", "success_low", "success_high", "n_outcome_unknown"),
]


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


_PAIR_COLUMNS = [
    *("a", "b", "name_a", "name_b", "n_known", "n_a", "n_b", "n_both"),
    *("phi", "p_b_given_a", "p_a_given_b", "p_value"),
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


_OUTCOME_COLUMNS = [
    *("row", "name", "n_failure", "present_failure", "rate_failure"),
    *("n_success", "present_success", "rate_success", "difference", "diff_low", "diff_high"),
    *("lift", "odds_ratio", "or_low", "or_high", "or_ci", "corrected", "p_value"),
    *("n_unknown", "association"),
]


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


_COMPARE_COLUMNS = [
    *("row", "name", "n_a", "present_a", "rate_a", "unknown_a"),
    *("n_b", "present_b", "rate_b", "unknown_b"),
    *("difference", "diff_low", "diff_high", "ci_method", "ratio", "p_value"),
]


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
