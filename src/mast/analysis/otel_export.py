"""Verdicts out as OpenTelemetry GenAI evaluation events (``gen_ai.evaluation.result``).

One event per judged mode of each usable annotation, following the GenAI semantic
conventions (development status): the event is a log record named
``gen_ai.evaluation.result`` with ``gen_ai.evaluation.name`` (``"MAST 1.3 Step
Repetition"``), ``gen_ai.evaluation.score.value`` (1.0 = the mode is present, 0.0 = absent),
``gen_ai.evaluation.score.label`` (``"present"`` / ``"absent"``) and
``gen_ai.evaluation.explanation`` (the judge's rationale). The conventions ask for the event
to be parented to the span it evaluates: when the trace came from OpenTelemetry (or Phoenix,
or Langfuse with OTel ids) the record carries that trace id and the span id of the first
evidence step (else the trace's root span); an event that cannot be parented carries
``gen_ai.response.id`` (the evaluated trace's id) instead. Modes left unknown by the judge get
no event (unknown is not "no"); they are counted in the returned summary. A failed annotation
gives one event with ``error.type`` and no score (``error_events=False``: none). Every record
has ``timeUnixNano`` (when the verdict was made) and ``observedTimeUnixNano``.

The SDK's logs API still lives in private modules (``opentelemetry.sdk._logs``, the exporters'
``_log_exporter``), so the ``otel`` extra bounds those packages below their next minor release.

Records go through the OTel SDK's own exporters: the OTLP JSON file exporter (``out=``) or
OTLP over HTTP (``endpoint=``). Both ship in the ``otel`` extra.

>>> import mast, tempfile, pathlib, json
>>> traces = mast.datasets.example_traces()[:2]
>>> anns = [mast.Judge("heuristic").annotate(t) for t in traces]
>>> out = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
>>> summary = export_otel(anns, traces=traces, out=out)
>>> summary.events + summary.unknown_cells == 14 * len(anns)
True
>>> json.loads(out.read_text().splitlines()[0])["resourceLogs"][0]["scopeLogs"][0][
...     "logRecords"][0]["eventName"]
'gen_ai.evaluation.result'
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.errors import MissingDependencyError
from mast.judge.annotation import Annotation
from mast.privacy.redact import Redactor
from mast.traces.model import Trace

__all__ = ["EVENT_NAME", "ExportSummary", "evaluation_events", "export_otel"]

EVENT_NAME = "gen_ai.evaluation.result"
_INSTALL = 'pip install "mast-annotator[otel]"'
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")


@dataclass
class ExportSummary:
    """What an export wrote: events, and what it could not attach or judge."""

    events: int = 0
    annotations: int = 0
    attached: int = 0
    """Events carrying the evaluated trace's span context."""
    unknown_cells: int = 0
    """Modes the judge left unknown: no event (unknown is not "no")."""
    skipped: list[str] = field(default_factory=list)
    """Annotations without a usable verdict (status not ``ok``), by trace id."""
    error_events: int = 0
    """Events with ``error.type`` for those annotations (``error_events=False``: none)."""


@dataclass(frozen=True)
class EvaluationEvent:
    """One ``gen_ai.evaluation.result`` event before it becomes a log record."""

    attributes: dict[str, Any]
    trace_id: int | None
    span_id: int | None
    timestamp_ns: int | None


def _otel_id(value: object, length: int) -> int | None:
    """An OTel id (hex, ``length`` digits) as an int, or None if ``value`` is not one."""
    if not isinstance(value, str):
        return None
    text = value[2:] if value.startswith("0x") else value
    text = text.replace("-", "") if length == 32 else text
    if len(text) != length or not _HEX.match(text):
        return None
    number = int(text, 16)
    return number or None


