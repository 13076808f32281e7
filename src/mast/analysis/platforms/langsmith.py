"""LangSmith: MAST verdicts as run feedback, and runs pulled from a project.

Through LangSmith's own client (``langsmith.Client``, the ``langsmith`` extra):

* :func:`to_langsmith` creates one feedback per judged mode with ``Client.create_feedback``
  (``POST /feedback``): on the run of the evidence step (else the root run), ``key``
  ``"MAST 1.3 Step Repetition"``, ``score`` 1/0, ``value`` ``"present"``/``"absent"``, the
  rationale as ``comment``, the judge, quote and step ids in ``source_info`` (the feedback
  source's metadata). The judge's feedback has source type ``"model"``; human labels from
  ``mast label export`` go out as ``"api"`` feedback naming the labeller (the SDK offers no
  other source type; LangSmith's own ``"app"`` type is its UI's). The feedback id is derived
  from the record key: a rerun finds it taken (HTTP 409) and updates that feedback instead
  (``PATCH /feedback/{id}``), so nothing is duplicated.
* :func:`pull_langsmith` lists a project's root runs (start time, a filter in LangSmith's
  query language, a limit) and each trace's runs into JSON Lines of flat runs that
  ``mast annotate`` reads (format ``langsmith``; run ids kept).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from mast.analysis.platforms._inputs import Results, TraceInputs, annotations_of, need
from mast.analysis.platforms._inputs import traces_of as _traces_of
from mast.analysis.platforms.pull import PullReport, PullWriter, parse_time
from mast.analysis.platforms.scores import ExportReport, HumanLabels, PlatformScore, build_scores

__all__ = ["feedback_args", "pull_langsmith", "to_langsmith"]


def _client(api_url: str | None, api_key: str | None, client: Any) -> Any:
    if client is not None:
        return client
    module = need("langsmith", "langsmith", "LangSmith export and pull")
    # mast only reads and annotates: never let the client trace mast's own calls.
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    return module.Client(api_url=api_url, api_key=api_key, auto_batch_tracing=False)


def feedback_args(score: PlatformScore, session_id: str | None = None) -> dict[str, Any]:
    """The keyword arguments of ``Client.create_feedback`` for one score."""
    info = {**score.metadata, "annotator": score.annotator}
    args: dict[str, Any] = {
        "run_id": score.target_id,
        "trace_id": score.trace_id,
        "key": score.name,
        "score": score.value,
        "value": score.label,
        "comment": score.explanation,
        "source_info": info,
        # LangSmith's SDK knows two source types: "model" for an LLM judge's verdict, "api"
        # for everything else (human labels, the rule-based heuristic), named in source_info.
        "feedback_source_type": "model" if score.annotator_kind == "LLM" else "api",
        "feedback_id": score.id,
    }
    if session_id:
        args["session_id"] = session_id
    return args


def to_langsmith(
    results: Results,
    traces: TraceInputs = (),
    *,
    api_url: str | None = None,
    api_key: str | None = None,
    human: Iterable[HumanLabels] = (),
    redact: bool | Any = True,
    project_id: str | None = None,
    dry_run: bool = False,
    client: Any = None,
) -> ExportReport:
    """Write MAST verdicts to LangSmith as feedback (see the module docstring).

    ``api_url``/``api_key`` default to ``LANGSMITH_ENDPOINT`` and ``LANGSMITH_API_KEY``.
    LangSmith wants the project (session) id with run feedback: a trace pulled with
    ``mast pull langsmith`` carries it; give ``project_id`` for exports that do not.
    """
    loaded = _traces_of(traces)
    report = build_scores(annotations_of(results), loaded, "langsmith", human=human, redact=redact)
    report.dry_run = dry_run
    if dry_run or not report.scores:
        return report
    ls = _client(api_url, api_key, client)
    from langsmith.utils import LangSmithConflictError

    sessions = {t.id: t.metadata.get("session_id") for t in loaded}
    for score in report.scores:
        args = feedback_args(score, sessions.get(score.trace_id) or project_id)
        try:
            try:
                ls.create_feedback(**args)
            except LangSmithConflictError:
                # The id is taken: this is a rerun; the feedback is updated in place.
                ls.update_feedback(
                    score.id, score=score.value, value=score.label, comment=score.explanation
                )
        except Exception as exc:  # the SDK's LangSmithError family and transport errors
            report.rejected.append((score.id, f"{type(exc).__name__}: {exc}"))
            continue
        report.written += 1
    return report


def _list_runs(ls: Any, **query: Any) -> list[Any]:
    import warnings

    # langsmith 0.15 marks list_runs deprecated (removal announced for 2027-01-31) in favour
    # of client.runs.query_v2, whose runs carry other fields (parent_run_ids, project_id).
    # The v1 endpoint is what deployments answer today; moving to v2 is a known follow-up.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"list_runs\(\) is deprecated")
        return list(ls.list_runs(**query))


def _record(run: Any) -> dict[str, Any]:
    record: dict[str, Any] = run.model_dump(mode="json", exclude_none=True)
    record.pop("child_runs", None)  # flat runs: the loader nests them by parent_run_id
    return record


def pull_langsmith(
    out: str | Path,
    *,
    project: str,
    api_url: str | None = None,
    api_key: str | None = None,
    start: str | datetime | None = None,
    filter: str | None = None,
    limit: int = 1000,
    client: Any = None,
) -> PullReport:
    """Pull up to ``limit`` traces of ``project`` into ``out`` (JSON Lines of runs).

    ``start``: root runs started from then on; ``filter``: a LangSmith filter on the root
    runs, e.g. ``'has(tags, "prod")'``. Resumable: a rerun skips the traces written whole.
    """
    ls = _client(api_url, api_key, client)
    since = parse_time(start)
    query = {
        "project": project,
        "start": since.isoformat() if since else None,
        "filter": filter,
        "limit": limit,
    }
    report = PullReport(platform="langsmith", out=Path(out))
    # The client pages through /runs/query with its cursor itself.
    roots = _list_runs(
        ls, project_name=project, is_root=True, start_time=since, filter=filter, limit=limit
    )
    report.complete = len(roots) < limit
    with PullWriter(
        out, platform="langsmith", query=query, trace_of=lambda r: r.get("trace_id")
    ) as w:
        for root in roots:
            trace_id = str(root.trace_id or root.id)
            if w.seen(trace_id):
                report.skipped += 1
                continue
            runs = _list_runs(ls, project_name=project, trace_id=trace_id)
            report.records += w.write_trace(trace_id, [_record(r) for r in runs])
            w.done(trace_id)
            report.traces += 1
    if not report.complete:
        report.notes.append(f"stopped at the limit of {limit} trace(s)")
    return report
