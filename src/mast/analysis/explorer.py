"""The data behind the report's interactive trace explorer (one JSON document in the page).

One entry per trace (not per annotation): every run's verdict on it, the reference labels
(the ``--reference`` source, and every annotator the loaded trace carries, plus their
majority when three or more agree to label it), and the trace's steps, clipped, so the page
can show a step timeline with the flagged modes at the steps their evidence cites.

Extension points for other sections of the report:

* :data:`TRACE_COLUMNS`: extra columns of the trace list, ``(key, title, fn(annotations by
  run, trace) -> str | number | None)``; append to it (e.g. the decisive error's step).
* a trace entry's ``marks``: extra step highlights ``{"step", "label", "kind", "run",
  "note"}``; :data:`MARKERS` functions ``fn(run, annotation, trace) -> list of marks`` add
  them. The decisive error of a run (``annotation.decisive_error``) is one, with
  ``kind="decisive"``, which gets its own colour.

>>> import mast
>>> traces = mast.datasets.example_traces()[:2]
>>> anns = {"h": [mast.Judge("heuristic").annotate(t) for t in traces]}
>>> data = explorer_data(anns, traces)
>>> len(data["traces"]), data["runs"], sorted(data["traces"][0])[:4]
(2, ['h'], ['extra', 'id', 'key', 'label'])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mast.analysis.report_attribution import COLUMNS as ATTRIBUTION_COLUMNS
from mast.analysis.report_attribution import decisive_entry, label_entry
from mast.judge.annotation import Annotation
from mast.traces.model import Trace

__all__ = ["MARKERS", "TRACE_COLUMNS", "embed_json", "explorer_data"]

STEP_CHARS = 1500  # characters of each step kept in the page
MAX_EMBEDDED_CHARS = 20_000_000  # step text in the page at most; later traces list only

Column = tuple[str, str, Callable[[Mapping[str, Annotation], "Trace | None"], Any]]
Marker = Callable[[str, Annotation, "Trace | None"], list[dict[str, Any]]]

TRACE_COLUMNS: list[Column] = [*ATTRIBUTION_COLUMNS]


def _decisive_mark(run: str, ann: Annotation, trace: Trace | None) -> list[dict[str, Any]]:
    """The step of the run's decisive error (who/when attribution), when it names one."""
    error = ann.decisive_error
    if error is None or not error.step_id:
        return []
    label = "decisive error" + (f" ({error.agent})" if error.agent else "")
    return [
        {
            "step": error.step_id,
            "label": label,
            "kind": "decisive",
            "run": run,
            "note": error.reason or "",
        }
    ]


MARKERS: list[Marker] = [_decisive_mark]


def _vector(values: Mapping[str, Any], codes: Sequence[str]) -> dict[str, bool | None]:
    return {c: (values.get(c) if values.get(c) in (True, False) else None) for c in codes}


def _reference_vectors(
    reference: Any, reference_name: str, codes: Sequence[str]
) -> dict[str, dict[str, bool | None]]:
    """``{trace_id: {code: label}}`` from any label source :func:`mast.agreement` takes."""
    if reference is None:
        return {}
    from mast.agree.table import to_table
    from mast.taxonomy import load_taxonomy

    table = to_table(reference, modes=list(codes), taxonomy=load_taxonomy(), name=reference_name)
    out: dict[str, dict[str, bool | None]] = {}
    for i, trace_id in enumerate(table.ids):
        row = table.values[i]
        out[trace_id] = {c: (None if row[j] < 0 else bool(row[j])) for j, c in enumerate(codes)}
    return out


def _majority(
    labels: Mapping[str, Mapping[str, bool | None]], codes: Sequence[str]
) -> dict[str, bool | None]:
    """Per mode, the label most annotators gave among those who gave one (ties: unknown)."""
    out: dict[str, bool | None] = {}
    for c in codes:
        known = [v[c] for v in labels.values() if v.get(c) is not None]
        yes = sum(1 for v in known if v)
        no = len(known) - yes
        out[c] = None if yes == no else yes > no
    return out


