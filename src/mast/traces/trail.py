"""TRAIL (Patronus AI): OpenTelemetry span trees of agent runs with span-level error labels.

TRAIL ("Trace Reasoning and Agentic Issue Localization", arXiv 2505.08638) has 148 traces of
GAIA and SWE-bench agent runs with 841 labelled errors. Its data is **gated** on the Hugging
Face Hub (``PatronusAI/TRAIL``) under terms that forbid resharing it outside a gated or
private repository, so mast does not ship or download it: this loader reads the copy you
downloaded after accepting the terms.

A trace is ``{"trace_id", "spans": [span, …]}``; a span has ``span_id``, ``parent_span_id``,
``span_name``, ``span_kind``, ``timestamp``, ``status_code``, ``status_message``,
``span_attributes`` (OpenInference keys such as ``input.value``, ``output.value``,
``llm.output_messages.0.message.content``, ``tool.name``), ``logs`` (``{"timestamp", "body",
…}``) and ``child_spans`` (the same shape, nested). Labels are ``{"trace_id", "errors":
[{"category", "location" (a span id), "evidence", "description", "impact"}], "scores": …}``.

Accepted inputs: a JSON Lines / JSON file of rows ``{"trace": …, "labels": …}`` (the Hub
rows, where both are JSON strings, exported with ``datasets``' ``to_json``), a Parquet file
of those rows (needs ``pyarrow``), a trace file ``{"trace_id", "spans"}``, or a folder of any
of these; trace files find their labels by ``trace_id`` in a ``labels`` folder or file you
pass (the GitHub layout keeps them in ``processed_annotations_*`` folders).

Every span becomes one step, depth first in the order the file gives; the step keeps the
span id in ``metadata["span_id"]``. The labels go to ``labels["trail"]`` (a category is
``True`` when any labelled error has it: TRAIL labels every error of a trace) and to
``metadata["trail"]["errors"]`` with each error's ``step_id``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mast.errors import TraceFormatError
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import FailureVector, LabelSource, Outcome, Step, StepKind, Trace

__all__ = ["TrailLabelWarning", "is_trail", "load_trail"]

ANNOTATOR = "trail"
_GATED = (
    "TRAIL is gated on the Hugging Face Hub (PatronusAI/TRAIL): accept its terms there, "
    "download it, and pass the file or folder"
)


class TrailLabelWarning(UserWarning):
    """A TRAIL label could not be read fully (unknown category, location not a span, …)."""


def is_trail(path: str | Path) -> bool:
    """True when ``path`` looks like TRAIL data (rows with a span-tree ``trace``, or trace
    files with ``spans``)."""
    p = Path(path)
    files = sorted(p.rglob("*.json*"))[:3] if p.is_dir() else [p] if p.is_file() else []
    for file in files:
        if file.suffix == ".parquet":
            return True
        try:
            # The first 20,000 characters, reading at most 4 bytes each: not the whole file
            # (a 200 MB trace file given to `mast annotate` was read whole just to ask this).
            with open(file, "rb") as handle:
                head = handle.read(80_000).decode("utf-8", errors="replace")[:20000]
        except OSError:
            continue
        # TRAIL's snake_case span keys (OTLP JSON has "spans" too, but camelCase keys).
        if "span_attributes" in head and ("child_spans" in head or "parent_span_id" in head):
            return True
    return bool(p.is_dir() and any(p.rglob("*.parquet")))


def load_trail(
    path: str | Path, *, labels: str | Path | None = None, split: str | None = None
) -> list[Trace]:
    """Read your download of TRAIL: one trace per run, with its span-level error labels.

    ``path``: rows (JSON Lines, JSON or Parquet with ``trace`` and ``labels`` columns), a
    trace file, or a folder of them. ``labels``: a file or folder of label files (matched by
    ``trace_id``) for trace files that carry none. ``split`` is recorded as the subset
    (``"gaia"`` or ``"swe_bench"``); by default it is read from the file or folder name.

    >>> load_trail("TRAIL/gaia.jsonl")  # doctest: +SKIP
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder. {_GATED}.")
    by_id = _label_files(Path(labels)) if labels is not None else {}
    taxonomy = load_taxonomy("trail")
    files = sorted(f for f in root.rglob("*") if f.is_file()) if root.is_dir() else [root]
    traces: list[Trace] = []
    for file in files:
        if file.suffix not in (".json", ".jsonl", ".parquet") or _is_label_file(file):
            continue
        part = split or _split_of(file)
        for where, trace_obj, label_obj in _rows(file):
            if label_obj is None:
                label_obj = by_id.get(str(trace_obj.get("trace_id")))
            traces.append(_trace(trace_obj, label_obj, f"{file}{where}", part, taxonomy))
    if not traces:
        raise TraceFormatError(
            "no TRAIL trace found", path=str(root), format="trail", expected=_GATED
        )
    return traces


def _split_of(file: Path) -> str | None:
    text = str(file).lower()
    return "swe_bench" if "swe" in text else "gaia" if "gaia" in text else None


def _is_label_file(file: Path) -> bool:
    return "annotation" in str(file.parent).lower() or "label" in file.parent.name.lower()


