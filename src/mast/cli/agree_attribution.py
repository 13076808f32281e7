"""``mast agree --attribution``: who/when accuracy of a results file against labelled traces.

The reference is trace files that carry attribution labels (Who&When runs: ``mistake_agent``
and ``mistake_step``), AgentRx data (``agentrx`` for the copy bundled with mast, or its
folder: the root cause is scored as agent and step, and any-failure localisation against
every labelled failure step), or a TRAIL download (scored with TRAIL's location, joint and
category-F1 measures); the candidate is a results file whose records name a decisive error
(``mast annotate … --attribution METHOD``, or an ordinary run: the judge's answer names one
too). Prints agent and step accuracy (exact, and within ``--within`` steps) with bootstrap
intervals, overall and per subset and system, and what was excluded and why.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_arguments", "run"]


def _alias(text: str) -> tuple[str, str]:
    name, sep, agent = text.partition("=")
    if not sep or not name.strip() or not agent.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=AGENT, got {text!r}")
    return name.strip(), agent.strip()


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--attribution`` options of ``mast agree``."""
    p.add_argument(
        "--attribution",
        action="store_true",
        help="score who/when: --reference traces with attribution labels (Who&When), "
        "--candidate a results file with decisive errors",
    )
    p.add_argument(
        "--within",
        type=int,
        default=1,
        metavar="K",
        help="with --attribution: also count steps at most K apart (default 1)",
    )
    p.add_argument(
        "--agent-alias",
        action="append",
        type=_alias,
        default=[],
        metavar="NAME=AGENT",
        help="with --attribution: treat agent NAME as AGENT (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``mast agree --attribution``; returns the exit status."""
    from mast.agree.attribution import attribution_accuracy, attribution_labels
    from mast.bulk.store import read_annotations
    from mast.cli.inputs import load_inputs

    if not (args.reference and args.candidate) or args.among:
        print(
            "usage: mast agree --attribution --reference TRACES --candidate RESULTS\n"
            "mast agree: error: --attribution needs --reference (labelled traces) and "
            "--candidate (a results file)",
            file=sys.stderr,
        )
        return 2
    if args.within < 0:
        print(f"mast agree: error: --within must be >= 0, got {args.within}", file=sys.stderr)
        return 2
    if str(args.reference) == "agentrx":
        from mast.traces.agentrx import load_agentrx

        traces = load_agentrx()  # the copy bundled with mast
    else:
        traces = list(load_inputs(str(args.reference)))
    if any("trail" in t.metadata for t in traces):
        return _trail(args, traces)
    labels = attribution_labels(traces)
    if not labels:
        print(
            f"mast agree: error: no trace in {args.reference} carries attribution labels "
            "(Who&When's mistake_agent / mistake_step)",
            file=sys.stderr,
        )
        return 2
    records = read_annotations(args.candidate)
    report = attribution_accuracy(
        records,
        labels,
        within=args.within,
        aliases=dict(args.agent_alias),
        bootstrap=args.bootstrap,
        confidence=args.confidence,
        seed=args.seed,
    )
    if args.format == "json":
        print(report.to_json(indent=2))
    else:
        print(report.to_text())
    if not report.rows:
        print(
            "mast agree: no trace is both labelled and in the results file (compare the trace ids)",
            file=sys.stderr,
        )
        return 1
    return 0


def _trail(args: argparse.Namespace, traces: list[Any]) -> int:
    """TRAIL's measures of a results file against a TRAIL download."""
    from mast.agree.trail import trail_predictions, trail_scores
    from mast.bulk.store import read_annotations

    records = [a for a in read_annotations(args.candidate) if a.status == "ok"]
    report = trail_scores(trail_predictions(records, traces), traces)
    print(report.to_json(indent=2) if args.format == "json" else report.to_text())
    if not any(r["predicted"] for r in report.rows):
        print(
            "mast agree: no TRAIL trace is in the results file (compare the trace ids)",
            file=sys.stderr,
        )
        return 1
    return 0