def _trace_context(trace: Trace | None, step_ids: Sequence[str]) -> tuple[int | None, int | None]:
    """(trace id, span id) of the evaluated span, where the trace came from OTel-like ids."""
    if trace is None:
        return None, None
    meta = trace.metadata
    trace_id = _otel_id(meta.get("trace_id") or meta.get("otel_trace_id") or trace.id, 32)
    if trace_id is None:
        return None, None
    spans: list[str] = []
    for step_id in step_ids:
        try:
            step = trace.step(step_id)
        except KeyError:
            continue
        for key in ("span_id", "observation_id"):
            if step.metadata.get(key):
                spans.append(str(step.metadata[key]))
    root = meta.get("root_span_id")
    if not spans:
        # No evidence step with a span: the trace's root span, else its first span.
        ids = (s.metadata.get("span_id") or s.metadata.get("observation_id") for s in trace.steps)
        first = next((x for x in ids if x), None)
        spans = [str(x) for x in (root, first) if x]
    for candidate in spans:
        span_id = _otel_id(candidate, 16)
        if span_id is not None:
            return trace_id, span_id
    return trace_id, None


def _nanos(ann: Annotation) -> int:
    """When the verdict was made, in ns since the epoch (the record's ``timeUnixNano``)."""
    return int(ann.created_at.timestamp()) * 1_000_000_000 + ann.created_at.microsecond * 1000


def evaluation_events(
    annotations: Iterable[Annotation],
    traces: Iterable[Trace] = (),
    *,
    summary: ExportSummary | None = None,
    error_events: bool = True,
    redact: bool | Redactor = True,
) -> list[EvaluationEvent]:
    """The events for ``annotations`` (no SDK needed: plain attribute dicts).

    A failed annotation gives one event with ``error.type`` (its ``error_kind``, else its
    status) and no score, unless ``error_events=False``. An event that cannot be parented to
    a span carries ``gen_ai.response.id`` (the evaluated trace's id), as the conventions ask.
    ``redact``: the explanations (the judge's rationales, which quote the trace) pass through
    :mod:`mast.privacy` first, as in :func:`~mast.analysis.report.render_report`.
    """
    from mast.analysis.redaction import redact_annotation, shown_redactor
    from mast.taxonomy import load_taxonomy

    redactor = shown_redactor(redact)

    by_id: Mapping[str, Trace] = {t.id: t for t in traces}
    summary = summary if summary is not None else ExportSummary()
    names = {
        code: mode.name for code, mode in ((c, load_taxonomy()[c]) for c in load_taxonomy().codes)
    }
    events: list[EvaluationEvent] = []
    for ann in annotations:
        summary.annotations += 1
        ann = redact_annotation(ann, redactor)
        trace = by_id.get(ann.trace_id)
        model = str(ann.judge.get("model") or "") or None
        if not ann.ok:
            summary.skipped.append(ann.trace_id)
            if error_events:
                failure: dict[str, Any] = {
                    "gen_ai.evaluation.name": "MAST",
                    "error.type": ann.error_kind or str(ann.status),
                    "mast.trace.id": ann.trace_id,
                    "mast.taxonomy": ann.taxonomy,
                }
                if model:
                    failure["mast.judge.model"] = model
                trace_id, span_id = _trace_context(trace, [])
                if trace_id is None or span_id is None:
                    failure["gen_ai.response.id"] = ann.trace_id
                else:
                    summary.attached += 1
                events.append(EvaluationEvent(failure, trace_id, span_id, _nanos(ann)))
                summary.error_events += 1
                summary.events += 1
            continue
        for code in ann.vector:
            value = ann.vector[code]
            if value is None:
                summary.unknown_cells += 1
                continue
            finding = ann.findings.get(code)
            steps = [e.step_id for e in finding.evidence] if finding else []
            # A custom taxonomy's codes that MAST does not name keep the code alone.
            name = names.get(code, code)
            attributes: dict[str, Any] = {
                "gen_ai.evaluation.name": f"MAST {code} {name}",
                "gen_ai.evaluation.score.value": 1.0 if value else 0.0,
                "gen_ai.evaluation.score.label": "present" if value else "absent",
                "mast.mode.code": code,
                "mast.trace.id": ann.trace_id,
                "mast.taxonomy": ann.taxonomy,
            }
            if finding is not None and finding.rationale:
                attributes["gen_ai.evaluation.explanation"] = finding.rationale
            if steps:
                attributes["mast.evidence.step_ids"] = steps
            if model:
                attributes["mast.judge.model"] = model
            trace_id, span_id = _trace_context(trace, steps)
            if trace_id is not None and span_id is not None:
                summary.attached += 1
            else:
                # Not parented to a span: the conventions correlate by the response's id.
                attributes["gen_ai.response.id"] = ann.trace_id
            events.append(EvaluationEvent(attributes, trace_id, span_id, _nanos(ann)))
            summary.events += 1
    return events


