"""The one adapter behind :mod:`mast.analysis`: any label source + trace fields -> one table.

Analysis functions accept what users have: a results frame (``mast.to_frame(...)``: one row
per trace, one column per mode code with True/False/None, plus status/cost/usage columns),
a list of annotations, ``{trace_id: {code: bool | None}}`` mappings, traces carrying labels
(with ``annotator=``), or a frame already joined by :func:`collect`.  Reading the labels is
delegated to :func:`mast.agree.table.to_table`, the reader the agreement reports use, so that
both count failed records, unknown codes and duplicates the same way.

Trace fields (system, model, benchmark, outcome, run …) come from the label frame's own
non-mode columns and/or from ``traces=`` (a list of :class:`~mast.traces.model.Trace`, a DataFrame
indexed by trace id or with a ``trace_id`` column, or ``{trace_id: {field: value}}``),
joined by trace id.  A results frame holding several runs that share trace ids keeps one row
per (run, trace) when it has a ``run`` column.  A ``mast.to_frame`` layout names the judge
in its ``judge`` column, so ``model`` stays free for the traced system's model from
``traces=``, and rows of one trace by several judges stay apart.

>>> data = collect({"t1": {"1.1": True, "1.2": None}, "t2": None}, modes=["1.1", "1.2"],
...                traces={"t1": {"system": "AG2"}})
>>> data.values.tolist(), data.fields["system"].tolist(), data.excluded.failed
([[1, -1]], ['AG2'], {'no_vector': ['t2']})
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.agree.table import UNKNOWN, LabelTable, natural_key, to_table
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Trace

__all__ = [
    "MISSING",
    "Excluded",
    "VectorData",
    "category_values",
    "collect",
    "scalar",
    "trace_fields",
]

MISSING = "(none)"
"""Group label of traces whose grouping field is empty (shown, never dropped)."""

_NOT_FIELDS = {"status", "vector", "findings"}
_CORE = ("system", "model", "benchmark", "outcome", "format", "n_steps")


def _shorten(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")


@dataclass(frozen=True)
class Excluded:
    """What an analysis left out, and why.  Nothing here was counted as "no".

    ``failed`` records had no usable vector (status ``"parse_error"``/``"error"``, or no
    vector at all) and are in no statistic.  ``unknown_cells`` counts ``None`` cells per row
    of the result (mode or category) among the traces the result used: those cells are in
    no numerator and no denominator.  ``left_out`` lists traces a particular analysis could
    not use (unknown outcome, not in either compared group, incomplete for the regression).
    """

    failed: dict[str, list[str]] = field(default_factory=dict)
    """Status (``"parse_error"``, ``"error"``, ``"no_vector"``) -> trace ids."""
    unknown_cells: dict[str, int] = field(default_factory=dict)
    """Result row (mode code or category) -> number of unknown (``None``) cells."""
    left_out: dict[str, list[str]] = field(default_factory=dict)
    """Reason -> trace ids this analysis could not use."""
    no_fields: list[str] = field(default_factory=list)
    """Analysed traces that ``traces=`` had no entry for (their fields are unknown)."""
    unknown_codes: dict[str, int] = field(default_factory=dict)
    """Label keys the taxonomy does not know -> number of traces carrying them."""
    duplicates: int = 0
    """Records that repeated a trace id within a run (the last usable one was kept)."""

    @property
    def n_failed(self) -> int:
        """Number of records without a usable vector."""
        return sum(len(ids) for ids in self.failed.values())

    @property
    def n_unknown_cells(self) -> int:
        """Total unknown cells over the result's rows."""
        return sum(self.unknown_cells.values())

    @property
    def is_empty(self) -> bool:
        """True when nothing at all was left out."""
        return not self.lines()

    def replace(self, **changes: Any) -> Excluded:
        """A copy with some fields replaced."""
        return dataclasses.replace(self, **changes)

    def lines(self) -> list[str]:
        """One readable line per kind of exclusion (empty when nothing was left out)."""
        out = [
            f"{len(ids)} record(s) with status {status!r}: {_shorten(ids)}"
            for status, ids in self.failed.items()
            if ids
        ]
        cells = {k: v for k, v in self.unknown_cells.items() if v}
        if cells:
            detail = ", ".join(f"{k}: {v}" for k, v in cells.items())
            out.append(f"{sum(cells.values())} unknown (None) cell(s) — {detail}")
        out += [
            f"{len(ids)} trace(s) left out ({reason}): {_shorten(ids)}"
            for reason, ids in self.left_out.items()
            if ids
        ]
        if self.no_fields:
            out.append(
                f"{len(self.no_fields)} trace(s) not found in traces= (fields unknown): "
                f"{_shorten(self.no_fields)}"
            )
        if self.unknown_codes:
            detail = ", ".join(f"{k} ({v})" for k, v in self.unknown_codes.items())
            out.append(f"codes unknown to the taxonomy (traces): {detail}")
        if self.duplicates:
            out.append(f"{self.duplicates} duplicate record(s) (the last usable one was kept)")
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict of every field."""
        return {
            "failed": self.failed,
            "unknown_cells": self.unknown_cells,
            "left_out": self.left_out,
            "no_fields": self.no_fields,
            "unknown_codes": self.unknown_codes,
            "duplicates": self.duplicates,
        }


@dataclass(frozen=True, eq=False)
class VectorData:
    """Usable failure vectors as an int8 ``rows x modes`` array joined with trace fields.

    ``values`` holds 1 (present), 0 (absent) and -1 (unknown).  ``fields`` has one row per
    row of ``values`` (positional index): ``trace_id`` and every known field.
    """

    codes: list[str]
    values: npt.NDArray[np.int8]
    fields: pd.DataFrame
    excluded: Excluded
    taxonomy: Taxonomy

    @property
    def ids(self) -> list[str]:
        """Trace id of each row."""
        return [str(v) for v in self.fields["trace_id"].tolist()]

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def subset(self, mask: npt.NDArray[np.bool_]) -> VectorData:
        """The rows where ``mask`` is true."""
        return dataclasses.replace(
            self,
            values=self.values[mask],
            fields=self.fields.loc[mask].reset_index(drop=True),
        )

    def column(self, name: str) -> pd.Series:
        """A field column; names the available fields when it is missing."""
        if name not in self.fields.columns:
            available = [c for c in self.fields.columns if c != "trace_id"]
            raise StatsInputError(
                f"no trace field {name!r} to group or split by; the data has {available or 'none'}"
                ". Pass traces=[...] (mast.Trace objects) or a DataFrame of trace fields to "
                "join by trace_id"
            )
        return self.fields[name]


def _taxonomy(taxonomy: Taxonomy | str | Path | None) -> Taxonomy:
    if isinstance(taxonomy, Taxonomy):
        return taxonomy
    return load_taxonomy(taxonomy)


def _codes(modes: Iterable[str] | None, tax: Taxonomy) -> list[str]:
    if modes is None:
        return tax.codes
    chosen = [str(m) for m in modes]
    unknown = [m for m in chosen if m not in tax]
    if unknown or not chosen:
        raise StatsInputError(
            f"modes {unknown or chosen} are not codes of {tax.label}; its codes are {tax.codes}"
        )
    return [c for c in tax.codes if c in chosen]  # canonical order


def scalar(value: object) -> object:
    """A field value as a plain scalar; NaN, NA and empty become None, enums their value."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _objects(values: Sequence[object], index: pd.Index) -> pd.Series:
    """A column of plain Python values with ``None`` for missing ones (object dtype, so
    pandas never turns ``None`` into NaN or infers a string dtype)."""
    return pd.Series([scalar(v) for v in values], index=index, dtype=object)


