"""``mast export``: judged results out to OpenTelemetry, CSV or Parquet.

``mast export otel RESULTS… --traces INPUTS… --out events.jsonl`` writes one
``gen_ai.evaluation.result`` event per judged mode (OTLP JSON, as the OTel file exporter
writes it); ``--endpoint http://collector:4318`` sends them over OTLP/HTTP instead.
``mast export csv|parquet RESULTS… --out FILE`` writes one row per annotation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded by the command only: `mast --help` stays fast
    from mast.traces.model import Trace


def _traces(paths: list[str] | None) -> list[Trace]:
    from mast.errors import TraceFormatError
    from mast.traces.loaders import load_traces

    if not paths:
        return []
    errors: list[TraceFormatError] = []
    traces = list(load_traces(paths, on_error="skip", errors=errors))
    for err in errors:
        print(f"mast export: skipped a trace: {err}", file=sys.stderr)
    return traces


def _runs(paths: list[str]) -> dict[str, list[object]]:
    from mast.analysis.report_sections import _runs as runs_of

    return runs_of([Path(p) for p in paths])  # type: ignore[return-value]


def _cmd_otel(args: argparse.Namespace) -> int:
    from mast.analysis.otel_export import export_otel

    if (args.out is None) == (args.endpoint is None):
        print("mast export otel: give --out FILE or --endpoint URL (one of them)", file=sys.stderr)
        return 2
    headers = {}
    for item in args.header or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"mast export otel: --header {item!r} is not KEY=VALUE", file=sys.stderr)
            return 2
        headers[key.strip()] = value.strip()
    traces = _traces(args.traces)
    annotations = [a for anns in _runs(args.results).values() for a in anns]
    summary = export_otel(
        annotations,  # type: ignore[arg-type]
        traces=traces,
        out=args.out,
        endpoint=args.endpoint,
        headers=headers,
        service_name=args.service_name,
        error_events=not args.no_error_events,
        redact=not args.no_redact,
    )
    where = args.out or args.endpoint
    print(
        f"{summary.events} gen_ai.evaluation.result event(s) from {summary.annotations} "
        f"annotation(s) to {where}; {summary.attached} attached to the evaluated span, "
        f"{summary.unknown_cells} unknown mode(s) without an event, "
        f"{len(summary.skipped)} unusable record(s) skipped "
        f"({summary.error_events} reported as error.type events)"
    )
    if traces == [] and summary.events:
        print(
            "note: without --traces no event carries a span context; give the trace files "
            "to attach the events to the spans they evaluate",
            file=sys.stderr,
        )
    return 0


def _cmd_table(args: argparse.Namespace) -> int:
    from mast.analysis.export_tables import export_table

    frame = export_table(
        _runs(args.results),  # type: ignore[arg-type]
        args.out,
        traces=_traces(args.traces),
        format=args.kind,
        redact=not args.no_redact,
    )
    print(f"{len(frame)} row(s) written to {args.out}")
    return 0


def _no_redact(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--no-redact",
        action="store_true",
        help=f"write {what} as they are, secrets included (default: redacted, as the "
        "judge's prompt is)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` subcommand to the ``mast`` parser."""
    p = sub.add_parser(
        "export",
        help="export results: OpenTelemetry evaluation events, CSV or Parquet",
        description=(
            "Export judged results: 'otel' writes one gen_ai.evaluation.result event per "
            "judged mode (OTLP JSON file or an OTLP/HTTP endpoint; needs the [otel] extra), "
            "'csv' and 'parquet' one row per annotation; 'phoenix', 'langfuse' and "
            "'langsmith' one score per judged mode on the evaluated span (the [phoenix], "
            "[langfuse], [langsmith] extras); 'inspect' sample scores into an .eval log."
        ),
    )
    kinds = p.add_subparsers(
        dest="kind",
        required=True,
        metavar="{otel,csv,parquet,phoenix,langfuse,langsmith,inspect}",
    )
    otel = kinds.add_parser("otel", help="OpenTelemetry GenAI evaluation events")
    otel.add_argument("results", nargs="+", help="results files (JSON Lines)")
    otel.add_argument(
        "--traces",
        nargs="+",
        metavar="INPUT",
        help="the judged traces, to attach events to their spans",
    )
    otel.add_argument("--out", type=Path, help="OTLP JSON Lines file to write")
    otel.add_argument("--endpoint", help="OTLP/HTTP collector URL (e.g. http://localhost:4318)")
    otel.add_argument(
        "--header",
        action="append",
        metavar="KEY=VALUE",
        help="HTTP header for the endpoint (repeatable), e.g. an API key",
    )
    otel.add_argument("--service-name", default="mast", help="resource service.name")
    otel.add_argument(
        "--no-error-events",
        action="store_true",
        help="no error.type event for a failed annotation (default: one each)",
    )
    _no_redact(otel, "the explanations (the judge's rationales)")
    otel.set_defaults(handler=_cmd_otel)
    for kind in ("csv", "parquet"):
        table = kinds.add_parser(kind, help=f"one row per annotation, as {kind}")
        table.add_argument("results", nargs="+", help="results files (JSON Lines)")
        table.add_argument(
            "--traces",
            nargs="+",
            metavar="INPUT",
            help="the judged traces, to add system/model/benchmark/outcome",
        )
        table.add_argument("--out", type=Path, required=True, help=f"{kind} file to write")
        _no_redact(table, "the error, system and benchmark columns")
        table.set_defaults(handler=_cmd_table)
    from mast.cli.platforms import register as register_platforms

    register_platforms(sub, kinds)
