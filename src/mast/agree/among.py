"""Agreement among several annotators: :func:`agreement_among` and :class:`AmongReport`.

Private: import the names from :mod:`mast.agree` (or :mod:`mast`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.agree import stats
from mast.agree.base import (
    _TIES,
    MACRO,
    POOLED,
    VERIFICATION,
    CiMethod,
    Tie,
    _as_labels,
    _bootstrap_frame,
    _check_options,
    _finish_frame,
    _interval_frame,
    _kleene_or,
    _notes,
    _Report,
    _select_modes,
    _set_kappa,
    _taxonomy,
    _Undefined,
)
from mast.agree.blocks import (
    DuplicateLabelsWarning,
    block_clusters,
    check_resample,
    describe_duplicates,
    duplicate_blocks,
    sum_by_unit,
)
from mast.agree.exclusions import Exclusions, _table_exclusions
from mast.agree.render import ci_text, num, table
from mast.agree.resample import binary_metrics, multi_features, multi_metrics
from mast.agree.table import UNKNOWN, LabelTable, labels_of, natural_key, to_table
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy
from mast.traces.model import FailureVector, Trace

# ---------------------------------------------------------------------- among annotators


@dataclass(frozen=True)
class AmongPooled:
    """Many-rater agreement over all trace x mode items pooled.

    ``fleiss_low``/``fleiss_high`` and ``alpha_low``/``alpha_high`` are bootstrap intervals
    over traces; ``fleiss_se`` (Gwet's linearization, from :mod:`mast.agree.stats`) treats items as
    independent, which the modes of one trace are not.
    """

    fleiss: float
    fleiss_se: float
    fleiss_low: float
    fleiss_high: float
    alpha: float
    alpha_low: float
    alpha_high: float
    ac1: float
    n_items: int
    n_traces: int


_MULTI_CI = ("fleiss", "alpha", "ac1")
_MULTI_COLUMNS = [
    *("name", "items", "pairable", "fleiss", "fleiss_low", "fleiss_high", "fleiss_se"),
    *("fleiss_wald_low", "fleiss_wald_high", "alpha", "alpha_low", "alpha_high", "ac1"),
    *("ac1_low", "ac1_high", "percent_agreement", "prevalence", "positives", "ratings"),
    *("unscored",),
]
_MULTI_COUNTS = ("items", "pairable", "positives", "ratings", "unscored")


@dataclass(frozen=True, eq=False, repr=False)
class AmongReport(_Report):
    """How far several annotators agree with each other, per mode and pooled.

    ``per_mode``: Fleiss' kappa (bootstrap interval, Gwet SE and Wald interval),
    Krippendorff's alpha (nominal) and Gwet's AC1 with bootstrap intervals, mean pairwise
    percent agreement, prevalence of "present" among the ratings, and counts (``items``:
    traces with at least one known rating; ``pairable``: with two or more; ``unscored``:
    traces with fewer than two).  ``summary``: merged verification, pooled and macro rows.
    ``pairwise``: Cohen's kappa of every pair of annotators over all their common cells.
    """

    annotators: list[str]
    taxonomy: str
    modes: list[str]
    trace_ids: list[str]
    pooled: AmongPooled
    per_mode: pd.DataFrame
    summary: pd.DataFrame
    pairwise: pd.DataFrame
    intervals: pd.DataFrame
    excluded: Exclusions
    notes: list[str]
    bootstrap: int
    seed: int | None
    confidence: float
    ci: str
    tie: str
    n_blocks: int
    """Distinct label blocks (all annotators x all modes) among the traces."""
    duplicate_groups: list[list[str]]
    """Traces whose label blocks are identical (groups of two or more)."""
    resampling: str
    """The bootstrap's unit: ``"traces"`` or ``"label blocks"``."""
    _cube: npt.NDArray[np.int8] = field(repr=False)
    _plot_metrics: ClassVar[tuple[str, ...]] = _MULTI_CI

    def __repr__(self) -> str:
        p = self.pooled
        return (
            f"<AmongReport {', '.join(self.annotators)}: {self.n_traces} traces x "
            f"{len(self.modes)} modes, pooled Fleiss' kappa {num(p.fleiss)} "
            f"{ci_text(p.fleiss_low, p.fleiss_high, 3)}, alpha {num(p.alpha)}>"
        )

    def majority(self, tie: Tie | None = None) -> dict[str, FailureVector]:
        """Majority vote per trace and mode, as reference vectors ``{trace_id: FailureVector}``.

        Only known ratings vote.  More "present" than "absent" gives ``True``, fewer gives
        ``False``; a tie follows ``tie`` (default: the report's): ``"unknown"`` gives
        ``None``, ``"present"`` ``True``, ``"absent"`` ``False``.  A cell nobody rated is
        ``None`` whatever the tie policy (no vote is not a tie to break).
        """
        tie = tie or self.tie  # type: ignore[assignment]
        if tie not in _TIES:
            raise StatsInputError(f"tie must be one of {_TIES}; got {tie!r}")
        cube = self._cube[:, : len(self.modes)]
        pos = (cube == 1).sum(axis=-1)
        neg = (cube == 0).sum(axis=-1)
        out: dict[str, FailureVector] = {}
        tie_value = {"unknown": None, "present": True, "absent": False}[tie]
        for i, trace_id in enumerate(self.trace_ids):
            values: dict[str, bool | None] = {}
            for j, code in enumerate(self.modes):
                p, q = int(pos[i, j]), int(neg[i, j])
                values[code] = True if p > q else False if q > p else None if p == 0 else tie_value
            out[trace_id] = FailureVector(values, codes=self.modes)
        return out

    def pairwise_kappa(self, mode: str | None = None) -> pd.DataFrame:
        """Cohen's kappa of every pair of annotators, over all modes (default) or one mode."""
        if mode is None:
            copied: pd.DataFrame = self.pairwise.copy()
            return copied
        merged = self._cube.shape[1] > len(self.modes)
        if mode not in self.modes and not (mode == VERIFICATION and merged):
            rows = [*self.modes, *([VERIFICATION] if merged else [])]
            raise StatsInputError(f"mode must be one of {rows}; got {mode!r}")
        j = self.modes.index(mode) if mode in self.modes else len(self.modes)
        return _pairwise(self._cube[:, j : j + 1], self.annotators)

    def _headline(self) -> list[str]:
        p = self.pooled
        level = f"{self.confidence:.0%}"
        return [
            f"Agreement among {len(self.annotators)} annotators ({', '.join(self.annotators)}): "
            f"{self.n_traces} trace(s) x {len(self.modes)} mode(s) ({self.taxonomy})",
            f"pooled Fleiss' kappa = {num(p.fleiss)} {level} CI "
            f"{ci_text(p.fleiss_low, p.fleiss_high, 3)}, Krippendorff's alpha = {num(p.alpha)} "
            f"{level} CI {ci_text(p.alpha_low, p.alpha_high, 3)} over {p.n_items} items "
            f"(bootstrap over {self._unit()}, {self.ci}, {self.bootstrap} resamples, "
            f"seed {self.seed})",
            *(
                [describe_duplicates(self.duplicate_groups, self.n_traces, self.n_blocks)]
                if self.duplicate_groups
                else []
            ),
        ]

    def _unit(self) -> str:
        if self.resampling == "traces":
            return "traces"
        return f"{self.n_blocks} distinct label blocks (cluster bootstrap)"

    def _display(self) -> tuple[list[str], list[list[str]], int]:
        level = f"{self.confidence:.0%} CI"
        headers = [
            "mode",
            "name",
            "items",
            "Fleiss k",
            level,
            "alpha",
            "alpha CI",
            "AC1",
            "agree",
            "prev",
            "unscored",
        ]
        rows = []
        for index, r in self.to_frame().iterrows():
            rows.append(
                [
                    str(index),
                    str(r["name"]),
                    "" if pd.isna(r["items"]) else str(r["items"]),
                    num(r["fleiss"]),
                    ci_text(r["fleiss_low"], r["fleiss_high"]),
                    num(r["alpha"]),
                    ci_text(r["alpha_low"], r["alpha_high"]),
                    num(r["ac1"]),
                    num(r["percent_agreement"]),
                    num(r["prevalence"]),
                    "" if pd.isna(r["unscored"]) else str(r["unscored"]),
                ]
            )
        return headers, rows, 2

    def _render(self, fmt: Literal["text", "markdown"]) -> str:
        text = super()._render(fmt)
        names = list(self.pairwise.columns)
        rows = [[a, *(num(v) for v in self.pairwise.loc[a])] for a in names]
        pair = table(["Cohen's kappa (all cells)", *names], rows, fmt=fmt, left=1)
        return text + "\n\nPairwise agreement:\n\n" + pair

    def _plot_title(self, metric: str) -> str:
        return (
            f"{metric} among {len(self.annotators)} annotators "
            f"({self.n_traces} traces, {self.confidence:.0%} {self.ci} bootstrap CI)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-serializable data (NaN becomes ``None``)."""
        pairwise = {a: self.pairwise.loc[a].to_dict() for a in self.pairwise.index}
        return self._as_dict(
            "agreement_among",
            {"annotators": self.annotators},
            {"tie": self.tie, "resampling": self.resampling},
            {
                "pairwise": pairwise,
                "label_blocks": {
                    "distinct": self.n_blocks,
                    "duplicate_groups": self.duplicate_groups,
                },
            },
        )


def _pairwise(cube: npt.NDArray[np.int8], annotators: Sequence[str]) -> pd.DataFrame:
    """Cohen's kappa of each pair of annotators over the cells of ``cube`` (traces x rows x r).

    Computed from each pair's 2x2 counts with the formula of :func:`mast.agree.stats.cohen_kappa`
    (tests check they agree); undefined pairs (no common cell, no variation) are NaN.
    """
    r = len(annotators)
    flat = cube.reshape(-1, r)
    matrix = np.full((r, r), np.nan)
    for a in range(r):
        for b in range(a, r):
            x, y = flat[:, a], flat[:, b]
            counts = np.array(
                [
                    np.sum((x == 1) & (y == 1)),
                    np.sum((x == 0) & (y == 1)),
                    np.sum((x == 1) & (y == 0)),
                    np.sum((x == 0) & (y == 0)),
                ],
                dtype=np.float64,
            )
            matrix[a, b] = matrix[b, a] = float(binary_metrics(counts)["kappa"])
    frame: pd.DataFrame = pd.DataFrame(matrix, index=list(annotators), columns=list(annotators))
    return frame


def _fleiss(
    row: str, ratings: npt.NDArray[np.int8], und: _Undefined, confidence: float
) -> stats.KappaEstimate:
    """Fleiss' kappa with Gwet's standard error for an ``items x raters`` array."""
    matrix = [_as_labels(item) for item in ratings]
    return und.call(row, "Fleiss' kappa", stats.fleiss_kappa_with_se, matrix, confidence=confidence)


def _rater_tables(
    raters: object,
    annotators: Sequence[str] | None,
    codes: Sequence[str],
    tax: Taxonomy,
) -> dict[str, LabelTable]:
    if isinstance(raters, Mapping):
        names = [str(k) for k in raters]
        chosen = list(annotators) if annotators is not None else names
        absent = [a for a in chosen if a not in names]
        if absent:
            raise StatsInputError(f"annotators {absent} are not among the raters {names}")
        sources = {str(k): v for k, v in raters.items()}
        return {a: to_table(sources[a], modes=codes, taxonomy=tax, name=a) for a in chosen}
    if isinstance(raters, Iterable) and not isinstance(raters, (str, bytes)):
        traces = list(raters)
        if not all(isinstance(t, Trace) for t in traces):
            raise StatsInputError(
                "raters must be {annotator: labels} or a list of traces whose .labels hold "
                "several annotators"
            )
        names = sorted({a for t in traces for a in t.labels}, key=natural_key)
        chosen = list(annotators) if annotators is not None else names
        absent = [a for a in chosen if a not in names]
        if absent:
            raise StatsInputError(f"no trace carries labels from {absent}; they have {names}")
        tables = {
            a: to_table(labels_of(traces, a), modes=codes, taxonomy=tax, name=a) for a in chosen
        }
        return tables
    raise StatsInputError(
        f"raters must be {{annotator: labels}} or a list of traces; got {type(raters).__name__}"
    )


def agreement_among(
    raters: object,
    *,
    modes: Iterable[str] | None = None,
    annotators: Sequence[str] | None = None,
    tie: Tie = "unknown",
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    ci: CiMethod = "percentile",
    taxonomy: Taxonomy | str | Path | None = None,
    merge_verification: bool = True,
    resample: Literal["auto", "traces", "blocks"] = "auto",
) -> AmongReport:
    """Agreement among several annotators: Fleiss' kappa, Krippendorff's alpha, AC1, pairs.

    ``raters`` is ``{annotator: labels}`` (each value any source :func:`agreement` accepts)
    or a list of traces whose ``.labels`` hold several annotators (``annotators`` selects
    some).  Traces labelled by at least one annotator are items; a missing or ``None``
    rating is left out of that item (Gwet's treatment for Fleiss/AC1, Krippendorff's for
    alpha) and counted in ``report.excluded``.  Bootstrap, ``seed``, ``confidence`` and
    ``ci`` work as in :func:`agreement`; ``tie`` is the default tie policy of
    :meth:`AmongReport.majority`.  Meant for three or more annotators; two work too (Fleiss'
    kappa is then Scott's pi).

    Traces whose whole label blocks (every annotator, every mode) are identical are found
    and listed in ``report.duplicate_groups`` with a :class:`DuplicateLabelsWarning`;
    ``resample="auto"`` then bootstraps over distinct blocks instead of traces (a cluster
    bootstrap: copied labels are not independent evidence).  ``"blocks"`` always does,
    ``"traces"`` never does.

    >>> import mast
    >>> human = [t for t in mast.traces.datasets.example_traces() if t.format == "mad-human"]
    >>> rep = mast.agreement_among(human, modes=["1.5", "3.2", "3.3"], bootstrap=0)
    >>> rep.annotators, round(rep.pooled.fleiss, 3)
    (['annotator_1', 'annotator_2', 'annotator_3'], 0.888)
    >>> rep.majority()["mad-human/16"].positives
    ['3.2', '3.3']
    """
    _check_options(bootstrap, seed, confidence, ci)
    if tie not in _TIES:
        raise StatsInputError(f"tie must be one of {_TIES}; got {tie!r}")
    tax = _taxonomy(taxonomy)
    codes = _select_modes(modes, tax)
    tables = _rater_tables(raters, annotators, codes, tax)
    if len(tables) < 2:
        raise StatsInputError(
            f"agreement among annotators needs at least two of them; got {list(tables)}"
        )
    names = list(tables)
    ids = sorted(set().union(*(t.ids for t in tables.values())), key=natural_key)
    m = len(codes)
    cube = np.full((len(ids), m, len(names)), UNKNOWN, dtype=np.int8)
    where = {trace_id: i for i, trace_id in enumerate(ids)}
    for k, name in enumerate(names):
        t = tables[name]
        if t.ids:
            cube[[where[i] for i in t.ids], :, k] = t.values
    check_resample(resample)
    block_of = block_clusters(cube)
    groups = duplicate_blocks(cube, ids)
    if groups:
        warnings.warn(
            describe_duplicates(
                groups, len(ids), len(set(block_of)), resampled=resample != "traces"
            ),
            DuplicateLabelsWarning,
            stacklevel=2,
        )
    by_blocks = resample == "blocks" or (resample == "auto" and bool(groups))
    rows = list(codes)
    if merge_verification and "3.2" in codes and "3.3" in codes:
        j2, j3 = codes.index("3.2"), codes.index("3.3")
        cube = np.concatenate([cube, _kleene_or(cube[:, j2], cube[:, j3])[:, None, :]], axis=1)
        rows.append(VERIFICATION)

    # Per trace and row, the additive rating features of that trace (the pooled row adds up
    # the modes); estimates and bootstrap resamples of alpha and AC1 come from their sums.
    features = multi_features(cube)
    features = np.concatenate([features, features[:, :m].sum(axis=1, keepdims=True)], axis=1)
    boot, frame = _bootstrap_frame(
        sum_by_unit(features, block_of) if by_blocks else features,
        multi_metrics,
        rows,
        m,
        _MULTI_CI,
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
        ci=ci,
    )
    scored = [*rows, POOLED]

    # Fleiss' kappa and its standard error from mast.agree.stats, per row and over all items.
    und = _Undefined()
    blocks = [cube[:, j, :] for j in range(len(rows))] + [cube[:, :m, :].reshape(-1, len(names))]
    fleiss = [
        _fleiss(row, block, und, confidence) for row, block in zip(scored, blocks, strict=True)
    ]
    _set_kappa(frame, "fleiss", fleiss, m)
    for metric, label in (("alpha", "Krippendorff's alpha"), ("ac1", "AC1")):
        und.note(label, [r for r in scored if np.isnan(frame.at[r, metric])])
    pairwise = _pairwise(cube[:, :m], names)
    known = (cube >= 0).sum(axis=-1)  # known ratings per trace and row
    known_cells = [known[:, j] for j in range(len(rows))] + [known[:, :m].ravel()]
    items = [int((k >= 1).sum()) for k in known_cells]
    pairable = [int((k >= 2).sum()) for k in known_cells]
    und.emit(
        f"agreement among {', '.join(names)}",
        None if pairable[-1] else "no trace x mode item has two known ratings",
    )
    positives = (cube == 1).sum(axis=(0, 2)).tolist()
    ratings = known.sum(axis=0).tolist()
    frame["items"] = [*items, pd.NA]
    frame["pairable"] = [*pairable, pd.NA]
    frame["unscored"] = [len(k) - p for k, p in zip(known_cells, pairable, strict=True)] + [pd.NA]
    frame["positives"] = [*positives, sum(positives[:m]), pd.NA]
    frame["ratings"] = [*ratings, sum(ratings[:m]), pd.NA]
    frame = _finish_frame(frame, rows, tax, _MULTI_COLUMNS, _MULTI_COUNTS)

    intervals = _interval_frame(frame, boot, _MULTI_CI, "fleiss")
    present = {name: np.isin(ids, tables[name].ids) for name in names}
    excluded = _table_exclusions(
        tables,
        {
            name: {row: int((cube[present[name], j, k] < 0).sum()) for j, row in enumerate(rows)}
            for k, name in enumerate(names)
        },
        {row: int(frame.at[row, "unscored"]) for row in rows},
    )
    p = frame.loc[POOLED]
    pooled = AmongPooled(
        fleiss=float(p["fleiss"]),
        fleiss_se=float(p["fleiss_se"]),
        fleiss_low=float(p["fleiss_low"]),
        fleiss_high=float(p["fleiss_high"]),
        alpha=float(p["alpha"]),
        alpha_low=float(p["alpha_low"]),
        alpha_high=float(p["alpha_high"]),
        ac1=float(p["ac1"]),
        n_items=pairable[-1],
        n_traces=len(ids),
    )
    summary_rows = [r for r in (VERIFICATION, POOLED, MACRO) if r in frame.index]
    return AmongReport(
        annotators=names,
        taxonomy=tax.label,
        modes=codes,
        trace_ids=ids,
        pooled=pooled,
        per_mode=frame.loc[codes],
        summary=frame.loc[summary_rows],
        pairwise=pairwise,
        intervals=intervals,
        excluded=excluded,
        notes=_notes(frame, codes, boot, len(ids), bootstrap, "fleiss", ("AC1",)),
        bootstrap=int(bootstrap),
        seed=None if seed is None else int(seed),
        confidence=float(confidence),
        ci=ci,
        tie=tie,
        n_blocks=len(set(block_of)),
        duplicate_groups=groups,
        resampling="label blocks" if by_blocks else "traces",
        _cube=cube,
    )
