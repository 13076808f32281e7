"""``mast annotate --engine ray``: the same command on a Ray cluster (see
:mod:`mast.bulk.distributed`). ``--out`` is a folder of result shards, one per worker;
every results-taking command reads it, and ``mast merge`` writes it as one file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mast.cli._shown import shown_lines
from mast.judge.judge import Judge

__all__ = ["annotate_on_ray"]


def annotate_on_ray(args: argparse.Namespace, judge: Judge, options: dict[str, Any]) -> int:
    """Run ``mast annotate`` with the Ray engine; ``options`` are the run settings the local
    engine takes too (out, limits, cache, retries, progress). Returns the exit code."""
    from mast.bulk.distributed import annotate

    if args.batch:
        print(
            "mast: error: --batch is not available with --engine ray (batch jobs already run "
            "on the provider's side); drop one of them",
            file=sys.stderr,
        )
        return 2
    # An interrupt is reported by the caller, as for the local engine.
    run = annotate(
        args.inputs,
        judge,
        workers=args.workers,
        address=args.address,
        format=args.format,
        ground_truth=args.ground_truth,
        progress_stream=sys.stderr,
        **options,
    )
    summary = run.summary
    print(shown_lines(summary.format()))  # it names traces: ids come from the input
    if run.unreadable:
        print(f"{run.unreadable} input record(s) or file(s) could not be read")
        for example in run.unreadable_examples:
            print(f"mast: skipped unreadable input: {example}", file=sys.stderr)
    if run.no_ground_truth:
        shown = ", ".join(run.no_ground_truth[:5]) + (" …" if len(run.no_ground_truth) > 5 else "")
        print(
            f"{len(run.no_ground_truth)} ITBench trial(s) without ground truth (outcome "
            f"unknown): {shown}; pass --ground-truth PATH"
        )
    if run.dead_workers:
        print(f"worker(s) {', '.join(map(str, run.dead_workers))} died during the run")
    if run.units_left:
        print(f"{run.units_left} unit(s) of input left undone: run the same command again")
    print(f"results: {args.out} (one shard per worker; `mast merge {args.out} -o FILE`)")
    if args.samples > 1:
        print(f"self-consistency of the samples: mast agree --consensus {args.out}")
    if summary.stopped:
        print(f"mast: stopped early: {shown_lines(summary.stop_message)}", file=sys.stderr)
    if summary.stopped and summary.done + summary.failed_total == 0:
        return 1
    if summary.stopped == "budget" and summary.not_attempted:
        from mast.errors import BudgetExceeded

        return BudgetExceeded.exit_code
    return 0 if summary.done or summary.resumed else 1
