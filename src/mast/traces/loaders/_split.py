"""Split trace inputs into records that can be converted one by one, elsewhere.

The Ray engine (:mod:`mast.distributed`) reads big multi-record files (a MAD JSON array, a
JSON Lines export) on the driver as raw JSON records, without converting them, and ships
them in small groups to worker processes, which convert, segment, redact and annotate.
Everything else (single-trace files, session logs, ITBench trial folders) goes whole.

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.json"
>>> _ = path.write_text(json.dumps([{"trajectory": [], "id": "a"}, {"trajectory": [], "id": "b"}]))
>>> [loc for loc, _ in record_stream(path)]
['record 0', 'record 1']
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from mast.errors import TraceFormatError
from mast.traces.loaders._files import (
    _SNIFF_BYTES,
    _convert,
    _looks_like_jsonl,
    _sniff,
    _unreadable,
)
from mast.traces.loaders._nanjson import NanToNullReader
from mast.traces.loaders._records import classify
from mast.traces.model import Trace

__all__ = ["convert_record", "record_stream"]

# Shapes whose records are independent traces (a chat list is one trace as a whole).
_SPLITTABLE = {"mad-full", "mad-human", "ag2", "whoandwhen", "mast", "chat"}


def record_stream(path: str | Path, format: str = "auto") -> Iterator[tuple[str, Any]] | None:
    """``(location, raw record)`` for each trace record of a JSON array or JSON Lines file
    whose first record is one trace of a known shape; ``None`` for any other file (read it
    whole with :func:`mast.load_traces`). Records are parsed, not converted."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    if _unreadable(head) or format not in ("auto", "jsonl", *_SPLITTABLE):
        return None
    kind = _sniff(head)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if kind == "json" and stripped[:1] == b"[":
        first = _first_array_item(path)
    elif kind == "jsonl" or _looks_like_jsonl(head):
        kind = "jsonl"
        try:
            first = json.loads(head.splitlines()[0])
        except (ValueError, RecursionError, IndexError):
            return None
    else:
        return None
    shape = classify(first)
    if shape is None or shape not in _SPLITTABLE or (shape == "chat" and kind == "json"):
        # A bare list of messages is one trace; a chat list per line is fine.
        return None
    if format not in ("auto", "jsonl") and shape != format:
        return None
    return _array_items(path) if kind == "json" else _jsonl_items(path)


def _first_array_item(path: Path) -> Any:
    with path.open("rb") as raw:
        reader: BinaryIO = NanToNullReader(raw)  # type: ignore[assignment]
        try:
            return next(iter(ijson.items(reader, "item", use_float=True)), None)
        except ijson.JSONError:
            return None


def _array_items(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as raw:
        reader: BinaryIO = NanToNullReader(raw)  # type: ignore[assignment]
        index = -1
        try:
            for index, record in enumerate(ijson.items(reader, "item", use_float=True)):
                yield f"record {index}", record
        except ijson.JSONError as exc:
            # What was read so far stays good; the rest of the file is reported, not lost.
            yield (
                f"record {index + 1}",
                TraceFormatError(
                    f"not valid JSON after record {index} ({exc})".replace("\n", " "),
                    path=path,
                    location=f"record {index + 1}",
                    expected="a JSON array of records",
                ),
            )


def _jsonl_items(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("r", encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield f"line {number}", json.loads(line)
                except (ValueError, RecursionError) as exc:
                    yield (
                        f"line {number}",
                        TraceFormatError(
                            f"line is not valid JSON ({exc})",
                            path=path,
                            location=f"line {number}",
                            format="jsonl",
                        ),
                    )


def convert_record(
    record: Any, *, path: str | Path, location: str, format: str = "auto"
) -> Trace | TraceFormatError:
    """One raw record (from :func:`record_stream`) as a :class:`Trace`, tagged with where it
    came from, or the error that says why it cannot be one."""
    if isinstance(record, TraceFormatError):
        return record
    shape = None if format in ("auto", "jsonl") else format
    return _convert(record, shape, Path(path), location)