def trace_fields(traces: object) -> pd.DataFrame:
    """Trace fields indexed by trace id, from traces, a DataFrame or a mapping.

    From :class:`~mast.traces.model.Trace` objects: ``system``, ``model``, ``benchmark``,
    ``outcome`` (``"success"``/``"failure"``/``"unknown"``), ``format``, ``n_steps`` and the
    scalar entries of ``trace.metadata`` (ITBench ``scenario``, ``trial`` …).
    """
    if isinstance(traces, pd.DataFrame):
        frame = traces.set_index("trace_id") if "trace_id" in traces.columns else traces
        frame = frame.copy()
        frame.index = [str(i) for i in frame.index]
    elif isinstance(traces, Mapping):
        frame = pd.DataFrame.from_dict({str(k): dict(v) for k, v in traces.items()}, orient="index")
    elif isinstance(traces, Iterable) and not isinstance(traces, (str, bytes)):
        rows: dict[str, dict[str, object]] = {}
        for trace in traces:
            if not isinstance(trace, Trace):
                raise StatsInputError(
                    f"traces= holds a {type(trace).__name__}; expected mast.Trace objects, a "
                    "DataFrame of trace fields (trace_id column or index), or "
                    "{trace_id: {field: value}}"
                )
            row: dict[str, object] = {
                k: v
                for k, v in trace.metadata.items()
                if k not in _CORE
                and (isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= 120))
            }
            row.update(
                system=trace.system,
                model=trace.model,
                benchmark=trace.benchmark,
                outcome=trace.outcome.value,
                format=trace.format,
                n_steps=len(trace.steps),
            )
            rows[trace.id] = row
        frame = pd.DataFrame.from_dict(rows, orient="index")
    else:
        raise StatsInputError(
            f"cannot read trace fields from {type(traces).__name__}; expected a list of "
            "mast.Trace, a DataFrame (trace_id column or index) or {trace_id: {field: value}}"
        )
    for column in frame.columns:
        frame[column] = _objects(frame[column].tolist(), frame.index)
    frame.index.name = "trace_id"
    result: pd.DataFrame = frame
    return result


