"""What the response cache does when its file is damaged or cannot be written.

The cache only saves money; it must never cost an answer. A damaged SQLite file (a corrupt
page after a crash or a full disk) is moved aside, once, with one
:class:`CacheWarning`, and an empty cache takes its place: its answers are asked for again,
nothing else fails. A cache that cannot be written (disk full, read-only) stops storing with
one warning, and the run goes on writing its results file.

>>> import sqlite3
>>> is_corrupt(sqlite3.DatabaseError("database disk image is malformed"))
True
>>> is_corrupt(sqlite3.OperationalError("database or disk is full"))
False
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["CacheWarning", "is_corrupt", "move_aside"]


class CacheWarning(UserWarning):
    """The response cache was damaged (moved aside) or could not be written (not used)."""


_CORRUPT = ("malformed", "not a database", "corrupt")


def is_corrupt(exc: BaseException) -> bool:
    """Whether an SQLite error means the file's content is damaged (not locked or full)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(
        word in str(exc).lower() for word in _CORRUPT
    )


def move_aside(path: Path) -> Path:
    """Rename a damaged cache file (and its WAL and shared-memory files) out of the way;
    returns the new name of the main file."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            extra.replace(aside.with_name(aside.name + suffix))
    path.replace(aside)
    return aside
