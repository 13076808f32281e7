"""Files that hold no traces but sit beside them: mast results files and label tables.

A folder of exports often also holds what came out of mast (``results.jsonl``) and the
human labels to compare with. Read as traces, every line of such a file would be one long
"unknown trace shape" error; recognised here, the file gets one error saying what it is and
which command reads it.

>>> not_a_trace({"trace_id": "t1", "status": "ok", "vector": {"1.1": True}})
'results'
>>> not_a_trace({"trace_id": "t1", "annotator": "a", "1.1": 1, "2.6": 0})
'labels'
>>> not_a_trace({"messages": []}) is None
True
"""

from __future__ import annotations

import re
from pathlib import Path

from mast.errors import TraceFormatError
from mast.traces.loaders._records import classify

__all__ = ["NOT_TRACES", "not_a_trace", "not_a_trace_error"]

_CODE = re.compile(r"\d\.\d{1,2}")

NOT_TRACES = {
    "results": (
        "is a mast results file (annotation records), not traces",
        "Read it with mast.read_annotations() or `mast report`, or compare it with "
        "`mast agree --candidate FILE`",
    ),
    "labels": (
        "is a label table (trace ids and failure-mode columns), not traces",
        "Compare it with `mast agree --reference FILE` (or mast.agreement)",
    ),
}


def _has_codes(record: dict[object, object]) -> bool:
    return any(_CODE.fullmatch(str(key)) for key in record)


def not_a_trace(record: object) -> str | None:
    """``"results"`` for a mast results record, ``"labels"`` for a label-table row (or a
    ``{trace_id: {code: label}}`` object), ``None`` for anything else."""
    if not isinstance(record, dict) or classify(record) is not None:
        return None
    if "trace_id" in record and "status" in record and ("vector" in record or "judge" in record):
        return "results"
    if "trace_id" in record and _has_codes(record):
        return "labels"
    values = list(record.values())
    if values and all(isinstance(v, dict) and _has_codes(v) for v in values):
        return "labels"
    return None


def not_a_trace_error(kind: str, path: Path) -> TraceFormatError:
    """The one error a results file or label table gets."""
    problem, hint = NOT_TRACES[kind]
    return TraceFormatError(problem, path=path, hint=hint)
