"""``mast label``: collect human labels in a local web app (new, serve, export, status)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mast.label.sampling import STRATEGIES  # plain Python: the heavy modules load per command

_NOTES = {
    "random": "a simple random sample: label shares estimate the whole input directly",
    "stratified": (
        "systems x outcomes were sampled equally, not in proportion: weight each trace by "
        "its weight (mast label export --weights FILE) to estimate prevalence"
    ),
    "disagreement": (
        "NOT representative: traces where judges disagree were favoured; use the weights "
        "(mast label export --weights FILE) for any prevalence estimate"
    ),
}


def _cmd_new(args: argparse.Namespace) -> int:
    from mast.bulk.store import read_annotations
    from mast.errors import TraceFormatError
    from mast.label.queue import create_queue
    from mast.traces.loaders import load_traces

    errors: list[TraceFormatError] = []
    traces = list(load_traces(args.traces, on_error="skip", errors=errors))
    for err in errors:
        print(f"mast label: skipped a trace: {err}", file=sys.stderr)
    results = [a for path in args.results or [] for a in read_annotations(path)]
    queue = create_queue(
        args.queue,
        traces,
        results=results,
        sample=args.sample,
        strategy=args.strategy,
        seed=args.seed,
        taxonomy=args.taxonomy,
    )
    print(f"{queue.path}: {queue.size} of {queue.meta['population']} traces to label")
    print(f"sample: {_NOTES[queue.meta['strategy']]}")
    print(f"next: mast label serve {queue.path}")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from mast.label.app import serve

    serve(
        args.queue,
        host=args.host,
        port=args.port,
        labeller=args.labeller,
        show_judge=args.show_judge,
        token=args.token,
        allow_hosts=args.allow_host,
    )
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from mast.label.export import write_labels, write_weights
    from mast.label.queue import LabelQueue

    queue = LabelQueue(args.queue)
    rows = write_labels(queue, args.out)
    print(f"{args.out}: {rows} rows (one per trace and labeller; unsure = empty = unknown)")
    if args.weights:
        write_weights(queue, args.weights)
        print(f"{args.weights}: sampling weights of {queue.size} traces")
    return 0 if rows else 1


def _cmd_status(args: argparse.Namespace) -> int:
    from mast.label.queue import LabelQueue

    queue = LabelQueue(args.queue)
    meta = queue.meta
    progress = queue.progress()
    if args.format == "json":
        labellers = {
            name: {"labelled": done, "submissions": len(queue.submissions(name))}
            for name, done in sorted(progress.items())
        }
        info = {k: meta.get(k) for k in ("population", "strategy", "seed", "taxonomy")}
        print(json.dumps({"queue": str(queue.path), "size": queue.size, **info,
                          "labellers": labellers}, indent=2))  # fmt: skip
        return 0
    print(
        f"{queue.path}: {queue.size} traces (drawn from {meta['population']}, "
        f"strategy {meta['strategy']}, seed {meta['seed']}; taxonomy {meta['taxonomy']})"
    )
    print(f"sample: {_NOTES.get(meta['strategy'], meta['strategy'])}")
    if not progress:
        print("no labels yet")
    for name, done in sorted(progress.items()):
        versions = len(queue.submissions(name))
        print(f"  {name}: {done}/{queue.size} labelled ({versions} submissions)")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``label`` subcommand group to the ``mast`` parser."""
    p = sub.add_parser(
        "label",
        help="collect human labels: a queue of traces and a local labelling app",
        description="Pick traces to label, label them blind in the browser, export for mast agree.",
    )
    cmds = p.add_subparsers(dest="label_command", required=True, metavar="COMMAND")

    new = cmds.add_parser("new", help="create a queue (SQLite file) from traces")
    new.add_argument("queue", type=Path, help="queue file to create, e.g. queue.db")
    new.add_argument("--traces", nargs="+", required=True, metavar="INPUT", help="trace files")
    new.add_argument("--results", nargs="+", metavar="RESULTS", help="judge results (JSONL)")
    new.add_argument("--sample", type=int, metavar="N", help="how many traces (default: all)")
    new.add_argument("--strategy", choices=STRATEGIES, default="random", help="default: random")
    new.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed (default 0)")
    new.add_argument("--taxonomy", metavar="NAME|PATH", help="taxonomy (default: MAST)")
    new.set_defaults(handler=_cmd_new)

    serve = cmds.add_parser("serve", help="start the labelling app")
    serve.add_argument("queue", type=Path)
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="listen address (default 127.0.0.1; any other requires an access token)",
    )
    serve.add_argument("--labeller", metavar="NAME", help="label as NAME (default: ask)")
    serve.add_argument("--token", help="access token (default: random when --host is not local)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (default: loopback names and --host)",
    )
    serve.add_argument(
        "--show-judge",
        action="store_true",
        help="show the judge's answers before submitting (adjudication; default: blind)",
    )
    serve.set_defaults(handler=_cmd_serve)

    export = cmds.add_parser("export", help="write the labels as a table mast agree reads")
    export.add_argument("queue", type=Path)
    export.add_argument("--out", type=Path, required=True, help="labels.csv or labels.jsonl")
    export.add_argument("--weights", type=Path, help="also write trace_id,weight (CSV)")
    export.set_defaults(handler=_cmd_export)

    status = cmds.add_parser("status", help="progress per labeller")
    status.add_argument("queue", type=Path)
    status.add_argument("--format", choices=["text", "json"], default="text")
    status.set_defaults(handler=_cmd_status)
