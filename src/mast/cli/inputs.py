"""Options and notes shared by the commands that read traces (``annotate``, ``inspect``).

``--format`` is checked when the command line is parsed, so a typo ends with one line that
lists the formats instead of a traceback; ``--ground-truth`` scores ITBench trials; and
:func:`input_notes` says what a person should know about the traces read (plain-text files
no framework segmenter recognised, ITBench trials left without ground truth).

>>> input_notes([])
[]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where needed: `mast --help` stays fast
    from mast.traces.limits import ReadLimits
    from mast.traces.model import Trace

__all__ = ["InputNotes", "add_input_options", "format_name", "input_notes", "load_inputs"]


def format_name(text: str) -> str:
    """An argparse type: ``auto`` or a format name that :func:`mast.load_traces` knows."""
    from mast.traces.loaders import formats

    names = list(formats())
    if text != "auto" and text not in names:
        raise argparse.ArgumentTypeError(
            f"unknown format {text!r}: use auto (detect) or one of {', '.join(sorted(names))}"
        )
    return text


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--format``, ``--ground-truth`` and the read limits to a command that reads
    traces (:func:`read_limits_from` reads the limits back)."""
    parser.add_argument(
        "--format", default="auto", type=format_name, help="trace format (default: detect)"
    )
    parser.add_argument(
        "--ground-truth",
        default=None,
        type=Path,
        metavar="PATH",
        help="ITBench ground truth for the trial folders: a groundtruth.yaml, or a folder of "
        "scenario_N/ (Scenario-N/) folders (default: found beside the runs)",
    )
    limits = parser.add_argument_group("read limits (inputs over them are errors, not read)")
    limits.add_argument(
        "--max-file-size",
        type=_size,
        metavar="SIZE",
        help="bytes read from one file after decompression (default 256M)",
    )
    limits.add_argument(
        "--max-trace-size",
        type=_size,
        metavar="SIZE",
        help="text of one trace, and one line of a JSON Lines file (default 64M)",
    )
    limits.add_argument("--max-steps", type=int, metavar="N", help="steps per trace (200000)")


def _size(text: str) -> int:
    from mast.traces.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def read_limits_from(args: argparse.Namespace) -> ReadLimits:
    """The read limits a command's options ask for (the current ones where not given)."""
    from mast.traces.limits import current_limits

    size = getattr(args, "max_trace_size", None)
    return current_limits().with_(
        file_bytes=getattr(args, "max_file_size", None),
        line_bytes=size,
        trace_bytes=size,
        steps=getattr(args, "max_steps", None),
    )


def load_inputs(inputs: str | Path | list[str | Path], **options: Any) -> Iterator[Trace]:
    """:func:`mast.load_traces` for the inputs, except that a labelled dataset's folder
    (AgentRx: ``ground_truth.json`` beside its runs; TRAIL: span-tree rows) is read by its
    dataset loader (:func:`mast.datasets.load_agentrx`, :func:`mast.datasets.load_trail`),
    so the traces carry their labels and their step numbering."""
    from mast.errors import TraceFormatError
    from mast.traces.agentrx import is_agentrx, load_agentrx
    from mast.traces.loaders import load_traces
    from mast.traces.trail import is_trail, load_trail

    paths = inputs if isinstance(inputs, list) else [inputs]
    rest: list[str | Path] = []
    errors = options.get("errors")
    for path in paths:
        where = Path(path)
        if where.exists() and (is_agentrx(where) or is_trail(where)):
            try:
                yield from (load_agentrx(where) if is_agentrx(where) else load_trail(where))
            except TraceFormatError as exc:
                if options.get("on_error") != "skip" or errors is None:
                    raise
                errors.append(exc)
        else:
            rest.append(path)
    if rest:
        yield from load_traces(rest, **options)


class InputNotes:
    """:func:`input_notes` for traces seen one at a time (a streamed input): it keeps counts
    and the first few ids, never the traces.

    >>> from mast.traces.model import Trace
    >>> notes = InputNotes()
    >>> for i in range(7):
    ...     notes.see(Trace(id=f"t{i}", format="text", segmented=False))
    >>> notes.lines()[0].endswith("each is one step): t0, t1, t2, t3, t4 …")
    True
    """

    def __init__(self) -> None:
        self._plain: list[str] = []
        self._no_truth: list[str] = []
        self._counts = [0, 0]

    def see(self, trace: Trace) -> None:
        """Note one trace read."""
        from mast.traces.model import Outcome

        if trace.format == "text" and not trace.segmented:
            self._note(0, self._plain, trace.id)
        if (
            trace.format == "itbench"
            and trace.outcome is Outcome.UNKNOWN
            and "ground_truth_file" not in trace.metadata
        ):
            self._note(1, self._no_truth, trace.id)

    def _note(self, which: int, ids: list[str], trace_id: str) -> None:
        self._counts[which] += 1
        if len(ids) <= 5:  # one more than shown: "…" says there are more
            ids.append(trace_id)

    def lines(self) -> list[str]:
        """Lines for the summary about traces read in a way a person may not expect."""
        notes = []
        if self._counts[0]:
            notes.append(
                f"{self._counts[0]} plain-text trace(s) (no known framework log format; each "
                f"is one step): {_shown(self._plain)}"
            )
        if self._counts[1]:
            notes.append(
                f"{self._counts[1]} ITBench trial(s) without ground truth (outcome unknown): "
                f"{_shown(self._no_truth)}; pass --ground-truth PATH"
            )
        return notes


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")


def input_notes(traces: Iterable[Trace]) -> list[str]:
    """Lines for the summary about traces read in a way a person may not expect."""
    notes = InputNotes()
    for trace in traces:
        notes.see(trace)
    return notes.lines()
