"""Shared machinery of the agreement reports: options, exclusions, output methods.

Private: the public names live in :mod:`mast.agree`.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.agree.render import forest_plot, json_safe, table
from mast.agree.resample import FloatArray, Intervals, bootstrap_intervals
from mast.agree.stats import KappaEstimate, UndefinedMetricWarning
from mast.agree.table import UNKNOWN
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy, load_taxonomy

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
from mast.agree.exclusions import Exclusions

VERIFICATION = "3.2∨3.3"
"""Row of the merged verification mode: present if 3.2 or 3.3 is (Kleene OR for unknowns)."""
POOLED = "pooled"
"""Row of the statistic over all trace x mode cells pooled (the MAST paper's statistic)."""
MACRO = "macro"
BASELINE_ROWS = ("constant baseline", "chance baseline")
"""Rows of ``AgreementReport.summary`` with the two baselines' kappa on the same cells
(not part of ``to_frame``: the per-mode tables have no counterpart for them)."""
"""Row of the unweighted mean over modes of the per-mode values (against a reference: over
the modes where the reference has both classes, :func:`mast.agree.baselines.macro_mean`)."""

CiMethod = Literal["percentile", "bca"]
Tie = Literal["unknown", "present", "absent"]
_CI_METHODS = ("percentile", "bca")
_TIES = ("unknown", "present", "absent")
_VERSION_ORDER = ("round1", "rounds2-3", "final")
_T = TypeVar("_T")


# ------------------------------------------------------------------------------ options


def _taxonomy(taxonomy: Taxonomy | str | Path | None) -> Taxonomy:
    if taxonomy is None or isinstance(taxonomy, Taxonomy):
        return taxonomy or load_taxonomy()
    return load_taxonomy(taxonomy)


def _select_modes(modes: Iterable[str] | None, tax: Taxonomy) -> list[str]:
    if modes is None:
        return tax.codes
    if isinstance(modes, str):
        modes = [m for m in modes.replace(",", " ").split() if m]
    chosen = [str(m).strip() for m in modes]
    unknown = [m for m in chosen if m not in tax]
    if unknown or not chosen or len(set(chosen)) != len(chosen):
        raise StatsInputError(
            f"modes must be distinct codes of {tax.label} {tax.codes}; got {chosen!r}"
            + (f" ({unknown} unknown)" if unknown else "")
        )
    return [c for c in tax.codes if c in chosen]  # canonical order


def _check_options(bootstrap: int, seed: int | None, confidence: float, ci: str) -> None:
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)):
        raise StatsInputError(f"bootstrap must be an integer >= 0; got {bootstrap!r}")
    if bootstrap < 0:
        raise StatsInputError(f"bootstrap must be an integer >= 0; got {bootstrap!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise StatsInputError(f"seed must be an integer or None; got {seed!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise StatsInputError(f"confidence must be a number in (0, 1); got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise StatsInputError(f"confidence must be a number in (0, 1); got {confidence!r}")
    if ci not in _CI_METHODS:
        raise StatsInputError(f"ci must be one of {_CI_METHODS}; got {ci!r}")


# -------------------------------------------------------------------- undefined warnings


class _Undefined:
    """Run :mod:`mast.agree.stats` calls quietly and remember which ones were undefined.

    A report calls the statistics dozens of times; one warning that lists every undefined
    value is more useful than dozens of warnings.
    """

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def call(self, row: str, metric: str, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UndefinedMetricWarning)
            value = fn(*args, **kw)
        for w in caught:
            if issubclass(w.category, UndefinedMetricWarning):
                rows = self.seen.setdefault(metric, [])
                if row not in rows:
                    rows.append(row)
            else:  # not ours to swallow
                warnings.warn(w.message, w.category, stacklevel=2)
        return value

    def note(self, metric: str, rows: Sequence[str]) -> None:
        """Record rows where ``metric`` came out undefined (NaN) by other means."""
        if rows:
            listed = self.seen.setdefault(metric, [])
            listed.extend(r for r in rows if r not in listed)

    def emit(self, what: str, empty: str | None) -> None:
        if empty is not None:
            message = f"{what}: {empty}; every statistic is NaN (see report.excluded)"
        elif self.seen:
            listed = "; ".join(f"{m} for {', '.join(rows)}" for m, rows in self.seen.items())
            message = (
                f"{what}: undefined on this data, reported as NaN: {listed} "
                "(e.g. a mode nobody flagged, or a source that never says yes)"
            )
        else:
            return
        warnings.warn(message, UndefinedMetricWarning, stacklevel=_outside_mast())


def _outside_mast() -> int:
    """Stack level of the first frame outside the mast package (for warnings)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("mast"):
        frame = frame.f_back
        level += 1
    return level


# ------------------------------------------------------------------------------ helpers


def _kleene_or(a: npt.NDArray[np.int8], b: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    """Present if either is present, absent if both are absent, otherwise unknown."""
    out = np.full(a.shape, UNKNOWN, dtype=np.int8)
    out[(a == 0) & (b == 0)] = 0
    out[(a == 1) | (b == 1)] = 1
    return out


def _as_labels(column: npt.NDArray[np.int8]) -> list[bool | None]:
    return [None if v < 0 else bool(v) for v in column.tolist()]


def _mean_defined(values: FloatArray, axis: int = -1) -> FloatArray:
    """Mean over ``axis`` of the non-NaN values (NaN when none is defined), without warnings."""
    defined = ~np.isnan(values)
    count = defined.sum(axis=axis)
    total = np.where(defined, values, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


MacroModes = Callable[[FloatArray], npt.NDArray[np.bool_]]
"""Given ``(..., modes, k)`` feature sums, which modes enter the macro row (see
:func:`mast.agree.baselines.macro_modes`); ``None``: every mode with a defined value."""


def _with_macro(
    n_modes: int, include: MacroModes | None
) -> Callable[[dict[str, FloatArray], FloatArray], dict[str, FloatArray]]:
    """Append a macro row (mean of the per-mode values of the ``include``d modes that are
    defined) after the other rows; the modes are chosen on the sums at hand (each resample)."""

    def derive(metrics: dict[str, FloatArray], sums: FloatArray) -> dict[str, FloatArray]:
        keep = None if include is None else include(sums[..., :n_modes, :])
        out = {}
        for name, values in metrics.items():
            per_mode = values[..., :n_modes]
            if keep is not None:
                per_mode = np.where(keep, per_mode, np.nan)
            out[name] = np.concatenate([values, _mean_defined(per_mode)[..., None]], axis=-1)
        return out

    return derive


def _apply(
    metrics: Callable[[FloatArray], dict[str, FloatArray]],
    derive: Callable[[dict[str, FloatArray], FloatArray], dict[str, FloatArray]],
) -> Callable[[FloatArray], dict[str, FloatArray]]:
    return lambda sums: derive(metrics(sums), sums)


def _bootstrap_frame(
    features: FloatArray,
    metrics: Callable[[FloatArray], dict[str, FloatArray]],
    rows: Sequence[str],
    n_modes: int,
    ci_metrics: Sequence[str],
    *,
    bootstrap: int,
    confidence: float,
    seed: int | None,
    ci: str,
    macro_modes: MacroModes | None = None,
) -> tuple[Intervals, Any]:
    """Bootstrap ``metrics`` over traces; a frame of the estimates and the ``ci`` intervals.

    ``rows`` are the per-mode rows (and merged verification); the frame adds the pooled and
    macro rows, and ``<metric>_low``/``<metric>_high`` columns for each of ``ci_metrics``.
    ``macro_modes`` picks the modes the macro row averages (default: all with a value).
    (The frame is typed ``Any``: the reports fill it cell by cell and column by column with
    mixed values that pandas-stubs cannot follow.)
    """
    boot = bootstrap_intervals(
        features,
        _apply(metrics, _with_macro(n_modes, macro_modes)),
        n_resamples=bootstrap,
        confidence=confidence,
        rng=np.random.default_rng(seed),
    )
    chosen = boot.percentile if ci == "percentile" else boot.bca
    frame = pd.DataFrame(dict(boot.estimate), index=[*rows, POOLED, MACRO])
    for metric in ci_metrics:
        frame[f"{metric}_low"], frame[f"{metric}_high"] = chosen[metric]
    return boot, frame


def _set_kappa(
    frame: pd.DataFrame,
    column: str,
    estimates: Sequence[KappaEstimate],
    n_modes: int,
    keep: npt.NDArray[np.bool_] | None = None,
) -> None:
    """Fill ``column`` and its ``_se``/``_wald_low``/``_wald_high`` columns from ``estimates``
    (one per row but the macro row, whose value is the mean over the defined modes, of those
    ``keep`` marks when given)."""
    per_mode = np.array([e.kappa for e in estimates[:n_modes]], dtype=np.float64)
    if keep is not None:
        per_mode = np.where(keep, per_mode, np.nan)
    frame[column] = [e.kappa for e in estimates] + [float(_mean_defined(per_mode))]
    frame[f"{column}_se"] = [e.se for e in estimates] + [np.nan]
    frame[f"{column}_wald_low"] = [e.ci_low for e in estimates] + [np.nan]
    frame[f"{column}_wald_high"] = [e.ci_high for e in estimates] + [np.nan]


def _finish_frame(
    frame: Any,
    rows: Sequence[str],
    tax: Taxonomy,
    columns: Sequence[str],
    counts: Sequence[str],
    macro_name: str = "mean over modes",
) -> Any:
    """Name the rows, keep ``columns`` in order and make ``counts`` nullable integers."""
    frame["name"] = [_mode_label(r, tax) for r in rows] + ["all cells", macro_name]
    if VERIFICATION in rows:
        frame.loc[VERIFICATION, "name"] = "3.2 or 3.3 (verification)"
    frame = frame[list(columns)]
    for column in counts:
        frame[column] = frame[column].astype(_COUNT)
    frame.index.name = "row"
    return frame


def _interval_frame(
    frame: pd.DataFrame, boot: Intervals, metrics: Sequence[str], wald: str
) -> pd.DataFrame:
    """Every interval of ``metrics`` per row of ``frame``, by method: percentile and BCa
    (from ``boot``) and, for the ``wald`` metric, its ``<wald>_wald_low``/``_high`` columns."""
    rows = list(frame.index)
    records: list[dict[str, Any]] = []
    for metric in metrics:
        estimates = frame[metric].tolist()
        undefined = boot.undefined[metric]
        methods: list[tuple[str, Any, Any, int, Any]] = [
            ("percentile", *boot.percentile[metric], boot.n_resamples, undefined),
            ("bca", *boot.bca[metric], boot.n_resamples, undefined),
        ]
        if metric == wald:
            low_w = frame[f"{wald}_wald_low"].tolist()
            high_w = frame[f"{wald}_wald_high"].tolist()
            methods.append(("wald", low_w, high_w, 0, [0.0] * len(rows)))
        for method, low, high, resamples, undefined_at in methods:
            records.extend(
                {
                    "row": row,
                    "metric": metric,
                    "method": method,
                    "estimate": estimates[i],
                    "low": low[i],
                    "high": high[i],
                    "resamples": resamples,
                    "undefined_resamples": undefined_at[i],
                }
                for i, row in enumerate(rows)
            )
    result: pd.DataFrame = pd.DataFrame.from_records(
        records,
        columns=[
            "row",
            "metric",
            "method",
            "estimate",
            "low",
            "high",
            "resamples",
            "undefined_resamples",
        ],
    )
    return result


def _mode_label(code: str, tax: Taxonomy, width: int = 30) -> str:
    if code not in tax:
        return ""
    name = tax[code].name
    return name if len(name) <= width else name[: width - 1] + "…"


# ---------------------------------------------------------------------------- exclusions


# ------------------------------------------------------------------ shared report methods


class _Report:
    """Output methods shared by the reports: frame, text, markdown, dict/JSON and plot."""

    taxonomy: str
    modes: list[str]
    trace_ids: list[str]
    pooled: object
    per_mode: pd.DataFrame
    summary: pd.DataFrame
    intervals: pd.DataFrame
    excluded: Exclusions
    notes: list[str]
    bootstrap: int
    seed: int | None
    confidence: float
    ci: str
    _plot_metrics: ClassVar[tuple[str, ...]] = ()

    @property
    def n_traces(self) -> int:
        """Number of traces in the report: those both sources labelled usably
        (:func:`~mast.agreement`), or labelled by at least one annotator
        (:func:`~mast.agreement_among`)."""
        return len(self.trace_ids)

    @property
    def macro(self) -> pd.Series:
        """The macro row: unweighted mean over modes of the per-mode values (for
        :func:`~mast.agreement`: over the modes where the reference has both classes, see
        :func:`mast.agree.baselines.macro_mean`; for :func:`~mast.agreement_among`: over the
        modes where the value is defined)."""
        return self.summary.loc[MACRO]

    @property
    def verification(self) -> pd.Series | None:
        """The merged verification row (3.2 or 3.3), if both modes are in the report."""
        return self.summary.loc[VERIFICATION] if VERIFICATION in self.summary.index else None

    def to_frame(self) -> pd.DataFrame:
        """Per-mode rows followed by the summary rows (merged verification, pooled, macro)."""
        summary = self.summary[~self.summary.index.isin(BASELINE_ROWS)]
        frame: pd.DataFrame = pd.concat([self.per_mode, summary])
        frame.index.name = "row"
        return frame

    def _headline(self) -> list[str]:
        raise NotImplementedError

    def _display(self) -> tuple[list[str], list[list[str]], int]:
        raise NotImplementedError

    def _names(self) -> dict[str, str]:
        return {}

    def _sections(self, fmt: Literal["text", "markdown"]) -> list[str]:
        """Further tables printed after the per-mode table (e.g. per system)."""
        return []

    def _render(self, fmt: Literal["text", "markdown"]) -> str:
        headers, rows, left = self._display()
        lines = self._headline()
        body = table(headers, rows, fmt=fmt, left=left)
        excluded = self.excluded.lines(self._names()) or ["nothing"]
        bullet = "- " if fmt == "markdown" else "  "
        parts = ["\n".join(lines), body, *self._sections(fmt)]
        parts.append("Excluded (left out, never counted as 'no'):")
        parts[-1] += "\n" + "\n".join(bullet + line for line in excluded)
        if self.notes:
            parts.append("Notes:\n" + "\n".join(bullet + note for note in self.notes))
        return "\n\n".join(parts)

    def to_text(self) -> str:
        """A plain-text report: headline, per-mode table with intervals, exclusions, notes."""
        return self._render("text")

    def to_markdown(self) -> str:
        """The same report as :meth:`to_text`, as markdown (a pipe table)."""
        return self._render("markdown")

    def __str__(self) -> str:
        return self.to_text()

    def _repr_markdown_(self) -> str:  # notebooks
        return self.to_markdown()

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def _as_dict(
        self,
        kind: str,
        sources: Mapping[str, Any],
        settings: Mapping[str, Any],
        after_rows: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The JSON-serializable form every report shares: ``sources`` follow ``kind``,
        ``settings`` extend the common ones, ``after_rows`` follow the rows."""
        data: dict[str, Any] = json_safe(
            {
                "kind": kind,
                **sources,
                "taxonomy": self.taxonomy,
                "modes": self.modes,
                "n_traces": self.n_traces,
                "settings": {
                    "bootstrap": self.bootstrap,
                    "seed": self.seed,
                    "confidence": self.confidence,
                    "ci": self.ci,
                    **settings,
                },
                "pooled": _asdict(self.pooled),
                "rows": _frame_records(self.to_frame()),
                **after_rows,
                "intervals": self.intervals.to_dict("records"),
                "excluded": self.excluded.to_dict(),
                "notes": self.notes,
                "trace_ids": self.trace_ids,
            }
        )
        return data

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as strict JSON (undefined values are ``null``)."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    def _plot_rows(self) -> pd.DataFrame:
        return self.to_frame()

    def plot(self, metric: str | None = None, *, ax: Axes | None = None) -> Figure:
        """Forest plot of ``metric`` per mode (and summary rows) with its bootstrap interval.

        Needs matplotlib (``pip install 'mast-annotator[plot]'``).  Returns the figure;
        undefined values are labelled, not drawn.
        """
        metric = metric or self._plot_metrics[0]
        if metric not in self._plot_metrics:
            raise StatsInputError(f"metric must be one of {self._plot_metrics}; got {metric!r}")
        frame = self._plot_rows()
        names = frame["name"].tolist()
        labels = [
            f"{row}  {name}" if name else str(row)
            for row, name in zip(frame.index, names, strict=True)
        ]
        return forest_plot(
            labels,
            frame[metric].astype(float).tolist(),
            frame[f"{metric}_low"].astype(float).tolist(),
            frame[f"{metric}_high"].astype(float).tolist(),
            title=self._plot_title(metric),
            xlabel=metric,
            separators=[len(self.per_mode)],
            ax=ax,
        )

    def _plot_title(self, metric: str) -> str:
        return metric


def _asdict(obj: object) -> dict[str, Any]:
    return {f: getattr(obj, f) for f in getattr(obj, "__dataclass_fields__", {})}


def _frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {"row": str(index), **{str(k): v for k, v in row.items()}}
        for index, row in zip(frame.index, frame.to_dict("records"), strict=True)
    ]


_COUNT = "Int64"  # nullable integers: summary rows have no count where none applies


_LABELS = {"kappa": "Cohen's kappa", "fleiss": "Fleiss' kappa"}


def _notes(
    frame: pd.DataFrame,
    codes: Sequence[str],
    boot: Intervals,
    n_traces: int,
    bootstrap: int,
    main: str,
    raw: Sequence[str],
    macro_kept: Sequence[bool] | None = None,
) -> list[str]:
    """Caveats a reader of the table needs, in words (``main`` is the headline column;
    ``macro_kept``: which modes the macro row averages, when it is not every defined one)."""
    label = _LABELS.get(main, main)
    notes = []
    if bootstrap == 0:
        notes.append("bootstrap=0: no bootstrap intervals were computed")
    elif n_traces < 2:
        notes.append("bootstrap intervals need at least two traces; they are undefined here")
    elif n_traces < 30:
        notes.append(f"only {n_traces} traces: intervals from resampling so few traces are rough")
    if boot.n_resamples:
        rows = list(frame.index)
        thin = [
            f"{row} ({int(boot.n_resamples - boot.undefined[main][i])})"
            for i, row in enumerate(rows)
            if not np.isnan(frame[main].iloc[i])
            and boot.undefined[main][i] > 0.05 * boot.n_resamples
        ]
        if thin:
            notes.append(
                f"{label} intervals rest on fewer than 95% of the {boot.n_resamples} "
                f"resamples (the others had it undefined): {', '.join(thin)}"
            )
    values = frame.loc[list(codes), main].astype(float)
    undefined = [str(c) for c, v in values.items() if np.isnan(v)]
    raw_note = (
        f"; {' and '.join(raw)} "
        + ("stay defined there and measure" if len(raw) > 1 else "stays defined there and measures")
        + " raw agreement"
        if raw
        else ""
    )
    if macro_kept is not None:
        if undefined:
            notes.append(f"{label} is undefined for {', '.join(undefined)}{raw_note}")
        kept = [str(c) for c, k in zip(codes, macro_kept, strict=True) if k]
        if len(kept) < len(codes):
            left = [str(c) for c in codes if c not in kept]
            notes.append(
                f"the macro row averages the {len(kept)} of {len(codes)} modes where the "
                f"reference has both classes on the scored cells; left out: {', '.join(left)} "
                "(one reference class: kappa cannot show there that the candidate tells when "
                "the mode occurs)"
            )
    elif undefined:
        defined = len(codes) - len(undefined)
        notes.append(
            f"{label} is undefined for {', '.join(undefined)}; the macro row averages the "
            f"{defined} of {len(codes)} modes where it is defined{raw_note}"
        )
    return notes