def _loads(value: object, file: Path, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise TraceFormatError(
                f"a JSON string field does not parse ({exc})",
                path=str(file),
                location=where,
                format="trail",
            ) from exc
    return value


def _rows(file: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    if file.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise TraceFormatError(
                "reading Parquet needs pyarrow (pip install pyarrow), or export the rows "
                "with datasets' to_json and pass the .jsonl",
                path=str(file),
                format="trail",
            ) from exc
        records: Iterable[Any] = pq.read_table(file).to_pylist()
    else:
        text = file.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
            records = data if isinstance(data, list) else [data]
        except ValueError:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for i, record in enumerate(records):
        where = f"#{i}"
        if not isinstance(record, dict):
            raise TraceFormatError("a row is not a JSON object", path=str(file), location=where)
        if "trace" in record:
            trace_obj = _loads(record["trace"], file, where)
            label_obj = _loads(record.get("labels"), file, where)
        elif "spans" in record:
            trace_obj, label_obj = record, None
        else:
            raise TraceFormatError(
                "row has neither 'trace' nor 'spans'",
                path=str(file),
                location=where,
                format="trail",
                expected='{"trace": …, "labels": …} or {"trace_id": …, "spans": [...]}',
            )
        if not isinstance(trace_obj, dict) or not isinstance(trace_obj.get("spans"), list):
            raise TraceFormatError(
                "the trace has no 'spans' list", path=str(file), location=where, format="trail"
            )
        yield where, trace_obj, label_obj if isinstance(label_obj, dict) else None


def _label_files(path: Path) -> dict[str, dict[str, Any]]:
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    out: dict[str, dict[str, Any]] = {}
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict):
                out[str(item.get("trace_id") or file.stem)] = item
    return out


def _walk(spans: Iterable[Any], depth: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    for span in spans:
        if isinstance(span, dict):
            yield depth, span
            yield from _walk(span.get("child_spans") or [], depth + 1)


def _span_step(index: int, depth: int, span: Mapping[str, Any]) -> Step:
    raw = span.get("span_attributes")
    attrs: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind_name = str(attrs.get("openinference.span.kind") or span.get("span_kind") or "")
    tool = attrs.get("tool.name")
    lines = [
        f"span {span.get('span_name')} (kind {kind_name or '?'}, "
        f"status {span.get('status_code') or '?'})"
    ]
    if span.get("status_message"):
        lines.append(f"status message: {span['status_message']}")
    for key, value in attrs.items():
        lines.append(f"{key}: {value if isinstance(value, str) else json.dumps(value)}")
    for log in span.get("logs") or []:
        body = log.get("body") if isinstance(log, dict) else log
        lines.append(f"log: {body if isinstance(body, str) else json.dumps(body, default=str)}")
    return Step.make(
        index,
        "\n".join(lines),
        agent=str(span.get("span_name") or "") or None,
        kind=StepKind.TOOL_CALL if kind_name.upper() == "TOOL" or tool else StepKind.MESSAGE,
        tool_name=str(tool) if tool else None,
        timestamp=str(span["timestamp"]) if span.get("timestamp") else None,
        metadata={
            "span_id": span.get("span_id"),
            "parent_span_id": span.get("parent_span_id"),
            "span_name": span.get("span_name"),
            "span_kind": span.get("span_kind"),
            "status_code": span.get("status_code"),
            "depth": depth,
        },
    )


def _trace(
    trace_obj: Mapping[str, Any],
    label_obj: Mapping[str, Any] | None,
    source: str,
    split: str | None,
    taxonomy: Taxonomy,
) -> Trace:
    steps = [_span_step(i, d, s) for i, (d, s) in enumerate(_walk(trace_obj["spans"]))]
    span_steps = {str(s.metadata["span_id"]): s.id for s in steps if s.metadata.get("span_id")}
    trace_id = str(trace_obj.get("trace_id") or (label_obj or {}).get("trace_id") or source)
    trace = Trace(
        id=f"trail/{trace_id}",
        system="TRAIL " + (split or "agent"),
        benchmark={"gaia": "GAIA", "swe_bench": "SWE-bench"}.get(split or "", split),
        steps=steps,
        source=source,
        format="trail",
        metadata={"dataset": {"name": "trail", "subset": split, "source": "local"}},
    )
    if label_obj is None:
        return trace
    errors: list[dict[str, Any]] = []
    unreadable = False
    for error in label_obj.get("errors") or []:
        if not isinstance(error, dict):
            continue
        name = str(error.get("category") or "").strip()
        code = taxonomy.code_for_name(name) if name else None
        location = str(error.get("location") or "").strip() or None
        if code is None:
            unreadable = True
            warnings.warn(
                f"{trace.id}: error category {name!r} is none of TRAIL's categories; unknown",
                TrailLabelWarning,
                stacklevel=4,
            )
        if location is not None and location not in span_steps:
            warnings.warn(
                f"{trace.id}: error location {location!r} is not a span id of the trace",
                TrailLabelWarning,
                stacklevel=4,
            )
        errors.append(
            {
                "category": code,
                "category_label": name or None,
                "location": location,
                "step_id": span_steps.get(location or ""),
                "evidence": error.get("evidence"),
                "description": error.get("description"),
                "impact": error.get("impact"),
            }
        )
    present = {e["category"] for e in errors if e["category"]}
    trace.labels[ANNOTATOR] = FailureVector(
        {c: True if c in present else (None if unreadable else False) for c in taxonomy.codes},
        codes=taxonomy.codes,
    )
    trace.label_sources[ANNOTATOR] = LabelSource(
        annotator=ANNOTATOR, kind="human", taxonomy_version="trail", origin="TRAIL labels"
    )
    trace.metadata["trail"] = {"errors": errors, "scores": label_obj.get("scores")}
    if errors:
        trace.outcome = Outcome.FAILURE
    return trace
