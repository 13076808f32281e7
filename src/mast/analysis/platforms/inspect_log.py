"""Inspect AI: MAST verdicts as sample scores in an ``.eval`` (or ``.json``) log.

Read and written with inspect_ai's own log API (``read_eval_log`` / ``write_eval_log``,
the ``inspect`` extra), so ``inspect view`` shows them beside the task's own scores. Each
judged mode of a sample becomes a score named ``mast/<code>`` with value 1 (present) or 0
(absent), ``answer`` ``"present"``/``"absent"``, the rationale as ``explanation`` and the
judge, quote and step ids in ``metadata``. Unknown modes get no score; failed annotations
are reported and leave the sample as it was. The samples are matched by the trace ids mast's
Inspect loader gives them (``<task>/<sample id>``, ``#epochN`` when there are several), so
give the results of annotating that same log. A rerun replaces the ``mast/…`` scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mast.analysis.platforms._inputs import Results, annotations_of, need
from mast.analysis.platforms.scores import ExportReport, build_scores

__all__ = ["SCORE_PREFIX", "to_inspect"]

SCORE_PREFIX = "mast/"


def to_inspect(
    results: Results,
    log: str | Path,
    *,
    out: str | Path | None = None,
    in_place: bool = False,
) -> ExportReport:
    """Write MAST sample scores into a copy of ``log`` (``out``) or into ``log`` itself."""
    if in_place == (out is not None):
        raise ValueError("give exactly one of out= (a copy) or in_place=True")
    inspect_log = need("inspect_ai.log", "inspect", "writing Inspect logs")
    scorer = need("inspect_ai.scorer", "inspect", "writing Inspect logs")
    from mast.traces.loaders import load_traces

    source = Path(log)
    traces = list(load_traces(source, format="inspect"))
    report = build_scores(annotations_of(results), traces, "inspect")
    where: dict[str, tuple[Any, Any]] = {}
    for trace in traces:
        info = trace.metadata.get("inspect") or {}
        where[trace.id] = (info.get("sample_id"), info.get("epoch"))
    eval_log = inspect_log.read_eval_log(str(source))
    samples = {(s.id, s.epoch): s for s in eval_log.samples or []}
    touched: set[tuple[Any, Any]] = set()
    for score in report.scores:
        sample_id, epoch = where.get(score.trace_id, (None, None))
        sample = samples.get((sample_id, epoch or 1))
        if sample is None:
            report.rejected.append((score.id, f"no sample for trace {score.trace_id}"))
            continue
        if (sample.id, sample.epoch) not in touched:
            # A rerun replaces mast's earlier scores of this sample, never adds beside them.
            for name in [n for n in (sample.scores or {}) if n.startswith(SCORE_PREFIX)]:
                del sample.scores[name]
            touched.add((sample.id, sample.epoch))
        if sample.scores is None:
            sample.scores = {}
        sample.scores[f"{SCORE_PREFIX}{score.code}"] = scorer.Score(
            value=score.value,
            answer=score.label,
            explanation=score.explanation,
            metadata={**score.metadata, "name": score.name, "mast_score_id": score.id},
        )
        report.written += 1
    target = source if in_place else Path(str(out))
    inspect_log.write_eval_log(eval_log, str(target))
    return report
