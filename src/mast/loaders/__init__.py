"""Read trace files into :class:`~mast.trace.Trace` objects.

``load_trace(path)`` reads one trace; ``load_traces(source)`` streams many from a file, a
folder, a glob pattern or a list of those. ``format="auto"`` detects the format from the
content (not the file name); see :func:`formats` for the names you can pass instead.

>>> from mast.loaders import formats
>>> sorted(formats())[:3]
['ag2', 'chat', 'jsonl']
"""

from __future__ import annotations

import glob as _glob
import json
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

import ijson

from mast.errors import TraceFormatError
from mast.loaders._nanjson import NanToNullReader
from mast.loaders._records import CONVERTERS, LabelMappingWarning, classify
from mast.segment import segment
from mast.trace import Trace

__all__ = ["LabelMappingWarning", "TraceLoadWarning", "formats", "load_trace", "load_traces"]

OnError = Literal["raise", "warn", "skip"]

_FORMATS: dict[str, str] = {
    "mad-full": "MAST-Data full dataset: JSON array (or one record) with 'mast_annotation'",
    "mad-human": "MAST-Data human-labelled dataset: JSON array with 'annotations' per record",
    "ag2": "AG2 run JSON: 'trajectory' [{content, role, name}] (the 'note' becomes labels)",
    "whoandwhen": "Who&When JSON: 'history' with 'mistake_agent' / 'mistake_step'",
    "chat": "OpenAI-style chat messages: a list, {'messages': [...]}, or JSONL of messages",
    "mast": "a Trace written by mast (Trace.model_dump_json())",
    "jsonl": "JSON Lines, one trace per line in any of the JSON shapes above",
    "text": "plain text log: split into steps where a framework segmenter applies",
}

_SNIFF_BYTES = 64 * 1024
_TRACE_SUFFIXES = {".json", ".jsonl", ".ndjson", ".txt", ".log"}


class TraceLoadWarning(UserWarning):
    """A trace or file was skipped by ``load_traces(..., on_error="warn")``."""


def formats() -> dict[str, str]:
    """Format names accepted by ``format=``, with what each reads."""
    return dict(_FORMATS)


def load_trace(path: str | Path, format: str = "auto") -> Trace:
    """Load the single trace in ``path``.

    Raises :class:`TraceFormatError` when the file cannot be read as ``format`` or holds
    more than one trace (use :func:`load_traces` for those).

    >>> from mast import load_trace  # doctest: +SKIP
    >>> trace = load_trace("tests/fixtures/ag2/AG2_trace1.json")  # doctest: +SKIP
    """
    path = Path(path)
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
) -> Iterator[Trace]:
    """Stream the traces in a file, a folder (recursively), a glob pattern, or a list of them.

    Files are read one record at a time, so a 200 MB dataset never sits in memory whole.
    ``on_error`` decides what a bad file or record does: ``"raise"`` stops with a
    :class:`TraceFormatError`, ``"warn"`` warns and goes on, ``"skip"`` goes on silently.
    Pass a list as ``errors`` to collect every error; one bad trace never loses the others.

    >>> import mast  # doctest: +SKIP
    >>> problems = []  # doctest: +SKIP
    >>> traces = list(mast.load_traces("out/", on_error="skip", errors=problems))  # doctest: +SKIP
    """
    if on_error not in ("raise", "warn", "skip"):
        raise ValueError(f"on_error must be 'raise', 'warn' or 'skip', got {on_error!r}")
    for path in _expand(source):
        for item in _read_file(path, format):
            if isinstance(item, Trace):
                yield item
                continue
            if errors is not None:
                errors.append(item)
            if on_error == "raise":
                raise item
            if on_error == "warn":
                warnings.warn(str(item), TraceLoadWarning, stacklevel=2)


def _expand(source: str | Path | Iterable[str | Path]) -> Iterator[Path]:
    if isinstance(source, (str, Path)):
        sources: Iterable[str | Path] = [source]
    else:
        sources = source
    for item in sources:
        path = Path(item)
        if path.is_dir():
            yield from sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in _TRACE_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.exists():
            yield path
        else:
            matches = sorted(_glob.glob(str(item), recursive=True))
            if not matches:
                raise FileNotFoundError(f"no trace file, folder or glob match for {str(item)!r}")
            yield from (Path(m) for m in matches if Path(m).is_file())


# --- reading one file -------------------------------------------------------------------

Item = "Trace | TraceFormatError"


def _read_file(path: Path, format: str) -> Iterator[Trace | TraceFormatError]:
    if format != "auto" and format not in _FORMATS:
        raise ValueError(f"unknown format {format!r}; use 'auto' or one of {sorted(_FORMATS)}")
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        yield TraceFormatError(f"cannot read file: {exc.strerror or exc}", path=path, format=format)
        return
    problem = _unreadable(head)
    if problem:
        yield TraceFormatError(
            problem,
            path=path,
            format=format,
            expected="a UTF-8 text file (JSON, JSON Lines or a plain-text log)",
        )
        return
    kind = format if format != "auto" else _sniff(head)
    try:
        if kind == "text":
            yield _tag(_read_text(path), path, "text", None)
        elif kind == "jsonl" or (kind == "chat" and _looks_like_jsonl(head)):
            yield from _read_jsonl(path, format)
        else:
            yield from _read_json(path, format if format != "auto" else None, head)
    except TraceFormatError as exc:
        yield _locate(exc, path, format)


def _unreadable(head: bytes) -> str | None:
    if not head.strip():
        return "empty file"
    if b"\x00" in head:
        return "binary file (contains NUL bytes)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a multi-byte character cut by the sniff size
            return f"not UTF-8 text (invalid byte at offset {exc.start})"
    return None


