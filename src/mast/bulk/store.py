"""The results file: append-only JSON Lines, one ``Annotation`` per line.

Only this module knows the on-disk format. Each record is keyed by ``(trace_id, config
hash)`` — the hash of the judge settings that can change an answer, stored as
``judge["config_hash"]`` — so rerunning the same command resumes where it stopped. Every
line is written in one call, flushed and fsynced before the runner moves on (or, with
``background_fsync=True`` as bulk runs use it, flushed at once and fsynced by a thread a
moment later, see :mod:`mast.bulk.syncer`). A process
killed mid-write leaves at most a torn last line: readers ignore it, and opening the file
for writing again completes it (if it is a whole record) or cuts it off, so the file stays
appendable. A record written later for the same key (``--retry-failed``) supersedes the earlier one
when reading, and when the store closes the file is compacted to one line per key (written
beside it and renamed over it, so a crash leaves the old file or the new one; see
:mod:`mast.bulk.store_compact`, which also keeps the money spent so far beside the file).

>>> import tempfile, pathlib
>>> from mast.traces.model import FailureVector
>>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
>>> ann = Annotation(trace_id="t1", status="ok", taxonomy="MAST 1.0",
...                  vector=FailureVector({"1.1": True, "1.2": False}))
>>> with ResultsStore(path) as store:
...     store.append(ann)
>>> [a.trace_id for a in read_annotations(path)]
['t1']
>>> bool(to_frame(read_annotations(path)).loc["t1", "1.1"])
True
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from mast.bulk.store_compact import (
    compact_lines,
    read_ledger,
    shard_paths,
    write_ledger,
)
from mast.bulk.store_index import (
    RecordBrief,
    RecordKey,
    StoreIndex,
    _lines,
    _parse,
    _records,
    brief_of,
)
from mast.bulk.syncer import BackgroundSync
from mast.errors import MastError
from mast.judge.annotation import Annotation

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RecordBrief",
    "RecordKey",
    "ResultsFileWarning",
    "ResultsStore",
    "merge_results",
    "read_annotations",
    "record_key",
    "shard_paths",
    "to_frame",
]


class ResultsFileWarning(UserWarning):
    """A line in the middle of a results file is not a readable record (it was skipped)."""


def record_key(annotation: Annotation) -> RecordKey:
    """``(trace_id, config hash)``: what makes two records the same result.

    >>> from mast.traces.model import FailureVector
    >>> record_key(Annotation(trace_id="t", status="ok", taxonomy="MAST 1.0",
    ...                       vector=FailureVector(), judge={"config_hash": "ab12"}))
    ('t', 'ab12')
    """
    config = annotation.judge.get("config_hash")
    return annotation.trace_id, config if isinstance(config, str) else None


def read_annotations(path: str | Path, *, latest: bool = True) -> list[Annotation]:
    """The records of a results file, in file order, or of a results folder.

    With ``latest`` (default) a key written more than once (a retried failure) gives only
    its last record, at the position of its first. A torn last line (a crash mid-write) is
    ignored silently; an unreadable line elsewhere is skipped with a
    :class:`ResultsFileWarning`.

    A folder (the Ray engine's ``--out DIR``) is read as one result set: every ``*.jsonl``
    shard in it (see :func:`shard_paths`), a key recorded in several shards keeping its
    newest record (by ``created_at``).

    >>> read_annotations("no-such-file.jsonl")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no results file at no-such-file.jsonl
    """
    path = Path(path)
    if path.is_dir():
        return _read_folder(path, latest)
    if not path.is_file():
        raise FileNotFoundError(f"no results file at {path}")
    return _read_file(path, latest)


def _read_file(path: Path, latest: bool) -> list[Annotation]:
    found: dict[RecordKey, Annotation] = {}
    every: list[Annotation] = []
    for number, _offset, _size, item, torn in _records(path):
        if isinstance(item, Exception):
            if not torn:
                warnings.warn(
                    f"{path}:{number}: skipped an unreadable record ({item})",
                    ResultsFileWarning,
                    stacklevel=3,
                )
            continue
        if latest:
            found[record_key(item)] = item  # dicts keep the first insertion's position
        else:
            every.append(item)
    return list(found.values()) if latest else every


def _read_folder(folder: Path, latest: bool) -> list[Annotation]:
    shards = shard_paths(folder)
    if not shards:
        raise FileNotFoundError(
            f"no results in folder {folder}: expected result shards (*.jsonl) as written by "
            "`mast annotate --engine ray --out FOLDER`"
        )
    every = [ann for shard in shards for ann in _read_file(shard, latest)]
    if not latest:
        return every
    found: dict[RecordKey, Annotation] = {}
    for ann in every:
        key = record_key(ann)
        prior = found.get(key)
        # Shards are written side by side, so "later in the file" means nothing across
        # them: the newest record wins (a rerun's, or a retried failure's).
        if prior is None or ann.created_at >= prior.created_at:
            found[key] = ann  # dicts keep the first insertion's position
    return list(found.values())


def merge_results(sources: Iterable[str | Path], out: str | Path) -> int:
    """Write the records of results files and folders into one results file, one record
    per key (the newest; see :func:`read_annotations`); returns how many were written.

    The file is written beside ``out`` and renamed over it, so a crash never leaves half a
    file. ``out`` must not be one of the sources' shards.

    >>> import tempfile, pathlib
    >>> from mast.traces.model import FailureVector
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> ann = Annotation(trace_id="t1", status="ok", taxonomy="MAST 1.0", vector=FailureVector())
    >>> for name in ("a.jsonl", "b.jsonl"):
    ...     with ResultsStore(tmp / "shards" / name) as store:
    ...         store.append(ann)
    >>> merge_results([tmp / "shards"], tmp / "merged.jsonl")
    1
    """
    out = Path(out)
    found: dict[RecordKey, Annotation] = {}
    for source in sources:
        source = Path(source)
        if source.resolve() == out.resolve() or out.resolve() in [
            p.resolve() for p in shard_paths(source)
        ]:
            raise MastError(f"{out} is one of the inputs; write the merged file elsewhere")
        for ann in read_annotations(source):
            prior = found.get(record_key(ann))
            if prior is None or ann.created_at >= prior.created_at:
                found[record_key(ann)] = ann
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for ann in found.values():
                handle.write(ann.model_dump_json().encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(out.parent)
    return len(found)


class ResultsStore:
    """A results file opened for appending (see the module docstring).

    Opening it repairs a torn last line, takes an exclusive lock (two runs writing one file
    would duplicate work; the lock dies with its process) and indexes the records so a run
    can ask :meth:`get` for a key's latest record, or :meth:`brief` for what deciding about
    it needs. The index holds where each key's lines are and a few fields of its latest
    record, not the records: a record is read back and validated when :meth:`get` asks for
    it (see :mod:`mast.bulk.store_index`), so opening a large file costs one JSON parse per
    line and little memory.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fsync: bool = True,
        background_fsync: bool = False,
        compact: bool = True,
    ) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._syncer: BackgroundSync | None = None
        self.repaired: str | None = None
        """What was done to a torn last line on opening (None = nothing to repair)."""
        self._skipped = 0
        self._reader: IO[bytes] | None = None
        self._index = StoreIndex(self._read_at)
        self._appended = 0
        self._compact = compact
        self.write_error: OSError | None = None
        """The first failed write (a full disk): later appends raise it at once."""
        self._good_size: int | None = None
        created = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[bytes] = open(self.path, "ab+")  # noqa: SIM115 - closed in close()
        except OSError as exc:  # read-only folder, a file in the way, no space
            raise MastError(
                f"cannot write the results file {self.path}: {exc.strerror or exc}; choose "
                "a writable place with --out (out=)"
            ) from exc
        try:
            self._lock()
            self._repair_tail()
            self._load()
        except BaseException:
            self._file.close()
            if self._reader is not None:
                self._reader.close()
            raise
        if created and fsync:
            _fsync_dir(self.path.parent)
        if fsync and background_fsync:
            self._syncer = BackgroundSync(self._file.fileno())

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory locks, run one writer
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise MastError(
                f"{self.path} is being written by another mast process; wait for it to "
                "finish or write to another file"
            ) from exc

    def _repair_tail(self) -> None:
        self._file.seek(0, os.SEEK_END)
        size = self._file.tell()
        if size == 0:
            return
        # Find the start of the last line without reading the whole file.
        block = 1 << 16
        tail = b""
        pos = size
        while pos > 0:
            step = min(block, pos)
            pos -= step
            self._file.seek(pos)
            tail = self._file.read(step) + tail
            if tail.endswith(b"\n"):
                return
            if b"\n" in tail[:-1]:
                break
        cut = tail.rfind(b"\n") + 1
        start = pos + cut
        last = tail[cut:]
        try:
            _parse(last)
        except (ValueError, ValidationError):
            self._file.truncate(start)
            self.repaired = f"removed a torn last line ({len(last)} bytes) left by a crash"
        else:
            self._file.write(b"\n")
            self.repaired = "completed a last record that lacked its newline"
        self._flush()

    def _load(self) -> None:
        for _number, offset, size, line, _torn in _lines(self.path):
            try:
                brief = brief_of(line)
            except ValueError:
                self._skipped += 1
                continue
            self._index.add(brief, offset, size, line=line)

    def _read_at(self, offset: int, length: int) -> bytes:
        """The bytes of one line of the file (a reader of its own: appends go on meanwhile)."""
        if self._reader is None:
            self._reader = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        self._reader.seek(offset)
        return self._reader.read(length)

    @property
    def skipped_lines(self) -> int:
        """Lines of the file that are not readable records (ignored)."""
        return self._skipped + self._index.unreadable

    def _flush(self) -> None:
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())

    def __len__(self) -> int:
        return len(self._index)

    def get(self, trace_id: str, config_hash: str | None) -> Annotation | None:
        """The latest record for this key, read back and validated, or None."""
        return self._index.record((trace_id, config_hash))

    def judged_by_others(self, config_hash: str | None) -> dict[str, str | None]:
        """Trace id → resume key of its latest-indexed record by a judge setting other than
        ``config_hash`` (one pass over the index)."""
        return {tid: key for tid, key in self._index if key != config_hash}

    def brief(self, trace_id: str, config_hash: str | None) -> RecordBrief | None:
        """What a rerun decides by (status, ``error_kind``, cost) of this key's latest
        record, without reading the record; None when there is none."""
        return self._index.brief((trace_id, config_hash))

    def records(self) -> list[Annotation]:
        """The latest record of every key, in order of first appearance."""
        found = (self._index.record(key) for key in list(self._index))
        return [a for a in found if a is not None]

    def append(self, annotation: Annotation) -> None:
        """Write one record as one line; flushed and fsynced before returning (fsynced
        soon after, in a thread, with ``background_fsync``). An ``OSError`` means the
        record may not be on disk (a failed background fsync shows at the next append)."""
        if self._syncer is not None and self._syncer.error is not None:
            raise self._syncer.error
        if self.write_error is not None:
            raise self.write_error  # the file's end is unknown: write nothing more
        line = annotation.model_dump_json().encode("utf-8") + b"\n"
        offset = self._file.seek(0, os.SEEK_END)
        try:
            self._file.write(line)
            if self._syncer is not None:
                self._file.flush()  # a killed process loses nothing from here on
                self._syncer.request()
            else:
                self._flush()
        except OSError as exc:
            self.write_error = exc
            self._good_size = offset  # what was on disk before this line
            raise
        self._appended += 1
        brief = RecordBrief(
            trace_id=annotation.trace_id,
            config_hash=record_key(annotation)[1],
            status=annotation.status,
            error_kind=annotation.error_kind,
            cost_usd=annotation.cost_usd,
        )
        self._index.add(brief, offset, len(line))

    @property
    def spent_usd(self) -> float:
        """USD charged to the records of this results file by every run so far: the
        records in it (superseded ones too) plus those compacted away (the ledger beside
        it, see :mod:`mast.bulk.store_compact`). Records of unknown cost count 0."""
        return read_ledger(self.path).carried_usd + self._index.in_file_usd

    def _housekeeping(self) -> None:
        """At close: one line per key, and the money spent recorded beside the file."""
        index = self._index
        if not (self._appended or (self._compact and index.drop)):
            return
        carried = read_ledger(self.path).carried_usd
        compacting = self._compact and bool(index.drop)
        if compacting:
            carried += index.superseded_usd
        if carried or index.in_file_usd:  # no money, no ledger (e.g. the heuristic judge)
            write_ledger(
                self.path,
                carried_usd=carried,
                in_file_usd=index.in_file_usd - (index.superseded_usd if compacting else 0.0),
                records=len(index),
            )
        if compacting:
            # After the ledger: a crash between the two counts the superseded lines'
            # money twice (a budget stops early), never not at all.
            compact_lines(self.path, index.drop, index.replacements())

    def close(self) -> None:
        """Make every record durable, release the lock and close the file. After a failed
        write (:attr:`write_error`) it does not raise: the line that failed, possibly half
        on disk, is cut off, and the records before it are kept."""
        if self._file.closed:
            return
        if self._reader is not None:
            self._reader.close()
        if self.write_error is not None:
            self._close_after_failure()
            return
        try:
            if self._syncer is not None:
                self._syncer.close()
                with contextlib.suppress(OSError):  # a full disk showed at append already
                    self._flush()
            try:
                self._housekeeping()  # still holding the lock
            except (OSError, MastError) as exc:
                warnings.warn(
                    f"{self.path}: could not compact the results file or record the money "
                    f"spent beside it ({exc}); every record is kept, superseded lines are "
                    "skipped when reading",
                    ResultsFileWarning,
                    stacklevel=2,
                )
        finally:
            self._file.close()

    def _close_after_failure(self) -> None:
        if self._syncer is not None:
            self._syncer.close()
        with contextlib.suppress(OSError):  # flushing the failed line fails again: closed
            self._file.close()
        if self._good_size is not None:
            # truncating frees space, so it works on a full disk
            with contextlib.suppress(OSError), open(self.path, "r+b") as handle:
                handle.truncate(self._good_size)

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _fsync_dir(path: Path) -> None:
    # Make the new file's directory entry durable too (POSIX); harmless where unsupported.
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_TOKEN_COLUMNS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
)


