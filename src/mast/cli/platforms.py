"""``mast export phoenix|langfuse|langsmith|inspect`` and ``mast pull phoenix|langfuse|langsmith``.

``mast export phoenix RESULTS… --traces INPUT…`` writes one score per judged mode onto the
span / observation / run of its evidence step (``--human labels.csv`` adds the labels of
``mast label export`` as human annotations); ``--dry-run`` prints what would be sent
(``--format json``: one JSON object per score, with the id it would be written under) and
sends nothing. ``mast pull phoenix --out pulled.jsonl`` reads traces from the platform into a
file ``mast annotate`` reads; rerun it to resume.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PLATFORMS = ("phoenix", "langfuse", "langsmith")


def _filters(items: list[str] | None, parser_name: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"mast {parser_name}: --filter {item!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out or None


def _export(args: argparse.Namespace) -> int:
    from mast.analysis.platforms.langfuse import to_langfuse
    from mast.analysis.platforms.langsmith import to_langsmith
    from mast.analysis.platforms.phoenix import to_phoenix
    from mast.analysis.platforms.scores import human_labels

    traces_in = list(args.traces or [])
    human = [h for path in args.human or [] for h in human_labels(path)]
    common: dict[str, Any] = {
        "human": human,
        "dry_run": args.dry_run,
        "redact": not args.no_redact,
    }
    if args.kind == "phoenix":
        report = to_phoenix(
            args.results, traces_in, base_url=args.endpoint, api_key=args.api_key, **common
        )
    elif args.kind == "langfuse":
        report = to_langfuse(args.results, traces_in, host=args.endpoint, **common)
    else:
        report = to_langsmith(
            args.results,
            traces_in,
            api_url=args.endpoint,
            api_key=args.api_key,
            project_id=args.project_id,
            **common,
        )
    if args.dry_run:
        for score in report.scores:
            if args.format == "json":
                print(json.dumps(score.as_dict(), ensure_ascii=False, default=str))
            else:
                where = f"{score.target} {score.target_id}" if score.target_id else "trace"
                print(f"{score.id}  {score.trace_id}  {where}  {score.name} = {score.label}")
    for trace_id, why in report.failed:
        print(
            f"mast export {args.kind}: not written, failed annotation {trace_id}: {why}",
            file=sys.stderr,
        )
    for trace_id in report.unattached:
        print(
            f"mast export {args.kind}: {trace_id} has no {args.kind} ids (give its "
            f"{args.kind} export or `mast pull {args.kind}` output with --traces)",
            file=sys.stderr,
        )
    for score_id, why in report.rejected:
        print(f"mast export {args.kind}: refused {score_id}: {why}", file=sys.stderr)
    print(report.summary(), file=sys.stderr if args.format == "json" else sys.stdout)
    return 1 if report.rejected else 0


def _export_inspect(args: argparse.Namespace) -> int:
    from mast.analysis.platforms.inspect_log import to_inspect

    if args.in_place == (args.out is not None):
        print("mast export inspect: give --out FILE or --in-place (one of them)", file=sys.stderr)
        return 2
    report = to_inspect(args.results, args.log, out=args.out, in_place=args.in_place)
    for trace_id, why in report.failed:
        print(
            f"mast export inspect: not written, failed annotation {trace_id}: {why}",
            file=sys.stderr,
        )
    print(report.summary())
    return 0


def _pull(args: argparse.Namespace) -> int:
    from mast.analysis.platforms.langfuse import pull_langfuse
    from mast.analysis.platforms.langsmith import pull_langsmith
    from mast.analysis.platforms.phoenix import pull_phoenix

    if args.kind == "phoenix":
        report = pull_phoenix(
            args.out,
            project=args.project or "default",
            base_url=args.endpoint,
            api_key=args.api_key,
            start=args.start,
            end=args.end,
            name=args.name,
            attributes=_filters(args.filter, "pull phoenix"),
            limit=args.limit,
        )
    elif args.kind == "langfuse":
        filters = _filters(args.filter, "pull langfuse") or {}
        unknown = set(filters) - {"user_id", "session_id", "environment"}
        if unknown:
            print(
                f"mast pull langfuse: --filter {sorted(unknown)}: Langfuse filters are "
                "user_id, session_id and environment",
                file=sys.stderr,
            )
            return 2
        report = pull_langfuse(
            args.out,
            host=args.endpoint,
            start=args.start,
            end=args.end,
            name=args.name,
            limit=args.limit,
            **filters,
        )
    else:
        if not args.project:
            print("mast pull langsmith: --project NAME is required", file=sys.stderr)
            return 2
        report = pull_langsmith(
            args.out,
            project=args.project,
            api_url=args.endpoint,
            api_key=args.api_key,
            start=args.start,
            filter=args.query,
            limit=args.limit,
        )
    print(report.summary())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], kinds: Any) -> None:
    """Add the platform kinds to ``mast export`` (``kinds``) and the ``pull`` command."""
    for kind in PLATFORMS:
        p = kinds.add_parser(kind, help=f"one {kind} score per judged mode, on its evidence span")
        p.add_argument("results", nargs="+", help="results files (JSON Lines)")
        p.add_argument(
            "--traces",
            nargs="+",
            metavar="INPUT",
            help=f"the judged traces ({kind} exports or `mast pull {kind}` output)",
        )
        p.add_argument("--human", nargs="+", metavar="LABELS", help="`mast label export` files")
        p.add_argument(
            "--no-redact",
            action="store_true",
            help="send rationales and quotes as they are, secrets included (default: redacted)",
        )
        p.add_argument("--endpoint", help=f"{kind} URL (default: the SDK's environment variable)")
        if kind != "langfuse":
            p.add_argument("--api-key", help="API key (default: the SDK's environment variable)")
        if kind == "langsmith":
            p.add_argument(
                "--project-id", help="project (session) id, for traces that do not carry it"
            )
        p.add_argument(
            "--dry-run", action="store_true", help="print what would be sent, send nothing"
        )
        p.add_argument(
            "--format", choices=["text", "json"], default="text", help="--dry-run output"
        )
        p.set_defaults(handler=_export)
    ins = kinds.add_parser("inspect", help="MAST scores into an Inspect .eval log (sample scores)")
    ins.add_argument("results", nargs="+", help="results files (JSON Lines)")
    ins.add_argument("--log", required=True, type=Path, help="the Inspect log the traces came from")
    ins.add_argument("--out", type=Path, help="write a copy with the scores here")
    ins.add_argument("--in-place", action="store_true", help="rewrite --log itself")
    ins.set_defaults(handler=_export_inspect)

    pull = sub.add_parser(
        "pull",
        help="read traces from Phoenix, Langfuse or LangSmith into a JSONL mast annotate reads",
        description=(
            "Pull traces from a platform's API into JSON Lines that `mast annotate` reads, "
            "keeping the platform ids so `mast export` attaches scores to the right spans. "
            "Resumable: run the same command again after a stop."
        ),
    )
    pk = pull.add_subparsers(dest="kind", required=True, metavar="{phoenix,langfuse,langsmith}")
    for kind in PLATFORMS:
        p = pk.add_parser(kind, help=f"traces from {kind}")
        p.add_argument("--out", required=True, type=Path, help="JSON Lines file to write")
        p.add_argument("--endpoint", help=f"{kind} URL (default: the SDK's environment variable)")
        if kind != "langfuse":
            p.add_argument("--api-key", help="API key (default: the SDK's environment variable)")
        if kind != "langfuse":  # Langfuse keys belong to one project
            p.add_argument(
                "--project", help="project name" + (" (required)" if kind == "langsmith" else "")
            )
        p.add_argument("--start", help="root spans that started at or after (ISO 8601)")
        if kind != "langsmith":
            p.add_argument("--end", help="root spans that started before (ISO 8601)")
            p.add_argument("--name", help="root span / observation name")
            p.add_argument(
                "--filter",
                action="append",
                metavar="KEY=VALUE",
                help="phoenix: a root span attribute; langfuse: user_id, session_id, environment",
            )
        else:
            p.add_argument(
                "--query", help='a LangSmith filter on root runs, e.g. has(tags, "prod")'
            )
        p.add_argument("--limit", type=int, default=1000, help="at most this many traces (1000)")
        p.set_defaults(handler=_pull)
