"""The ``mast`` command line: a thin layer over the public functions.

Each subcommand is one function registered in ``_COMMANDS``; it parses nothing itself and
returns the process exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from mast.cli._shown import shown, shown_lines
from mast.errors import MastError


def _cmd_inspect(args: argparse.Namespace) -> int:
    from mast.cli.inputs import input_notes
    from mast.errors import TraceFormatError
    from mast.traces.datasets import examples_path
    from mast.traces.loaders import load_traces
    from mast.traces.model import Trace

    sources = args.inputs or [examples_path()]
    errors: list[TraceFormatError] = []
    count = 0
    noted: list[Trace] = []
    loaded = load_traces(
        sources, format=args.format, on_error="skip", errors=errors, ground_truth=args.ground_truth
    )
    if args.output == "json":
        return _inspect_json(list(loaded), errors)
    for trace in loaded:
        count += 1
        if input_notes([trace]):
            noted.append(trace)
        labels = ", ".join(
            f"{shown(name)}: {_label_summary(vec)}" for name, vec in trace.labels.items()
        )
        print(
            f"{shown(trace.id)}  [{trace.format}] system={shown(trace.system or '?')} "
            f"steps={len(trace.steps)}{'' if trace.segmented else ' (unsegmented)'} "
            f"chars={trace.text_length} outcome={trace.outcome.value}"
            + (f"\n    labels {labels}" if labels else "")
        )
    for err in errors:
        print(f"error: {shown(err)}", file=sys.stderr)
    print(f"{count} trace(s) loaded, {len(errors)} error(s)")
    for note in input_notes(noted):
        print(note)
    return 0 if count or not errors else 1


def _label_summary(vector: Mapping[str, bool | None]) -> str:
    """Present modes, and how many are unknown: an annotator whose labels are unknown is not
    one who found nothing ('none' only when every mode was answered 'no')."""
    positives = [code for code, value in vector.items() if value is True]
    unknown = sum(value is None for value in vector.values())
    if unknown == len(vector):
        return "unknown (no mode answered)"
    shown_modes = "+".join(positives) or "none"
    return shown_modes + (f" ({unknown} of {len(vector)} unknown)" if unknown else "")


def _inspect_json(traces: list[Any], errors: list[Any]) -> int:
    """``mast inspect --output json``: the summary as one JSON document, for scripts."""
    import json

    from mast.cli.inputs import input_notes

    rows = [
        {
            "id": t.id,
            "format": t.format,
            "system": t.system,
            "steps": len(t.steps),
            "segmented": t.segmented,
            "chars": t.text_length,
            "outcome": t.outcome.value,
            "labels": {name: vec.positives for name, vec in t.labels.items()},
            "source": t.source,
        }
        for t in traces
    ]
    problems = [str(e) for e in errors]
    print(json.dumps({"traces": rows, "errors": problems, "notes": input_notes(traces)}, indent=2))
    return 0 if traces or not errors else 1


# The page of the documentation site (docs/) for each command; `mast <command> --help` names it.
_GUIDES = {
    "taxonomy": "judge.md",
    "inspect": "traces.md",
    "annotate": "bulk.md",
    "merge": "bulk.md",
    "agree": "agreement.md",
    "validate": "agreement.md",
    "report": "analysis.md",
    "export": "platforms.md",
    "pull": "platforms.md",
    "label": "labelling.md",
    "demo": "index.md",
}


def _build_parser() -> argparse.ArgumentParser:
    from mast._version import __version__
    from mast.cli.inputs import add_input_options

    parser = argparse.ArgumentParser(
        prog="mast", description="Annotate agent traces with MAST failure modes."
    )
    parser.add_argument("--version", action="version", version=f"mast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="load traces and summarize them (default: bundled examples)")
    p.add_argument("inputs", nargs="*", help="files, folders or globs")
    add_input_options(p)
    # --format names the trace format on every command that reads traces: the output's
    # format is --output here
    p.add_argument("--output", choices=["text", "json"], default="text", help="default: text")
    p.set_defaults(handler=_cmd_inspect)

    for register in _extra_commands():
        register(sub)
    for name, command in sub.choices.items():
        page = _GUIDES.get(name)
        if page:  # after a command's own epilog (annotate's and validate's exit codes)
            guide = f"Guide: docs/{page} in the repository (`mkdocs serve` shows the site)."
            command.epilog = guide if command.epilog is None else f"{command.epilog}\n{guide}"
    return parser


def _extra_commands() -> list[
    Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]
]:
    """Subcommands that live with their feature register themselves through this list."""
    from mast.cli.agree import register as register_agree
    from mast.cli.annotate import register as register_annotate
    from mast.cli.demo import register as register_demo
    from mast.cli.export import register as register_export
    from mast.cli.label import register as register_label
    from mast.cli.merge import register as register_merge
    from mast.cli.report import register as register_report
    from mast.cli.taxonomy import register as register_taxonomy
    from mast.cli.validate import register as register_validate

    return [
        register_agree,
        register_annotate,
        register_demo,
        register_export,
        register_label,
        register_merge,
        register_report,
        register_taxonomy,
        register_validate,
    ]


def _warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print a warning as one line, ``warning: Category: message``: the category tells what
    kind of thing happened; mast's source file and line do not help a command-line user."""
    stream = file if file is not None else sys.stderr
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nowhere to say it
        text = shown(" ".join(str(message).split()))
        stream.write(f"warning: {category.__name__}: {text}\n")


def _shown_error(exc: BaseException) -> str:
    # messages written on several lines by mast keep their lines; each line is made safe
    return shown_lines(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mast`` command."""
    shown = warnings.showwarning
    warnings.showwarning = _warning_line
    try:
        return _main(argv)
    finally:
        warnings.showwarning = shown


def _main(argv: Sequence[str] | None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if hasattr(args, "max_file_size"):
            from mast.cli.inputs import read_limits_from
            from mast.traces.limits import read_limits

            with read_limits(read_limits_from(args)):
                code: int = args.handler(args)
        else:
            code = args.handler(args)
        sys.stdout.flush()  # a closed pipe must surface here, not at interpreter exit
    except (MastError, FileNotFoundError) as exc:
        # one line: the message may quote a file name or an id from the input
        print(f"mast: error: {_shown_error(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`mast taxonomy | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
