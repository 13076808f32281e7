"""Housekeeping of a results file: one line per key after a rerun, and money spent so far.

**Compaction.** A rerun that redoes a failure appends the new record; the superseded line
stays until the store closes, when the file is rewritten with one line per key (the latest
record at the place of the first, as :func:`~mast.bulk.store.read_annotations` reads it).
The rewrite goes to a temporary file beside it, is fsynced and renamed over the original,
so a crash leaves either the old file or the new one, never half of one; lines this mast
cannot read (a newer layout, damage) are copied as they are. It streams: memory holds the
offsets of the lines, never the file.

**Spent so far.** A budget can hold for a results file across reruns, so the money its
records cost is counted: the costs of the records in the file, plus what records removed
by compactions had cost (``carried_usd``, kept in ``<results>.spent.json`` beside it,
written before the compacted file replaces the old one: a crash in between counts that
money twice, which can only stop a budget early, never let it overrun).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
>>> read_ledger(path).carried_usd
0.0
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from mast.bulk.store_index import _lines, brief_of
from mast.errors import MastError

__all__ = [
    "Ledger",
    "compact_lines",
    "ledger_path",
    "read_ledger",
    "shard_paths",
    "spent_so_far",
    "write_ledger",
]


def ledger_path(results: Path) -> Path:
    """``<results>.spent.json``: spent so far, beside the results file."""
    return results.with_name(results.name + ".spent.json")


@dataclass(frozen=True)
class Ledger:
    """What the side file says: the cost of records no longer in the results file."""

    carried_usd: float = 0.0


def read_ledger(results: Path) -> Ledger:
    """The ledger beside ``results`` (an empty one when there is none)."""
    path = ledger_path(results)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        carried = float(data.get("carried_usd", 0.0))
    except FileNotFoundError:
        return Ledger()
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise MastError(
            f"cannot read {path} (money spent by earlier runs of {results.name}): {exc}; "
            "restore it, or delete it to count only the records now in the results file"
        ) from exc
    return Ledger(carried_usd=carried)


def write_ledger(results: Path, *, carried_usd: float, in_file_usd: float, records: int) -> None:
    """Write the ledger beside ``results`` (temporary file, fsync, rename)."""
    path = ledger_path(results)
    payload = {
        "spent_usd": round(carried_usd + in_file_usd, 10),
        "carried_usd": round(carried_usd, 10),
        "in_file_usd": round(in_file_usd, 10),
        "records": records,
        "updated_at": datetime.now(timezone.utc).isoformat(),
        "about": "USD charged to records of this results file (carried_usd: of records "
        "superseded and compacted away); a budget of scope 'file' counts it",
    }
    _atomic_write(path, [json.dumps(payload, indent=1).encode("utf-8") + b"\n"])


def compact_lines(path: Path, drop: set[int], latest: dict[int, tuple[int, int]]) -> None:
    """Rewrite ``path`` with one line per key, streaming.

    ``drop`` holds the byte offsets of lines superseded by a later line of their key (and
    not the key's first line); ``latest`` maps the offset of a key's first line to the
    ``(offset, length)`` of its latest line, written in its place. Every other line
    (unreadable ones included) is copied as it is.
    """
    with open(path, "rb") as source, open(path, "rb") as lookup:

        def lines() -> Iterable[bytes]:
            offset = 0
            for line in source:
                here, offset = offset, offset + len(line)
                if here in drop:
                    continue
                target = latest.get(here)
                if target is None or target[0] == here:
                    yield line
                else:
                    lookup.seek(target[0])
                    yield lookup.read(target[1])

        _atomic_write(path, lines())


def _atomic_write(path: Path, chunks: Iterable[bytes]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # the rename itself durable (POSIX)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def spent_so_far(path: str | Path) -> float:
    """USD charged to the records of a results file, or of every shard of a results
    folder, by every run so far (superseded and compacted records included; see
    :attr:`mast.bulk.store.ResultsStore.spent_usd`). 0 when there is none yet.

    >>> spent_so_far("no-such-file.jsonl")
    0.0
    """
    path = Path(path)
    total = 0.0
    for file in shard_paths(path) if path.is_dir() else [path]:
        if file.is_file():
            total += read_ledger(file).carried_usd
            for *_, line, _torn in _lines(file):
                # The cost is all it needs: no record is validated (see store_index).
                with contextlib.suppress(ValueError):
                    total += brief_of(line).cost_usd or 0.0
    return total


def shard_paths(folder: str | Path) -> list[Path]:
    """The results files in a results folder (``*.jsonl``, not recursive), sorted by name.

    >>> shard_paths("no-such-folder")
    []
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())
