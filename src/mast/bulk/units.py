"""Work units for the Ray engine: the inputs cut into small pieces a worker takes at a time.

A unit is either a group of raw records of one multi-record file (see
:func:`mast.loaders.record_stream`; the records travel through Ray's object store as a
reference) or a group of whole files and folders that a worker reads with
:func:`mast.load_traces`. Cutting happens on the driver as the inputs stream by, so a
200 MB MAD file is never held whole; converting, segmenting and redacting happen in the
workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders import _expand, load_traces
from mast.traces.loaders._split import convert_record, record_stream
from mast.traces.model import Trace

__all__ = ["Unit", "load_unit", "plan_units"]


@dataclass
class Unit:
    """One piece of work. ``records`` holds ``(location, record)`` pairs (or a Ray object
    reference to them) from ``source``; ``files`` holds paths read whole."""

    number: int
    source: str | None = None
    records: Any = None
    files: list[str] = field(default_factory=list)
    count: int = 0
    """Records in the unit (0 for file units: unknown until read)."""
    skip_shards: list[str] = field(default_factory=list)
    """Result shards of a worker that died holding this unit: their keys are done."""


def plan_units(
    inputs: str | Path | Iterable[str | Path],
    *,
    format: str = "auto",
    size: int = 16,
    store: Callable[[list[tuple[str, Any]]], Any] = lambda records: records,
) -> Iterator[Unit]:
    """Cut ``inputs`` into units of about ``size`` traces, lazily. ``store`` turns a list
    of records into what the unit carries (the Ray engine passes ``ray.put``)."""
    numbers = iter(range(1 << 62))
    files: list[str] = []
    for path in _expand(inputs, runs=format in ("auto", "itbench")):
        if isinstance(path, TraceFormatError):
            # An input that cannot be read (a FIFO, a broken link): the worker reports it.
            yield Unit(next(numbers), str(path.path), store([("file", path)]), count=1)
            continue
        stream = None if path.is_dir() else record_stream(path, format)
        if stream is None:
            files.append(str(path))
            if len(files) >= size:
                yield Unit(number=next(numbers), files=files)
                files = []
            continue
        chunk: list[tuple[str, Any]] = []
        for item in stream:
            chunk.append(item)
            if len(chunk) >= size:
                yield Unit(next(numbers), str(path), store(chunk), count=len(chunk))
                chunk = []
        if chunk:
            yield Unit(next(numbers), str(path), store(chunk), count=len(chunk))
    if files:
        yield Unit(number=next(numbers), files=files)


def load_unit(
    unit: Unit,
    records: list[tuple[str, Any]] | None,
    *,
    format: str = "auto",
    ground_truth: Any = None,
) -> Iterator[Trace | TraceFormatError]:
    """The traces of ``unit`` (its records already fetched), or the error of each bad one.
    ``ground_truth`` is :func:`mast.load_traces`'s (it scores ITBench trial folders)."""
    if records is not None:
        assert unit.source is not None
        for location, record in records:
            yield convert_record(record, path=unit.source, location=location, format=format)
        return
    errors: list[TraceFormatError] = []
    traces = load_traces(
        unit.files, format=format, on_error="skip", errors=errors, ground_truth=ground_truth
    )
    for trace in traces:
        while errors:
            yield errors.pop(0)
        yield trace
    yield from errors
