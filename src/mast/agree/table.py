"""Normalize label sources for agreement reports into one table of trace x mode cells.

A *source* is whatever a user has at hand: ``{trace_id: {code: bool | None}}`` mappings,
``{trace_id: FailureVector}``, a DataFrame (index trace ids, columns codes), a list of
annotation records (anything with ``trace_id``, ``vector`` and ``status``), a list of
``{"trace_id": ..., "<code>": ...}`` rows, or the labels one annotator gave a list of traces
(:func:`labels_of`). Everything that cannot be scored is counted here, never dropped
silently: failed annotations, duplicate records, codes the taxonomy does not know, and
draft-taxonomy labels that have no final code.

>>> from mast.taxonomy import load_taxonomy
>>> table = to_table({"t1": {"1.1": True, "9.9": False}, "t2": None}, modes=["1.1", "1.2"],
...                  taxonomy=load_taxonomy(), name="judge")
>>> table.ids, table.values.tolist(), table.failed, table.unknown_codes
(['t1'], [[1, -1]], {'no_vector': ['t2']}, {'9.9': 1})
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from mast.agree.blocks import block_map
from mast.agree.runs import record_run
from mast.errors import StatsInputError
from mast.taxonomy import Taxonomy
from mast.traces.model import FailureVector, Trace, to_bool

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAJORITY",
    "LabelSet",
    "LabelTable",
    "human_annotators",
    "labels_of",
    "majority_of",
    "majority_vote",
    "natural_key",
    "to_table",
]

MAJORITY = "majority"
"""The annotator name that asks for the majority vote of the traces' human annotators."""

UNKNOWN = -1
"""Cell value of an unknown (``None``) label; present is 1, absent is 0."""

