"""From failure vectors to findings: prevalence, modes per trace, co-occurrence, outcomes,
and two-group comparisons.

Every function takes the failure vectors in whatever form you have them — a results frame
(``mast.to_frame(annotations)``), a list of :class:`~mast.annotation.Annotation`, a
``{trace_id: {code: True | False | None}}`` mapping, traces that carry labels (with
``annotator=``) — and joins trace fields by trace id from ``traces=`` (a list of
:class:`~mast.trace.Trace`, or a DataFrame with a ``trace_id`` column or index).  Group with
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

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast._analysis_data import (
    MISSING,
    Excluded,
    VectorData,
    category_values,
    collect,
    scalar,
    trace_fields,
)
from mast._labels import UNKNOWN, natural_key
from mast._proportions import OrMethod, newcombe, odds_ratio, wilson
from mast._resample import resample_weights
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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

Level = Literal["mode", "category"]
By = str | Sequence[str] | None
FloatArray = npt.NDArray[np.float64]

_CHUNK = 250  # bootstrap resamples per matrix product (bounds memory on large runs)


# ------------------------------------------------------------------------------ helpers


def _check(bootstrap: int, confidence: float) -> None:
    if not isinstance(bootstrap, int) or bootstrap < 0:
        raise StatsInputError(f"bootstrap must be a non-negative integer; got {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise StatsInputError(f"confidence must be between 0 and 1; got {confidence!r}")


def _by(by: By) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else [str(b) for b in by]


def _label(value: object) -> object:
    value = scalar(value)
    return MISSING if value is None else value


def _groups(data: VectorData, by: list[str]) -> list[tuple[tuple[object, ...], Any]]:
    """(group key, boolean row mask) per group, in natural order of the keys."""
    if not by:
        return [((), np.ones(len(data), dtype=bool))]
    columns = [data.column(b).map(_label).tolist() for b in by]
    keys = list(zip(*columns, strict=True)) if columns else []
    unique = sorted(set(keys), key=lambda k: tuple(natural_key(str(v)) for v in k))
    return [(key, np.array([k == key for k in keys], dtype=bool)) for key in unique]


def _div(num: Any, den: Any) -> Any:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _boot_ratios(
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
            parts[k].append(_div(w @ num, w @ den))
    alpha = 1.0 - confidence
    out = []
    for (num, den), chunks, nan in zip(pairs, parts, nans, strict=True):
        estimate = _div(num.sum(axis=0), den.sum(axis=0))
        ratios = np.vstack(chunks)
        low, high = nan.copy(), nan.copy()
        for j in range(num.shape[1]):
            col = ratios[:, j]
            col = col[~np.isnan(col)]
            if col.size >= 2 and not np.isnan(estimate[j]):
                low[j], high[j] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
        out.append((low, high))
    return out


def _boot_ratio(
    num: FloatArray,
    den: FloatArray,
    *,
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """:func:`_boot_ratios` for one ``(num, den)`` pair."""
    return _boot_ratios([(num, den)], bootstrap=bootstrap, confidence=confidence, rng=rng)[0]


def _mode_names(data: VectorData, rows: Sequence[str], level: Level) -> list[str]:
    tax = data.taxonomy
    if level == "mode":
        return [tax[c].name for c in rows]
    return [tax.category(c).name for c in rows]


def _rows(data: VectorData, level: Level) -> tuple[list[str], npt.NDArray[np.int8]]:
    if level == "mode":
        return list(data.codes), data.values
    if level == "category":
        return category_values(data)
    raise StatsInputError(f"level must be 'mode' or 'category'; got {level!r}")


def _unknown_cells(rows: Sequence[str], values: npt.NDArray[np.int8]) -> dict[str, int]:
    return {r: int((values[:, j] == UNKNOWN).sum()) for j, r in enumerate(rows)}


_OUTCOME_WORDS = {"success": 0, "failure": 1}


def _outcomes(data: VectorData, column: str) -> tuple[npt.NDArray[np.int8], dict[str, list[str]]]:
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


def _key_columns(by: list[str], key: tuple[object, ...]) -> dict[str, object]:
    return dict(zip(by, key, strict=True))


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True, eq=False)
class _Result:
    table: pd.DataFrame
    excluded: Excluded
    notes: list[str]

    def to_frame(self) -> pd.DataFrame:
        """The result table (a copy)."""
        copy: pd.DataFrame = self.table.copy()
        return copy

    def _title(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        parts = [self._title(), self.table.to_string(index=False)]
        lines = self.excluded.lines()
        parts.append(
            "Excluded (never counted as 'no'):\n"
            + ("\n".join("  " + line for line in lines) if lines else "  nothing")
        )
        if self.notes:
            parts.append("Notes:\n" + "\n".join("  " + n for n in self.notes))
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:  # notebooks
        lines = self.excluded.lines() or ["nothing"]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<p><b>{html.escape(self._title())}</b></p>"
            + self.table.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–")
            + f"<p>Excluded (never counted as 'no'):</p><ul>{items}</ul>"
            + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
        )


@dataclass(frozen=True, eq=False)
class Prevalence(_Result):
    """How often each mode (or category) is present, per group.

    ``table`` has one row per group x mode: the ``by`` columns, ``row`` (code or category),
    ``name``, ``n_traces`` (usable traces in the group), ``n_known``, ``n_present``,
    ``n_unknown``, ``share_of_traces`` (``n_present / n_known``) with ``traces_low`` /
    ``traces_high``, ``n_flags`` (flags in this row), ``total_flags`` (flags of all
    selected modes in the group), ``share_of_flags`` with ``flags_low`` / ``flags_high``.
    """

    level: Level = "mode"
    by: list[str] = field(default_factory=list)
    ci: str = "bootstrap"
    confidence: float = 0.95

    def _title(self) -> str:
        group = f" by {', '.join(self.by)}" if self.by else ""
        return f"Prevalence per {self.level}{group} ({self.confidence:.0%} {self.ci} CI)"

    def wide(self, value: str = "share_of_traces") -> pd.DataFrame:
        """``value`` as a rows x groups table (one column per group)."""
        out: pd.DataFrame
        if not self.by:
            out = self.table.set_index("row")[[value]]
        else:
            out = self.table.pivot_table(
                index="row", columns=self.by, values=value, sort=False, dropna=False
            )
        return out

    def plot(
        self,
        value: Literal["share_of_traces", "share_of_flags"] = "share_of_traces",
        **kwargs: Any,
    ) -> Figure:
        """Bars per mode and group with intervals (category level, share of flags: stacked)."""
        from mast import plots

        if self.level == "category" and value == "share_of_flags":
            return plots.category_stack(self, **kwargs)
        return plots.prevalence_bars(self, value=value, **kwargs)


@dataclass(frozen=True, eq=False)
class ModesPerTrace(_Result):
    """How many modes a trace has, per group, overall and among failed / successful runs.

    ``table`` per group: ``n_traces``, ``mean`` (``mean_low``/``mean_high``), ``median``,
    ``max``, ``n_with_unknown`` (traces with at least one unknown cell: their count is a
    lower bound), ``mean_unknown`` (unknown cells per trace), ``n_failed``, ``mean_failed``
    (``failed_low``/``failed_high``), ``n_success``, ``mean_success``
    (``success_low``/``success_high``), ``n_outcome_unknown``.  ``per_trace`` has one row
    per trace: ``trace_id``, the ``by`` fields, ``outcome`` (if known), ``n_modes``,
    ``n_known``, ``n_unknown``.
    """

    per_trace: pd.DataFrame = field(default_factory=pd.DataFrame)
    by: list[str] = field(default_factory=list)

    def _title(self) -> str:
        group = f" by {', '.join(self.by)}" if self.by else ""
        return f"Failure modes per trace{group}"

    def plot(self, **kwargs: Any) -> Figure:
        """Mean modes per trace and per failed trace, per group, with intervals."""
        from mast import plots

        return plots.modes_per_trace(self, **kwargs)


@dataclass(frozen=True, eq=False)
class Cooccurrence(_Result):
    """Which modes occur together.

    ``phi`` (modes x modes): phi coefficient (Pearson correlation of the 0/1 indicators)
    over the traces where both modes are known; NaN when a mode is constant there.
    ``conditional``: row A, column B holds P(B | A) = traces with both / traces with A,
    among traces where both are known.  ``joint``: traces with both present;
    ``known``: traces where both are known.  ``table`` (also ``pairs``): one row per
    unordered pair with ``n_known``, ``n_a``, ``n_b``, ``n_both``, ``phi``,
    ``p_b_given_a``, ``p_a_given_b`` and Fisher's exact ``p_value``, by descending phi.
    """

    phi: pd.DataFrame = field(default_factory=pd.DataFrame)
    conditional: pd.DataFrame = field(default_factory=pd.DataFrame)
    joint: pd.DataFrame = field(default_factory=pd.DataFrame)
    known: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def pairs(self) -> pd.DataFrame:
        """One row per pair of modes (the same as ``table``)."""
        return self.table

    def _title(self) -> str:
        return "Co-occurrence of failure modes (pairs by phi)"

    def plot(self, kind: Literal["phi", "conditional"] = "phi", **kwargs: Any) -> Figure:
        """Heatmap of ``phi`` or of the conditional rates P(column | row)."""
        from mast import plots

        return plots.cooccurrence_heatmap(self, kind=kind, **kwargs)


@dataclass(frozen=True, eq=False)
class OutcomeAnalysis(_Result):
    """Which modes go with failed runs, and which are common in successful ones too.

    ``table`` per mode (traces with a known outcome and a known value for that mode):
    ``n_failure`` / ``present_failure`` / ``rate_failure``, the same for success,
    ``difference`` (failure rate minus success rate) with Newcombe's interval
    (``diff_low``/``diff_high``), ``lift`` = P(failure | mode) / P(failure), the odds ratio
    of failure given the mode (``odds_ratio``, ``or_low``, ``or_high``, ``or_ci`` = how the
    interval was made, ``corrected`` = Haldane–Anscombe used), Fisher's exact ``p_value``,
    ``n_unknown`` and ``association``: ``"predicts failure"`` (interval above 1), ``"more
    common in successes"`` (interval below 1), ``"common in successes"`` (present in at
    least ``common`` of successful runs without predicting failure) or ``"no clear
    association"``.

    ``regression``: the L2-penalized logistic regression of failure on all modes together
    (complete cases): ``coef`` (log-odds, shrunk towards 0), ``odds_multiplier`` =
    exp(coef), ``sign_stability`` (share of bootstrap refits with the same sign),
    ``n_present``.  ``regression_info``: ``n``, ``n_failure``, ``C``, ``intercept``, the
    modes left out of it and why.
    """

    regression: pd.DataFrame | None = None
    regression_info: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.95

    def _title(self) -> str:
        return f"Failure modes and run outcome ({self.confidence:.0%} CI)"

    def plot(self, value: Literal["odds_ratio", "lift"] = "odds_ratio", **kwargs: Any) -> Figure:
        """Rates in failed vs successful runs and the odds ratio (or lift) per mode."""
        from mast import plots

        return plots.outcome_lift(self, value=value, **kwargs)


@dataclass(frozen=True, eq=False)
class Comparison(_Result):
    """Change per mode between two groups (``names[0]`` = a, ``names[1]`` = b).

    ``table`` per mode: ``n_a``, ``present_a``, ``rate_a``, ``unknown_a``, the same for b,
    ``difference`` = rate_b - rate_a with ``diff_low``/``diff_high`` (``ci_method``),
    ``ratio`` = rate_b / rate_a and Fisher's exact ``p_value``.
    """

    names: tuple[str, str] = ("a", "b")
    level: Level = "mode"
    confidence: float = 0.95

    def _title(self) -> str:
        a, b = self.names
        return f"{b} vs {a}: change per {self.level} ({self.confidence:.0%} CI)"

    def plot(self, **kwargs: Any) -> Figure:
        """Forest plot of the change per mode with its interval."""
        from mast import plots

        return plots.comparison_forest(self, **kwargs)


# ------------------------------------------------------------------------------ functions


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
    _check(bootstrap, confidence)
    if ci not in ("bootstrap", "wilson"):
        raise StatsInputError(f"ci must be 'bootstrap' or 'wilson'; got {ci!r}")
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    by_cols = _by(by)
    rows, values = _rows(vd, level)
    names = _mode_names(vd, rows, level)
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
    for key, mask in _groups(vd, by_cols):
        v = values[mask]
        present = (v == 1).astype(np.float64)
        known = (v != UNKNOWN).astype(np.float64)
        flags = row_flags[mask]
        total = np.repeat(mode_flags[mask].sum(axis=1, keepdims=True), len(rows), axis=1)
        n_present, n_known = present.sum(axis=0), known.sum(axis=0)
        share = _div(n_present, n_known)
        share_flags = _div(flags.sum(axis=0), total.sum(axis=0))
        # Both shares from the same resampled traces.
        (t_low, t_high), (f_low, f_high) = _boot_ratios(
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
                    **_key_columns(by_cols, key),
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
    excluded = vd.excluded.replace(unknown_cells=_unknown_cells(rows, values))
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


def _mean_interval(
    x: FloatArray, bootstrap: int, confidence: float, rng: np.random.Generator
) -> tuple[float, float, float]:
    if x.size == 0:
        return np.nan, np.nan, np.nan
    low, high = _boot_ratio(
        x[:, None], np.ones((x.size, 1)), bootstrap=bootstrap, confidence=confidence, rng=rng
    )
    return float(x.mean()), float(low[0]), float(high[0])


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
    _check(bootstrap, confidence)
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    by_cols = _by(by)
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
        result, reasons = _outcomes(vd, outcome)
    else:
        result, reasons = np.full(len(vd), UNKNOWN, dtype=np.int8), {}
    rng = np.random.default_rng(seed)
    records: list[dict[str, Any]] = []
    for key, mask in _groups(vd, by_cols):
        c = counts[mask]
        mean, low, high = _mean_interval(c, bootstrap, confidence, rng)
        fail = counts[mask & (result == 1)]
        succ = counts[mask & (result == 0)]
        m_f, f_low, f_high = _mean_interval(fail, bootstrap, confidence, rng)
        m_s, s_low, s_high = _mean_interval(succ, bootstrap, confidence, rng)
        records.append(
            {
                **_key_columns(by_cols, key),
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
        unknown_cells=_unknown_cells(vd.codes, vd.values),
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
    conditional = _div(n11, pa)
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
    excluded = vd.excluded.replace(unknown_cells=_unknown_cells(codes, v))
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
    _check(bootstrap, confidence)
    if or_ci not in ("auto", "exact", "woolf"):
        raise StatsInputError(f"or_ci must be 'auto', 'exact' or 'woolf'; got {or_ci!r}")
    vd = collect(data, traces=traces, annotator=annotator, modes=modes, taxonomy=taxonomy)
    result, reasons = _outcomes(vd, outcome)
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
                "association": _association(ratio.low, ratio.high, rate_s, common),
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
    regression, info = _regression(vd, y, C=C, min_known=min_known, bootstrap=bootstrap, seed=seed)
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
        unknown_cells=_unknown_cells(vd.codes, vd.values), left_out=left_out
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


def _association(low: float, high: float, rate_success: float, common: float) -> str:
    if np.isnan(low) or np.isnan(high):
        return "not estimable"
    if low > 1:
        return "predicts failure"
    if high < 1:
        return "more common in successes"
    if not np.isnan(rate_success) and rate_success >= common:
        return "common in successes"
    return "no clear association"


def _regression(
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

    _check(bootstrap, confidence)
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
        column = data.column(by).map(_label)
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
    rows_a, va = _rows(da, level)
    _, vb = _rows(db, level)
    names_rows = _mode_names(da, rows_a, level)
    rng = np.random.default_rng(seed)
    if ci == "bootstrap":
        boot = _boot_difference(va, vb, bootstrap, confidence, rng)
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


def _boot_difference(
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
            _div(w @ (v == 1).astype(np.float64), w @ (v != UNKNOWN).astype(np.float64)),
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
