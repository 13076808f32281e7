"""``mast agree``: agreement of a judge with people, or among several annotators.

Kept light at import time (numpy and pandas load only when the command runs), so that
``mast --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from mast.cli.agree_attribution import add_arguments as add_attribution_arguments

_T = TypeVar("_T")

_DESCRIPTION = """\
Agreement of a candidate (e.g. an LLM judge) with a reference (e.g. human labels), or among
several annotators (--among). Prints a per-mode table with bootstrap confidence intervals,
the pooled kappa over all trace x mode cells, and everything that was left out and why
(unknown labels, failed annotations, traces in one source only) -- never counted as "no".

Inputs: results files (JSONL of annotations), trace files with labels (MAD files…; pick the
annotator with --reference-annotator / --candidate-annotator), or label tables (CSV/TSV/JSONL,
one row per trace with a trace_id column and one column per code).

examples:
  mast agree --reference human.csv --candidate results.jsonl
  mast agree --reference MAD_human.json --reference-annotator annotator_1 \\
             --candidate MAD_human.json --candidate-annotator annotator_2
  mast agree --reference MAD_human.json --reference-annotator majority \
             --candidate results.jsonl
  mast agree --among MAD_human.json --by-version
  mast agree --attribution --reference Who_and_When/ --candidate attribution.jsonl

