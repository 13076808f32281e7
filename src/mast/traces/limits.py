"""How much mast reads from one input before it stops: bytes per file, per line, per trace.

Trace files come from other people's systems, and a compressed file can expand a
thousandfold (a 3 MB ``.jsonl.gz`` holding one 3 GiB line). Every reader stops at these
limits with a one-line :class:`ReadLimitError` naming the file and the limit, and holds at
most about one limit's worth of data in memory while it finds out. The defaults are far
above real traces (the largest MAST-Data trace is under 1 MB).

>>> limits = ReadLimits(file_bytes=parse_size("1G"))
>>> limits.file_bytes, ReadLimits().trace_bytes == 64 * 2**20
(1073741824, True)
>>> with read_limits(limits):
...     current_limits().file_bytes
1073741824
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path

from mast.errors import TraceFormatError

__all__ = [
    "ReadLimitError",
    "ReadLimits",
    "current_limits",
    "parse_size",
    "read_limits",
    "set_read_limits",
]

_MiB = 2**20


@dataclass(frozen=True)
class ReadLimits:
    """Upper bounds on what is read from one input (sizes in bytes of decompressed UTF-8).

    Parameters
    ----------
    file_bytes
        Bytes read from one file after decompression (default 256 MiB).
    line_bytes
        Bytes of one line of a JSON Lines file: one trace or one event (default 64 MiB).
    trace_bytes
        Characters of text in one trace, over all its steps (default 64 MiB).
    steps
        Steps in one trace (default 200,000).
    """

    file_bytes: int = 256 * _MiB
    line_bytes: int = 64 * _MiB
    trace_bytes: int = 64 * _MiB
    steps: int = 200_000

    def __post_init__(self) -> None:
        for name in ("file_bytes", "line_bytes", "trace_bytes", "steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"ReadLimits.{name} must be at least 1")

    def with_(self, **changes: int | None) -> ReadLimits:
        """A copy with the given limits changed (``None`` keeps a limit as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


class ReadLimitError(TraceFormatError):
    """An input went past one of the :class:`ReadLimits`; the message names the file, the
    limit and how to raise it."""

    def __init__(self, what: str, limit: int, *, path: str | Path | None, option: str) -> None:
        super().__init__(
            f"{what} is over the limit of {_human(limit)}",
            path=path,
            hint=f"If the input is genuine, raise the limit with {option}",
        )


_OPTIONS = {
    "file_bytes": "--max-file-size SIZE (Python: ReadLimits(file_bytes=…))",
    "line_bytes": "--max-trace-size SIZE (Python: ReadLimits(line_bytes=…))",
    "trace_bytes": "--max-trace-size SIZE (Python: ReadLimits(trace_bytes=…))",
    "steps": "--max-steps N (Python: ReadLimits(steps=…))",
}


def limit_error(kind: str, what: str, limit: int, path: str | Path | None) -> ReadLimitError:
    """The error for going past limit ``kind`` (a field name of :class:`ReadLimits`)."""
    return ReadLimitError(what, limit, path=path, option=_OPTIONS[kind])


def _human(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", _MiB), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,}"


_DEFAULT = ReadLimits()
# None = the defaults (ReadLimits is frozen, but a ContextVar default should be immutable)
_current: ContextVar[ReadLimits | None] = ContextVar("mast_read_limits", default=None)


def current_limits() -> ReadLimits:
    """The limits readers apply now (the defaults unless changed)."""
    return _current.get() or _DEFAULT


def set_read_limits(limits: ReadLimits) -> None:
    """Make ``limits`` the limits of this context from now on (the CLI sets its options so)."""
    _current.set(limits)


@contextmanager
def read_limits(limits: ReadLimits) -> Iterator[ReadLimits]:
    """Apply ``limits`` inside a ``with`` block."""
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"512M"``, ``"2G"``, ``"64MiB"`` or a plain number of bytes, as bytes (powers of 2).

    >>> parse_size("512M"), parse_size("1000")
    (536870912, 1000)
    """
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (write e.g. 512M, 2G or a number of bytes)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 2 ** (10 * " kmgt".index(unit or " ")))
