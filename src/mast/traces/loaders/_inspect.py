"""Inspect AI evaluation logs → one trace per sample (and epoch).

Both log formats Inspect writes are read: ``.eval`` (a zip archive with ``header.json`` and
one ``samples/<id>_epoch_<n>.json`` per sample) and ``.json`` (one document with ``eval``
and ``samples``). A sample's ``messages`` become steps (tool calls and tool answers as
``tool_call`` / ``tool_result`` steps sharing the call id), its input is the task, and its
first score decides the outcome: ``C``/correct/true/1 is a success, ``I``/incorrect/false/0
a failure, anything else (partial credit, no score) stays unknown. Content that Inspect moved
into ``attachments`` (``attachment://…``) is put back.

>>> from pathlib import Path
>>> log = Path(__file__).parents[3] / "tests/fixtures/inspect/mast_fixture.eval"
>>> [(t.id, t.outcome.value) for t in read_log(log)] if log.exists() else []  # doctest: +SKIP
[('mast_fixture/add-1', 'success'), ('mast_fixture/capital-1', 'failure')]
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._steps import StepList, text_of
from mast.traces.model import Outcome, StepKind, Trace

FORMAT = "inspect"
EXPECTED = (
    "an Inspect AI log: a .eval zip archive with header.json and samples/*.json, or a .json "
    "log with 'eval' and 'samples'"
)
_ZIP_MAGIC = b"PK\x03\x04"
_ZSTD = 93  # zip compression method number of Zstandard (Inspect's default since 2025)
_INSTALL = 'pip install "mast-annotator[inspect]"  (or: pip install zstandard)'
_CORRECT = {"C", "CORRECT", "TRUE", "YES", "PASS"}
_INCORRECT = {"I", "INCORRECT", "FALSE", "NO", "FAIL"}


def is_zip(head: bytes) -> bool:
    """Whether a file starts like a zip archive (an ``.eval`` log)."""
    return head.startswith(_ZIP_MAGIC)


def is_log(record: object) -> bool:
    """Whether a parsed JSON document is an Inspect ``.json`` log."""
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("eval"), Mapping)
        and "task" in record["eval"]
        and ("samples" in record or "status" in record)
    )


def read_log(path: Path) -> Iterator[Trace | TraceFormatError]:
    """Every sample of the log at ``path`` (either format) as a trace, or an error for a
    sample that cannot be read (the others still load)."""
    with path.open("rb") as handle:
        zipped = handle.read(4) == _ZIP_MAGIC
    if zipped:
        yield from _read_archive(path)
        return
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        yield TraceFormatError(
            f"not valid JSON ({exc})", path=path, format=FORMAT, expected=EXPECTED
        )
        return
    if not is_log(document):
        yield TraceFormatError(
            "no 'eval' header with a task", path=path, format=FORMAT, expected=EXPECTED
        )
        return
    yield from samples_to_traces(document, document.get("samples") or [], path)


def _read_archive(path: Path) -> Iterator[Trace | TraceFormatError]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        yield TraceFormatError(
            f"not a readable zip archive ({exc})", path=path, format=FORMAT, expected=EXPECTED
        )
        return
    with archive:
        names = archive.namelist()
        if "header.json" not in names and "_journal/start.json" not in names:
            yield TraceFormatError(
                "zip archive without header.json (not an Inspect log)",
                path=path,
                format=FORMAT,
                expected=EXPECTED,
                hint="Inspect writes header.json when a run finishes; a run still in progress "
                "has _journal/start.json instead",
            )
            return
        try:
            header = json.loads(
                _member(
                    archive,
                    path,
                    "header.json" if "header.json" in names else "_journal/start.json",
                )
            )
        except TraceFormatError as exc:
            yield exc
            return
        except (KeyError, ValueError, RecursionError) as exc:
            yield TraceFormatError(
                f"header.json is not valid JSON ({exc})",
                path=path,
                location="header.json",
                format=FORMAT,
                expected=EXPECTED,
            )
            return
        for name in sorted(n for n in names if n.startswith("samples/") and n.endswith(".json")):
            try:
                sample = json.loads(_member(archive, path, name))
            except TraceFormatError as exc:
                yield exc
                continue
            except (ValueError, RecursionError, zipfile.BadZipFile) as exc:
                yield TraceFormatError(
                    f"sample is not valid JSON ({exc})",
                    path=path,
                    location=name,
                    format=FORMAT,
                    expected=EXPECTED,
                )
                continue
            yield from samples_to_traces(header, [sample], path, location=name)


def _member(archive: zipfile.ZipFile, path: Path, name: str) -> bytes:
    """One member's bytes. Python's zipfile reads zstd members only from 3.14 on; before
    that the raw member is decompressed with the ``zstandard`` package."""
    info = archive.getinfo(name)
    if info.compress_type != _ZSTD:
        return archive.read(name)
    try:
        return archive.read(name)
    except (NotImplementedError, ImportError):
        # NotImplementedError: Python's zipfile before 3.14. ImportError: inspect_ai, once
        # imported, patches zipfile's decompressors and asks for zstandard itself.
        pass
    try:
        import zstandard
    except ImportError as exc:
        raise TraceFormatError(
            "this Inspect log is zstd-compressed and the zstandard package is missing",
            path=path,
            location=name,
            format=FORMAT,
            hint=f"Install it with: {_INSTALL}",
        ) from exc
    fp = archive.fp
    assert fp is not None
    fp.seek(info.header_offset)
    local = fp.read(30)
    if local[:4] != _ZIP_MAGIC:
        raise TraceFormatError(
            "damaged zip member header", path=path, location=name, format=FORMAT, expected=EXPECTED
        )
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    try:
        # Inspect splits big members into several zstd frames: read across all of them.
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        data: bytes = reader.read()
    except zstandard.ZstdError as exc:
        raise TraceFormatError(
            f"zstd data is damaged ({exc})",
            path=path,
            location=name,
            format=FORMAT,
            expected=EXPECTED,
        ) from exc
    return data


def samples_to_traces(
    header: Mapping[str, Any], samples: list[Any], path: Path, location: str | None = None
) -> Iterator[Trace | TraceFormatError]:
    """Traces of ``samples`` under the log ``header`` (its ``eval`` block names the task)."""
    info = header.get("eval") or {}
    epochs = ((info.get("config") or {}).get("epochs")) or 1
    for n, sample in enumerate(samples):
        where = location or f"samples[{n}]"
        if not isinstance(sample, Mapping) or "id" not in sample:
            yield TraceFormatError(
                "sample without an 'id'",
                path=path,
                location=where,
                format=FORMAT,
                expected="{'id', 'epoch', 'messages', …}",
            )
            continue
        try:
            yield sample_trace(info, sample, epochs=int(epochs))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            yield TraceFormatError(
                f"sample {sample.get('id')!r} does not fit the Inspect shape "
                f"({type(exc).__name__}: {exc})",
                path=path,
                location=where,
                format=FORMAT,
                expected=EXPECTED,
            )


def sample_trace(info: Mapping[str, Any], sample: Mapping[str, Any], *, epochs: int = 1) -> Trace:
    """One sample as a trace."""
    sample = _resolve(sample, sample.get("attachments") or {})
    task_name = str(info.get("task") or "inspect")
    trace_id = f"{task_name}/{sample['id']}"
    if epochs > 1 or (sample.get("epoch") or 1) > 1:
        trace_id += f"#epoch{sample.get('epoch') or 1}"
    steps = StepList()
    raw_input = sample.get("input")
    task = text_of(raw_input) if isinstance(raw_input, str) else None
    messages = sample.get("messages") or []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        agent = str(message.get("model") or "assistant") if role == "assistant" else role
        steps.history([message], agent=agent)
        if task is None and role == "user":
            task = text_of(message.get("content"))
    error = sample.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        steps.add(f"sample error: {error['message']}", kind=StepKind.LOG, agent="inspect")
    scores = sample.get("scores") or {}
    outcome, score_name, value = _outcome(scores)
    return Trace(
        id=trace_id,
        task=task,
        system=task_name,
        model=str(info["model"]) if info.get("model") else None,
        benchmark=((info.get("dataset") or {}).get("name")) or None,
        steps=steps.steps,
        outcome=outcome,
        metadata={
            "inspect": {
                "sample_id": sample["id"],
                "epoch": sample.get("epoch"),
                "target": sample.get("target"),
                "score": {"scorer": score_name, "value": value} if score_name else None,
                "run_id": info.get("run_id"),
                "eval_id": info.get("eval_id"),
                "error": bool(error),
            },
            "repeated_inputs_skipped": steps.repeated,
            **(
                {"outcome_field": f"scores.{score_name}"}
                if score_name and outcome is not Outcome.UNKNOWN
                else {}
            ),
        },
    )


def _outcome(scores: object) -> tuple[Outcome, str | None, Any]:
    if not isinstance(scores, Mapping) or not scores:
        return Outcome.UNKNOWN, None, None
    name, score = next(iter(scores.items()))
    value = score.get("value") if isinstance(score, Mapping) else score
    if isinstance(value, bool):
        return (Outcome.SUCCESS if value else Outcome.FAILURE), name, value
    if isinstance(value, (int, float)):
        if value == 1:
            return Outcome.SUCCESS, name, value
        if value == 0:
            return Outcome.FAILURE, name, value
        return Outcome.UNKNOWN, name, value
    if isinstance(value, str):
        upper = value.strip().upper()
        if upper in _CORRECT:
            return Outcome.SUCCESS, name, value
        if upper in _INCORRECT:
            return Outcome.FAILURE, name, value
    return Outcome.UNKNOWN, name, value


def _resolve(value: Any, attachments: Mapping[str, Any]) -> Any:
    """``value`` with every ``attachment://<hash>`` string replaced by the attachment."""
    if isinstance(value, str):
        if value.startswith("attachment://"):
            return attachments.get(value[len("attachment://") :], value)
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, Mapping):
        return {k: _resolve(v, attachments) for k, v in value.items() if k != "events"}
    return value