def _is_frame(value: object) -> bool:
    return isinstance(value, pd.DataFrame)


def _frame_fields(frame: pd.DataFrame, codes: Sequence[str], tax: Taxonomy) -> list[str]:
    """Non-mode columns of a results frame: candidate trace fields."""
    from mast.agree.table import _Resolver

    resolver = _Resolver(tax)
    return [
        str(c)
        for c in frame.columns
        if str(c) not in _NOT_FIELDS and str(c) != "trace_id" and resolver.code(str(c)) is None
    ]


def _tables_from_frame(
    frame: pd.DataFrame, codes: list[str], tax: Taxonomy
) -> tuple[list[tuple[LabelTable, dict[str, object]]], pd.DataFrame]:
    """Label tables (one per run when runs share trace ids) and the frame's field rows."""
    if "trace_id" not in frame.columns:
        frame = frame.rename_axis("trace_id").reset_index()
    frame = frame.assign(trace_id=frame["trace_id"].map(str))
    names = _frame_fields(frame, codes, tax)
    split = [c for c in ("run", "judge") if c in frame.columns]
    if not (split and frame.duplicated(["trace_id"]).any()):
        split = []  # one record per trace: no need to tell runs or judges apart
    groups: list[tuple[dict[str, object], pd.DataFrame]] = (
        [
            (dict(zip(split, key if isinstance(key, tuple) else (key,), strict=True)), part)
            for key, part in frame.groupby(split, sort=False, dropna=False)
        ]
        if split
        else [({}, frame)]
    )
    tables = [
        (to_table(part, modes=codes, taxonomy=tax, name="results"), key) for key, part in groups
    ]
    keys = [*split, "trace_id"]
    field_rows = frame[[*keys, *[n for n in names if n not in keys]]].drop_duplicates(
        keys, keep="last"
    )
    return tables, field_rows


