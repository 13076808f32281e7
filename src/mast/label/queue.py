"""A labelling queue in one SQLite file: the traces to label, and every label ever given.

Only this module knows the file's layout. Three tables:

* ``meta``: how the queue was made (taxonomy, strategy, seed, sizes, creation time);
* ``items``: one row per trace in queue order, with the trace (as JSON, secrets redacted),
  its inclusion probability, and the judge's answers when ``results`` were given;
* ``submissions``: one row per submitted form, never updated or deleted: a labeller who
  changes their mind adds a new version. Each write is one transaction, so a crash leaves
  either the whole submission or none of it.

>>> import tempfile, pathlib
>>> from mast.traces.model import Step, Trace
>>> traces = [Trace(id=f"t{i}", steps=[Step.make(0, "hi", agent="a")]) for i in range(3)]
>>> path = pathlib.Path(tempfile.mkdtemp()) / "q.db"
>>> queue = create_queue(path, traces, sample=2, seed=0)
>>> queue.size, len(queue.submit(queue.trace_ids[0], "ann", {"1.1": True}).labels)
(2, 14)
>>> queue.latest("ann")[queue.trace_ids[0]].labels["1.1"], queue.progress()
(True, {'ann': 1})
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mast.errors import MastError
from mast.judge.annotation import Annotation
from mast.label.sampling import Candidate, Chosen, Strategy, sample
from mast.privacy.redact import Redactor
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Trace

__all__ = ["Item", "LabelQueue", "QueueError", "Submission", "create_queue", "is_queue"]

SCHEMA_VERSION = 1
_MAGIC = b"SQLite format 3\x00"
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    position INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL UNIQUE,
    system TEXT,
    outcome TEXT NOT NULL,
    pi REAL NOT NULL,
    disputed INTEGER NOT NULL,
    trace_json TEXT NOT NULL,
    judges_json TEXT NOT NULL
);
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL REFERENCES items(trace_id),
    labeller TEXT NOT NULL,
    version INTEGER NOT NULL,
    created TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    evidence_json TEXT NOT NULL,
    note TEXT NOT NULL,
    UNIQUE (trace_id, labeller, version)
);
"""


class QueueError(MastError):
    """A labelling queue that cannot be created, opened or written."""


@dataclass(frozen=True)
class Item:
    """One trace of the queue."""

    position: int
    trace: Trace
    pi: float
    disputed: int
    judges: list[dict[str, Any]]
    """The judge's answers: ``[{"judge": name, "vector": {code: bool | None}}, …]``."""

    @property
    def weight(self) -> float:
        return 1.0 / self.pi


@dataclass(frozen=True)
class Submission:
    """One labeller's answer for one trace (one version of it)."""

    trace_id: str
    labeller: str
    version: int
    created: str
    labels: dict[str, bool | None]
    evidence: dict[str, str]
    note: str


