"""Open trace files whatever their wrapping: gzip, a byte-order mark, UTF-16 or UTF-32.

Every reader in the loaders goes through :func:`open_binary` (UTF-8 bytes) or
:func:`open_text`, so a ``.jsonl.gz`` session, a file saved with a BOM by a Windows editor,
or a PowerShell export in UTF-16 reads like any other file.

>>> import gzip, tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = pathlib.Path(tmp) / "a.json.gz"
...     _ = path.write_bytes(gzip.compress('{"a": 1}'.encode("utf-16")))
...     with open_binary(path) as handle:
...         handle.read()
b'{"a": 1}'
"""

from __future__ import annotations

import codecs
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from mast.traces.limits import current_limits, limit_error

__all__ = ["file_stem", "is_trace_file", "numbered_lines", "open_binary", "open_text", "read_text"]

GZIP_MAGIC = b"\x1f\x8b"
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".txt", ".log", ".eval")

# UTF-32 first: its little-endian mark starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def is_trace_file(path: Path) -> bool:
    """Whether a file name looks like a trace (``.json``, ``.jsonl``, ``.log``… maybe ``.gz``)."""
    name = path.name.lower().removesuffix(".gz")
    return name.endswith(TRACE_SUFFIXES)


def file_stem(path: Path) -> str:
    """The name without its suffixes of format and compression: ``a.jsonl.gz`` → ``a``."""
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    return Path(name).stem


def _encoding(head: bytes) -> tuple[str, int]:
    """(encoding, bytes of byte-order mark) of a file starting with ``head``."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    # UTF-16 without a mark: text where every other byte is NUL (ASCII in UTF-16).
    sample = head[:64]
    if len(sample) >= 8 and sample[1::2].count(0) == len(sample) // 2 and 0 not in sample[::2]:
        return "utf-16-le", 0
    if len(sample) >= 8 and sample[::2].count(0) == len(sample) // 2 and 0 not in sample[1::2]:
        return "utf-16-be", 0
    return "utf-8", 0


def open_binary(path: Path) -> BinaryIO:
    """The file's content as UTF-8 bytes: gunzipped, without a BOM, UTF-16/32 recoded.

    Text that is not valid in its encoding is replaced by U+FFFD when recoding; UTF-8
    files are passed through as they are (their readers decide). A file over the current
    ``file_bytes`` limit (:mod:`mast.traces.limits`) raises :class:`ReadLimitError`: a plain
    file at once, a compressed one as soon as that many bytes have been decompressed.
    """
    limit = current_limits().file_bytes
    raw: BinaryIO = open(path, "rb")  # noqa: SIM115 - returned to the caller
    try:
        if raw.read(2) == GZIP_MAGIC:
            raw.close()
            raw = gzip.open(path, "rb")  # type: ignore[assignment]  # noqa: SIM115 - returned
            compressed = True
        else:
            raw.seek(0)
            compressed = False
            if path.stat().st_size > limit:
                raise limit_error("file_bytes", "the file", limit, path)
        head = raw.read(4)
        encoding, skip = _encoding(head + raw.read(60))
        raw.seek(skip)
    except BaseException:
        raw.close()
        raise
    if compressed:
        # streamed: a gzip bomb is stopped at the limit, never expanded whole
        raw = io.BufferedReader(_Bounded(raw, limit, path))
    if encoding == "utf-8":
        return raw
    return io.BufferedReader(_Recoded(raw, encoding))


class _Bounded(io.RawIOBase):
    """A decompressing stream that raises once more than ``limit`` bytes came out of it."""

    def __init__(self, raw: BinaryIO, limit: int, path: Path) -> None:
        super().__init__()
        self._raw = raw
        self._left = limit
        self._limit = limit
        self._path = path

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        # never ask for more than one byte past the limit: that byte proves it is exceeded
        size: int = self._raw.readinto(view[: self._left + 1])  # type: ignore[attr-defined]
        self._left -= size
        if self._left < 0:
            raise limit_error("file_bytes", "the decompressed file", self._limit, self._path)
        return size

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Recoded(io.RawIOBase):
    """A UTF-16/32 byte stream read as UTF-8 bytes (what the JSON readers expect)."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        super().__init__()
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while len(self._pending) < len(view) and not self._done:
            chunk = self._raw.read(1 << 16)
            self._done = not chunk
            self._pending += self._decoder.decode(chunk, final=self._done).encode("utf-8")
        size = min(len(view), len(self._pending))
        view[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_text(path: Path, *, errors: str = "replace") -> TextIO:
    """The file's content as text (see :func:`open_binary`)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors=errors)


def read_text(path: Path, *, errors: str = "replace") -> str:
    """The whole file as text (see :func:`open_binary`)."""
    with open_text(path, errors=errors) as handle:
        return handle.read()


def numbered_lines(handle: TextIO, path: Path) -> Iterator[tuple[int, str]]:
    """(1-based number, line) for each line of ``handle``, stopping with
    :class:`ReadLimitError` at a line longer than the current ``line_bytes`` limit (read only
    that far: a 3 GiB line is never held in memory)."""
    limit = current_limits().line_bytes
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise limit_error("line_bytes", f"line {number}", limit, path)
        yield number, line
