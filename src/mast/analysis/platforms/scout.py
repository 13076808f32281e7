"""mast as an Inspect Scout scanner and as an Inspect scorer.

:func:`mast_scanner` is a Scout scanner (``inspect_scout``, the ``scout`` extra): for each
transcript Scout reads (Inspect logs, or any other source Scout supports) it builds a mast
trace from the transcript's messages, judges it with a :class:`mast.Judge` and returns one
result per judged mode (value ``True`` = the mode is present, ``answer``
``"present"``/``"absent"``, the judge's rationale as explanation, quote and step ids in
metadata). Unknown modes give no result; a failed annotation is raised, so Scout records it as
that transcript's error. :func:`mast_scorer` does the same as an Inspect scorer: one score
per sample whose value is ``{code: 1 | 0 | NaN}`` (NaN: unknown, which Inspect's metrics
leave out as unscored).

Run it with Scout's runner::

    from inspect_scout import scan, transcripts_from
    from mast.analysis.platforms.scout import mast_scanner
    scan([mast_scanner(model="openai/gpt-4.1")], transcripts_from("logs/"))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mast.analysis.platforms._inputs import need
from mast.judge.annotation import Annotation
from mast.traces.model import Trace

__all__ = ["mast_scanner", "mast_scorer", "trace_of_messages"]


def trace_of_messages(
    trace_id: str, messages: Sequence[Any], *, task: str | None = None, model: str | None = None
) -> Trace:
    """A mast trace from Inspect chat messages (pydantic models or their dicts)."""
    from mast.traces.loaders._inspect import sample_trace

    dumped = [m.model_dump(mode="json") if hasattr(m, "model_dump") else dict(m) for m in messages]
    sample: dict[str, Any] = {"id": trace_id, "messages": dumped}
    info: dict[str, Any] = {"task": task or "scout", "model": model}
    trace = sample_trace(info, sample)
    return trace.model_copy(update={"id": trace_id, "format": "inspect"})


def _judge(model: str | Any, options: Mapping[str, Any]) -> Any:
    from mast.judge.judge import Judge

    return model if isinstance(model, Judge) else Judge(model, **dict(options))


def _findings(ann: Annotation) -> list[tuple[str, bool, str | None, dict[str, Any]]]:
    if not ann.ok:
        from mast.errors import MastError

        raise MastError(f"mast could not judge {ann.trace_id}: {ann.status}: {ann.error}")
    out = []
    for code in ann.vector:
        value = ann.vector[code]
        if value is None:
            continue  # unknown is not "no": no result
        finding = ann.findings.get(code)
        evidence = finding.evidence if finding else []
        meta = {
            "mast_mode": code,
            "step_ids": [e.step_id for e in evidence],
            "quotes": [e.quote for e in evidence if e.quote],
            "judge": ann.judge.get("model"),
            "taxonomy": ann.taxonomy,
        }
        out.append((code, bool(value), finding.rationale if finding else None, meta))
    return out


def mast_scanner(model: str | Any = "heuristic", **judge_options: Any) -> Any:
    """A Scout scanner judging each transcript's messages with ``mast.Judge(model)``."""
    scout = need("inspect_scout", "scout", "the mast Scout scanner")
    judges: list[Any] = []

    @scout.scanner(messages="all", name="mast")  # type: ignore[untyped-decorator]
    def mast() -> Any:
        async def scan(transcript: Any) -> list[Any]:
            # Made on first use, inside the process and event loop Scout runs scans in (a
            # provider client belongs to the loop it was made on).
            if not judges:
                judges.append(_judge(model, judge_options))
            judge = judges[0]
            trace = trace_of_messages(
                str(transcript.transcript_id),
                transcript.messages,
                task=transcript.task_set,
                model=transcript.model,
            )
            ann = await judge.aannotate(trace)
            return [
                scout.Result(
                    value=present,
                    answer="present" if present else "absent",
                    explanation=rationale,
                    metadata=meta,
                    label=f"mast/{code}",
                )
                for code, present, rationale, meta in _findings(ann)
            ]

        # Scout checks the scan function's signature: the real types, not postponed strings.
        scan.__annotations__ = {
            "transcript": scout.Transcript,
            "return": list.__class_getitem__(scout.Result),
        }
        return scan

    return mast()


def mast_scorer(model: str | Any = "heuristic", **judge_options: Any) -> Any:
    """An Inspect scorer: one score per sample, ``{code: 1 | 0 | NaN}`` (NaN = unknown)."""
    scoring = need("inspect_ai.scorer", "inspect", "the mast Inspect scorer")
    judges: list[Any] = []

    @scoring.scorer(metrics={"*": [scoring.mean()]}, name="mast")  # type: ignore[untyped-decorator]
    def mast() -> Any:
        async def score(state: Any, target: Any) -> Any:
            trace = trace_of_messages(
                f"{state.sample_id}#epoch{state.epoch}", state.messages, model=str(state.model)
            )
            if not judges:
                judges.append(_judge(model, judge_options))
            ann = await judges[0].aannotate(trace)
            # Every mode is a key (Inspect's metrics need the same keys on every sample);
            # an unknown mode, or every mode of a failed annotation, is NaN: unscored, never 0.
            from mast.taxonomy import load_taxonomy

            codes = list(ann.vector) or load_taxonomy().codes
            values = {code: math.nan for code in codes}
            if not ann.ok:
                return scoring.Score(
                    value=values,
                    explanation=f"mast could not judge this sample: {ann.status}: {ann.error}",
                    metadata={"mast": {"status": ann.status, "error": ann.error}},
                )
            found = _findings(ann)
            values.update({code: 1.0 if present else 0.0 for code, present, _, _ in found})
            return scoring.Score(
                value=values,
                explanation="\n".join(
                    f"{code}: {'present' if p else 'absent'}" + (f" ({why})" if why else "")
                    for code, p, why, _ in found
                ),
                metadata={"mast": {code: meta for code, _, _, meta in found}},
            )

        return score

    return mast()