# A code, alone or leading a name: "1.3", "1.3 Step Repetition", "FM-1.3", "fm_1.3:", "1.3_x"
# (peer judges' tables); "3.2∨3.3" (the merged row) is not a code.
_CODE_LIKE = re.compile(r"^\s*(?:FM[-_ ]?)?(\d+\.\d+)(?=$|[\s:_)\]-])", re.IGNORECASE)
_RESERVED = {"trace_id", "status", "id"}
_MISSING_WORDS = {"", "nan", "none", "null", "na", "n/a", "<na>"}


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``"t2"`` before ``"t10"`` (numbers compare as numbers).

    >>> sorted(["t10", "t2", "a"], key=natural_key)
    ['a', 't2', 't10']
    """
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


class LabelSet(Mapping[str, FailureVector]):
    """The labels one annotator gave a set of traces: ``{trace_id: FailureVector}``.

    Besides the vectors it keeps what an agreement report must account for: each trace's
    taxonomy version, the draft-mode labels that have no final code (``unmapped``), and the
    traces that carry no label from this annotator (``missing``).  A majority vote
    (:func:`mast.agree.majority.majority_vote`) also keeps its ``voters`` and its tied cells
    (``ties``: trace id -> codes, unknown in the vote).  Labels read from traces keep the
    traces' duplicated label blocks (``blocks``), which agreement reports resample together.
    """

    def __init__(
        self,
        annotator: str,
        vectors: Mapping[str, FailureVector],
        *,
        versions: Mapping[str, str | None] | None = None,
        unmapped: Mapping[str, Mapping[str, bool | None]] | None = None,
        missing: Sequence[str] = (),
        voters: Sequence[str] = (),
        ties: Mapping[str, Sequence[str]] | None = None,
        blocks: Mapping[str, str] | None = None,
        verifications: Iterable[str] = (),
        systems: Mapping[str, str | None] | None = None,
    ) -> None:
        self.annotator = annotator
        # The 3.2/3.3 conventions the labels were given in (mast.agree.conventions), and
        # each trace's system (framework), when the labels came from traces.
        self.verifications: tuple[str, ...] = tuple(sorted(set(verifications)))
        self.systems: dict[str, str | None] = dict(systems or {})
        # Duplicated label blocks of the traces these labels came from (trace id -> first id
        # of its group; see mast.agree.blocks.block_map); None: not known (a plain mapping).
        self.blocks: dict[str, str] | None = None if blocks is None else dict(blocks)
        self.voters: tuple[str, ...] = tuple(voters)
        self.ties: dict[str, list[str]] = {k: list(v) for k, v in (ties or {}).items()}
        self._vectors = dict(vectors)
        self.versions: dict[str, str | None] = dict(versions or {})
        self.unmapped: dict[str, dict[str, bool | None]] = {
            k: dict(v) for k, v in (unmapped or {}).items()
        }
        self.missing: tuple[str, ...] = tuple(missing)

    def __getitem__(self, trace_id: str) -> FailureVector:
        return self._vectors[trace_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._vectors)

    def __len__(self) -> int:
        return len(self._vectors)

    def __repr__(self) -> str:
        extra = f", {len(self.missing)} trace(s) without labels" if self.missing else ""
        return f"<LabelSet {self.annotator!r}: {len(self)} trace(s){extra}>"


def labels_of(traces: Iterable[Trace], annotator: str) -> LabelSet:
    """The labels ``annotator`` gave each trace, ready for :func:`mast.agreement`.

    Traces without a label from ``annotator`` are left out and listed in ``.missing``;
    taxonomy versions and unmapped draft labels come from ``trace.label_sources``.
    ``annotator="majority"`` (unless an annotator has that name) gives the majority vote of
    the human annotators (:func:`majority_of`).

    >>> import mast
    >>> human = mast.traces.datasets.example_traces()
    >>> a1 = labels_of(human, "annotator_1")
    >>> len(a1), len(a1.missing), a1.versions["mad-human/2"]
    (4, 3, 'round1')
    """
    if annotator == MAJORITY:
        items = list(traces)
        if not any(MAJORITY in t.labels for t in items):
            return majority_of(items)
        traces = items
    traces = list(traces)
    vectors: dict[str, FailureVector] = {}
    versions: dict[str, str | None] = {}
    unmapped: dict[str, dict[str, bool | None]] = {}
    missing: list[str] = []
    conventions: set[str] = set()
    for trace in traces:
        if annotator not in trace.labels:
            missing.append(trace.id)
            continue
        vectors[trace.id] = trace.labels[annotator]
        source = trace.label_sources.get(annotator)
        versions[trace.id] = source.taxonomy_version if source else None
        if source and source.verification:
            conventions.add(source.verification)
        if source and source.unmapped:
            unmapped[trace.id] = dict(source.unmapped)
    return LabelSet(
        annotator,
        vectors,
        versions=versions,
        unmapped=unmapped,
        missing=missing,
        blocks=block_map(traces),
        verifications=conventions,
        systems={t.id: t.system for t in traces if t.id in vectors},
    )


def human_annotators(traces: Sequence[Trace]) -> list[str]:
    """Annotators of ``traces`` not marked as a model or rules, in natural order."""
    names: set[str] = set()
    for trace in traces:
        for name in trace.labels:
            source = trace.label_sources.get(name)
            if source is None or source.kind == "human":
                names.add(name)
    return sorted(names, key=natural_key)


def majority_vote(
    sources: Mapping[str, object], *, taxonomy: Taxonomy | None = None, name: str = MAJORITY
) -> LabelSet:
    """Per trace and mode, the label most of ``sources`` (``{annotator: labels}``) gave.

    Only known labels vote.  A tie is unknown (``None``) and listed in ``.ties`` (trace id
    -> codes) so that reports can count it; a cell nobody labelled is unknown, not a tie.

    >>> vote = majority_vote({"a": {"t": {"1.1": True, "1.2": True}},
    ...                       "b": {"t": {"1.1": True, "1.2": False}},
    ...                       "c": {"t": {"1.1": False}}})
    >>> vote["t"]["1.1"], vote["t"]["1.2"], vote["t"]["1.3"], vote.ties
    (True, None, None, {'t': ['1.2']})
    """
    if len(sources) < 2:
        raise StatsInputError(f"a majority needs two or more annotators; got {list(sources)}")
    from mast.taxonomy import load_taxonomy

    tax = taxonomy or load_taxonomy()
    codes = tax.codes
    tables = [to_table(src, modes=codes, taxonomy=tax, name=str(a)) for a, src in sources.items()]
    ids = sorted({i for t in tables for i in t.ids}, key=natural_key)
    where = {trace_id: k for k, trace_id in enumerate(ids)}
    pos = np.zeros((len(ids), len(codes)), dtype=np.int64)
    neg = np.zeros_like(pos)
    for t in tables:
        rows = [where[i] for i in t.ids]
        pos[rows] += t.values == 1
        neg[rows] += t.values == 0
    vectors: dict[str, FailureVector] = {}
    ties: dict[str, list[str]] = {}
    for trace_id, i in where.items():
        values: dict[str, bool | None] = {}
        for j, code in enumerate(codes):
            p, q = int(pos[i, j]), int(neg[i, j])
            values[code] = True if p > q else False if q > p else None
            if p == q and p > 0:
                ties.setdefault(trace_id, []).append(code)
        vectors[trace_id] = FailureVector(values, codes=codes)
    return LabelSet(name, vectors, voters=[str(a) for a in sources], ties=ties)


def majority_of(traces: Iterable[Trace], annotators: Sequence[str] | None = None) -> LabelSet:
    """The majority vote of the human annotators of ``traces`` (or of ``annotators``); ties
    are unknown and counted in ``.ties``; versions come from the voters' label sources.

    >>> import mast
    >>> human = [t for t in mast.traces.datasets.example_traces() if t.format == "mad-human"]
    >>> vote = majority_of(human)
    >>> len(vote), vote.voters
    (4, ('annotator_1', 'annotator_2', 'annotator_3'))
    """
    items = list(traces)
    chosen = list(annotators) if annotators is not None else human_annotators(items)
    vote = majority_vote({a: labels_of(items, a) for a in chosen})
    conventions: set[str] = set()
    for trace in items:
        found = [trace.label_sources[a] for a in chosen if a in trace.label_sources]
        if trace.id in vote and found:
            vote.versions[trace.id] = found[0].taxonomy_version
            conventions |= {s.verification for s in found if s.verification}
            vote.systems[trace.id] = trace.system
    vote.verifications = tuple(sorted(conventions))
    vote.blocks = block_map(items)
    return vote


@dataclass
class LabelTable:
    """One source as an int8 ``traces x modes`` array (1 present, 0 absent, -1 unknown)."""

    name: str
    ids: list[str]
    modes: list[str]
    values: npt.NDArray[np.int8]
    failed: dict[str, list[str]] = field(default_factory=dict)
    """Status (``"parse_error"``, ``"error"``, ``"no_vector"``…) -> trace ids left out."""
    unknown_codes: dict[str, int] = field(default_factory=dict)
    """Label keys the taxonomy does not know -> number of traces carrying them."""
    unmapped: dict[str, int] = field(default_factory=dict)
    """Draft-taxonomy labels with no final code -> number of traces carrying them."""
    duplicates: int = 0
    """Records that repeated a trace id (the last usable one is kept)."""
    ignored_fields: list[str] = field(default_factory=list)
    """Row/column names that are neither codes nor look like codes (e.g. ``cost_usd``)."""
    blocks: dict[str, str] | None = None
    """Duplicated label blocks of the source's traces (``LabelSet.blocks``); None: unknown."""

    def index(self) -> dict[str, int]:
        return {trace_id: i for i, trace_id in enumerate(self.ids)}