def explorer_data(
    runs: Mapping[str, Sequence[Annotation]],
    traces: Sequence[Trace],
    *,
    reference: Any = None,
    reference_name: str = "reference",
) -> dict[str, Any]:
    """The explorer's JSON-ready document (see the module docstring)."""
    from mast.taxonomy import load_taxonomy

    tax = load_taxonomy()
    codes = list(tax.codes)
    by_id = {t.id: t for t in traces}
    ref = _reference_vectors(reference, reference_name, codes)
    seen: dict[str, None] = {}
    per_run: dict[str, dict[str, Annotation]] = {}
    for run, anns in runs.items():
        latest: dict[str, Annotation] = {}
        for ann in anns:
            # A retried trace appears twice in a results file: the last usable answer counts.
            if ann.trace_id in latest and not ann.ok and latest[ann.trace_id].ok:
                continue
            latest[ann.trace_id] = ann
            seen[ann.trace_id] = None
        per_run[run] = latest
    # Traces only the reference labels are left out: there is no verdict to compare.
    order = list(seen)
    references: list[str] = []
    if ref:
        references.append(reference_name)
    budget = MAX_EMBEDDED_CHARS
    entries = []
    for n, trace_id in enumerate(order):
        trace = by_id.get(trace_id)
        refs: dict[str, dict[str, bool | None]] = {}
        if trace_id in ref:
            refs[reference_name] = ref[trace_id]
        if trace is not None and trace.labels:
            annotators = {a: _vector(dict(v.items()), codes) for a, v in trace.labels.items()}
            for name, vector in annotators.items():
                refs.setdefault(name, vector)
            if len(annotators) >= 3:
                refs["majority"] = _majority(annotators, codes)
        for name in refs:
            if name not in references:
                references.append(name)
        here = {run: latest[trace_id] for run, latest in per_run.items() if trace_id in latest}
        entry: dict[str, Any] = {
            "key": f"t{n + 1}",
            "id": trace_id,
            "system": trace.system if trace else None,
            "outcome": trace.outcome.value if trace else None,
            "n_steps": len(trace.steps) if trace else None,
            "runs": {run: _run_entry(ann, codes) for run, ann in here.items()},
            "refs": refs,
            "label": label_entry(trace),
            "marks": [
                m for run, ann in here.items() for fn in MARKERS for m in fn(run, ann, trace)
            ],
            "extra": {key: fn(here, trace) for key, _, fn in TRACE_COLUMNS},
            "search": " ".join(
                filter(
                    None, [trace.task if trace else None, *(a.summary or "" for a in here.values())]
                )
            )[:2000],
        }
        if trace is None:
            entry["steps"] = None
            entry["steps_note"] = "trace text not loaded (give --traces)"
        else:
            steps, used = _steps(trace, budget)
            budget -= used
            entry["steps"] = steps
            if steps is None:
                entry["steps_note"] = (
                    "steps left out: the page already holds "
                    f"{MAX_EMBEDDED_CHARS:,} characters of trace text"
                )
            elif len(steps) < len(trace.steps):
                entry["steps_note"] = f"{len(trace.steps) - len(steps)} more steps not shown"
        entries.append(entry)
    # A name used both for a run and a reference would make the columns ambiguous.
    references = [r for r in references if r not in runs]
    return {
        "codes": codes,
        "names": {c: tax[c].name for c in codes},
        "runs": list(runs),
        "references": references,
        "columns": [{"key": key, "title": title} for key, title, _ in TRACE_COLUMNS],
        "traces": entries,
    }


def _run_entry(ann: Annotation, codes: Sequence[str]) -> dict[str, Any]:
    vector = _vector(dict(ann.vector.items()), codes) if ann.ok else None
    return {
        "status": ann.status,
        "error": (ann.error or "").strip().splitlines()[0][:300] if ann.error else None,
        "summary": ann.summary,
        "decisive": decisive_entry(ann.decisive_error),
        "vector": vector,
        "unknown": sum(1 for v in (vector or {}).values() if v is None),
        "ungrounded": [c for c, f in ann.findings.items() if f.grounded is False],
        "findings": {
            code: {
                "rationale": f.rationale,
                "evidence": [
                    {"step": e.step_id, "quote": e.quote, "grounded": e.grounded}
                    for e in f.evidence
                ],
            }
            for code, f in ann.findings.items()
            if ann.ok and ann.vector[code] is True
        },
    }


def _steps(trace: Trace, budget: int) -> tuple[list[dict[str, Any]] | None, int]:
    if budget <= 0:
        return None, 0
    out = []
    used = 0
    for step in trace.steps:
        text = step.content
        if len(text) > STEP_CHARS:
            text = text[:STEP_CHARS] + f" … [{len(step.content):,} characters]"
        used += len(text)
        out.append({"id": step.id, "agent": step.agent, "kind": step.kind.value, "text": text})
        if used > budget:
            break
    return out, used


def embed_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` and no
    line separators survive as such, so no trace text can close the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
