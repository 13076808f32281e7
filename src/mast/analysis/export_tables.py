"""Results as a table file for spreadsheets and pandas users: CSV or Parquet.

One row per annotation (``trace_id``, one column per mode with ``True`` / ``False`` /
empty for unknown, status, judge, cost, tokens …, see :func:`mast.to_frame`), a ``run``
column naming the results file when several are given, and the trace fields (``system``,
``model``, ``benchmark``, ``outcome``) when the traces are given. Unknown stays empty in CSV
and null in Parquet, never ``False``.

>>> import mast, tempfile, pathlib
>>> anns = [mast.Judge("heuristic").annotate(t) for t in mast.traces.datasets.example_traces()]
>>> out = pathlib.Path(tempfile.mkdtemp()) / "results.csv"
>>> frame = export_table({"run": anns}, out)
>>> len(frame), list(frame.columns[:3])
(7, ['trace_id', 'run', 'judge'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mast.analysis.redaction import redact_runs, redact_traces, shown_redactor
from mast.errors import MissingDependencyError
from mast.judge.annotation import Annotation
from mast.privacy.redact import Redactor
from mast.traces.model import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["export_table", "results_frame"]

_TRACE_FIELDS = ("system", "model", "benchmark", "outcome")


def results_frame(
    runs: Mapping[str, Sequence[Annotation]],
    traces: Iterable[Trace] = (),
    *,
    redact: bool | Redactor = True,
) -> pd.DataFrame:
    """All runs' annotations as one frame (``trace_id`` and ``run`` first). ``redact``: the
    text columns (``error``, the trace's ``system`` and ``benchmark``) pass through
    :mod:`mast.privacy` first (``False``: as they are)."""
    import pandas as pd

    from mast.bulk.store import to_frame

    redactor = shown_redactor(redact)
    runs = redact_runs(runs, redactor)
    traces, _ = redact_traces(traces, redactor)

    frames = []
    for run, anns in runs.items():
        frame = to_frame(anns).reset_index()
        frame.insert(1, "run", run)
        frames.append(frame)
    out: pd.DataFrame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    by_id = {t.id: t for t in traces}
    if by_id and len(out):
        for name in _TRACE_FIELDS:
            values = []
            for trace_id in out["trace_id"]:
                trace = by_id.get(str(trace_id))
                value = getattr(trace, name, None) if trace else None
                values.append(getattr(value, "value", value))
            column = "trace_model" if name == "model" else name
            out[column] = pd.Series(values, dtype="string")
    return out


def export_table(
    runs: Mapping[str, Sequence[Annotation]],
    out: str | Path,
    *,
    traces: Iterable[Trace] = (),
    format: str | None = None,
    redact: bool | Redactor = True,
) -> pd.DataFrame:
    """Write the results table to ``out`` (``.csv``, ``.tsv`` or ``.parquet``; or name the
    ``format``) and return it (``redact``: see :func:`results_frame`)."""
    path = Path(out)
    kind = format or {".parquet": "parquet", ".tsv": "tsv"}.get(path.suffix.lower(), "csv")
    frame = results_frame(runs, traces, redact=redact)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "parquet":
        try:
            import pyarrow  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError(
                "writing Parquet needs pyarrow. Install it with: "
                'pip install "mast-annotator[parquet]"  (or: pip install pyarrow)'
            ) from exc
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="\t" if kind == "tsv" else ",")
    return frame