@dataclass
class _Record:
    trace_id: str
    status: str
    labels: Mapping[Any, object] | None
    rows: bool = False  # flat row (DataFrame/CSV): non-code-like keys are metadata
    run: str | None = None  # the judge run of a result record (mast.agree.runs)


def to_table(
    source: object,
    *,
    modes: Sequence[str],
    taxonomy: Taxonomy,
    name: str,
    annotator: str | None = None,
) -> LabelTable:
    """Read any supported label source into a :class:`LabelTable` restricted to ``modes``."""
    if isinstance(source, LabelTable):
        return source
    records, meta = _records(source, annotator=annotator, name=name)
    _check_one_run(records, name)
    resolver = _Resolver(taxonomy)
    column = {code: j for j, code in enumerate(modes)}
    chosen: dict[str, _Record] = {}
    seen: set[str] = set()
    duplicates = 0
    for record in records:
        if record.trace_id in seen:
            duplicates += 1
            # A later usable record replaces an earlier one (a retried annotation); a later
            # failure does not replace an earlier success.
            if record.status != "ok" and chosen[record.trace_id].status == "ok":
                continue
        seen.add(record.trace_id)
        chosen[record.trace_id] = record
    failed: dict[str, list[str]] = {}
    unknown: dict[str, int] = {}
    ignored: set[str] = set()
    ids: list[str] = []
    rows: list[npt.NDArray[np.int8]] = []
    for trace_id, record in chosen.items():
        if record.status != "ok" or record.labels is None:
            status = record.status if record.status != "ok" else "no_vector"
            failed.setdefault(status, []).append(trace_id)
            continue
        row = np.full(len(modes), UNKNOWN, dtype=np.int8)
        filled = np.zeros(len(modes), dtype=bool)
        unknown_here: set[str] = set()
        for key, value in record.labels.items():
            text = str(key)
            if text in _RESERVED:
                continue
            code = resolver.code(text)
            if code is None:
                if record.rows and not _CODE_LIKE.match(text):
                    ignored.add(text)
                else:
                    unknown_here.add(text)
                continue
            j = column.get(code)
            if j is None:
                continue  # a known mode the caller did not select
            cell = _cell(value, trace_id=trace_id, key=text, source=name)
            if filled[j] and row[j] != cell:
                cell = UNKNOWN  # the same mode given twice with different labels: unknown
            row[j], filled[j] = cell, True
        for text in unknown_here:
            unknown[text] = unknown.get(text, 0) + 1
        ids.append(trace_id)
        rows.append(row)
    values = np.vstack(rows) if rows else np.empty((0, len(modes)), dtype=np.int8)
    for status in failed:
        failed[status].sort(key=natural_key)
    unmapped: dict[str, int] = {}
    for trace_id, labels in meta.unmapped.items():
        if trace_id in chosen:
            for label in labels:
                unmapped[label] = unmapped.get(label, 0) + 1
    return LabelTable(
        name=name,
        ids=ids,
        modes=list(modes),
        values=values,
        failed=failed,
        unknown_codes=dict(sorted(unknown.items())),
        unmapped=dict(sorted(unmapped.items())),
        duplicates=duplicates,
        blocks=meta.blocks,
        ignored_fields=sorted(ignored),
    )