def to_frame(annotations: Iterable[Annotation] | str | Path) -> pd.DataFrame:
    """One row per trace (index ``trace_id``), one column per failure mode, plus status,
    error, task_completed, who/when (``decisive_agent``, ``decisive_step``,
    ``decisive_modes``, ``decisive_reason``, ``decisive_grounded``, ``attribution_method``,
    ``first_steps``), cost, cache and token columns.

    Mode columns use pandas' nullable ``boolean`` dtype, so unknown stays ``<NA>``, never
    False. Accepts annotations or the path of a results file; a key present more than once
    keeps its last record. Annotations by different judges of the same trace give one row
    each (tell them apart by the ``judge`` column, and samples of one judge by ``sample``).
    """
    import pandas as pd

    if isinstance(annotations, (str, Path)):
        items = read_annotations(annotations)
    else:
        latest: dict[RecordKey, Annotation] = {}
        for ann in annotations:
            latest[record_key(ann)] = ann
        items = list(latest.values())
    codes: list[str] = []
    for ann in items:
        codes += [c for c in ann.vector if c not in codes]
    rows: list[dict[str, Any]] = []
    for ann in items:
        provider, model = ann.judge.get("provider"), ann.judge.get("model")
        row: dict[str, Any] = {
            "trace_id": ann.trace_id,
            # "judge", not "model": a trace's own "model" field (the LLM behind the traced
            # agents) is joined onto this frame by analysis and must not collide with it.
            "judge": f"{provider}/{model}" if provider and model and provider != model else model,
            # Repeated judgments (Judge(samples=K)) of one judge: 0, 1, … K-1.
            "sample": ann.judge.get("sample") or 0,
            "status": ann.status,
            "error": ann.error,
        }
        for code in codes:
            row[code] = ann.vector.get(code)
        row["task_completed"] = ann.task_completed
        row.update(_attribution_columns(ann))
        row["cached"] = ann.cached
        row["cost_usd"] = ann.cost_usd
        for name in _TOKEN_COLUMNS:
            row[name] = getattr(ann.usage, name)
        row["latency_s"] = ann.latency_s
        row["windows"] = ann.windows
        row["taxonomy"] = ann.taxonomy
        row["created_at"] = ann.created_at
        rows.append(row)
    columns = [
        "trace_id",
        "judge",
        "sample",
        "status",
        "error",
        *codes,
        "task_completed",
        *_ATTRIBUTION_COLUMNS,
        "cached",
        "cost_usd",
        *_TOKEN_COLUMNS,
        "latency_s",
        "windows",
        "taxonomy",
        "created_at",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for code in [*codes, "task_completed", "decisive_grounded"]:
        frame[code] = frame[code].astype("boolean")
    for name in _TOKEN_COLUMNS:
        frame[name] = frame[name].astype("Int64")
    frame["cost_usd"] = frame["cost_usd"].astype("Float64")
    result: pd.DataFrame = frame.set_index("trace_id")
    return result


_ATTRIBUTION_COLUMNS = (
    "decisive_agent",
    "decisive_step",
    "decisive_modes",
    "decisive_reason",
    "decisive_grounded",
    "attribution_method",
    "first_steps",
)


def _attribution_columns(ann: Annotation) -> dict[str, Any]:
    """Who/when columns: the decisive error, and ``"1.3=s4 (Coder); …"`` for the first steps
    of present modes. Unknown stays ``None``."""
    error = ann.decisive_error
    firsts = [
        f"{code}={f.first_step or '?'}" + (f" ({f.agent})" if f.agent else "")
        for code, f in ann.findings.items()
        if f.present is True and (f.first_step or f.agent)
    ]
    return {
        "decisive_agent": error.agent if error else None,
        "decisive_step": error.step_id if error else None,
        "decisive_modes": ", ".join(error.modes) if error and error.modes else None,
        "decisive_reason": error.reason if error else None,
        "decisive_grounded": error.grounded if error else None,
        "attribution_method": error.method if error else None,
        "first_steps": "; ".join(firsts) or None,
    }
