"""Read one file as traces: detect its format from the content and stream its records.

Each reader yields traces and, in place of a record it cannot read, the
:class:`~mast.errors.TraceFormatError` saying where and why, so the caller decides whether one
bad record stops the rest (``on_error``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from mast.errors import TraceFormatError
from mast.traces.limits import ReadLimitError, current_limits, limit_error
from mast.traces.loaders import (
    _claude_code,
    _codex,
    _codex_exec,
    _inspect,
    _langfuse,
    _langsmith,
    _mad_run,
    _otel,
)
from mast.traces.loaders._nanjson import JSONTooDeep, NanToNullReader
from mast.traces.loaders._nontrace import not_a_trace, not_a_trace_error
from mast.traces.loaders._open import (
    file_stem,
    numbered_lines,
    open_binary,
    open_text,
    read_text,
)
from mast.traces.loaders._records import CONVERTERS as _RECORD_CONVERTERS
from mast.traces.loaders._records import classify
from mast.traces.loaders._session import (
    Line,
    is_document,
    is_span_record,
    read_documents,
    read_lines,
    sniff_session,
)
from mast.traces.loaders._tagging import scrub_surrogates, whoandwhen_identity
from mast.traces.model import Trace
from mast.traces.segment import segment

_FORMATS: dict[str, str] = {
    "mad-full": "MAST-Data full dataset: JSON array (or one record) with 'mast_annotation'",
    "mad-human": "MAST-Data human-labelled dataset: JSON array with 'annotations' per record",
    "mad-run": "MAD-shaped record without labels: trace_id, mas_name, benchmark_name, "
    "round, trace (log text or a serialized run)",
    "metagpt": "MetaGPT run record: {run_id, prompt, content: '<log>', cost, …}",
    "ag2": "AG2 run JSON: 'trajectory' [{content, role, name}] (the 'note' becomes labels)",
    "whoandwhen": "Who&When JSON: 'history' with 'mistake_agent' / 'mistake_step'",
    "chat": "OpenAI-style chat messages: a list, {'messages': [...]}, or JSONL of messages",
    "mast": "a Trace written by mast (Trace.model_dump_json())",
    "otel": "OpenTelemetry spans (OTLP JSON or span records, GenAI or OpenInference "
    "attributes; Arize Phoenix span exports too): one trace per trace id",
    "codex": "Codex CLI session JSONL (rollout-*.jsonl, session.jsonl): one trace per file",
    "codex-exec": "`codex exec --json` event stream (JSONL, stderr lines allowed): one trace",
    "claude-code": "Claude Code session JSONL (~/.claude/projects/…): one trace per file",
    "itbench": "ITBench SRE trial folder <incident>/<trial>/ with sessions, agent_output.json "
    "and ground truth: one trace per task, scored where the diagnosis can be tied to it",
    "langfuse": "Langfuse export: traces with 'observations', or observations with "
    "'traceId' (JSON, JSON Lines or an API page): one trace per trace id",
    "langsmith": "LangSmith runs: a root run with nested 'child_runs', or flat runs with "
    "'trace_id' / 'parent_run_id' (JSON or JSON Lines): one trace per trace",
    "inspect": "Inspect AI eval log (.eval zip archive or .json): one trace per sample",
    "jsonl": "JSON Lines, one trace per line in any of the JSON shapes above",
    "text": "plain text log: split into steps where a framework segmenter applies",
}

CONVERTERS = {**_RECORD_CONVERTERS, **_mad_run.CONVERTERS}

# Formats whose files are the events of one run: converted whole, not record by record.
_SESSION_CONVERTERS: dict[str, Callable[[list[Line]], list[Trace]]] = {
    "otel": _otel.convert,
    "codex": _codex.rollout,
    "codex-exec": _codex_exec.exec_stream,
    "claude-code": _claude_code.session,
    "langfuse": lambda lines: _langfuse.traces_from(_flat(lines)),
    "langsmith": lambda lines: _langsmith.traces_from(_flat(lines)),
}
# Session formats whose file may also be one JSON document (not JSON Lines).
_DOCUMENT_SESSIONS = {"otel", "langfuse", "langsmith"}


def _inspect_item(item: Trace | TraceFormatError, path: Path) -> Trace | TraceFormatError:
    if isinstance(item, TraceFormatError):
        return item
    sample = item.metadata.get("inspect", {}).get("sample_id")
    return _tag(item, path, "inspect", f"sample {sample}")


def _flat(lines: list[Line]) -> Iterator[Any]:
    """The records of a session file: each line's value, a JSON array's items."""
    for _, value in lines:
        if isinstance(value, list):
            yield from value
        elif value is not None and not isinstance(value, str):
            yield value


_SNIFF_BYTES = 64 * 1024
_ARRAY_SESSIONS: dict[str, Callable[[Any], bool]] = {
    "langfuse": _langfuse.is_observation,
    "langsmith": _langsmith.is_flat_run,
}


class TraceLoadWarning(UserWarning):
    """A trace or file was skipped by ``load_traces(..., on_error="warn")``, or a file in an
    ITBench trial folder was skipped."""


def _read_file(path: Path, format: str) -> Iterator[Trace | TraceFormatError]:
    """The traces of one file, and errors in place of what cannot be read; a file or trace
    over the read limits (:mod:`mast.traces.limits`) gives one error, never a traceback."""
    if format != "auto" and format not in _FORMATS:
        raise ValueError(f"unknown format {format!r}; use 'auto' or one of {sorted(_FORMATS)}")
    try:
        for item in _read_items(path, format):
            yield item if isinstance(item, TraceFormatError) else within_limits(item, path)
    except ReadLimitError as exc:
        yield exc


def within_limits(trace: Trace, path: Path) -> Trace | TraceFormatError:
    """``trace``, or the error saying which per-trace limit it is over."""
    limits = current_limits()
    if len(trace.steps) > limits.steps:
        what = f"trace {trace.id} has {len(trace.steps):,} steps, which"
        return limit_error("steps", what, limits.steps, path)
    if trace.text_length > limits.trace_bytes:
        what = f"the text of trace {trace.id} ({trace.text_length:,} characters)"
        return limit_error("trace_bytes", what, limits.trace_bytes, path)
    return trace


def _read_items(path: Path, format: str) -> Iterator[Trace | TraceFormatError]:
    if format != "auto" and format not in _FORMATS:
        raise ValueError(f"unknown format {format!r}; use 'auto' or one of {sorted(_FORMATS)}")
    try:
        # Gunzipped, without a byte-order mark, UTF-16 recoded: every reader below sees
        # UTF-8 bytes (see _open).
        with open_binary(path) as handle:
            head = handle.read(_SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        yield TraceFormatError(f"cannot read file: {reason}", path=path, format=format)
        return
    if format == "inspect" or (format == "auto" and _inspect.is_zip(head)):
        # Inspect's .eval logs are zip archives: binary, so read before the text checks.
        for item in _inspect.read_log(path):
            yield _inspect_item(item, path)
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
    if format == "itbench":
        yield TraceFormatError(
            "format 'itbench' reads trial folders, not files", path=path, format=format
        )
        return
    if format == "auto":
        kind = sniff_session(head, whole_file=len(head) < _SNIFF_BYTES) or _sniff(head)
    else:
        kind = format
    if kind in _SESSION_CONVERTERS:
        yield from _read_session(path, kind)
        return
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
    # A log whose lines start with "[2025-03-02 10:14:03]" or "[INFO]" is text: a JSON
    # array opens with an object, an array or a string, or is empty.
    if stripped[:1] == b"{" or (
        stripped[:1] == b"[" and stripped[1:].lstrip(b" \t\r\n")[:1] in (b"{", b"[", b"]", b'"')
    ):
        return "jsonl" if _looks_like_jsonl(head) else "json"
    return "text"


def _looks_like_jsonl(head: bytes) -> bool:
    lines = [line for line in head.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith(b"{"):
        return False
    try:
        json.loads(lines[0])
    except (ValueError, RecursionError):
        return False
    return lines[1].lstrip().startswith(b"{")


def _read_text(path: Path) -> Trace:
    text = read_text(path)
    seg = segment(text)
    metadata: dict[str, Any] = {
        **({"segmentation": seg.reason} if seg.reason else {}),
        **({"segmentation_info": seg.metadata} if seg.metadata else {}),
    }
    return Trace(
        id=file_stem(path),
        task=seg.task,
        steps=seg.steps,
        segmented=seg.segmented,
        system=seg.framework,
        outcome=seg.outcome.record(metadata),  # an AppWorld log's evaluation, as in MAD
        metadata=metadata,
    )


def _read_jsonl(path: Path, format: str) -> Iterator[Trace | TraceFormatError]:
    """JSON Lines: either one chat message per line (one trace) or one trace per line.

    Streams: lines are held only until the file's kind is known, usually at the first
    record (a trace is neither a chat message nor a record of a non-trace kind); from then
    on each line is converted as it is read, so a file of 10⁵ traces is never in memory.
    """
    records: list[tuple[int, Any]] = []  # held while the file may still be one chat
    other: str | None = None
    maybe_other = format in ("auto", "jsonl")  # every record of one non-trace kind
    maybe_chat = True  # every record a chat message
    first = True
    with open_text(path) as lines:
        for n, line in numbered_lines(lines, path):
            if not line.strip():
                continue
            record = _json_line(line, n, path)
            if not isinstance(record, TraceFormatError):
                if first:
                    other = not_a_trace(record) if maybe_other else None
                    maybe_other, first = other is not None, False
                elif maybe_other and not_a_trace(record) != other:
                    maybe_other = False
                if maybe_chat and not (
                    classify(record) is None and isinstance(record, dict) and "role" in record
                ):
                    maybe_chat = False
            if maybe_other or maybe_chat:
                records.append((n, record))
                continue
            # One trace per line: what was held, then each line as it comes.
            for held_n, held in records:
                yield _jsonl_item(held, held_n, format, path)
            records.clear()
            yield _jsonl_item(record, n, format, path)
    if first:  # no readable record: each line's error
        maybe_other = maybe_chat = False
    if maybe_other and other is not None:
        yield not_a_trace_error(other, path)  # once for the file, not once per line
        return
    if maybe_chat:
        bad = [r for _, r in records if isinstance(r, TraceFormatError)]
        if bad:
            yield from bad  # a broken message line would silently change the conversation
            return
        yield _tag(CONVERTERS["chat"]([r for _, r in records]), path, "chat", None)
        return
    for n, record in records:
        yield _jsonl_item(record, n, format, path)


def _json_line(line: str, n: int, path: Path) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        return TraceFormatError(
            f"line is not valid JSON ({exc})",
            path=path,
            location=f"line {n}",
            format="jsonl",
            expected="one JSON object per line",
        )


def _jsonl_item(record: Any, n: int, format: str, path: Path) -> Trace | TraceFormatError:
    if isinstance(record, TraceFormatError):
        return record
    return _convert(record, None if format in ("auto", "jsonl") else format, path, f"line {n}")


def _read_json(path: Path, format: str | None, head: bytes) -> Iterator[Trace | TraceFormatError]:
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] == b"[":
        yield from _stream_array(path, format)
        return
    with open_binary(path) as handle:
        try:
            record = json.loads(handle.read().decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            if format in (None, "otel") and "Extra data" in str(exc) and _concatenated_spans(path):
                yield from _read_session(path, "otel")  # ConsoleSpanExporter output
                return
            yield TraceFormatError(
                f"not valid JSON ({exc})",
                path=path,
                format=format or "auto",
                expected="a JSON object",
            )
            return
    if format is None and classify(record) is None and is_document(record):
        yield from _convert_session([(1, record)], path, "otel")
        return
    if format is None and _inspect.is_log(record):
        samples = record.get("samples") or []
        for item in _inspect.samples_to_traces(record, samples, path):
            yield _inspect_item(item, path)
        return
    if format is None and _langfuse.is_listing(record):
        yield from _convert_session([(1, record)], path, "langfuse")
        return
    other = not_a_trace(record) if format is None else None
    if other is not None:
        yield not_a_trace_error(other, path)
        return
    yield _convert(record, format, path, None)


def _concatenated_spans(path: Path) -> bool:
    try:
        first = next(read_documents(read_text(path)))
    except (ValueError, RecursionError, StopIteration):
        return False
    return is_document(first)


def _read_session(path: Path, kind: str) -> Iterator[Trace | TraceFormatError]:
    """A session-shaped file: all its lines (or, for spans, its JSON documents) at once."""
    lines = read_lines(path)
    if kind in _DOCUMENT_SESSIONS and not any(isinstance(v, (dict, list)) for _, v in lines):
        # Not JSON Lines: one pretty-printed document, or several written one after another.
        try:
            lines = [(1, value) for value in read_documents(read_text(path))]
        except (ValueError, RecursionError) as exc:
            yield TraceFormatError(
                f"not valid JSON ({exc})", path=path, format=kind, expected=_FORMATS[kind]
            )
            return
    yield from _convert_session(lines, path, kind)


def _convert_session(
    lines: list[Line], path: Path, kind: str
) -> Iterator[Trace | TraceFormatError]:
    try:
        traces = _SESSION_CONVERTERS[kind](lines)
    except TraceFormatError as exc:
        yield _locate(exc, path, kind)
        return
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        yield TraceFormatError(
            f"file does not fit the {kind} shape ({type(exc).__name__}: {exc})",
            path=path,
            format=kind,
            expected=_FORMATS[kind],
        )
        return
    for trace in traces:
        yield _tag(trace, path, kind, f"trace {trace.id}" if len(traces) > 1 else None)


def _stream_array(path: Path, format: str | None) -> Iterator[Trace | TraceFormatError]:
    with open_binary(path) as raw:
        reader: BinaryIO = NanToNullReader(raw)  # type: ignore[assignment]
        first = True
        index = -1
        try:
            # Inside the try: ijson reads the first chunk as soon as it is created.
            items = ijson.items(reader, "item", use_float=True)
            for index, record in enumerate(items):
                if (
                    first
                    and format is None
                    and classify(record) is None
                    and (is_span_record(record) or is_document(record))
                ):
                    yield from _read_session(path, "otel")  # a JSON array of spans
                    return
                if first and format is None and classify(record) is None:
                    # A JSON array of flat observations / runs: grouped into traces.
                    kind = next((k for k, test in _ARRAY_SESSIONS.items() if test(record)), None)
                    if kind is not None:
                        yield from _read_session(path, kind)
                        return
                other = not_a_trace(record) if first and format is None else None
                if other is not None:
                    yield not_a_trace_error(other, path)  # once for the file
                    return
                if first and _is_message_list_start(record) and format in (None, "chat"):
                    # A bare list of chat messages is one trace, not one trace per item.
                    yield from _read_message_array(path)
                    return
                first = False
                yield _convert(record, format, path, f"record {index}")
        except (ijson.JSONError, JSONTooDeep) as exc:
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
    with open_binary(path) as raw:
        try:
            messages = json.loads(NanToNullReader(raw).read())
        except (ValueError, RecursionError) as exc:
            yield TraceFormatError(
                f"not valid JSON ({exc})", path=path, format="chat", expected=_FORMATS["chat"]
            )
            return
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
            expected="a trace in one of the formats " + ", ".join(_FORMATS),
            hint="Name the format with format=… (--format), or convert the file to chat "
            "messages; mast.formats() says what each format reads",
        )
    try:
        trace = CONVERTERS[shape](record)
    except TraceFormatError as exc:
        return _locate(exc, path, shape, location)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
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
    trace = scrub_surrogates(trace)
    trace.source = f"{path}#{location}" if location else str(path)
    trace.format = shape
    if shape == "whoandwhen":
        whoandwhen_identity(trace, path, location)
    elif not trace.id:
        stem = file_stem(path)
        trace.id = stem if location is None else f"{stem}:{location.split()[-1]}"
    return trace


def _locate(
    exc: TraceFormatError, path: Path, format: str, location: str | None = None
) -> TraceFormatError:
    if isinstance(exc, ReadLimitError):
        return exc  # names its file and limit already, and stays a ReadLimitError
    return TraceFormatError(
        exc.problem,
        path=exc.path or path,
        location=exc.location or location,
        format=exc.format or format,
        expected=exc.expected,
        hint=exc.hint,
    )
