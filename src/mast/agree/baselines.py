"""What a pooled kappa must be read beside: macro kappa, coverage, two baselines, unknown-as-no.

Pooled Cohen's kappa over all trace x mode cells rewards a judge for knowing *which* modes are
common, even when it cannot tell *when* they occur: a judge that flags the same few frequent
modes on every trace has a per-mode kappa of 0 everywhere and still a positive pooled kappa.
:func:`agreement_context` computes, on the cells a report scored, the numbers that show this:

* **macro kappa**: the mean of per-mode kappa over the modes where the reference has both
  classes on the scored cells (the one definition, :func:`macro_mean`; the same number as the
  ``macro`` row of the report's table), with a bootstrap interval;
* **coverage**: cells scored / cells asked (every known reference cell of every trace the
  reference labelled: an unknown answer or a failed annotation is asked and not scored);
* **constant baseline**: the judge that flags the reference's k most frequent modes on every
  trace (the k that gives such a judge its best pooled kappa);
* **chance baseline**: a judge that flags each mode at random at the reference's prevalence
  of that mode, as an expected value: the kappa of its expected 2x2 counts (no random draw);
* **unknown as "no"**: pooled and macro kappa if every cell the candidate left unknown or
  did not annotate were "no" (a sensitivity check, never the headline).

>>> import numpy as np
>>> ref = np.array([[1, 0], [1, 0], [0, 1], [0, 0]], dtype=np.int8)
>>> cand = np.array([[1, 0], [1, -1], [0, 1], [1, 0]], dtype=np.int8)
>>> ctx = agreement_context(ref, cand, ["1.1", "1.2"], bootstrap=0)
>>> ctx.macro_kappa, ctx.cells_scored, ctx.cells_asked
(0.75, 7, 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mast.agree.render import ci_text, num
from mast.agree.resample import FloatArray, binary_metrics, bootstrap_intervals

__all__ = [
    "BASELINES_MEANING",
    "AgreementContext",
    "agreement_context",
    "chance_baseline",
    "constant_baseline",
    "context_lines",
    "macro_mean",
    "macro_modes",
    "onehot_cells",
]

BASELINES_MEANING = (
    "The baselines know which modes are common but not when they occur (one flags the most "
    "frequent modes on every trace, the other flags each mode at random at its reference "
    "prevalence); a judge that does not clearly beat them has not shown it can tell."
)


@dataclass(frozen=True)
class AgreementContext:
    """The numbers a pooled kappa is shown beside (see :mod:`mast.agree` and the README)."""

    pooled_kappa: float
    macro_kappa: float
    macro_low: float
    macro_high: float
    macro_modes: list[str]
    """Modes with both classes in the reference on the scored cells: the macro's modes."""
    cells_scored: int
    cells_asked: int
    constant_modes: list[str]
    """What the constant baseline flags on every trace (most frequent first)."""
    constant_kappa: float
    chance_kappa: float
    unknown_as_no_kappa: float
    unknown_as_no_macro: float
    unknown_as_no_cells: int
    """Cells the sensitivity line reads as "no" that the candidate left unknown or unannotated."""
    resampling: str = "traces"
    """The bootstrap's unit: ``"traces"`` or ``"label blocks"`` (identical blocks resampled
    together)."""
    n_units: int = 0
    confidence: float = 0.95
    notes: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        """Cells scored / cells asked (NaN when nothing was asked)."""
        return self.cells_scored / self.cells_asked if self.cells_asked else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Every field and the coverage, as plain values."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["coverage"] = self.coverage
        return out


def onehot_cells(ref: npt.NDArray[np.int8], cand: npt.NDArray[np.int8]) -> FloatArray:
    """Per cell, the one-hot 2x2 entry ``(tp, fp, fn, tn)``; all zero where a side is unknown."""
    return np.stack(
        [
            (ref == 1) & (cand == 1),
            (ref == 0) & (cand == 1),
            (ref == 1) & (cand == 0),
            (ref == 0) & (cand == 0),
        ],
        axis=-1,
    ).astype(np.float64)


def _kappa(counts: FloatArray) -> float:
    return float(binary_metrics(np.asarray(counts, dtype=np.float64))["kappa"])


