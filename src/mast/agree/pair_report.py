"""The report of :func:`mast.agreement`: a candidate's agreement with a reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pandas as pd

from mast.agree.base import VERIFICATION, _Report
from mast.agree.baselines import AgreementContext, context_lines
from mast.agree.conventions import (
    convention_header,
    conventions_differ,
    merged_first,
    per_system_section,
)
from mast.agree.exclusions import Exclusions, dropped_columns
from mast.agree.render import ci_text, json_safe, num

__all__ = ["AgreementReport", "PooledKappa"]


# ------------------------------------------------------------------- judge against human


@dataclass(frozen=True)
class PooledKappa:
    """Cohen's kappa over all compared trace x mode cells (the MAST paper's statistic).

    ``boot_low``/``boot_high`` is the bootstrap interval over traces (method ``method``):
    quote this one.  ``se`` and the Wald interval ``wald_low``/``wald_high`` (Fleiss, Cohen &
    Everitt 1969) treat every cell as independent, which cells of one trace are not, so they
    are too narrow when modes co-occur.

    A pooled kappa rewards knowing which modes are common, so it carries what to read it
    beside: ``macro_kappa`` (mean per-mode kappa over the modes where the reference has both
    classes), and the kappa of a ``constant`` judge (flags the most frequent modes on every
    trace) and of a ``chance`` judge (each mode at random at its reference prevalence) on the
    same cells.  A judge whose pooled kappa does not clearly beat both has not shown skill.
    """

    kappa: float
    se: float
    wald_low: float
    wald_high: float
    boot_low: float
    boot_high: float
    method: str
    confidence: float
    n_cells: int
    n_traces: int
    macro_kappa: float = float("nan")
    macro_low: float = float("nan")
    macro_high: float = float("nan")
    constant_kappa: float = float("nan")
    chance_kappa: float = float("nan")


_BINARY_CI = ("kappa", "ac1", "pabak", "precision", "recall", "f1")
_BINARY_COLUMNS = [
    *("name", "n", "kappa", "kappa_low", "kappa_high", "kappa_se", "kappa_wald_low"),
    *("kappa_wald_high", "ac1", "ac1_low", "ac1_high", "pabak", "pabak_low", "pabak_high"),
    *("precision", "precision_low", "precision_high", "recall", "recall_low", "recall_high"),
    *("f1", "f1_low", "f1_high", "accuracy", "pos_agreement", "neg_agreement"),
    *("prevalence_reference", "prevalence_candidate", "tp", "fp", "fn", "tn"),
    *("unknown_reference", "unknown_candidate", "unscored"),
]
_BINARY_COUNTS = ("n", "tp", "fp", "fn", "tn", "unknown_reference", "unknown_candidate", "unscored")


@dataclass(frozen=True, eq=False, repr=False)
class AgreementReport(_Report):
    """How far a candidate (e.g. an LLM judge) agrees with a reference (e.g. people).

    ``per_mode`` has one row per mode: Cohen's kappa with bootstrap interval
    (``kappa_low``/``kappa_high``), analytic SE and Wald interval, Gwet's AC1, PABAK,
    precision / recall / F1 of the candidate against the reference (each with a bootstrap
    interval), accuracy, positive / negative specific agreement, prevalence in each source
    (on the compared cells), the 2x2 counts, and the unknown cells left out.  ``summary``
    has the merged verification row ``"3.2∨3.3"``, the ``"pooled"`` row (all cells) and the
    ``"macro"`` row: the mean of the per-mode values over the modes where the reference has
    both classes on the scored cells (:func:`~mast.agree.baselines.macro_mean` says why a
    one-class mode is left out), and the ``"constant baseline"`` and ``"chance baseline"``
    rows: the kappa of those two judges on the same cells (``to_frame`` leaves them out).
    ``intervals`` has every interval by method (percentile, BCa, Wald) with the number of
    undefined resamples.  ``repr(report)`` and ``report.pooled`` show the macro kappa and the
    two baselines beside the pooled kappa.  ``context``
    (:class:`~mast.agree.baselines.AgreementContext`) has what the pooled kappa is printed
    beside: the same macro kappa and interval as the ``macro`` row, coverage, the constant
    and chance baselines on the same cells, and kappa with unknown read as "no".
    ``conventions`` names each side's 3.2/3.3 convention (``None``: not recorded); when
    they differ the text leads with a warning and the merged row. ``per_system`` has one row
    per system (framework) of the compared traces (empty when no source knows systems).
    """

    reference_name: str
    candidate_name: str
    taxonomy: str
    modes: list[str]
    trace_ids: list[str]
    pooled: PooledKappa
    per_mode: pd.DataFrame
    summary: pd.DataFrame
    intervals: pd.DataFrame
    excluded: Exclusions
    notes: list[str]
    bootstrap: int
    seed: int | None
    confidence: float
    ci: str
    context: AgreementContext
    conventions: dict[str, str | None] = field(default_factory=dict)
    per_system: pd.DataFrame = field(default_factory=pd.DataFrame)
    _plot_metrics: ClassVar[tuple[str, ...]] = _BINARY_CI

    @property
    def conventions_differ(self) -> bool:
        """True when both sides' 3.2/3.3 conventions are known and differ."""
        return conventions_differ(
            self.conventions.get("reference"), self.conventions.get("candidate")
        )

    def __repr__(self) -> str:
        p = self.pooled
        return (
            f"<AgreementReport {self.candidate_name} vs {self.reference_name}: "
            f"{self.n_traces} traces x {len(self.modes)} modes, pooled kappa {num(p.kappa)} "
            f"{ci_text(p.boot_low, p.boot_high, 3)}, macro kappa {num(p.macro_kappa)} "
            f"{ci_text(p.macro_low, p.macro_high, 3)}; baselines on the same cells: constant "
            f"judge {num(p.constant_kappa)}, chance judge {num(p.chance_kappa)}>"
        )

    def _names(self) -> dict[str, str]:
        return {"reference": self.reference_name, "candidate": self.candidate_name}

    def _headline(self) -> list[str]:
        p = self.pooled
        level = f"{self.confidence:.0%}"
        c = self.context
        unit = (
            "traces"
            if c.resampling == "traces"
            else f"{c.n_units} distinct label blocks (cluster bootstrap)"
        )
        boot = (
            f"{level} CI {ci_text(p.boot_low, p.boot_high, 3)} (bootstrap over {unit}, "
            f"{self.ci}, {self.bootstrap} resamples, seed {self.seed})"
            if self.bootstrap
            else "no bootstrap"
        )
        differ = self.conventions_differ
        warning = [f"WARNING: {self.notes[0]}"] if differ and self.notes else []
        return [
            *warning,
            f"Agreement of {self.candidate_name} with {self.reference_name}: "
            f"{self.n_traces} trace(s) x {len(self.modes)} mode(s) ({self.taxonomy})"
            + dropped_columns(self.excluded, self._names()),
            f"pooled Cohen's kappa = {num(p.kappa)} over {p.n_cells} cells, {boot}; "
            f"Wald {ci_text(p.wald_low, p.wald_high, 3)} treats cells as independent",
            *context_lines(c),
            convention_header(self._names(), self.conventions),
        ]

    def _display(self) -> tuple[list[str], list[list[str]], int]:
        level = f"{self.confidence:.0%} CI"
        headers = [
            "mode",
            "name",
            "n",
            "kappa",
            level,
            "AC1",
            "PABAK",
            "P",
            "R",
            "F1",
            "F1 CI",
            "prev ref",
            "prev cand",
            "tp/fp/fn/tn",
            "unscored",
        ]
        rows = []
        frame = merged_first(self.to_frame(), self.conventions_differ, VERIFICATION)
        for index, r in frame.iterrows():
            counts = (
                "/".join(str(r[c]) for c in ("tp", "fp", "fn", "tn"))
                if not pd.isna(r["tp"])
                else ""
            )
            rows.append(
                [
                    str(index),
                    str(r["name"]),
                    "" if pd.isna(r["n"]) else str(r["n"]),
                    num(r["kappa"]),
                    ci_text(r["kappa_low"], r["kappa_high"]),
                    num(r["ac1"]),
                    num(r["pabak"]),
                    num(r["precision"]),
                    num(r["recall"]),
                    num(r["f1"]),
                    ci_text(r["f1_low"], r["f1_high"]),
                    num(r["prevalence_reference"]),
                    num(r["prevalence_candidate"]),
                    counts,
                    "" if pd.isna(r["unscored"]) else str(r["unscored"]),
                ]
            )
        return headers, rows, 2

    def _sections(self, fmt: Literal["text", "markdown"]) -> list[str]:
        return per_system_section(self.per_system, fmt)

    def _plot_title(self, metric: str) -> str:
        return (
            f"{metric}: {self.candidate_name} vs {self.reference_name} "
            f"({self.n_traces} traces, {self.confidence:.0%} {self.ci} bootstrap CI)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-serializable data (NaN becomes ``None``)."""
        sources = {"reference": self.reference_name, "candidate": self.candidate_name}
        after = {
            "context": self.context.to_dict(),
            "conventions": {**self.conventions, "differ": self.conventions_differ},
            "per_system": json_safe(self.per_system.reset_index().to_dict("records")),
        }
        return self._as_dict("agreement", sources, {}, after)
