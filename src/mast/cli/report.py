"""``mast report``: write the HTML report of one or more results files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded by the command only: `mast --help` stays fast
    from mast.traces.model import Trace


def _cmd_report(args: argparse.Namespace) -> int:
    from mast.agree.label_files import read_labels
    from mast.analysis.report import write_report
    from mast.errors import TraceFormatError
    from mast.traces.loaders import load_traces

    traces: list[Trace] = []
    if args.traces:
        errors: list[TraceFormatError] = []
        traces = list(load_traces(args.traces, on_error="skip", errors=errors))
        for err in errors:
            print(f"mast report: skipped a trace: {err}", file=sys.stderr)
    reference = None
    name = "reference"
    if args.reference:
        loaded = read_labels(
            args.reference, annotator=args.reference_annotator, option="--reference-annotator"
        )
        reference, name = loaded.source, loaded.name
        for note in loaded.notes:
            print(f"note: {note}", file=sys.stderr)
    path = write_report(
        [Path(p) for p in args.results],
        args.out,
        traces=traces,
        reference=reference,
        reference_name=name,
        title=args.title,
        inputs=args.results,
        bootstrap=args.bootstrap,
        seed=args.seed,
        ci=args.ci,
        resample=args.resample,
        redact=not args.no_redact,
    )
    print(f"report written to {path}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` subcommand to the ``mast`` parser."""
    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report from results files",
        description=(
            "A self-contained HTML page from results files: run summary, failure profiles, "
            "co-occurrence, outcome analysis (needs --traces with known outcomes), agreement "
            "(with --reference), runs compared (with several results files) and a trace "
            "explorer: a sortable, filterable list and, per trace, labels side by side and "
            "the steps with flagged modes marked at their evidence."
        ),
    )
    p.add_argument("results", nargs="+", help="results files (JSON Lines); one run per file")
    p.add_argument("--traces", nargs="+", metavar="FILE", help="the annotated trace files")
    p.add_argument("--reference", metavar="LABELS", help="reference labels for agreement")
    p.add_argument(
        "--reference-annotator",
        metavar="NAME",
        help="whose labels in --reference ('majority': the annotators' majority; ties unknown)",
    )
    p.add_argument("--out", required=True, type=Path, help="HTML file to write")
    p.add_argument("--title", default=None, help="page title")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed")
    p.add_argument(
        "--ci",
        choices=("bootstrap", "wilson"),
        default="bootstrap",
        help="interval of the prevalence tables: bootstrap over traces (default) or Wilson's "
        "score interval (informative at 0%% and 100%%, where the bootstrap collapses)",
    )
    p.add_argument(
        "--resample",
        choices=["auto", "traces", "blocks"],
        default="auto",
        help="bootstrap unit of the agreement section, as in mast agree",
    )
    p.add_argument(
        "--no-redact",
        action="store_true",
        help="show trace text and the judges' quotes as they are, secrets included (default: "
        "redacted as the judge's prompt is; the page then says it is not redacted)",
    )
    p.set_defaults(handler=_cmd_report)
