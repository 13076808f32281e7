"""Langfuse: MAST verdicts as scores, and traces pulled from the observations API.

Through the Langfuse SDK's API client (``langfuse.api.LangfuseAPI``, the ``langfuse`` extra):

* :func:`to_langfuse` sends one ``BOOLEAN`` score per judged mode (``POST /api/public/scores``,
  a list of scores per request): ``traceId``, ``observationId`` of the evidence step's
  observation (none: a trace-level score), ``value`` 1/0, the rationale as ``comment``, the
  judge, label, quote and step ids in ``metadata``. The score ``id`` is derived from the
  record key and its ``timestamp`` is the verdict's time, so a rerun updates the same scores
  (Langfuse updates a score sent again with the same id and timestamp). Human labels go out
  with ``source: "ANNOTATION"``, which Langfuse accepts only with a score config: mast uses
  (or creates) one ``BOOLEAN`` config per mode name.
* :func:`pull_langfuse` lists root observations (time range, name, user, session, environment,
  a limit) through ``GET /api/public/v2/observations`` with its cursor, then every observation
  of each trace, into JSON Lines that ``mast annotate`` reads (format ``langfuse``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from mast.analysis.platforms._inputs import Results, TraceInputs, annotations_of, chunks, need
from mast.analysis.platforms._inputs import traces_of as _traces_of
from mast.analysis.platforms.pull import PullReport, PullWriter, parse_time
from mast.analysis.platforms.scores import ExportReport, HumanLabels, PlatformScore, build_scores

__all__ = ["pull_langfuse", "score_body", "to_langfuse"]

_BATCH = 100
_IO_FIELDS = "core,basic,time,io,metadata,model,usage"


def _client(host: str | None, public_key: str | None, secret_key: str | None, client: Any) -> Any:
    if client is not None:
        return client
    import os

    module = need("langfuse.api", "langfuse", "Langfuse export and pull")
    host = host or os.environ.get("LANGFUSE_HOST") or os.environ.get("LANGFUSE_BASE_URL")
    public_key = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY")
    secret_key = secret_key or os.environ.get("LANGFUSE_SECRET_KEY")
    if not host or not public_key or not secret_key:
        from mast.errors import MastError

        raise MastError(
            "Langfuse needs a host and keys: --host (or LANGFUSE_HOST), LANGFUSE_PUBLIC_KEY "
            "and LANGFUSE_SECRET_KEY"
        )
    return module.LangfuseAPI(
        base_url=host.rstrip("/"),
        username=public_key,
        password=secret_key,
        x_langfuse_public_key=public_key,
        x_langfuse_sdk_name="mast",
    )


def score_body(score: PlatformScore, config_id: str | None = None) -> dict[str, Any]:
    """The score as Langfuse's ``CreateScoreRequest`` fields (API names)."""
    body: dict[str, Any] = {
        "id": score.id,
        "traceId": score.trace_id,
        "name": score.name,
        "value": score.value,
        "dataType": "BOOLEAN",
        "metadata": {**score.metadata, "label": score.label, "annotator": score.annotator},
        "source": "ANNOTATION" if score.annotator_kind == "HUMAN" else "API",
    }
    if score.target == "span" and score.target_id:
        body["observationId"] = score.target_id
    if score.explanation:
        body["comment"] = score.explanation
    if score.timestamp:
        body["timestamp"] = score.timestamp
    if config_id:
        body["configId"] = config_id
    return body


def _configs(api: Any, names: set[str]) -> dict[str, str]:
    """A BOOLEAN score config id per name (found, else created): human scores need one."""
    found: dict[str, str] = {}
    page = 1
    while True:
        listing = api.score_configs.get(page=page, limit=100)
        for config in listing.data:
            if config.name in names and str(config.data_type) in (
                "BOOLEAN",
                "ScoreConfigDataType.BOOLEAN",
            ):
                found.setdefault(config.name, config.id)
        if page >= (listing.meta.total_pages or 1):
            break
        page += 1
    for name in sorted(names - set(found)):
        found[name] = api.score_configs.create(name=name, data_type="BOOLEAN").id
    return found


