"""``mast agree --consensus`` and ``--sweep-confidence``: repeated judges and confidence.

Kept apart from :mod:`mast.cli.agree` so that each module stays small; numpy and pandas
load only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mast.traces.model import to_bool

__all__ = ["consensus_command", "render_runs", "self_consistency", "sweep_command"]

_CODE = re.compile(r"^\d{1,2}\.\d{1,2}$")


def consensus_command(args: argparse.Namespace) -> int:
    """Print the self-consistency report of a results file; 1 when no trace has two runs."""
    from mast.agree.consensus import consensus

    report = consensus(args.consensus)
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.to_text())
    if not report.majority:
        print(
            f"mast agree: no trace in {args.consensus} was judged by two runs or more "
            "(mast annotate --samples K or --models A,B makes such runs)",
            file=sys.stderr,
        )
        return 1
    return 0


def self_consistency(path: str | Path) -> str:
    """The consensus table to print below an agreement report, when the results file holds
    several runs of the same traces ("" otherwise)."""
    from mast.agree.consensus import consensus

    report = consensus(path)
    if not report.majority:
        return ""
    return (
        "\n\nThe candidate file holds several runs (samples or models) of the same traces.\n"
        + report.to_text()
    )


def render_runs(reports: Mapping[str, Any], fmt: str, path: str | Path) -> str:
    """Agreement of each judge run in a results file: a summary line per run, then each
    run's full report, then the runs' self-consistency (JSON: all of it as one object)."""
    from mast.agree.consensus import consensus
    from mast.agree.render import ci_text, num, table

    runs = consensus(path)
    if fmt == "json":
        data = {
            "kind": "agreement_runs",
            "candidate": str(path),
            "runs": list(reports),
            "reports": {name: rep.to_dict() for name, rep in reports.items()},
            "consensus": runs.to_dict(),
        }
        return json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False)
    markdown = fmt == "markdown"
    rows = [
        [
            name,
            str(rep.n_traces),
            f"{num(rep.pooled.kappa)} {ci_text(rep.pooled.boot_low, rep.pooled.boot_high)}",
            f"{num(rep.context.macro_kappa)} "
            f"{ci_text(rep.context.macro_low, rep.context.macro_high)}",
            f"{rep.context.cells_scored}/{rep.context.cells_asked}",
        ]
        for name, rep in reports.items()
    ]
    headers = ["run", "traces", "pooled kappa [CI]", "macro kappa [CI]", "cells scored/asked"]
    intro = (
        f"{path} holds {len(reports)} judge runs (samples or models); each is scored on its "
        "own below. --candidate-annotator RUN scores one run, --candidate-annotator majority "
        "their majority vote (ties unknown)."
    )
    parts = [intro, table(headers, rows, fmt="markdown" if markdown else "text", left=1)]
    for name, rep in reports.items():
        title = f"## Run {name}" if markdown else f"== run {name} =="
        parts.append(title + "\n\n" + (rep.to_markdown() if markdown else rep.to_text()))
    if runs.majority:
        parts.append(runs.to_text())
    return "\n\n".join(parts)


def sweep_command(args: argparse.Namespace) -> int:
    """Sweep the confidence cut-off of a results file against reference labels."""
    from mast.agree.label_files import read_labels
    from mast.agree.runs import split_runs
    from mast.agree.sweep import sweep_confidence
    from mast.bulk.store import read_annotations

    if not (args.reference and args.candidate):
        print(
            "usage: mast agree --sweep-confidence --reference LABELS --candidate RESULTS\n"
            "mast agree: error: --sweep-confidence needs --reference and --candidate",
            file=sys.stderr,
        )
        return 2
    if args.fit is not None and not 0 < args.fit < 1:
        print("mast agree: error: --fit must be a fraction between 0 and 1", file=sys.stderr)
        return 2
    reference = _cells(read_labels(args.reference, annotator=args.reference_annotator).source)
    annotations = read_annotations(args.candidate)
    runs = split_runs(annotations)
    if len(runs) > 1:
        chosen = args.candidate_annotator
        if chosen is None:
            print(
                f"note: {args.candidate} holds {len(runs)} judge runs ({', '.join(runs)}); the "
                "sweep pools their cells (--candidate-annotator RUN sweeps one run)",
                file=sys.stderr,
            )
        elif chosen in runs:
            annotations = runs[chosen]
        else:
            print(
                f"mast agree: error: no judge run {chosen!r} in {args.candidate}; it holds "
                f"{', '.join(runs)}",
                file=sys.stderr,
            )
            return 2
    fit = None
    if args.fit is not None:
        shared = sorted({a.trace_id for a in annotations} & set(reference))
        rng = random.Random(args.seed)
        fit = set(rng.sample(shared, max(1, round(len(shared) * args.fit))))
    modes = (
        [m for chunk in args.modes for m in chunk.replace(",", " ").split()] if args.modes else None
    )
    try:
        report = sweep_confidence(reference, annotations, metric=args.metric, modes=modes, fit=fit)
    except ValueError as exc:
        print(f"mast agree: error: {exc}", file=sys.stderr)
        return 1
    print(report.to_text())
    return 0


def _cells(source: Any) -> dict[str, dict[str, bool | None]]:
    """``{trace_id: {code: bool | None}}`` from what :func:`read_labels` returns."""
    if isinstance(source, Mapping):
        return {
            str(t): {str(c): to_bool(v) for c, v in dict(vec).items()} for t, vec in source.items()
        }
    out: dict[str, dict[str, bool | None]] = {}
    for row in source:
        vector = row.get("vector") if isinstance(row.get("vector"), Mapping) else row
        out[str(row["trace_id"])] = {
            str(k): to_bool(v) for k, v in vector.items() if _CODE.match(str(k))
        }
    return out