def is_queue(path: str | Path) -> bool:
    """Whether ``path`` is a labelling queue made by :func:`create_queue`."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if handle.read(len(_MAGIC)) != _MAGIC:
                return False
    except OSError:
        return False
    try:
        with _connect(path) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'kind'").fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == "mast-label-queue"


def create_queue(
    path: str | Path,
    traces: Iterable[Trace],
    *,
    results: Iterable[Annotation] = (),
    sample: int | None = None,
    strategy: Strategy = "random",
    seed: int = 0,
    taxonomy: Taxonomy | str | Path | None = None,
    redact: bool = True,
) -> LabelQueue:
    """Create a queue at ``path`` (which must not exist) from a sample of ``traces``."""
    path = Path(path)
    if path.exists():
        raise QueueError(f"{path}: already exists; choose a new file name or delete it first")
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    by_id: dict[str, Trace] = {}
    for trace in traces:
        if trace.id in by_id:
            raise QueueError(
                f"trace id {trace.id!r} occurs twice in the inputs; ids must be unique"
            )
        by_id[trace.id] = trace
    if not by_id:
        raise QueueError("no traces to label: the inputs held none")
    judges = _judges_by_trace(results, by_id)
    candidates = [
        Candidate(t.id, t.system, str(t.outcome.value), [j["vector"] for j in judges.get(t.id, [])])
        for t in by_id.values()
    ]
    chosen = _draw(candidates, sample, strategy, seed)
    redactor = Redactor() if redact else None
    meta = {
        "kind": "mast-label-queue",
        "schema_version": str(SCHEMA_VERSION),
        "taxonomy": tax.label,
        "codes": json.dumps(tax.codes),
        "strategy": strategy,
        "seed": str(seed),
        "population": str(len(by_id)),
        "created": _now(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _connect(path) as db, _transaction(db):
            # executescript() would commit the open transaction: one statement at a time.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            for position, c in enumerate(chosen):
                trace = by_id[c.trace_id]
                if redactor is not None:
                    trace, _ = redactor.redact_trace(trace)
                db.execute(
                    "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        position,
                        c.trace_id,
                        c.system,
                        c.outcome,
                        c.pi,
                        c.disputed,
                        trace.model_dump_json(),
                        json.dumps(judges.get(c.trace_id, [])),
                    ),
                )
    except sqlite3.Error as exc:
        path.unlink(missing_ok=True)
        raise QueueError(f"{path}: could not write the queue ({exc})") from exc
    return LabelQueue(path)


def _draw(
    candidates: Sequence[Candidate], n: int | None, strategy: Strategy, seed: int
) -> list[Chosen]:
    try:
        return sample(candidates, n, strategy=strategy, seed=seed)
    except ValueError as exc:
        raise QueueError(str(exc)) from exc


def _judges_by_trace(
    results: Iterable[Annotation], traces: Mapping[str, Trace]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for ann in results:
        if ann.status != "ok" or ann.trace_id not in traces:
            continue
        name = str(ann.judge.get("model", "judge"))
        vector = {code: ann.vector[code] for code in ann.vector}
        out.setdefault(ann.trace_id, []).append({"judge": name, "vector": vector})
    return out


class LabelQueue:
    """An open queue file (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not is_queue(self.path):
            raise QueueError(
                f"{self.path}: not a labelling queue; create one with "
                "`mast label new QUEUE.db --traces INPUT…`"
            )
        with _connect(self.path) as db:
            self.meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            rows = db.execute("SELECT trace_id FROM items ORDER BY position").fetchall()
        self.codes: list[str] = json.loads(self.meta["codes"])
        self.trace_ids: list[str] = [r[0] for r in rows]

    @property
    def size(self) -> int:
        return len(self.trace_ids)

    def item(self, position: int) -> Item:
        """The trace at ``position`` (0-based, queue order)."""
        if not 0 <= position < self.size:
            # before the query: SQLite cannot bind an integer past 64 bits (OverflowError)
            raise QueueError(f"{self.path}: no item {position} (the queue has {self.size})")
        with _connect(self.path) as db:
            row = db.execute(
                "SELECT position, trace_json, pi, disputed, judges_json FROM items "
                "WHERE position = ?",
                (position,),
            ).fetchone()
        if row is None:
            raise QueueError(f"{self.path}: no item {position} (the queue has {self.size})")
        return Item(row[0], Trace.model_validate_json(row[1]), row[2], row[3], json.loads(row[4]))

    def weights(self) -> dict[str, float]:
        """``{trace_id: 1 / inclusion probability}`` for prevalence estimates."""
        with _connect(self.path) as db:
            return dict(db.execute("SELECT trace_id, 1.0 / pi FROM items ORDER BY position"))

    def submit(
        self,
        trace_id: str,
        labeller: str,
        labels: Mapping[str, bool | None],
        *,
        evidence: Mapping[str, str] | None = None,
        note: str = "",
    ) -> Submission:
        """Store one labeller's answer as a new version (nothing is ever overwritten).

        Codes not given are stored as ``None`` (unknown), never as "no".
        """
        labeller = labeller.strip()
        if not labeller:
            raise QueueError("a submission needs a labeller name")
        if trace_id not in self.trace_ids:
            raise QueueError(f"{self.path}: trace {trace_id!r} is not in this queue")
        unknown = sorted(set(labels) - set(self.codes))
        if unknown:
            raise QueueError(f"codes not in the queue's taxonomy: {', '.join(unknown)}")
        full = {code: labels.get(code) for code in self.codes}
        cited = {c: s for c, s in (evidence or {}).items() if s and full.get(c) is True}
        with _connect(self.path) as db, _transaction(db):
            (version,) = db.execute(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM submissions "
                "WHERE trace_id = ? AND labeller = ?",
                (trace_id, labeller),
            ).fetchone()
            created = _now()
            db.execute(
                "INSERT INTO submissions (trace_id, labeller, version, created, labels_json, "
                "evidence_json, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (trace_id, labeller, version, created, json.dumps(full), json.dumps(cited), note),
            )
        return Submission(trace_id, labeller, version, created, full, cited, note)

    def submissions(self, labeller: str | None = None) -> list[Submission]:
        """Every stored submission (all versions), oldest first."""
        query = "SELECT trace_id, labeller, version, created, labels_json, evidence_json, note "
        query += "FROM submissions"
        args: tuple[str, ...] = ()
        if labeller is not None:
            query += " WHERE labeller = ?"
            args = (labeller,)
        with _connect(self.path) as db:
            rows = db.execute(query + " ORDER BY id", args).fetchall()
        return [
            Submission(r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5]), r[6])
            for r in rows
        ]

    def latest(self, labeller: str) -> dict[str, Submission]:
        """Each trace's newest submission by ``labeller``."""
        return {s.trace_id: s for s in self.submissions(labeller)}

    def labellers(self) -> list[str]:
        return sorted({s.labeller for s in self.submissions()})

    def progress(self) -> dict[str, int]:
        """``{labeller: traces labelled}`` (any version counts once)."""
        return {name: len(self.latest(name)) for name in self.labellers()}

    def next_position(self, labeller: str, after: int = -1) -> int | None:
        """The first position after ``after`` that ``labeller`` has not labelled yet."""
        done = set(self.latest(labeller))
        for position, trace_id in enumerate(self.trace_ids):
            if position > after and trace_id not in done:
                return position
        return None

    def raters(self) -> dict[str, dict[str, dict[str, bool | None]]]:
        """``{labeller: {trace_id: {code: label}}}`` (newest versions), for
        :func:`mast.agreement_among`."""
        out: dict[str, dict[str, dict[str, bool | None]]] = {}
        for row in self.label_rows():
            out.setdefault(row["annotator"], {})[row["trace_id"]] = {
                code: row[code] for code in self.codes
            }
        return out

    def label_rows(self) -> Iterator[dict[str, Any]]:
        """One row per (trace, labeller), newest version, in queue order: the label-table
        shape ``mast agree`` reads (``trace_id``, ``annotator``, one column per code)."""
        subs = self.submissions()
        newest: dict[tuple[str, str], Submission] = {}
        for s in subs:
            newest[(s.trace_id, s.labeller)] = s
        order = {t: i for i, t in enumerate(self.trace_ids)}
        for (trace_id, labeller), s in sorted(
            newest.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])
        ):
            yield {"trace_id": trace_id, "annotator": labeller, **s.labels}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    # Autocommit mode; writes happen inside explicit BEGIN IMMEDIATE transactions, so two
    # labellers writing at once wait for each other (busy timeout) instead of failing.
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout = 30000")
        yield db
    finally:
        db.close()


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
