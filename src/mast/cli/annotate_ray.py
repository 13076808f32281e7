"""``mast annotate --engine ray``: the same command on a Ray cluster (see
:mod:`mast.bulk.distributed`). ``--out`` is a folder of result shards, one per worker;
every results-taking command reads it, and ``mast merge`` writes it as one file."""

from __future__ import annotations

import argparse
import sys

from mast.judge.judge import Judge

__all__ = ["annotate_on_ray"]


def annotate_on_ray(args: argparse.Namespace, judge: Judge) -> int:
    """Run ``mast annotate`` with the Ray engine; returns the exit code."""
    from mast.bulk.distributed import annotate
    from mast.bulk.types import RetryPolicy

    if args.batch:
        print(
            "mast: error: --batch is not available with --engine ray (batch jobs already run "
            "on the provider's side); drop one of them",
            file=sys.stderr,
        )
        return 2
    cache: str | bool = False if args.no_cache else (args.cache or True)
    try:
        run = annotate(
            args.inputs,
            judge,
            out=args.out,
            workers=args.workers,
            address=args.address,
            concurrency=args.concurrency,
            rpm=args.rpm,
            tpm=args.tpm,
            budget_usd=args.budget,
            retry_failed=args.retry_failed,
            cache=cache,
            retry=RetryPolicy(max_attempts=args.max_attempts),
            format=args.format,
            progress=not args.quiet,
            progress_stream=sys.stderr,
            on_stop="return",
        )
    except KeyboardInterrupt:
        print(
            f"mast: interrupted; records written so far are in {args.out}. "
            "Run the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    summary = run.summary
    print(summary.format())
    if run.unreadable:
        print(f"{run.unreadable} input record(s) or file(s) could not be read")
        for example in run.unreadable_examples:
            print(f"mast: skipped unreadable input: {example}", file=sys.stderr)
    if run.dead_workers:
        print(f"worker(s) {', '.join(map(str, run.dead_workers))} died during the run")
    if run.units_left:
        print(f"{run.units_left} unit(s) of input left undone: run the same command again")
    print(f"results: {args.out} (one shard per worker; `mast merge {args.out} -o FILE`)")
    if summary.stopped:
        print(f"mast: stopped early: {summary.stop_message}", file=sys.stderr)
    if summary.stopped and summary.done + summary.failed_total == 0:
        return 1
    return 0 if summary.done or summary.resumed else 1