def export_otel(
    annotations: Iterable[Annotation],
    *,
    traces: Iterable[Trace] = (),
    out: str | Path | None = None,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    service_name: str = "mast",
    error_events: bool = True,
    redact: bool | Redactor = True,
) -> ExportSummary:
    """Emit one ``gen_ai.evaluation.result`` event per judged mode.

    ``out``: an OTLP JSON file (JSON Lines, one export request per line, as the OTel file
    exporter writes it); ``endpoint``: an OTLP/HTTP collector base URL
    (``http://localhost:4318``; ``/v1/logs`` is added) or its full logs URL. ``redact``: see
    :func:`evaluation_events` (``False`` exports the explanations as the judge wrote them).
    """
    if (out is None) == (endpoint is None):
        raise ValueError("give exactly one of out= (a file) or endpoint= (an OTLP/HTTP URL)")
    try:
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise MissingDependencyError(
            f"exporting to OpenTelemetry needs the OpenTelemetry SDK. Install it with: {_INSTALL}"
        ) from exc
    exporter = _exporter(out, endpoint, headers)
    summary = ExportSummary()
    events = evaluation_events(
        annotations, traces, summary=summary, error_events=error_events, redact=redact
    )
    from mast._version import __version__

    provider = LoggerProvider(
        resource=Resource.create({"service.name": service_name, "mast.version": __version__})
    )
    # Batches of up to 512 events per export request; shutdown() below flushes the rest.
    provider.add_log_record_processor(
        BatchLogRecordProcessor(exporter, max_export_batch_size=512, schedule_delay_millis=1000)
    )
    logger = provider.get_logger("mast", __version__)
    try:
        for event in events:
            context = None
            if event.trace_id is not None and event.span_id is not None:
                span_context = otel_trace.SpanContext(
                    trace_id=event.trace_id,
                    span_id=event.span_id,
                    is_remote=True,
                    trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED),
                )
                context = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(span_context))
            logger.emit(
                event_name=EVENT_NAME,
                attributes=event.attributes,
                context=context,
                timestamp=event.timestamp_ns,
                observed_timestamp=time.time_ns(),
            )
    finally:
        provider.shutdown()
    return summary


def _exporter(
    out: str | Path | None, endpoint: str | None, headers: Mapping[str, str] | None
) -> Any:
    if out is not None:
        try:
            from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter
        except ImportError as exc:
            raise MissingDependencyError(
                "writing OTLP JSON files needs opentelemetry-exporter-otlp-json-file. "
                f"Install it with: {_INSTALL}"
            ) from exc
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")  # the exporter appends; a new export replaces an old file
        return FileLogExporter(path=str(path))
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    except ImportError as exc:
        raise MissingDependencyError(
            "sending to an OTLP endpoint needs opentelemetry-exporter-otlp-proto-http. "
            f"Install it with: {_INSTALL}"
        ) from exc
    assert endpoint is not None
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/logs"):
        url += "/v1/logs"
    return OTLPLogExporter(endpoint=url, headers=dict(headers or {}))