def macro_modes(counts: FloatArray) -> npt.NDArray[np.bool_]:
    """Which modes enter a macro average: those where the reference has both classes.

    ``counts`` is ``(..., modes, 4)``: per mode the 2x2 counts ``(tp, fp, fn, tn)`` of the
    candidate against the reference on the scored cells.  See :func:`macro_mean`.

    >>> macro_modes(np.array([[1, 0, 1, 2], [0, 1, 0, 3]], dtype=float)).tolist()
    [True, False]
    """
    counts = np.asarray(counts, dtype=np.float64)
    ref_pos = counts[..., 0] + counts[..., 2]
    ref_neg = counts[..., 1] + counts[..., 3]
    both: npt.NDArray[np.bool_] = (ref_pos > 0) & (ref_neg > 0)
    return both


def macro_mean(values: FloatArray, counts: FloatArray) -> FloatArray:
    """The macro average: mean of per-mode ``values`` over the modes with both reference classes.

    This is the only macro over modes mast reports against a reference (the ``macro`` row of
    :func:`~mast.agreement`'s table, ``report.context.macro_kappa``, ``mast agree``,
    ``mast validate`` and the HTML report).  A mode where the reference has one class on the
    scored cells (never "yes", or never "no") has an **undefined** kappa for the macro: no
    judge can show there that it tells *when* the mode occurs.  Cohen's kappa on such a mode is
    0 as soon as the candidate disagrees once and NaN when it never does, so averaging it in
    would punish a judge for one false positive on a mode the reference never saw and reward
    it for silence.  Values that are NaN for other reasons (e.g. precision of a candidate that
    never says yes) are skipped too; the result is NaN when no mode is left.

    ``values`` is ``(..., modes)``; ``counts`` is ``(..., modes, 4)`` as in :func:`macro_modes`.
    In a bootstrap the rule is applied to each resample's counts (the statistic is re-computed,
    not the mode set of the full sample kept).

    >>> counts = np.array([[2, 0, 0, 2], [0, 1, 0, 3]], dtype=float)  # 2nd: reference all "no"
    >>> float(macro_mean(np.array([1.0, 0.0]), counts))
    1.0
    """
    kept = np.where(macro_modes(counts), np.asarray(values, dtype=np.float64), np.nan)
    defined = ~np.isnan(kept)
    total = np.where(defined, kept, 0.0).sum(axis=-1)
    count = defined.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: FloatArray = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return mean


def _macro(counts: FloatArray) -> FloatArray:
    """Macro kappa of ``(..., m, 4)`` counts (:func:`macro_mean` of per-mode kappa)."""
    return macro_mean(binary_metrics(counts)["kappa"], counts)


def constant_baseline(
    ref_pos: Sequence[float] | FloatArray, ref_n: Sequence[float] | FloatArray, codes: Sequence[str]
) -> tuple[list[str], float]:
    """The best judge that flags the k most frequent modes on every trace: modes and kappa.

    ``ref_pos[j]`` / ``ref_n[j]``: reference positives / scored cells of mode ``j``.  Modes
    are ranked by reference prevalence (ties in the given order); k runs over 1 … (modes with
    cells) - 1, and the smallest k with the highest pooled kappa wins.

    >>> constant_baseline([3, 1, 0], [4, 4, 4], ["a", "b", "c"])
    (['a'], 0.625)
    """
    pos = np.asarray(ref_pos, dtype=np.float64)
    n = np.asarray(ref_n, dtype=np.float64)
    neg = n - pos
    prevalence = np.divide(pos, n, out=np.full(len(n), -1.0), where=n > 0)
    order = [j for j in sorted(range(len(n)), key=lambda j: (-prevalence[j], j)) if n[j] > 0]
    best: tuple[list[str], float] = ([], float("nan"))
    for k in range(1, len(order)):
        flag = np.zeros(len(n), dtype=bool)
        flag[order[:k]] = True
        kappa = _kappa(
            np.array([pos[flag].sum(), neg[flag].sum(), pos[~flag].sum(), neg[~flag].sum()])
        )
        if not np.isnan(kappa) and (np.isnan(best[1]) or kappa > best[1] + 1e-12):
            best = ([codes[j] for j in order[:k]], kappa)
    return best


def chance_baseline(
    ref_pos: Sequence[float] | FloatArray, ref_n: Sequence[float] | FloatArray
) -> float:
    """Kappa of the expected 2x2 counts of a judge flagging mode j at random with prob. p_j.

    ``p_j`` is the reference prevalence of mode j on its scored cells.  Per mode the expected
    table has kappa 0; pooled over modes it does not, because prevalence differs by mode.

    >>> chance_baseline([3, 1], [4, 4])
    0.25
    """
    pos = np.asarray(ref_pos, dtype=np.float64)
    n = np.asarray(ref_n, dtype=np.float64)
    p = np.divide(pos, n, out=np.zeros(len(n)), where=n > 0)
    neg = n - pos
    counts = np.array(
        [(p * pos).sum(), (p * neg).sum(), ((1 - p) * pos).sum(), ((1 - p) * neg).sum()]
    )
    return _kappa(counts)


