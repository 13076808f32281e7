"""A byte stream that rewrites bare ``NaN`` tokens to ``null`` so streaming parsers accept it.

The MAD human-labelled file contains ``NaN`` (Python's json writes it; strict JSON and ijson
reject it). Rewriting has to respect string state: the text "NaN" inside a JSON string
(trace content often quotes Python reprs) must stay untouched.

It also refuses JSON nested deeper than ``max_depth`` (:class:`JSONTooDeep`): ijson's time
and memory grow with the square of the depth, so ``[[[[…`` a few hundred thousand levels
deep would otherwise take minutes and gigabytes before failing.
"""

from __future__ import annotations

import io
import re
from typing import BinaryIO

# Outside strings: a quote opens one, NaN is rewritten, brackets count the depth.
_OUTSIDE = re.compile(rb'"|NaN|[\[\]{}]')
# Inside a string: everything up to its closing quote, escapes included, in one C-level
# match (stepping through every escape in Python was most of the loader's own CPU time on
# trace text full of \n and \"). It stops early only at a lone backslash at a chunk's end.
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)

MAX_DEPTH = 1000
"""Nesting allowed by default (Python's own json module stops near this depth too)."""


class JSONTooDeep(ValueError):
    """The JSON is nested deeper than the reader allows."""


class NanToNullReader(io.RawIOBase):
    """Wrap a binary file; reading yields the same bytes with bare ``NaN`` → ``null``.

    >>> import json
    >>> raw = io.BytesIO(b'[{"a": NaN, "b": "NaN \\\\" NaN"}]')
    >>> json.loads(NanToNullReader(raw).read())
    [{'a': None, 'b': 'NaN " NaN'}]
    """

    def __init__(
        self, source: BinaryIO, chunk_size: int = 1 << 20, max_depth: int | None = MAX_DEPTH
    ) -> None:
        self._source = source
        self._chunk_size = chunk_size
        self._max_depth = max_depth
        self._depth = 0
        self._in_string = False
        self._carry = b""
        self._pending = b""
        self.replaced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = self._source.read(self._chunk_size)
            if not chunk:
                self._pending, self._carry = self._carry, b""
                if not self._pending:
                    return 0
                break
            self._pending = self._rewrite(self._carry + chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _rewrite(self, data: bytes) -> bytes:
        out: list[bytes] = []
        start = pos = 0
        self._carry = b""
        while True:
            if self._in_string:
                end = _STRING_BODY.match(data, pos).end()  # type: ignore[union-attr]
                if end >= len(data):
                    break  # the string goes on in the next chunk
                if data[end : end + 1] == b"\\":
                    # A lone backslash at the end: the character it escapes is in the next chunk.
                    out.append(data[start:end])
                    self._carry = data[end:]
                    return b"".join(out)
                self._in_string = False
                pos = end + 1
                continue
            match = _OUTSIDE.search(data, pos)
            if match is None:
                break
            token, pos = match.group(), match.end()
            if token == b'"':
                self._in_string = True
            elif token == b"NaN":
                out.append(data[start : match.start()])
                out.append(b"null")
                start = pos
                self.replaced += 1
            elif token in (b"[", b"{"):
                self._depth += 1
                if self._max_depth is not None and self._depth > self._max_depth:
                    raise JSONTooDeep(
                        f"JSON nested more than {self._max_depth} levels deep; "
                        "no trace format nests that deep"
                    )
            else:
                self._depth -= 1
        tail = data[start:]
        # A token cut by the chunk boundary ("N" or "Na" outside a string) waits for more bytes.
        if not self._in_string:
            for cut in (2, 1):
                if tail.endswith(b"NaN"[:cut]):
                    out.append(tail[:-cut])
                    self._carry = tail[-cut:]
                    return b"".join(out)
        out.append(tail)
        return b"".join(out)
