"""Arize Phoenix: MAST verdicts as span annotations, and traces pulled from its REST API.

Through Phoenix's own client (``arize-phoenix-client``, the ``phoenix`` extra):

* :func:`to_phoenix` writes one span annotation per judged mode with
  ``client.spans.log_span_annotations``: ``name`` ``"MAST 1.3 Step Repetition"``,
  ``result`` = ``{score: 1 | 0, label: "present" | "absent", explanation: rationale}``,
  ``annotator_kind`` ``"LLM"`` (``"HUMAN"`` for labels from ``mast label export``), the judge,
  quote and step ids in ``metadata``. Phoenix keys an annotation on (name, span, identifier);
  mast's ``identifier`` is derived from the record key, so a rerun updates the annotations.
* :func:`pull_phoenix` lists a project's root spans (time range, span name / kind /
  attribute filters, a limit) and writes every span of each trace, one per line, into a JSON
  Lines file that ``mast annotate`` reads (format ``otel``; span ids kept). Resumable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from mast.analysis.platforms._inputs import Results, TraceInputs, annotations_of, chunks, need
from mast.analysis.platforms._inputs import traces_of as _traces_of
from mast.analysis.platforms.pull import PullReport, PullWriter, parse_time
from mast.analysis.platforms.scores import ExportReport, HumanLabels, PlatformScore, build_scores

__all__ = ["annotation_body", "pull_phoenix", "to_phoenix"]

_BATCH = 100


def _client(base_url: str | None, api_key: str | None, client: Any) -> Any:
    if client is not None:
        return client
    module = need("phoenix.client", "phoenix", "exporting to Phoenix")
    return module.Client(base_url=base_url, api_key=api_key)


def annotation_body(score: PlatformScore) -> dict[str, Any]:
    """The ``SpanAnnotationData`` Phoenix's client sends for one score."""
    result: dict[str, Any] = {"label": score.label, "score": score.value}
    if score.explanation:
        result["explanation"] = score.explanation
    return {
        "name": score.name,
        "span_id": score.target_id,
        "annotator_kind": score.annotator_kind,
        "result": result,
        "metadata": {**score.metadata, "annotator": score.annotator, "mast_score_id": score.id},
        "identifier": score.identifier,
    }


def to_phoenix(
    results: Results,
    traces: TraceInputs = (),
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    human: Iterable[HumanLabels] = (),
    redact: bool | Any = True,
    dry_run: bool = False,
    client: Any = None,
) -> ExportReport:
    """Write MAST verdicts to Phoenix as span annotations (see the module docstring).

    ``traces``: the judged traces (Phoenix/OTel span exports or ``mast pull phoenix``
    output), which give each step its span id. ``base_url``/``api_key`` default to Phoenix's
    own environment variables (``PHOENIX_COLLECTOR_ENDPOINT``, ``PHOENIX_API_KEY``).
    """
    report = build_scores(
        annotations_of(results), _traces_of(traces), "phoenix", human=human, redact=redact
    )
    report.dry_run = dry_run
    if dry_run or not report.scores:
        return report
    px = _client(base_url, api_key, client)
    spans = [s for s in report.scores if s.target == "span"]
    for s in report.scores:
        if s.target != "span":
            report.rejected.append((s.id, "no span to annotate"))
    for batch in chunks(spans, _BATCH):
        try:
            inserted = px.spans.log_span_annotations(
                span_annotations=[annotation_body(s) for s in batch], sync=True
            )
        except Exception as exc:  # httpx errors and the client's ValueErrors alike
            # Phoenix takes a batch whole or not at all: every score of it is reported.
            report.rejected.extend((s.id, f"{type(exc).__name__}: {exc}") for s in batch)
            continue
        report.written += len(inserted) if inserted is not None else len(batch)
    return report


def _records(spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(s) for s in spans]


def pull_phoenix(
    out: str | Path,
    *,
    project: str = "default",
    base_url: str | None = None,
    api_key: str | None = None,
    start: str | datetime | None = None,
    end: str | datetime | None = None,
    name: str | None = None,
    span_kind: str | None = None,
    attributes: Mapping[str, str | int | float | bool] | None = None,
    limit: int = 1000,
    client: Any = None,
) -> PullReport:
    """Pull up to ``limit`` traces of ``project`` into ``out`` (JSON Lines of spans).

    Traces are chosen by their root span (``start``/``end``: its start time; ``name``,
    ``span_kind``, ``attributes``: Phoenix's span filters applied to the root); each trace is
    written whole, with every span, and recorded in the pull state, so a rerun resumes.
    """
    px = _client(base_url, api_key, client)
    since, until = parse_time(start), parse_time(end)
    query = {
        "project": project,
        "start": since.isoformat() if since else None,
        "end": until.isoformat() if until else None,
        "name": name,
        "span_kind": span_kind,
        "attributes": dict(attributes or {}),
        "limit": limit,
    }
    report = PullReport(platform="phoenix", out=Path(out))
    filters: dict[str, Any] = {}
    if name:
        filters["name"] = name
    if span_kind:
        filters["span_kind"] = span_kind
    if attributes:
        filters["attributes"] = dict(attributes)
    # The client pages through the listing itself (cursor by cursor, 100 spans a page).
    roots = px.spans.get_spans(
        project_identifier=project,
        start_time=since,
        end_time=until,
        parent_id="null",
        limit=limit,
        **filters,
    )
    report.complete = len(roots) < limit
    with PullWriter(
        out, platform="phoenix", query=query, trace_of=lambda r: r["context"]["trace_id"]
    ) as writer:
        for root in roots:
            trace_id = str(root["context"]["trace_id"])
            if writer.seen(trace_id):
                report.skipped += 1
                continue
            spans = _trace_spans(px, project, trace_id)
            report.records += writer.write_trace(trace_id, _records(spans))
            writer.done(trace_id)
            report.traces += 1
    if not report.complete:
        report.notes.append(f"stopped at the limit of {limit} trace(s)")
    return report


def _trace_spans(px: Any, project: str, trace_id: str) -> list[Mapping[str, Any]]:
    spans: list[Mapping[str, Any]] = []
    page = 1000
    while True:
        got = px.spans.get_spans(
            project_identifier=project, trace_ids=[trace_id], limit=len(spans) + page
        )
        if len(got) < len(spans) + page:
            return list(got)
        spans = got
        page *= 2


def traces_of(paths: TraceInputs) -> list[Any]:
    """The traces of a pull's output (or any other trace files)."""
    return _traces_of(paths)
