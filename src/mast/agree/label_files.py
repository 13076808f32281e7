"""Read label files for ``mast agree``: results stores, trace files, CSV / JSONL label tables.

Supported, detected from the content:

* a **results store**: JSON Lines of annotation records, each with ``trace_id``, ``status``
  and ``vector`` (``{code: true | false | null}``);
* a **label table**: CSV/TSV, JSON Lines or a JSON array with one row per trace, a
  ``trace_id`` column (else the first column) and one column per code; an optional
  ``annotator`` column holds several annotators' rows in one file; a JSON object
  ``{trace_id: {code: label}}`` works too;
* anything :func:`mast.load_traces` reads (MAD files, AG2 runs, folders…): the labels the
  traces carry, from the annotator you name (or the only one there is).

>>> from mast.traces.datasets import examples_path
>>> loaded = read_labels(examples_path() / "mad_human_sample.json", annotator="annotator_1")
>>> loaded.kind, loaded.name, len(loaded.source)
('traces', 'annotator_1', 4)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mast.agree.runs import split_runs
from mast.agree.table import MAJORITY, labels_of, majority_vote
from mast.errors import StatsInputError
from mast.traces.model import Trace

__all__ = ["LoadedLabels", "read_labels", "read_traces"]

_TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}
_SMALL = 64 * 1024 * 1024  # a JSON object this small may be read whole to inspect it

Kind = Literal["results", "table", "traces"]


@dataclass
class LoadedLabels:
    """A label source read from a file, ready for :func:`mast.agreement`."""

    source: Any
    name: str
    kind: Kind
    traces: list[Trace] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things worth telling the user (e.g. an unreadable last line, skipped)."""
    runs: dict[str, Any] = field(default_factory=dict)
    """A results store holding several judge runs (samples, models) and no run chosen:
    ``{run: records}``, each to be scored on its own (``source`` is then empty)."""


def read_labels(
    path: str | Path,
    *,
    annotator: str | None = None,
    option: str = "--reference-annotator / --candidate-annotator",
) -> LoadedLabels:
    """Read one source of labels (see the module docstring for the formats).

    A results store with several judge runs (:mod:`mast.agree.runs`): ``annotator`` names
    one run, or ``"majority"`` asks for their majority vote (ties unknown); without it, every
    run is returned in ``.runs``.  ``option`` is the command-line option a message about
    choosing the annotator names (the one the calling command accepts).
    """
    path = Path(path)
    kind, rows, notes = _sniff_rows(path)
    if kind == "results":
        runs = split_runs(rows)
        if len(runs) > 1:
            return _several_runs(path, runs, annotator, notes)
    if kind == "traces":
        traces = read_traces(path)
        names = sorted({a for t in traces for a in t.labels})
        chosen = _choose(annotator, names, path, option)
        return LoadedLabels(labels_of(traces, chosen), chosen, "traces", traces, notes)
    groups = _by_annotator(rows)
    if groups is None:
        if annotator is not None and kind == "table":
            raise StatsInputError(
                f"{path}: --annotator {annotator!r} given, but the file has no 'annotator' column"
            )
        return LoadedLabels(rows, annotator or path.stem, kind, notes=notes)
    chosen = _choose(annotator, sorted(groups), path, option)
    if chosen == MAJORITY and MAJORITY not in groups:
        return LoadedLabels(majority_vote(groups), MAJORITY, kind, notes=notes)
    return LoadedLabels(groups[chosen], chosen, kind, notes=notes)


def _several_runs(
    path: Path, runs: dict[str, list[dict[str, Any]]], run: str | None, notes: list[str]
) -> LoadedLabels:
    shown = ", ".join(runs)
    if run is None:
        notes = [*notes, f"{path}: {len(runs)} judge runs ({shown}): each is scored on its own"]
        return LoadedLabels([], path.stem, "results", notes=notes, runs=runs)
    if run == MAJORITY:
        notes = [*notes, f"{path}: the candidate is the majority vote of {len(runs)} runs"]
        name = f"majority of {len(runs)} runs"
        return LoadedLabels(majority_vote(runs, name=name), name, "results", notes=notes)
    if run not in runs:
        raise StatsInputError(
            f"{path}: no judge run {run!r}; the file holds {len(runs)} runs: {shown} "
            "(or 'majority' for their majority vote)"
        )
    return LoadedLabels(runs[run], run, "results", notes=notes)


def read_raters(path: str | Path) -> tuple[dict[str, Any], list[Trace], list[str]]:
    """Several annotators' labels from one file: ``({annotator: source}, traces, notes)``.

    ``traces`` is non-empty when the file held traces (so per-version agreement applies).
    """
    path = Path(path)
    kind, rows, notes = _sniff_rows(path)
    if kind == "traces":
        traces = read_traces(path)
        names = sorted({a for t in traces for a in t.labels})
        return {a: labels_of(traces, a) for a in names}, traces, notes
    groups = _by_annotator(rows)
    if groups is None:
        raise StatsInputError(
            f"{path}: holds one set of labels; for agreement among annotators give a trace "
            "file with several annotators, a table with an 'annotator' column, or one file "
            "per annotator (--among a.csv b.csv c.csv)"
        )
    return groups, [], notes


def read_traces(path: Path) -> list[Trace]:
    """All traces in ``path`` (file, folder or glob), via :func:`mast.load_traces`; AgentRx
    and TRAIL data are read by their dataset loaders (their labels live beside the runs)."""
    from mast.traces.agentrx import is_agentrx, load_agentrx
    from mast.traces.loaders import load_traces
    from mast.traces.trail import is_trail, load_trail

    if not path.exists() and not any(ch in str(path) for ch in "*?["):
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.exists() and is_agentrx(path):
        return load_agentrx(path)
    if path.exists() and is_trail(path):
        return load_trail(path)
    return list(load_traces(path))


