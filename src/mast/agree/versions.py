"""Human agreement per taxonomy version of the labels: :func:`agreement_by_version`.

Private: import the names from :mod:`mast.agree` (or :mod:`mast`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from mast.agree.among import AmongReport, agreement_among
from mast.agree.base import (
    _VERSION_ORDER,
    CiMethod,
    Tie,
    _frame_records,
    _outside_mast,
)
from mast.agree.render import ci_text, json_safe, num, table
from mast.agree.stats import UndefinedMetricWarning
from mast.agree.table import natural_key
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy
from mast.traces.model import Trace

# ----------------------------------------------------------------------- label versions


OVERALL = "overall"
"""Key of the report over all traces in :class:`VersionReport`."""


@dataclass(frozen=True, eq=False, repr=False)
class VersionReport:
    """Among-annotator agreement per taxonomy version of the labels, and overall.

    ``reports`` maps each version (``"round1"``, ``"rounds2-3"``, ``"final"``, then any
    other, then ``"overall"``) to its :class:`AmongReport`, computed after mapping the draft
    labels onto final codes.  ``unmapped`` lists the draft modes that have no final code
    (they are in no statistic): per version and draft mode, the traces carrying it and how
    many of them each annotator marked present.
    """

    reports: dict[str, AmongReport]
    unmapped: pd.DataFrame
    versions: dict[str, str]
    """Trace id -> the version its labels used (``"mixed"`` if annotators differ)."""

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{v}: {rep.n_traces} traces, kappa {num(rep.pooled.fleiss)}"
            for v, rep in self.reports.items()
        )
        return f"<VersionReport {parts}>"

    def summary(self) -> pd.DataFrame:
        """One row per version: traces, pooled and macro Fleiss' kappa and alpha, with CIs."""
        records = []
        for version, rep in self.reports.items():
            p = rep.pooled
            records.append(
                {
                    "version": version,
                    "traces": rep.n_traces,
                    "items": p.n_items,
                    "fleiss": p.fleiss,
                    "fleiss_low": p.fleiss_low,
                    "fleiss_high": p.fleiss_high,
                    "alpha": p.alpha,
                    "alpha_low": p.alpha_low,
                    "alpha_high": p.alpha_high,
                    "ac1": p.ac1,
                    "macro_fleiss": float(rep.macro["fleiss"]),
                    "macro_alpha": float(rep.macro["alpha"]),
                    "modes_undefined": int(rep.per_mode["fleiss"].isna().sum()),
                }
            )
        frame: pd.DataFrame = pd.DataFrame.from_records(records).set_index("version")
        return frame

    def to_frame(self) -> pd.DataFrame:
        """Every version's :meth:`AmongReport.to_frame`, stacked with a ``version`` level."""
        return pd.concat({v: rep.to_frame() for v, rep in self.reports.items()}, names=["version"])

    def _render(self, fmt: Literal["text", "markdown"], detail: bool) -> str:
        first = next(iter(self.reports.values()))
        level = f"{first.confidence:.0%} CI"
        rows = [
            [
                str(version),
                str(int(r["traces"])),
                str(int(r["items"])),
                num(r["fleiss"]),
                ci_text(r["fleiss_low"], r["fleiss_high"]),
                num(r["alpha"]),
                ci_text(r["alpha_low"], r["alpha_high"]),
                num(r["ac1"]),
                num(r["macro_fleiss"]),
                str(int(r["modes_undefined"])),
            ]
            for version, r in self.summary().iterrows()
        ]
        headers = [
            "labels",
            "traces",
            "items",
            "Fleiss k",
            level,
            "alpha",
            "alpha CI",
            "AC1",
            "macro k",
            "k undef.",
        ]
        parts = [
            "Among-annotator agreement per taxonomy version (pooled over trace x mode cells, "
            "labels mapped to final codes)",
            table(headers, rows, fmt=fmt, left=1),
        ]
        if len(self.unmapped):
            annotators = [
                c for c in self.unmapped.columns if c not in ("version", "draft_mode", "traces")
            ]
            unmapped_rows = [
                [str(r["version"]), str(r["draft_mode"]), str(r["traces"])]
                + [str(r[a]) for a in annotators]
                for _, r in self.unmapped.iterrows()
            ]
            parts.append(
                "Draft modes with no final code (in no statistic; counts of traces marked "
                "present per annotator):"
            )
            parts.append(
                table(
                    ["labels", "draft mode", "traces", *annotators],
                    unmapped_rows,
                    fmt=fmt,
                    left=2,
                )
            )
        if detail:
            for version, rep in self.reports.items():
                heading = f"## {version}" if fmt == "markdown" else f"=== {version} ==="
                parts.append(heading + "\n\n" + rep._render(fmt))
        return "\n\n".join(parts)

    def to_text(self, *, detail: bool = False) -> str:
        """Per-version summary and unmapped draft modes; ``detail`` adds each full report."""
        return self._render("text", detail)

    def to_markdown(self, *, detail: bool = False) -> str:
        """:meth:`to_text` as markdown."""
        return self._render("markdown", detail)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def to_dict(self) -> dict[str, Any]:
        """Every version's report, the unmapped draft modes and the trace versions, as JSON."""
        data: dict[str, Any] = json_safe(
            {
                "kind": "agreement_by_version",
                "summary": _frame_records(self.summary()),
                "reports": {v: rep.to_dict() for v, rep in self.reports.items()},
                "unmapped": self.unmapped.to_dict("records"),
                "versions": self.versions,
            }
        )
        return data

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as strict JSON (undefined values are ``null``)."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)