def agreement_context(
    ref: npt.NDArray[np.int8],
    cand: npt.NDArray[np.int8],
    codes: Sequence[str],
    *,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    clusters: Sequence[int] | None = None,
    ci: str = "percentile",
) -> AgreementContext:
    """The context numbers of ``cand`` against ``ref`` (traces x modes; 1, 0, -1 unknown).

    Rows are every trace the reference labelled usably; a trace the candidate did not
    annotate (or failed on) is a row of -1 in ``cand``.  ``clusters`` gives each row's
    resampling unit (traces with identical label blocks share one); default: one per trace.
    """
    ref = np.asarray(ref, dtype=np.int8)
    cand = np.asarray(cand, dtype=np.int8)
    cells = onehot_cells(ref, cand)  # traces x m x 4
    counts = cells.sum(axis=0)  # m x 4
    both = macro_modes(counts)
    units = _units(cells, clusters)
    low = high = float("nan")
    if bootstrap and len(units) >= 2 and both.any():

        def metric(sums: FloatArray) -> dict[str, FloatArray]:
            return {"macro": _macro(sums)[..., None]}

        boot = bootstrap_intervals(
            units,
            metric,
            n_resamples=bootstrap,
            confidence=confidence,
            rng=np.random.default_rng(seed),
        )
        bounds = boot.percentile if ci == "percentile" else boot.bca
        low, high = float(bounds["macro"][0][0]), float(bounds["macro"][1][0])
    ref_pos = counts[:, 0] + counts[:, 2]
    ref_n = counts.sum(axis=1)
    constant_modes, constant_kappa = constant_baseline(ref_pos, ref_n, codes)
    blank = (ref >= 0) & (cand < 0)
    filled = onehot_cells(ref, np.where(blank, 0, cand).astype(np.int8)).sum(axis=0)
    return AgreementContext(
        pooled_kappa=_kappa(counts.sum(axis=0)),
        macro_kappa=float(_macro(counts)),
        macro_low=low,
        macro_high=high,
        macro_modes=[c for c, b in zip(codes, both.tolist(), strict=True) if b],
        cells_scored=int(counts.sum()),
        cells_asked=int((ref >= 0).sum()),
        constant_modes=constant_modes,
        constant_kappa=constant_kappa,
        chance_kappa=chance_baseline(ref_pos, ref_n),
        unknown_as_no_kappa=_kappa(filled.sum(axis=0)),
        unknown_as_no_macro=float(_macro(filled)),
        unknown_as_no_cells=int(blank.sum()),
        resampling="traces" if clusters is None else "label blocks",
        n_units=len(units),
        confidence=confidence,
    )


def _units(cells: FloatArray, clusters: Sequence[int] | None) -> FloatArray:
    """Add up the per-trace cells within each resampling unit (cluster)."""
    if clusters is None:
        return cells
    index = np.unique(np.asarray(clusters), return_inverse=True)[1]
    out = np.zeros((int(index.max()) + 1 if len(index) else 0, *cells.shape[1:]))
    np.add.at(out, index, cells)
    return out


def context_lines(c: AgreementContext) -> list[str]:
    """The lines printed under every pooled kappa: macro, coverage, baselines, unknown-as-no."""
    level = f"{c.confidence:.0%} CI"
    coverage = "undef." if c.cells_asked == 0 else f"{c.coverage:.0%}"
    constant = "{" + ", ".join(c.constant_modes) + "}"
    return [
        f"macro kappa = {num(c.macro_kappa)} {level} {ci_text(c.macro_low, c.macro_high, 3)} "
        f"(mean over the {len(c.macro_modes)} modes with both classes in the reference); "
        f"coverage {c.cells_scored}/{c.cells_asked} cells asked ({coverage})",
        f"baselines on the same cells: constant judge flagging {constant} on every trace "
        f"kappa = {num(c.constant_kappa)}; chance judge at the reference prevalence kappa = "
        f"{num(c.chance_kappa)} (expected value)",
        BASELINES_MEANING,
        f"unknown counted as 'no' ({c.unknown_as_no_cells} cells): pooled kappa = "
        f"{num(c.unknown_as_no_kappa)}, macro kappa = {num(c.unknown_as_no_macro)}",
    ]