class _Resolver:
    """Map a label key to a mode code: the code itself, a leading code, or a mode name."""

    def __init__(self, taxonomy: Taxonomy) -> None:
        self._taxonomy = taxonomy
        self._codes = set(taxonomy.codes)
        self._cache: dict[str, str | None] = {}

    def code(self, key: str) -> str | None:
        if key in self._cache:
            return self._cache[key]
        text = key.strip()
        found: str | None = None
        if text in self._codes:
            found = text
        else:
            lead = _CODE_LIKE.match(text)
            if lead:
                # The code wins over the name written next to it: official files swap the
                # names of 3.2 and 3.3, never their codes.
                found = lead.group(1) if lead.group(1) in self._codes else None
            else:
                found = self._taxonomy.code_for_name(text)
        self._cache[key] = found
        return found


def _cell(value: object, *, trace_id: str, key: str, source: str) -> int:
    """Read one label as 1 / 0 / -1 (unknown); anything unreadable is an input error."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool):
        return UNKNOWN if value is None else int(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return UNKNOWN
        if value in (0, 1):
            return int(value)
    elif isinstance(value, str):
        word = value.strip().lower()
        if word in _MISSING_WORDS:
            return UNKNOWN
        read = to_bool(word)
        if read is None:
            try:
                number = float(word)
            except ValueError:
                number = math.nan
            read = True if number == 1 else False if number == 0 else None
        if read is not None:
            return int(read)
    elif type(value).__name__ in ("NAType", "NaTType"):  # pandas.NA / NaT without pandas
        return UNKNOWN
    raise StatsInputError(
        f"{source}: label {value!r} for mode {key!r} of trace {trace_id!r} is not a yes/no "
        "label; expected True/False/None (or 1/0, 'yes'/'no', NaN/empty for unknown)"
    )


@dataclass
class _Meta:
    unmapped: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    blocks: dict[str, str] | None = None


def _trace_id(value: object, source: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise StatsInputError(f"{source}: a record has no trace id; every record needs one")
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def _records(source: object, *, annotator: str | None, name: str) -> tuple[list[_Record], _Meta]:
    """Turn a source into records, plus the version/unmapped metadata it carries."""
    if isinstance(source, LabelSet):
        meta = _Meta(dict(source.unmapped), source.blocks)
        return [_Record(t, "ok", v) for t, v in source.items()], meta
    if _is_dataframe(source):
        return _frame_records(cast("pd.DataFrame", source), name), _Meta()
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        raise StatsInputError(
            f"{name}: got a path or string ({source!r}), expected labels in memory; read files "
            "with `mast agree` or pandas.read_csv, or pass mast.labels_of(traces, annotator)"
        )
    if isinstance(source, Mapping):
        return [_record_for(_trace_id(k, name), v, name) for k, v in source.items()], _Meta()
    if isinstance(source, Iterable):
        items = list(source)
        if items and all(isinstance(item, Trace) for item in items):
            traces: list[Trace] = items
            chosen = _pick_annotator(traces, annotator, name)
            return _records(labels_of(traces, chosen), annotator=None, name=name)
        return [_item_record(item, name) for item in items], _Meta()
    raise StatsInputError(
        f"{name}: cannot read labels from {type(source).__name__}; expected a mapping "
        "{trace_id: {code: bool | None}}, a DataFrame (index trace ids, columns codes), a list "
        "of annotations or of {'trace_id': ..., '<code>': ...} rows, or labels_of(traces, name)"
    )


def _check_one_run(records: Sequence[_Record], name: str) -> None:
    """Results of several judge runs (samples, models) are never merged by keeping one record
    per trace: say how to score them."""
    runs = list(dict.fromkeys(r.run for r in records if r.run is not None))
    if len(runs) > 1:
        shown = ", ".join(runs[:6]) + (", …" if len(runs) > 6 else "")
        raise StatsInputError(
            f"{name}: the records come from {len(runs)} runs of the judge ({shown}); score "
            "each run on its own (mast.agree.runs.split_runs(records)) or their majority "
            "(mast.agree.majority_vote(split_runs(records))); `mast agree` does the first by "
            "default and the second with --candidate-annotator majority"
        )


def _pick_annotator(traces: Sequence[Trace], annotator: str | None, name: str) -> str:
    names = sorted({a for t in traces for a in t.labels})
    if annotator is not None:
        if annotator == MAJORITY and annotator not in names and len(names) > 1:
            return annotator
        if annotator not in names:
            raise StatsInputError(
                f"{name}: no trace carries labels from annotator {annotator!r}; "
                f"the traces have {names or 'no labels at all'}"
            )
        return annotator
    if len(names) == 1:
        return names[0]
    raise StatsInputError(
        f"{name}: the traces carry labels from {len(names)} annotators {names}; say whose to "
        "use, e.g. mast.labels_of(traces, 'annotator_1')"
        if names
        else f"{name}: the traces carry no labels"
    )


def _record_for(trace_id: str, value: object, name: str) -> _Record:
    if value is None:
        return _Record(trace_id, "no_vector", None)
    if hasattr(value, "vector") and not isinstance(value, Mapping):
        status = str(getattr(value, "status", "ok"))
        return _Record(trace_id, status, _as_labels(value.vector, trace_id, name))
    if isinstance(value, Mapping):
        return _Record(trace_id, "ok", value)
    raise StatsInputError(
        f"{name}: trace {trace_id!r} maps to {type(value).__name__}; expected a failure vector "
        "({code: bool | None}), an annotation, or None"
    )


def _as_labels(vector: object, trace_id: str, name: str) -> Mapping[Any, object] | None:
    if vector is None or isinstance(vector, Mapping):
        return vector
    raise StatsInputError(
        f"{name}: the vector of trace {trace_id!r} is a {type(vector).__name__}, "
        "expected {code: bool | None}"
    )


def _item_record(item: object, name: str) -> _Record:
    if isinstance(item, Mapping):
        if "trace_id" not in item:
            raise StatsInputError(
                f"{name}: a record has no 'trace_id' field (keys: {sorted(map(str, item))[:8]})"
            )
        trace_id = _trace_id(item["trace_id"], name)
        status = str(item.get("status") or "ok")
        if "vector" in item:
            labels = _as_labels(item["vector"], trace_id, name)
            return _Record(trace_id, status, labels, run=record_run(item))
        return _Record(trace_id, status, item, rows=True)
    if hasattr(item, "trace_id") and hasattr(item, "vector"):
        trace_id = _trace_id(item.trace_id, name)
        status = str(getattr(item, "status", "ok"))
        labels = _as_labels(item.vector, trace_id, name)
        return _Record(trace_id, status, labels, run=record_run(item))
    raise StatsInputError(
        f"{name}: cannot read a label record from {type(item).__name__}; expected an "
        "annotation (.trace_id, .vector, .status) or a mapping with 'trace_id'"
    )


def _is_dataframe(value: object) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and type(value).__name__ == "DataFrame"


def _frame_records(frame: pd.DataFrame, name: str) -> list[_Record]:
    if "trace_id" in frame.columns:
        frame = frame.set_index("trace_id")
    if not frame.columns.is_unique:
        duplicated = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise StatsInputError(f"{name}: the DataFrame has duplicate columns {duplicated}")
    columns = [str(c) for c in frame.columns]
    statuses = frame["status"].tolist() if "status" in frame.columns else None
    records = []
    for i, (trace_id, values) in enumerate(
        zip(frame.index.tolist(), frame.itertuples(index=False, name=None), strict=True)
    ):
        status = statuses[i] if statuses is not None else None
        text = "ok" if status is None or status != status else str(status)  # NaN status: ok
        records.append(
            _Record(_trace_id(trace_id, name), text, dict(zip(columns, values, strict=True)), True)
        )
    return records