def to_langfuse(
    results: Results,
    traces: TraceInputs = (),
    *,
    host: str | None = None,
    public_key: str | None = None,
    secret_key: str | None = None,
    human: Iterable[HumanLabels] = (),
    redact: bool | Any = True,
    dry_run: bool = False,
    client: Any = None,
) -> ExportReport:
    """Write MAST verdicts to Langfuse as scores (see the module docstring).

    ``host``/``public_key``/``secret_key`` default to ``LANGFUSE_HOST``,
    ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY``.
    """
    report = build_scores(
        annotations_of(results), _traces_of(traces), "langfuse", human=human, redact=redact
    )
    report.dry_run = dry_run
    if dry_run or not report.scores:
        return report
    api = _client(host, public_key, secret_key, client)
    from langfuse.api.scores import CreateScoreRequest

    humans = {s.name for s in report.scores if s.annotator_kind == "HUMAN"}
    configs = _configs(api, humans) if humans else {}
    for batch in chunks(report.scores, _BATCH):
        bodies = [
            score_body(s, configs.get(s.name) if s.annotator_kind == "HUMAN" else None)
            for s in batch
        ]
        try:
            answer = api.scores.create(
                request=[CreateScoreRequest.model_validate(b) for b in bodies]
            )
        except Exception as exc:  # the SDK's ApiError and transport errors alike
            report.rejected.extend((s.id, f"{type(exc).__name__}: {exc}") for s in batch)
            continue
        rejected = int(getattr(answer, "rejected", 0) or 0)
        report.written += len(batch) - rejected
        if rejected:
            # A 207 says how many were refused and why, not which: the batch's ids are
            # listed with the reasons (resending is safe: same ids update).
            reasons = "; ".join(e.message for e in getattr(answer, "errors", []) or [])
            report.rejected.extend(
                (s.id, f"one of {rejected} refused in its batch: {reasons}") for s in batch
            )
    return report


def _record(observation: Any) -> dict[str, Any]:
    record: dict[str, Any] = observation.model_dump(by_alias=True, mode="json", exclude_none=True)
    # The v2 API returns input and output as raw strings: JSON ones are read back.
    for key in ("input", "output"):
        value = record.get(key)
        if isinstance(value, str) and value[:1] in '[{"':
            with contextlib.suppress(ValueError):
                record[key] = json.loads(value)
    return record


def pull_langfuse(
    out: str | Path,
    *,
    host: str | None = None,
    public_key: str | None = None,
    secret_key: str | None = None,
    start: str | datetime | None = None,
    end: str | datetime | None = None,
    name: str | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    environment: str | None = None,
    limit: int = 1000,
    page_size: int = 100,
    client: Any = None,
) -> PullReport:
    """Pull up to ``limit`` traces into ``out`` (JSON Lines of observations; resumable)."""
    api = _client(host, public_key, secret_key, client)
    since, until = parse_time(start), parse_time(end)
    filters: dict[str, Any] = {
        k: v
        for k, v in {
            "name": name,
            "user_id": user_id,
            "session_id": session_id,
            "environment": environment,
        }.items()
        if v
    }
    query = {
        "start": since.isoformat() if since else None,
        "end": until.isoformat() if until else None,
        "limit": limit,
        **filters,
    }
    report = PullReport(platform="langfuse", out=Path(out))
    with PullWriter(
        out, platform="langfuse", query=query, trace_of=lambda r: r.get("traceId")
    ) as w:
        cursor = w.cursor
        listed = len(w._done)
        while listed < limit:
            page = api.observations.get_many(
                is_root_observation=True,
                from_start_time=since,
                to_start_time=until,
                limit=min(page_size, limit - listed),
                cursor=cursor,
                **filters,
            )
            for root in page.data:
                trace_id = str(root.trace_id)
                if w.seen(trace_id):
                    report.skipped += 1
                    continue
                records = [_record(o) for o in _observations(api, trace_id, page_size)]
                report.records += w.write_trace(trace_id, records)
                w.done(trace_id)
                report.traces += 1
                listed += 1
            cursor = page.meta.cursor if page.meta is not None else None
            w.cursor = cursor
            if not cursor or not page.data:
                break
        report.complete = listed < limit or not cursor
    if not report.complete:
        report.notes.append(
            f"stopped at the limit of {limit} trace(s); rerun with a higher --limit to go on"
        )
    return report


def _observations(api: Any, trace_id: str, page_size: int) -> list[Any]:
    out: list[Any] = []
    cursor: str | None = None
    while True:
        page = api.observations.get_many(
            trace_id=trace_id, fields=_IO_FIELDS, limit=page_size, cursor=cursor
        )
        out.extend(page.data)
        cursor = page.meta.cursor if page.meta is not None else None
        if not cursor or not page.data:
            return out


def traces_of(paths: TraceInputs) -> list[Any]:
    """The traces of a pull's output (or any other trace files)."""
    return _traces_of(paths)