Beside every pooled kappa: the macro kappa (mean over the modes where the reference has both
classes, the same number as the table's macro row), coverage (cells scored / asked), two
baselines on the same cells (a constant judge flagging the most frequent modes; a judge
flagging each mode at random at its reference prevalence) and kappa with unknown read as
"no". No common trace id between the two sources is an error (exit 2).
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``agree`` subcommand to the ``mast`` parser."""
    p = sub.add_parser(
        "agree",
        help="agreement with a reference (kappa, AC1, F1… with CIs), or among annotators",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--reference", metavar="FILE", help="reference labels (e.g. human)")
    p.add_argument("--candidate", metavar="FILE", help="candidate labels (e.g. the judge)")
    p.add_argument(
        "--reference-annotator",
        metavar="NAME",
        help="whose labels in --reference ('majority': the annotators' majority; ties unknown)",
    )
    p.add_argument("--candidate-annotator", metavar="NAME", help="whose labels in --candidate")
    p.add_argument(
        "--among",
        nargs="+",
        metavar="FILE",
        help="agreement among annotators: one file holding several of them, or one per annotator",
    )
    p.add_argument("--annotators", metavar="A,B,C", help="with --among: which annotators")
    p.add_argument(
        "--resample",
        choices=["auto", "traces", "blocks"],
        default="auto",
        help="bootstrap unit (as resample= in Python): auto (default) resamples distinct label "
        "blocks when traces of the reference (or --among) file carry identical blocks from "
        "every annotator (copied labels), else traces",
    )
    p.add_argument(
        "--by-version",
        action="store_true",
        help="with --among on traces: the full table for each taxonomy version of the labels",
    )
    p.add_argument(
        "--id-map",
        metavar="FILE",
        help="rename the candidate's trace ids: a two-column CSV/TSV (id in its label table, "
        "trace id) or a JSON object",
    )
    p.add_argument(
        "--id-pattern",
        metavar="FROM=TO",
        help="rename the candidate's trace ids matching FROM, e.g. 'mad-{n}=mad-human/{n}'",
    )
    p.add_argument(
        "--label-version",
        action="append",
        default=[],
        metavar="FILE",
        help="a label-version YAML (shaped like taxonomy/versions/round1.yaml) that replaces "
        "the bundled mapping of its version when MAD human records are read (repeatable)",
    )
    p.add_argument("--modes", nargs="+", metavar="CODE", help="codes to compare (default: all)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, metavar="P", help="default 0.95")
    p.add_argument(
        "--ci", choices=["percentile", "bca"], default="percentile", help="bootstrap interval"
    )
    p.add_argument("--taxonomy", metavar="YAML", help="a custom taxonomy (default: MAST)")
    for side in ("reference", "candidate"):
        p.add_argument(
            f"--{side}-verification",
            choices=["paper", "official"],
            default=None,
            help=f"3.2/3.3 convention of --{side} when its file does not record it (tables): "
            "'paper' (3.2 No or Incomplete, 3.3 Incorrect) or 'official' (3.2 Weak, 3.3 No or "
            "Incorrect Verification)",
        )
    p.add_argument(
        "--format", choices=["table", "markdown", "json"], default="table", help="output format"
    )
    p.add_argument("--plot", metavar="FILE", help="also save a forest plot (needs matplotlib)")
    p.add_argument(
        "--consensus",
        metavar="RESULTS",
        help="self-consistency of the runs (samples, models) in a results file: majority, "
        "flip rate per mode, kappa between runs",
    )
    p.add_argument(
        "--sweep-confidence",
        action="store_true",
        help="with --reference and --candidate RESULTS: the confidence cut-off that maximises "
        "--metric",
    )
    p.add_argument("--metric", choices=["kappa", "f1"], default="kappa", help="for the sweep")
    p.add_argument(
        "--fit",
        type=float,
        metavar="FRACTION",
        help="with --sweep-confidence: choose the cut-off on this share of the traces (drawn "
        "with --seed) and score it on the rest",
    )
    add_attribution_arguments(p)
    p.set_defaults(handler=_cmd_agree)


@contextmanager
def _collect_warnings(into: list[str]) -> Iterator[None]:
    """Turn warnings into plain lines for stderr (no Python warning noise on a CLI)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        line = f"{w.category.__name__}: {w.message}"
        if line not in into:
            into.append(line)


def _cmd_agree(args: argparse.Namespace) -> int:
    if args.attribution:
        from mast.cli.agree_attribution import run

        return run(args)
    if args.consensus or args.sweep_confidence:
        from mast.cli.agree_runs import consensus_command, sweep_command

        return consensus_command(args) if args.consensus else sweep_command(args)
    pairwise = args.reference is not None or args.candidate is not None
    if args.among and pairwise:
        return _usage("give either --among FILE… or --reference and --candidate, not both")
    if not args.among and not (args.reference and args.candidate):
        return _usage("give --reference FILE and --candidate FILE, or --among FILE…")
    messages: list[str] = []
    from mast.taxonomy import load_label_version
    from mast.traces.loaders._records import label_versions

    versions = {v.version: v for v in map(load_label_version, args.label_version)}
    for version in versions.values():
        messages.append(f"label version {version.version!r} read from --label-version")
    with _collect_warnings(messages), label_versions(versions):
        code, text, report = (_among(args) if args.among else _pair(args))(messages)
    print(text)
    for line in messages:
        print(f"note: {line}", file=sys.stderr)
    if args.plot:
        _save_plots(report, args.plot)
    return int(code)


def _save_plots(report: Any, path: str) -> None:
    """One forest plot; for several judge runs one per run, named ``<stem>-<run><suffix>``."""
    import re
    from pathlib import Path

    if not isinstance(report, dict):
        report.plot().savefig(path, dpi=150)
        print(f"forest plot written to {path}", file=sys.stderr)
        return
    target = Path(path)
    for name, one in report.items():
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"
        out = target.with_name(f"{target.stem}-{slug}{target.suffix}")
        one.plot().savefig(out, dpi=150)
        print(f"forest plot of {name} written to {out}", file=sys.stderr)


def _usage(message: str) -> int:
    print(f"usage: mast agree ...\nmast agree: error: {message}", file=sys.stderr)
    return 2


def _options(args: argparse.Namespace) -> dict[str, Any]:
    modes = None
    if args.modes:
        modes = [m for chunk in args.modes for m in chunk.replace(",", " ").split()]
    return {
        "modes": modes,
        "bootstrap": args.bootstrap,
        "seed": args.seed,
        "confidence": args.confidence,
        "ci": args.ci,
        "taxonomy": args.taxonomy,
    }


def _render(report: Any, fmt: str, **kwargs: Any) -> str:
    if fmt == "json":
        return str(report.to_json(indent=2, **kwargs))
    if fmt == "markdown":
        return str(report.to_markdown(**kwargs) if kwargs else report.to_markdown())
    return str(report.to_text(**kwargs) if kwargs else report.to_text())


def _pair(args: argparse.Namespace) -> Callable[[list[str]], tuple[int, str, Any]]:
    def run(messages: list[str]) -> tuple[int, str, Any]:
        from mast.agree import agreement
        from mast.agree.label_files import read_labels
        from mast.errors import StatsInputError

        ref = read_labels(args.reference, annotator=args.reference_annotator)
        if ref.runs:
            raise StatsInputError(
                f"{args.reference}: the reference holds {len(ref.runs)} judge runs "
                f"({', '.join(ref.runs)}); pick one with --reference-annotator RUN (or majority)"
            )
        cand = read_labels(args.candidate, annotator=args.candidate_annotator)
        messages.extend(ref.notes + cand.notes)
        candidates = cand.runs or {cand.name: cand.source}
        reference = ref.source
        if args.id_map or args.id_pattern:
            reference, candidates = _renamed(args, ref.name, reference, candidates, messages)
        reports = {
            name: agreement(
                reference,
                source,
                reference_name=ref.name,
                candidate_name=name,
                resample=args.resample,
                reference_verification=args.reference_verification,
                candidate_verification=args.candidate_verification,
                **_options(args),
            )
            for name, source in candidates.items()
        }
        code = 0 if any(r.pooled.n_cells for r in reports.values()) else 1
        if cand.runs:
            from mast.cli.agree_runs import render_runs

            return code, render_runs(reports, args.format, args.candidate), reports
        report = next(iter(reports.values()))
        text = _render(report, args.format)
        if cand.kind == "results" and args.format != "json":
            from mast.cli.agree_runs import self_consistency

            text += self_consistency(args.candidate)
        return code, text, report

    return run


def _renamed(
    args: argparse.Namespace,
    ref_name: str,
    reference: Any,
    candidates: dict[str, Any],
    notes: list[str],
) -> tuple[Any, dict[str, Any]]:
    """Both sources as label tables with --id-map / --id-pattern applied to their ids."""
    from mast.agree.base import _select_modes, _taxonomy
    from mast.agree.ids import id_map_file, id_pattern, rename_table
    from mast.agree.table import to_table

    if args.id_map and args.id_pattern:
        raise SystemExit("mast agree: error: give --id-map or --id-pattern, not both")
    rename = id_map_file(args.id_map) if args.id_map else id_pattern(args.id_pattern)
    tax = _taxonomy(args.taxonomy)
    codes = _select_modes(_options(args)["modes"], tax)
    # The map renames the candidate's ids (a peer's table), never the reference's: a pattern
    # such as 'mad-{n}' would otherwise also match the reference's own 'mad-human/2'.
    out = []
    for name, source in candidates.items():
        table, changed = rename_table(
            to_table(source, modes=codes, taxonomy=tax, name=name), rename
        )
        notes.append(f"{name}: {changed} of {len(table.ids)} trace id(s) renamed by the id map")
        out.append(table)
    return reference, dict(zip(candidates, out, strict=True))


def _among(args: argparse.Namespace) -> Callable[[list[str]], tuple[int, str, Any]]:
    def run(messages: list[str]) -> tuple[int, str, Any]:
        from mast.agree import agreement_among, agreement_by_version
        from mast.agree.label_files import read_labels, read_raters
        from mast.label.queue import LabelQueue, is_queue

        annotators = (
            [a.strip() for a in args.annotators.split(",") if a.strip()]
            if args.annotators
            else None
        )
        options = {**_options(args), "resample": args.resample}
        traces: list[Any] = []
        if len(args.among) == 1 and is_queue(args.among[0]):
            raters = LabelQueue(args.among[0]).raters()
        elif len(args.among) == 1:
            raters, traces, notes = read_raters(args.among[0])
            messages.extend(notes)
        else:
            raters = {}
            for path in args.among:
                loaded = read_labels(path)
                messages.extend(loaded.notes)
                name = loaded.name if loaded.name not in raters else f"{loaded.name}:{path}"
                raters[name] = loaded.source
        versioned = [t for t in traces if any(s.taxonomy_version for s in t.label_sources.values())]
        if versioned:
            by_version = agreement_by_version(traces, annotators=annotators, **options)
            overall = by_version.reports["overall"]
            code = 0 if overall.pooled.n_items else 1
            if args.format == "json":
                return code, _json_pair(overall, by_version), overall
            text = (
                _render(overall, args.format)
                + "\n\n"
                + _render(by_version, args.format, detail=args.by_version)
            )
            return code, text, overall
        report = agreement_among(raters, annotators=annotators, **options)
        code = 0 if report.pooled.n_items else 1
        if args.format == "json":
            return code, _json_pair(report, None), report
        return code, _render(report, args.format), report

    return run


def _json_pair(overall: Any, by_version: Any) -> str:
    import json

    data = {
        "kind": "agree_among",
        "overall": overall.to_dict(),
        "by_version": by_version.to_dict() if by_version is not None else None,
    }
    return json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False)
