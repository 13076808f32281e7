"""Find JSON values inside model answers, forgiving the ways models break JSON.

Models wrap JSON in prose or code fences, leave trailing commas, write Python literals
(``True``/``None``, single quotes), put raw newlines inside strings, and get cut off by the
token limit. :func:`find_json_values` returns every value it can read, outermost first;
a value cut off at the end of the text comes back with only its *complete* members (a
half-written string, number or literal is dropped, never guessed) and ``truncated=True``.

>>> [(v.value, v.truncated) for v in find_json_values('Sure! {"a": 1, "b": [true, nu')]
[({'a': 1, 'b': [True]}, True)]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_START = re.compile(r"\{|\[\s*\{")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t"}  # fmt: skip
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False,
             "None": None}  # fmt: skip
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_BARE_KEY = re.compile(r"[A-Za-z0-9_][\w.\-]*")
# Scanning every "{" of a long answer would be quadratic; a verdict is among the first few.
_MAX_STARTS = 40


@dataclass(frozen=True)
class JsonValue:
    """One JSON value found in a text: the value, where it started, and whether it was cut."""

    value: Any
    start: int
    end: int
    truncated: bool


class _EndOfText(Exception):
    """The text ended inside a value; ``partial`` is what was complete (None for scalars)."""

    def __init__(self, partial: Any) -> None:
        super().__init__("end of text")
        self.partial = partial


class _Invalid(Exception):
    """Not JSON at this position."""


# A run of string characters that need no care: neither the closing quote nor a backslash.
_PLAIN_RUN = {q: re.compile(rf"[^{q}\\]+") for q in "\"'"}


class _Reader:
    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def _skip_space(self) -> None:
        n = len(self.text)
        while self.pos < n and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def _peek(self) -> str:
        self._skip_space()
        if self.pos >= len(self.text):
            raise _EndOfText(None)
        return self.text[self.pos]

    def value(self) -> Any:
        ch = self._peek()
        if ch == "{":
            return self._object()
        if ch == "[":
            return self._array()
        if ch in "\"'":
            return self._string()
        if ch == "-" or ch.isdigit():
            return self._number()
        return self._literal()

    def _object(self) -> dict[str, Any]:
        self.pos += 1  # "{"
        out: dict[str, Any] = {}
        while True:
            ch = self._peek_or_end(out)
            if ch == "}":
                self.pos += 1
                return out
            if ch == ",":  # tolerate leading / doubled / trailing commas
                self.pos += 1
                continue
            key = self._key(out)
            if self._peek_or_end(out) not in ":=":
                raise _Invalid(f"expected ':' at {self.pos}")
            self.pos += 1
            try:
                out[key] = self.value()
            except _EndOfText as end:
                if isinstance(end.partial, (dict, list)):
                    out[key] = end.partial
                raise _EndOfText(out) from None
            ch = self._peek_or_end(out)
            if ch not in ",}":
                raise _Invalid(f"expected ',' or '}}' at {self.pos}")

    def _array(self) -> list[Any]:
        self.pos += 1  # "["
        out: list[Any] = []
        while True:
            ch = self._peek_or_end(out)
            if ch == "]":
                self.pos += 1
                return out
            if ch == ",":
                self.pos += 1
                continue
            try:
                out.append(self.value())
            except _EndOfText as end:
                if isinstance(end.partial, (dict, list)):
                    out.append(end.partial)
                raise _EndOfText(out) from None
            ch = self._peek_or_end(out)
            if ch not in ",]":
                raise _Invalid(f"expected ',' or ']' at {self.pos}")

    def _peek_or_end(self, partial: Any) -> str:
        try:
            return self._peek()
        except _EndOfText:
            raise _EndOfText(partial) from None

    def _key(self, partial: dict[str, Any]) -> str:
        ch = self._peek_or_end(partial)
        if ch in "\"'":
            try:
                return self._string()
            except _EndOfText:
                raise _EndOfText(partial) from None
        match = _BARE_KEY.match(self.text, self.pos)
        if not match:
            raise _Invalid(f"expected a key at {self.pos}")
        self.pos = match.end()
        return match.group(0)

    def _string(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        parts: list[str] = []
        text, n = self.text, len(self.text)
        plain = _PLAIN_RUN[quote]
        while self.pos < n:
            # The characters up to the next quote or backslash, taken as they are at once.
            run = plain.match(text, self.pos)
            if run is not None and run.end() > self.pos:
                parts.append(run.group(0))
                self.pos = run.end()
                if self.pos >= n:
                    break
            ch = text[self.pos]
            if ch == quote:
                self.pos += 1
                return "".join(parts)
            if ch == "\\":
                if self.pos + 1 >= n:
                    break
                esc = text[self.pos + 1]
                if esc == "u":
                    digits = text[self.pos + 2 : self.pos + 6]
                    if len(digits) < 4:
                        break
                    try:
                        parts.append(chr(int(digits, 16)))
                    except ValueError:
                        raise _Invalid(f"bad \\u escape at {self.pos}") from None
                    self.pos += 6
                    continue
                parts.append(_ESCAPES.get(esc, esc))
                self.pos += 2
                continue
            parts.append(ch)  # raw newlines inside strings are accepted
            self.pos += 1
        raise _EndOfText(None)

    def _number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if not match:
            raise _Invalid(f"bad number at {self.pos}")
        end = match.end()
        if end >= len(self.text):
            raise _EndOfText(None)  # "0.8" at the very end may have been "0.85"
        self.pos = end
        token = match.group(0)
        return float(token) if any(c in token for c in ".eE") else int(token)

    def _literal(self) -> Any:
        rest = self.text[self.pos : self.pos + 5]
        for word, value in _LITERALS.items():
            if rest.startswith(word):
                self.pos += len(word)
                return value
            if self.pos + len(rest) >= len(self.text) and word.startswith(rest):
                raise _EndOfText(None)
        raise _Invalid(f"unexpected {self.text[self.pos]!r} at {self.pos}")


def read_value(text: str, start: int = 0) -> JsonValue:
    """Read one (possibly truncated) JSON value at ``start``; raise ValueError if none."""
    reader = _Reader(text, start)
    try:
        value = reader.value()
    except _EndOfText as end:
        if isinstance(end.partial, (dict, list)):
            return JsonValue(end.partial, start, len(text), True)
        raise ValueError("text ends before a JSON value is complete") from None
    except (_Invalid, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    return JsonValue(value, start, reader.pos, False)


def find_json_values(text: str) -> list[JsonValue]:
    """Every object, or list of objects, readable in ``text``, in order of position.

    The whole text is tried as strict JSON first; otherwise candidates start at each ``{``
    (or a ``[`` that opens a list of objects) outside values already read, which finds JSON
    wrapped in prose or code fences alike. A value nested in one already found is not
    reported again.
    """
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        pass
    else:
        if isinstance(whole, (dict, list)):
            start = text.find(stripped[:1])
            return [JsonValue(whole, start, start + len(stripped), False)]
    out: list[JsonValue] = []
    pos = 0
    for _ in range(_MAX_STARTS):
        match = _START.search(text, pos)
        if not match:
            break
        try:
            found = read_value(text, match.start())
        except ValueError:
            pos = match.start() + 1
            continue
        out.append(found)
        pos = max(found.end, match.start() + 1)
    return out
