"""The results store's index: where each key's latest record is, and what resuming needs.

Opening a results file must not cost as much as reading every record: at 10⁵ traces the
records are hundreds of megabytes, and validating each into an
:class:`~mast.judge.annotation.Annotation` took half of a rerun that had nothing to do.
So the index keeps, per key, only the byte offsets of the key's first and latest lines,
the latest line's length, and the few fields a rerun decides by (status, ``error_kind``,
cost): read with :func:`brief_of`, a JSON parse and a check of the fields that make a
record (its layout version, id, status, taxonomy, vector). The whole record is validated
when it is asked for (:meth:`StoreIndex.record`).

Lines that pass the brief check but are not whole records (damage that is still JSON) are
found where it matters, and then treated as the store always treated unreadable lines —
not indexed, copied as they are by a compaction: a key written twice has both its lines
validated before one may supersede the other, and a record asked for that does not
validate is dropped from the index (its trace is annotated again, as if it had never been
read).

>>> brief = brief_of(b'{"trace_id": "t1", "status": "ok", "taxonomy": "MAST 1.0", '
...                  b'"vector": {}, "judge": {"config_hash": "ab"}, "cost_usd": 0.5}')
>>> brief.key, brief.status, brief.cost_usd
(('t1', 'ab'), 'ok', 0.5)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from mast.errors import MastError
from mast.judge.annotation import SCHEMA_VERSION, Annotation, Status

__all__ = ["RecordBrief", "RecordKey", "StoreIndex", "brief_of"]

RecordKey = tuple[str, "str | None"]

_STATUSES = frozenset(get_args(Status))


@dataclass(frozen=True)
class RecordBrief:
    """What a rerun needs of one record, read without validating all of it."""

    trace_id: str
    config_hash: str | None
    status: str
    error_kind: str | None
    cost_usd: float | None

    @property
    def key(self) -> RecordKey:
        """``(trace_id, config hash)``, as :func:`mast.bulk.store.record_key`."""
        return self.trace_id, self.config_hash


def _newer(version: object) -> ValueError | None:
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return ValueError(
            f"record schema_version {version} is newer than this mast ({SCHEMA_VERSION}); "
            "upgrade mast to read it"
        )
    return None


def _object(line: bytes) -> dict[str, Any]:
    """One line as a JSON object of a layout this mast reads (``ValueError`` if not)."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    newer = _newer(record.get("schema_version"))
    if newer is not None:
        raise newer
    return record


def _parse(line: bytes) -> Annotation:
    """One line as a whole, validated record (``ValueError`` / ``ValidationError`` if not)."""
    return Annotation.model_validate(_object(line))


def _lines(path: Path) -> Iterator[tuple[int, int, int, bytes, bool]]:
    """``(line number, byte offset, bytes with the newline, the line, is a torn last line)``
    for each line that is not blank, read as a stream (memory holds one line)."""
    offset = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            here, offset = offset, offset + len(line)
            torn = not line.endswith(b"\n")  # only the last line can lack its newline
            size = len(line) + int(torn)  # as if it had one (what the old reader counted)
            if line.strip():
                yield number, here, size, line, torn


def _records(path: Path) -> Iterator[tuple[int, int, int, Annotation | Exception, bool]]:
    """``(line number, byte offset, bytes with the newline, record or error, is the torn
    last line)`` for each line that is not blank."""
    for number, offset, size, line, torn in _lines(path):
        try:
            yield number, offset, size, _parse(line), False
        except (ValueError, ValidationError) as exc:
            yield number, offset, size, exc, torn


def _text(value: object) -> str | None:
    # Many records carry the same status, kind and hash: one string object for each.
    return sys.intern(value) if isinstance(value, str) else None


def brief_of(line: bytes) -> RecordBrief:
    """The :class:`RecordBrief` of one line; ``ValueError`` for a line that is no record
    (not JSON, a newer layout, or without the fields every record has)."""
    record = _object(line)
    trace_id, status = record.get("trace_id"), record.get("status")
    if not isinstance(trace_id, str) or not isinstance(status, str) or status not in _STATUSES:
        raise ValueError("not a record: no trace_id, or an unknown status")
    if not isinstance(record.get("taxonomy"), str) or not isinstance(record.get("vector"), dict):
        raise ValueError("not a record: no taxonomy or vector")
    judge = record.get("judge", {})
    kind, cost = record.get("error_kind"), record.get("cost_usd")
    if not isinstance(judge, dict) or not (kind is None or isinstance(kind, str)):
        raise ValueError("not a record: judge or error_kind of the wrong type")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise ValueError("not a record: cost_usd is not a number")
    return RecordBrief(
        trace_id=trace_id,
        config_hash=_text(judge.get("config_hash")),
        status=sys.intern(status),
        error_kind=_text(kind),
        cost_usd=None if cost is None else float(cost),
    )