def _sniff(head: bytes) -> str:
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "jsonl" if _looks_like_jsonl(head) else "json"
    return "text"


def _looks_like_jsonl(head: bytes) -> bool:
    lines = [line for line in head.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith(b"{"):
        return False
    try:
        json.loads(lines[0])
    except ValueError:
        return False
    return lines[1].lstrip().startswith(b"{")


def _read_text(path: Path) -> Trace:
    text = path.read_text(encoding="utf-8", errors="replace")
    seg = segment(text)
    return Trace(
        id=path.stem,
        task=getattr(seg, "task", None),
        steps=seg.steps,
        segmented=seg.segmented,
        system=seg.framework,
        metadata={"segmentation": seg.reason} if seg.reason else {},
    )


def _read_jsonl(path: Path, format: str) -> Iterator[Trace | TraceFormatError]:
    """JSON Lines: either one chat message per line (one trace) or one trace per line."""
    with path.open("r", encoding="utf-8", errors="replace") as lines:
        numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    records: list[tuple[int, Any]] = []
    for n, line in numbered:
        try:
            records.append((n, json.loads(line)))
        except ValueError as exc:
            records.append(
                (
                    n,
                    TraceFormatError(
                        f"line is not valid JSON ({exc})",
                        path=path,
                        location=f"line {n}",
                        format="jsonl",
                        expected="one JSON object per line",
                    ),
                )
            )
    parsed = [r for _, r in records if not isinstance(r, TraceFormatError)]
    if parsed and all(classify(r) is None and isinstance(r, dict) and "role" in r for r in parsed):
        bad = [r for _, r in records if isinstance(r, TraceFormatError)]
        if bad:
            yield from bad  # a broken message line would silently change the conversation
            return
        yield _tag(CONVERTERS["chat"](parsed), path, "chat", None)
        return
    for n, record in records:
        if isinstance(record, TraceFormatError):
            yield record
            continue
        yield _convert(record, None if format in ("auto", "jsonl") else format, path, f"line {n}")


def _read_json(path: Path, format: str | None, head: bytes) -> Iterator[Trace | TraceFormatError]:
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] == b"[":
        yield from _stream_array(path, format)
        return
    with path.open("rb") as handle:
        try:
            record = json.loads(handle.read().decode("utf-8"))
        except ValueError as exc:
            yield TraceFormatError(
                f"not valid JSON ({exc})",
                path=path,
                format=format or "auto",
                expected="a JSON object",
            )
            return
    yield _convert(record, format, path, None)


def _stream_array(path: Path, format: str | None) -> Iterator[Trace | TraceFormatError]:
    with path.open("rb") as raw:
        reader: BinaryIO = NanToNullReader(raw)  # type: ignore[assignment]
        items = ijson.items(reader, "item", use_float=True)
        first = True
        index = -1
        try:
            for index, record in enumerate(items):
                if first and _is_message_list_start(record) and format in (None, "chat"):
                    # A bare list of chat messages is one trace, not one trace per item.
                    yield from _read_message_array(path)
                    return
                first = False
                yield _convert(record, format, path, f"record {index}")
        except ijson.JSONError as exc:
            yield TraceFormatError(
                f"not valid JSON after record {index} ({exc})".replace("\n", " "),
                path=path,
                location=f"record {index + 1}",
                format=format or "auto",
                expected="a JSON array of records",
            )
    if first and index < 0:
        yield TraceFormatError(
            "empty JSON array", path=path, format=format or "auto", expected="at least one record"
        )


def _is_message_list_start(record: Any) -> bool:
    return isinstance(record, dict) and "role" in record and classify(record) is None


def _read_message_array(path: Path) -> Iterator[Trace | TraceFormatError]:
    with path.open("rb") as raw:
        messages = json.loads(NanToNullReader(raw).read())
    yield _convert(messages, "chat", path, None)


def _convert(
    record: Any, format: str | None, path: Path, location: str | None
) -> Trace | TraceFormatError:
    shape = format or classify(record)
    if shape is None:
        keys = sorted(record)[:12] if isinstance(record, dict) else type(record).__name__
        return TraceFormatError(
            f"unknown trace shape (found {keys})",
            path=path,
            location=location,
            format="auto",
            expected="one of: "
            + "; ".join(f"{k}: {v}" for k, v in _FORMATS.items() if k not in ("jsonl", "text")),
            hint="Name the format with format=... or convert the file to chat messages",
        )
    try:
        trace = CONVERTERS[shape](record)
    except TraceFormatError as exc:
        return _locate(exc, path, shape, location)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return TraceFormatError(
            f"record does not fit the {shape} shape ({type(exc).__name__}: {exc})",
            path=path,
            location=location,
            format=shape,
            expected=_FORMATS.get(shape),
        )
    return _tag(trace, path, shape, location)


def _tag(trace: Trace, path: Path, shape: str, location: str | None) -> Trace:
    """Record where a trace came from, and give id-less traces one derived from the file."""
    trace.source = f"{path}#{location}" if location else str(path)
    trace.format = shape
    if not trace.id:
        trace.id = path.stem if location is None else f"{path.stem}:{location.split()[-1]}"
    return trace


def _locate(
    exc: TraceFormatError, path: Path, format: str, location: str | None = None
) -> TraceFormatError:
    return TraceFormatError(
        exc.problem,
        path=exc.path or path,
        location=exc.location or location,
        format=exc.format or format,
        expected=exc.expected,
        hint=exc.hint,
    )
