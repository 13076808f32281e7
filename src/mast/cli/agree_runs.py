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

__all__ = ["consensus_command", "self_consistency", "sweep_command"]

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


def sweep_command(args: argparse.Namespace) -> int:
    """Sweep the confidence cut-off of a results file against reference labels."""
    from mast.agree.label_files import read_labels
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