def _choose(
    annotator: str | None,
    names: list[str],
    path: Path,
    option: str = "--reference-annotator / --candidate-annotator",
) -> str:
    if annotator is not None:
        if annotator == MAJORITY and annotator not in names:
            if len(names) < 2:
                raise StatsInputError(
                    f"{path}: 'majority' needs labels from two or more annotators; the file "
                    f"has {names or 'no labels at all'}"
                )
            return annotator
        if annotator not in names:
            raise StatsInputError(
                f"{path}: no labels from annotator {annotator!r}; the file has "
                f"{names or 'no labels at all'}"
            )
        return annotator
    if len(names) == 1:
        return names[0]
    if not names:
        raise StatsInputError(f"{path}: the file carries no labels")
    raise StatsInputError(
        f"{path}: labels from {len(names)} annotators {names}; say which one with "
        f"{option} (or 'majority' for their majority vote)"
    )


def _by_annotator(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]] | None:
    if not rows or not all("annotator" in r for r in rows):
        return None
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["annotator"]), []).append(
            {k: v for k, v in row.items() if k != "annotator"}
        )
    return groups


def _sniff_rows(path: Path) -> tuple[Kind, list[dict[str, Any]], list[str]]:
    """What kind of file this is, and its rows when it is a table or a results store."""
    if path.is_dir() and (rows := _results_folder(path)) is not None:
        return "results", rows, []
    if not path.is_file():
        if not path.exists() and not any(ch in str(path) for ch in "*?["):
            raise FileNotFoundError(f"no such file or folder: {path}")
        return "traces", [], []
    suffix = path.suffix.lower()
    if suffix in _TABLE_SUFFIXES:
        return "table", _read_table(path, _TABLE_SUFFIXES[suffix]), []
    if suffix not in _JSON_SUFFIXES:
        return "traces", [], []
    head = _first_char(path)
    if head == "[":
        first = _first_array_item(path)
        if isinstance(first, dict) and _is_label_row(first):
            rows = json.loads(path.read_text(encoding="utf-8"))
            return _row_kind(first), [dict(r) for r in rows], []
        return "traces", [], []
    if head == "{":
        first_line = _first_line(path)
        try:
            record = json.loads(first_line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and _is_label_row(record):  # JSON Lines of rows/records
            rows, notes = _read_jsonl(path)
            return _row_kind(record), rows, notes
        if path.stat().st_size <= _SMALL:  # perhaps one JSON object {trace_id: {code: …}}
            try:
                whole = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                whole = None  # JSON Lines of something else: leave it to the trace loaders
            if _is_label_mapping(whole):
                return "table", [{"trace_id": k, **v} for k, v in whole.items()], []
    return "traces", [], []


def _results_folder(path: Path) -> list[dict[str, Any]] | None:
    """The records of a folder of result shards (``mast annotate --engine ray``), newest
    per key; None when the folder holds something else (e.g. trace files)."""
    from mast.bulk.store import read_annotations, shard_paths

    shards = shard_paths(path)
    if not shards:
        return None
    for shard in shards:
        try:
            first = json.loads(_first_line(shard) or "null")
        except json.JSONDecodeError:
            return None
        if first is not None and not (isinstance(first, dict) and "vector" in first):
            return None
    return [json.loads(a.model_dump_json()) for a in read_annotations(path)]


def _row_kind(record: dict[str, Any]) -> Kind:
    return "results" if "vector" in record else "table"


def _is_label_row(record: dict[str, Any]) -> bool:
    """A results-store record or a label row: a trace id and labels, no trace content."""
    if "trace_id" not in record or any(k in record for k in ("trace", "steps", "trajectory")):
        return False
    return "vector" in record or any(_looks_like_code(k) for k in record)


def _is_label_mapping(value: object) -> bool:
    if not isinstance(value, dict) or not value:
        return False
    return all(isinstance(v, dict) and any(_looks_like_code(k) for k in v) for v in value.values())


def _looks_like_code(key: object) -> bool:
    head = str(key).strip().split(" ", 1)[0]
    left, dot, right = head.partition(".")
    return bool(dot) and left.isdigit() and right.isdigit()


def _first_char(path: Path) -> str:
    with path.open("rb") as fh:
        chunk = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return chunk[:1].decode("ascii", "replace")


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def _first_array_item(path: Path) -> object:
    import ijson

    with path.open("rb") as fh:
        try:
            return next(iter(ijson.items(fh, "item")), None)
        except ijson.JSONError:
            return None


def _read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of a JSON Lines file; unreadable lines are skipped and reported, not fatal.

    (A results store written by a crashed run may end with a torn line.)
    """
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    lines = list(_lines(path))
    for number, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            bad.append(number)
            continue
        if not isinstance(record, dict):
            bad.append(number)
            continue
        rows.append(record)
    notes = []
    if bad:
        torn = bad == [lines[-1][0]]
        notes.append(
            f"{path}: skipped {len(bad)} unreadable line(s) (line {', '.join(map(str, bad[:5]))})"
            + (" — a torn last line, as a crashed run leaves" if torn else "")
        )
    return rows, notes


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield number, line


def _read_table(path: Path, sep: str) -> list[dict[str, Any]]:
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.DtypeWarning)
        frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=True)
    if frame.empty and not len(frame.columns):
        raise StatsInputError(f"{path}: empty table")
    if "trace_id" not in frame.columns:
        frame = frame.rename(columns={frame.columns[0]: "trace_id"})
    records: list[dict[str, Any]] = frame.to_dict("records")  # type: ignore[assignment]
    return records