def _trace_version(trace: Trace, annotators: Sequence[str]) -> str:
    found = {
        trace.label_sources[a].taxonomy_version or "unknown"
        for a in annotators
        if a in trace.labels and a in trace.label_sources
    }
    if not found:
        return "unknown"
    return found.pop() if len(found) == 1 else "mixed"


def agreement_by_version(
    traces: Iterable[Trace],
    *,
    annotators: Sequence[str] | None = None,
    modes: Iterable[str] | None = None,
    tie: Tie = "unknown",
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    ci: CiMethod = "percentile",
    taxonomy: Taxonomy | str | Path | None = None,
    merge_verification: bool = True,
    resample: Literal["auto", "traces", "blocks"] = "auto",
) -> VersionReport:
    """Among-annotator agreement per taxonomy version of the labels and overall.

    Made for the MAD human-labelled file, whose rounds used three versions of the taxonomy
    (``trace.label_sources[annotator].taxonomy_version``: ``"round1"``, ``"rounds2-3"``,
    ``"final"``); the loader has already mapped every draft label onto the final code with
    the same definition, and kept the draft modes without one in
    ``label_sources[annotator].unmapped`` — listed here, in no statistic.  Options are those
    of :func:`agreement_among`.

    >>> import mast, warnings
    >>> human = [t for t in mast.traces.datasets.example_traces() if t.format == "mad-human"]
    >>> with warnings.catch_warnings():  # one trace per version: many values are undefined
    ...     warnings.simplefilter("ignore", mast.agree.stats.UndefinedMetricWarning)
    ...     rep = agreement_by_version(human, modes=["1.5", "3.2", "3.3"], bootstrap=0)
    >>> list(rep.reports), rep.reports["final"].n_traces
    (['round1', 'rounds2-3', 'final', 'overall'], 1)
    """
    traces = list(traces)
    if not all(isinstance(t, Trace) for t in traces):
        raise StatsInputError("agreement_by_version needs a list of traces (mast.Trace)")
    names = (
        list(annotators)
        if annotators is not None
        else sorted({a for t in traces for a in t.labels}, key=natural_key)
    )
    versions = {t.id: _trace_version(t, names) for t in traces}
    found = list(dict.fromkeys(versions.values()))
    order = [v for v in _VERSION_ORDER if v in found] + sorted(
        v for v in found if v not in _VERSION_ORDER
    )
    options: dict[str, Any] = {
        "annotators": names,
        "modes": modes,
        "tie": tie,
        "bootstrap": bootstrap,
        "seed": seed,
        "confidence": confidence,
        "ci": ci,
        "taxonomy": taxonomy,
        "merge_verification": merge_verification,
        "resample": resample,
    }
    groups = {v: [t for t in traces if versions[t.id] == v] for v in order}
    groups[OVERALL] = traces
    reports: dict[str, AmongReport] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        for version, group in groups.items():
            reports[version] = agreement_among(group, **options)
    undefined = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    for w in caught:
        if not issubclass(w.category, UndefinedMetricWarning):
            warnings.warn(w.message, w.category, stacklevel=2)
    if undefined:
        versions_hit = [v for v, rep in reports.items() if rep.per_mode["fleiss"].isna().any()]
        warnings.warn(
            f"agreement by version: some statistics are undefined (NaN) in {versions_hit}; "
            f"first: {undefined[0]}",
            UndefinedMetricWarning,
            stacklevel=_outside_mast(),
        )
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for trace in traces:
        for a in names:
            source = trace.label_sources.get(a)
            if source is None or a not in trace.labels:
                continue
            for draft, value in source.unmapped.items():
                rec = records.setdefault(
                    (versions[trace.id], draft),
                    {"version": versions[trace.id], "draft_mode": draft, "traces": set()}
                    | {n: 0 for n in names},
                )
                rec["traces"].add(trace.id)
                rec[a] += int(value is True)
    unmapped = pd.DataFrame.from_records(
        [{**r, "traces": len(r["traces"])} for r in records.values()],
        columns=["version", "draft_mode", "traces", *names],
    )
    return VersionReport(reports=reports, unmapped=unmapped, versions=versions)
