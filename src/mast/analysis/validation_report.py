"""The report of :func:`mast.validate`: every number a reader needs to decide on a judge.

Private to :mod:`mast.analysis.validation`; the public names are ``mast.validate`` and
``mast.ValidationReport``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.agree import BASELINES_MEANING, AgreementReport
from mast.agree.blocks import describe_duplicates
from mast.agree.render import ci_text, json_safe, num, table

__all__ = ["ValidationReport"]


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`mast.validate` measured; :meth:`to_markdown` is the report it writes.

    ``reports`` maps each reference (every annotator, then ``"majority"``) to the judge's
    :class:`~mast.agree.AgreementReport` against it (per mode with intervals, the merged
    3.2 ∨ 3.3 row, and its ``context``: macro kappa, coverage, baselines, unknown as "no").
    ``ceilings`` maps each reference to the mean Cohen's kappa of the *other* annotators
    against it on the cells the judge was scored on: the agreement people reach there.
    ``by_version`` has the judge against the majority on the traces of each taxonomy version.
    """

    model: str
    dataset: str
    n_traces: int
    reports: dict[str, AgreementReport]
    ceilings: dict[str, float]
    by_version: dict[str, AgreementReport]
    duplicate_groups: list[list[str]]
    n_blocks: int
    cost_usd: float
    cost_unknown: int
    failed: dict[str, list[str]]
    results_path: str | None = None
    notes: list[str] = field(default_factory=list)
    answer: str = "full"
    resampling: str = "traces"
    """Bootstrap unit of every interval: ``"traces"`` or ``"label blocks"``."""

    @property
    def majority(self) -> AgreementReport:
        """The judge against the annotators' majority vote."""
        return self.reports["majority"]

    def __repr__(self) -> str:
        p = self.majority.pooled
        return (
            f"<ValidationReport {self.model} on {self.dataset}: {self.n_traces} traces, "
            f"pooled kappa vs majority {num(p.kappa)}, constant baseline "
            f"{num(self.majority.context.constant_kappa)}>"
        )

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per reference: the numbers of the report's first table."""
        rows = []
        for name, rep in self.reports.items():
            c = rep.context
            rows.append(
                {
                    "reference": name,
                    "traces": rep.n_traces,
                    "cells_scored": c.cells_scored,
                    "cells_asked": c.cells_asked,
                    "coverage": c.coverage,
                    "pooled_kappa": rep.pooled.kappa,
                    "pooled_low": rep.pooled.boot_low,
                    "pooled_high": rep.pooled.boot_high,
                    "macro_kappa": c.macro_kappa,
                    "macro_low": c.macro_low,
                    "macro_high": c.macro_high,
                    "constant_kappa": c.constant_kappa,
                    "constant_modes": c.constant_modes,
                    "chance_kappa": c.chance_kappa,
                    "unknown_as_no_kappa": c.unknown_as_no_kappa,
                    "human_ceiling": self.ceilings.get(name, float("nan")),
                }
            )
        return rows

    def _summary_table(self) -> str:
        headers = [
            "reference",
            "cells scored/asked",
            "pooled κ [CI]",
            "macro κ [CI]",
            "constant κ",
            "chance κ",
            "κ unknown→no",
            "human ceiling κ",
        ]
        rows = [
            [
                r["reference"],
                f"{r['cells_scored']}/{r['cells_asked']} ({_pct(r['coverage'])})",
                f"{num(r['pooled_kappa'])} {ci_text(r['pooled_low'], r['pooled_high'])}",
                f"{num(r['macro_kappa'])} {ci_text(r['macro_low'], r['macro_high'])}",
                num(r["constant_kappa"]),
                num(r["chance_kappa"]),
                num(r["unknown_as_no_kappa"]),
                num(r["human_ceiling"]),
            ]
            for r in self.summary_rows()
        ]
        return table(headers, rows, fmt="markdown", left=1)

    def _version_table(self) -> str:
        rows = []
        for version, rep in self.by_version.items():
            c = rep.context
            rows.append(
                [
                    version,
                    str(rep.n_traces),
                    f"{c.cells_scored}/{c.cells_asked}",
                    f"{num(rep.pooled.kappa)} {ci_text(rep.pooled.boot_low, rep.pooled.boot_high)}",
                    num(c.macro_kappa),
                    num(c.constant_kappa),
                    num(c.chance_kappa),
                ]
            )
        headers = ["version", "traces", "cells", "pooled κ [CI]", "macro κ", "constant κ"]
        return table([*headers, "chance κ"], rows, fmt="markdown", left=1)

    def to_markdown(self) -> str:
        """The whole report as markdown (``mast validate`` writes it to ``report.md``)."""
        cost = f"judge cost ${self.cost_usd:.4f}"
        if self.cost_unknown:
            cost += f" (+ {self.cost_unknown} annotation(s) of unknown cost)"
        out = [f"# Can `{self.model}` be trusted? Validation on {self.dataset}", ""]
        majority = self.majority
        if majority.conventions_differ:  # said first: per-mode 3.2/3.3 rows mean different things
            out += [f"**Warning:** {majority.notes[0]}", ""]
        out += [f"{self.n_traces} human-labelled traces; {self.answer} answers; {cost}."]
        if self.results_path:
            out[-1] += f" Annotations: `{self.results_path}` (a rerun resumes from it)."
        judge_side = majority.conventions.get("candidate") or "not recorded"
        human_side = majority.conventions.get("reference") or "not recorded"
        out += ["", f"3.2/3.3 convention: judge {judge_side}; human labels {human_side}."]
        out.append("")
        if self.duplicate_groups:
            text = describe_duplicates(
                self.duplicate_groups,
                self.n_traces,
                self.n_blocks,
                resampled=self.resampling == "label blocks",
            )
            out += [f"**Duplicated labels:** {text}.", ""]
        for status, ids in self.failed.items():
            shown = ", ".join(ids[:8]) + (" …" if len(ids) > 8 else "")
            out += [f"**{len(ids)} trace(s) without a usable annotation ({status}):** {shown}", ""]
        constant = "; ".join(
            f"{r['reference']}: {{{', '.join(r['constant_modes'])}}}" for r in self.summary_rows()
        )
        out += [
            "## Agreement with each reference",
            "",
            self._summary_table(),
            "",
            BASELINES_MEANING,
            f"The constant judge flags, on every trace, {constant}. The human ceiling is the mean "
            "Cohen's κ of the other annotators against the same reference on the same cells "
            "(for the majority: each annotator against the majority of the others). Macro κ "
            "averages the modes with both classes in the reference; κ unknown→no reads every "
            "cell the judge left unknown or did not annotate as 'no'.",
            "",
        ]
        if self.by_version:
            out += [
                "## Against the majority, per taxonomy version of the labels",
                "",
                self._version_table(),
                "",
            ]
        out += [
            "## Per mode and per system against the majority (with the merged 3.2 ∨ 3.3 row)",
            "",
            self.majority.to_markdown(),
            "",
        ]
        if self.notes:
            out += ["## Notes", "", *(f"- {n}" for n in self.notes), ""]
        return "\n".join(out)

    def to_text(self) -> str:
        """The report as text (the markdown reads as plain text)."""
        return self.to_markdown()

    def __str__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:  # notebooks
        return self.to_markdown()

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready data (NaN becomes ``None``)."""
        data: dict[str, Any] = json_safe(
            {
                "kind": "validation",
                "model": self.model,
                "answer": self.answer,
                "dataset": self.dataset,
                "n_traces": self.n_traces,
                "summary": self.summary_rows(),
                "conventions": {
                    **self.majority.conventions,
                    "differ": self.majority.conventions_differ,
                },
                "per_system": self.majority.per_system.reset_index().to_dict("records"),
                "duplicate_groups": self.duplicate_groups,
                "n_blocks": self.n_blocks,
                "resampling": self.resampling,
                "cost_usd": self.cost_usd,
                "cost_unknown": self.cost_unknown,
                "failed": self.failed,
                "results_path": self.results_path,
                "notes": self.notes,
                "reports": {k: r.to_dict() for k, r in self.reports.items()},
                "by_version": {k: r.to_dict() for k, r in self.by_version.items()},
            }
        )
        return data

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as strict JSON."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    def write(self, out: str | Path) -> Path:
        """Write ``report.md`` and ``report.json`` into the folder ``out``; return the first."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(self.to_json(indent=2), encoding="utf-8")
        path = folder / "report.md"
        path.write_text(self.to_markdown(), encoding="utf-8")
        return path


def _pct(value: float) -> str:
    return "undef." if value != value else f"{value:.0%}"
