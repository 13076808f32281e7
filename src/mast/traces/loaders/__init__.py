"""Read trace files into :class:`~mast.traces.model.Trace` objects.

``load_trace(path)`` reads one trace; ``load_traces(source)`` streams many from a file, a
folder, a glob pattern or a list of those. ``format="auto"`` detects the format from the
content (not the file name); see :func:`formats` for the names you can pass instead.

Detection, in order: a file whose first 8 lines are events of one session (Codex rollout,
``codex exec --json``, Claude Code, OTLP spans) is read as that session (one trace per
file, or per trace id for spans); other JSON Lines files hold one trace per line (or one
chat per file); JSON files are one trace, an array of traces, or an OTLP document; the
rest is text. An ITBench trial folder (see :func:`mast.traces.itbench.is_run_folder`) is one
trace; ``load_traces(folder)`` yields each trial folder below it as one trace and every
other trace file as usual.

>>> from mast.traces.loaders import formats
>>> sorted(formats())[:4]
['ag2', 'chat', 'claude-code', 'codex']
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import stat
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.traces.itbench_scoring import GroundTruth
from mast.traces.itbench_scoring import is_run_folder as _is_run_folder
from mast.traces.limits import ReadLimits, read_limits
from mast.traces.loaders import _itbench
from mast.traces.loaders._files import _FORMATS, TraceLoadWarning, _read_file
from mast.traces.loaders._open import is_trace_file
from mast.traces.loaders._records import LabelMappingWarning
from mast.traces.model import Trace

__all__ = ["LabelMappingWarning", "TraceLoadWarning", "formats", "load_trace", "load_traces"]

OnError = Literal["raise", "warn", "skip"]

GroundTruthLike = GroundTruth | Mapping[str, Any] | str | Path | None


def formats() -> dict[str, str]:
    """Format names accepted by ``format=``, with what each reads."""
    return dict(_FORMATS)


def load_trace(
    path: str | Path, format: str = "auto", *, limits: ReadLimits | None = None
) -> Trace:
    """Load the single trace in ``path``.

    ``path`` may also be an ITBench trial folder ``<incident>/<trial>/``: its outcome is
    scored against the ground truth found beside it (use :func:`mast.traces.itbench.load_run` to
    pass ground truth or a success rule explicitly).

    Raises :class:`TraceFormatError` when the file cannot be read as ``format`` or holds
    more than one trace (use :func:`load_traces` for those).

    ``limits`` bounds what is read (see :class:`mast.traces.limits.ReadLimits`; default: the
    current limits).

    >>> from mast import load_trace  # doctest: +SKIP
    >>> trace = load_trace("tests/fixtures/ag2/AG2_trace1.json")  # doctest: +SKIP
    """
    if limits is not None:
        with read_limits(limits):
            return load_trace(path, format)
    path = Path(path)
    problem = _not_a_file(path)
    if problem is not None:
        raise problem
    if path.is_dir():
        if format in ("auto", "itbench") and _is_run_folder(path):
            return _itbench.load_run(path)
        raise TraceFormatError(
            "is a folder, not a trace file or an ITBench trial folder",
            path=path,
            format=format,
            expected="a file, or a folder holding agent_output.json (or a Codex session "
            "file with ground_truth.yaml beside it)",
            hint="Use mast.load_traces(folder) to read every trace in a folder",
        )
    if format == "itbench":
        raise TraceFormatError(
            "format 'itbench' reads trial folders, not files",
            path=path,
            format=format,
            hint="Pass the <incident>/<trial>/ folder",
        )
    traces = _read_file(path, format)
    first = next(traces, None)
    if isinstance(first, TraceFormatError):
        raise first
    if first is None:
        raise TraceFormatError("file holds no trace", path=path, format=format)
    if next(traces, None) is not None:
        raise TraceFormatError(
            "file holds more than one trace",
            path=path,
            format=format,
            hint="Use mast.load_traces(path) to stream them all",
        )
    return first


def load_traces(
    source: str | Path | Iterable[str | Path],
    *,
    format: str = "auto",
    on_error: OnError = "raise",
    errors: list[TraceFormatError] | None = None,
    ground_truth: GroundTruthLike = None,
    limits: ReadLimits | None = None,
) -> Iterator[Trace]:
    """Stream the traces in a file, a folder (recursively), a glob pattern, or a list of them.

    Files are read one record at a time, so a 200 MB dataset never sits in memory whole.
    ``on_error`` decides what a bad file or record does: ``"raise"`` stops with a
    :class:`TraceFormatError`, ``"warn"`` warns and goes on, ``"skip"`` goes on silently.
    Pass a list as ``errors`` to collect every error; one bad trace never loses the others.
    ``ground_truth`` scores ITBench trial folders against this file (or, for a folder of
    ``scenario_N`` / ``Scenario-N`` folders, against their scenario's) instead of the ground
    truth found beside them. ``limits`` bounds what is read from each file and trace (see
    :class:`mast.traces.limits.ReadLimits`); an input over them is one error like any other.

    >>> import mast  # doctest: +SKIP
    >>> problems = []  # doctest: +SKIP
    >>> traces = list(mast.load_traces("out/", on_error="skip", errors=problems))  # doctest: +SKIP
    """
    if on_error not in ("raise", "warn", "skip"):
        raise ValueError(f"on_error must be 'raise', 'warn' or 'skip', got {on_error!r}")
    runs = format in ("auto", "itbench")
    for path in _expand(source, runs=runs):
        if isinstance(path, TraceFormatError):
            items: Iterable[Trace | TraceFormatError] = [path]
        elif path.is_dir():
            items = _read_run(path, ground_truth)
        else:
            items = _read_file(path, format)
        for item in items if limits is None else _under(limits, items):
            if isinstance(item, Trace):
                yield item
                continue
            if errors is not None:
                errors.append(item)
            if on_error == "raise":
                raise item
            if on_error == "warn":
                warnings.warn(str(item), TraceLoadWarning, stacklevel=2)


def _not_a_file(path: Path) -> TraceFormatError | None:
    """Why a path given by name cannot be read as a trace file or folder: a FIFO (reading it
    would wait forever for a writer), a socket or device, a dangling link or a link loop."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if not path.is_symlink():
            return None  # does not exist: the caller tries it as a glob pattern
        if exc.errno == errno.ELOOP:
            problem = "symbolic link loop (the link points back to itself)"
        else:
            problem = f"dangling symbolic link: its target {os.readlink(path)} does not exist"
        return TraceFormatError(problem, path=path, hint="Fix or remove the link")
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return None
    kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
    if stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    return TraceFormatError(
        f"is {kind}, not a trace file",
        path=path,
        hint="Save the stream to a file and pass that file",
    )


def _expand(
    source: str | Path | Iterable[str | Path], *, runs: bool = False
) -> Iterator[Path | TraceFormatError]:
    """Trace files to read, and (with ``runs``) ITBench trial folders, which are one trace
    each: their session and diagnosis files are not yielded separately. A path given by
    name that cannot be read (a FIFO, a broken link) is yielded as its error."""
    if isinstance(source, (str, Path)):
        sources: Iterable[str | Path] = [source]
    else:
        sources = source
    for item in sources:
        path = Path(item)
        problem = _not_a_file(path)
        if problem is not None:
            yield problem
        elif path.is_dir():
            yield from sorted(_walk(path, path, runs))
        elif path.exists():
            yield path
        else:
            matches = sorted(_glob.glob(str(item), recursive=True))
            if not matches:
                raise FileNotFoundError(f"no trace file, folder or glob match for {str(item)!r}")
            for match in matches:
                candidate = Path(match)
                if candidate.is_file() or (runs and _is_run_folder(candidate)):
                    yield candidate


def _walk(folder: Path, root: Path, runs: bool, seen: set[Path] | None = None) -> Iterator[Path]:
    seen = set() if seen is None else seen
    real = folder.resolve()
    if real in seen:  # a symlink loop
        return
    seen.add(real)
    if runs and _is_run_folder(folder):
        yield folder
        return
    for child in folder.iterdir():
        if child.name.startswith("."):
            continue
        if child.is_dir():
            yield from _walk(child, root, runs, seen)
        elif child.is_file() and is_trace_file(child):
            yield child


def _under(
    limits: ReadLimits, items: Iterable[Trace | TraceFormatError]
) -> Iterator[Trace | TraceFormatError]:
    """``items`` read under ``limits``: the readers are lazy, so every step of the iteration
    runs with them (and the caller's own limits are back in force between steps)."""
    iterator = iter(items)
    while True:
        with read_limits(limits):
            item = next(iterator, None)
        if item is None:
            return
        yield item


def _read_run(folder: Path, ground_truth: GroundTruthLike) -> Iterator[Trace | TraceFormatError]:
    try:
        yield from _itbench.load_trial(folder, ground_truth=ground_truth)
    except TraceFormatError as exc:
        yield exc


# --- reading one file -------------------------------------------------------------------