class _Entry:
    """One key: its first line (where a compaction writes the latest), its latest line."""

    __slots__ = ("checked", "cost", "error_kind", "first", "length", "offset", "status")

    def __init__(self, brief: RecordBrief, offset: int, length: int, checked: bool) -> None:
        self.first = offset
        self.set(brief, offset, length, checked)

    def set(self, brief: RecordBrief, offset: int, length: int, checked: bool) -> None:
        self.offset, self.length = offset, length
        self.status, self.error_kind, self.cost = brief.status, brief.error_kind, brief.cost_usd
        self.checked = checked  # validated as a whole Annotation


def _valid(line: bytes) -> bool:
    try:
        _parse(line)
    except (ValueError, ValidationError):
        return False
    return True


class StoreIndex:
    """Keys of a results file → where their lines are; ``read_at(offset, length)`` reads a
    line back (the store's own file)."""

    def __init__(self, read_at: Callable[[int, int], bytes]) -> None:
        self._read_at = read_at
        self._entries: dict[RecordKey, _Entry] = {}
        self.drop: set[int] = set()
        """Offsets of lines superseded by a later line of their key (not its first)."""
        self.in_file_usd = 0.0
        """Cost of every record line in the file, superseded ones too."""
        self.superseded_usd = 0.0
        """Of that, lines a compaction removes."""
        self.unreadable = 0
        """Lines found not to be records after they were indexed."""

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[RecordKey]:
        return iter(self._entries)

    def add(
        self, brief: RecordBrief, offset: int, length: int, *, line: bytes | None = None
    ) -> bool:
        """Index the line of ``length`` bytes at ``offset`` (``line``: its bytes, read from
        the file, validated if its key is already indexed; None: a record this process just
        wrote). Returns False when the line turned out not to be a record."""
        key = brief.key
        prior = self._entries.get(key)
        if prior is not None and not prior.checked:
            # The earlier line is about to be superseded: it must be a record to be one.
            if _valid(self._read_at(prior.offset, prior.length)):
                prior.checked = True
            else:
                self._forget(key, prior)
                prior = None
        if prior is not None and line is not None and not _valid(line):
            self.unreadable += 1
            return False
        checked = line is None or prior is not None
        self.in_file_usd += brief.cost_usd or 0.0
        if prior is None:
            self._entries[key] = _Entry(brief, offset, length, checked)
        else:
            # Not the key's first line: the latest is written at the first one's place.
            self.superseded_usd += prior.cost or 0.0
            self.drop.add(offset)
            prior.set(brief, offset, length, checked)
        return True

    def _forget(self, key: RecordKey, entry: _Entry) -> None:
        # Only a key's single line is ever unchecked, so nothing else points at it.
        del self._entries[key]
        self.in_file_usd -= entry.cost or 0.0
        self.unreadable += 1

    def brief(self, key: RecordKey) -> RecordBrief | None:
        """The brief of ``key``'s latest record (None: no record)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        return RecordBrief(key[0], key[1], entry.status, entry.error_kind, entry.cost)

    def record(self, key: RecordKey) -> Annotation | None:
        """``key``'s latest record, read back and validated (None: none, or the line is not
        a whole record — then it is no longer indexed)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        try:
            annotation = _parse(self._read_at(entry.offset, entry.length))
        except (ValueError, ValidationError):
            if entry.checked:  # it was read before: the file changed under the store
                raise MastError(
                    f"the record of {key[0]!r} changed in the results file while this run "
                    "held it; was the file edited or replaced? Run the command again"
                ) from None
            self._forget(key, entry)
            return None
        entry.checked = True
        return annotation

    def replacements(self) -> dict[int, tuple[int, int]]:
        """For a compaction: first line's offset → (offset, length) of the latest line, for
        the keys written more than once."""
        return {
            e.first: (e.offset, e.length) for e in self._entries.values() if e.first != e.offset
        }