def collect(
    data: object,
    *,
    traces: object = None,
    annotator: str | None = None,
    modes: Iterable[str] | None = None,
    taxonomy: Taxonomy | str | Path | None = None,
) -> VectorData:
    """Read ``data`` (any label source) and join ``traces`` fields: see the module doc."""
    if isinstance(data, VectorData):
        if traces is not None or modes is not None:
            data = _rejoin(data, traces, modes)
        return data
    tax = _taxonomy(taxonomy)
    codes = _codes(modes, tax)
    field_rows: pd.DataFrame | None = None
    if _is_frame(data):
        tables, field_rows = _tables_from_frame(data, codes, tax)  # type: ignore[arg-type]
    else:
        if isinstance(data, (str, bytes, Path)):
            raise StatsInputError(
                f"got a path ({data!r}); read a results file first with "
                "mast.read_annotations(path) (or pandas for a label table) and pass the result"
            )
        items: object = data
        if isinstance(data, Iterable) and not isinstance(data, Mapping):
            items = list(data)
            if items and all(isinstance(t, Trace) for t in items):
                # Traces carrying labels: their own fields come along unless traces= is given.
                traces = items if traces is None else traces
        tables = [
            (to_table(items, modes=codes, taxonomy=tax, name="data", annotator=annotator), {})
        ]
    ids: list[str] = []
    keys: list[dict[str, object]] = []
    blocks: list[npt.NDArray[np.int8]] = []
    failed: dict[str, list[str]] = {}
    unknown_codes: dict[str, int] = {}
    duplicates = 0
    for table, key in tables:
        ids += table.ids
        keys += [key] * len(table.ids)
        blocks.append(table.values.astype(np.int8))
        for status, bad in table.failed.items():
            failed.setdefault(status, []).extend(bad)
        for code, count in table.unknown_codes.items():
            unknown_codes[code] = unknown_codes.get(code, 0) + count
        duplicates += table.duplicates
    values = np.vstack(blocks) if blocks else np.empty((0, len(codes)), dtype=np.int8)
    fields = pd.DataFrame([{**k, "trace_id": i} for k, i in zip(keys, ids, strict=True)])
    if fields.empty:
        fields = pd.DataFrame({"trace_id": pd.Series([], dtype=object)})
    if field_rows is not None:
        on = [c for c in ("run", "judge", "trace_id") if c in fields.columns]
        # Merge keys as plain objects (None, not NaN) on both sides: an all-empty judge
        # column would otherwise be float on one side and object on the other.
        for column in on:
            fields[column] = _objects(fields[column].tolist(), fields.index)
            field_rows[column] = _objects(field_rows[column].tolist(), field_rows.index)
        fields = fields.merge(field_rows, on=on, how="left")
    for column in fields.columns:
        fields[column] = _objects(fields[column].tolist(), fields.index)
    excluded = Excluded(
        failed={k: sorted(v, key=natural_key) for k, v in failed.items()},
        unknown_codes=dict(sorted(unknown_codes.items())),
        duplicates=duplicates,
    )
    result = VectorData(codes, values, fields, excluded, tax)
    return _join(result, traces) if traces is not None else result


def _join(data: VectorData, traces: object) -> VectorData:
    """Fill trace fields from ``traces``; fields already in the data win where not empty."""
    extra = trace_fields(traces)
    fields = data.fields.copy()
    known = set(extra.index)
    ids = fields["trace_id"].tolist()
    for column in extra.columns:
        looked_up = [extra.at[i, column] if i in known else None for i in ids]
        if column in fields.columns:
            merged = [
                mine if mine is not None else theirs
                for mine, theirs in zip(fields[column].tolist(), looked_up, strict=True)
            ]
            fields[column] = _objects(merged, fields.index)
        else:
            fields[column] = _objects(looked_up, fields.index)
    missing = sorted({i for i in ids if i not in known}, key=natural_key)
    return dataclasses.replace(
        data, fields=fields, excluded=data.excluded.replace(no_fields=missing)
    )


def _rejoin(data: VectorData, traces: object, modes: Iterable[str] | None) -> VectorData:
    if modes is not None:
        codes = _codes(modes, data.taxonomy)
        missing = [c for c in codes if c not in data.codes]
        if missing:
            raise StatsInputError(f"modes {missing} are not in this data (it has {data.codes})")
        index = [data.codes.index(c) for c in codes]
        data = dataclasses.replace(data, codes=codes, values=data.values[:, index])
    return _join(data, traces) if traces is not None else data


def category_values(data: VectorData) -> tuple[list[str], npt.NDArray[np.int8]]:
    """Per row, whether each category has a mode present (Kleene OR over its modes).

    A category is present (1) when any of its selected modes is, absent (0) when all of
    them are known and absent, and unknown (-1) otherwise.  Categories in taxonomy order,
    restricted to those with a selected mode.
    """
    tax = data.taxonomy
    cats = [c.code for c in tax.categories if any(tax[m].category == c.code for m in data.codes)]
    out = np.empty((len(data), len(cats)), dtype=np.int8)
    for k, cat in enumerate(cats):
        cols = data.values[:, [j for j, m in enumerate(data.codes) if tax[m].category == cat]]
        any_present = (cols == 1).any(axis=1)
        all_known = (cols != UNKNOWN).all(axis=1)
        out[:, k] = np.where(any_present, 1, np.where(all_known, 0, UNKNOWN))
    return cats, out
