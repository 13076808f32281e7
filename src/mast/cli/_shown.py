"""Text from traces and file names, made safe to print on one terminal line.

A trace id, a file name or an annotator name comes from the input: a newline in it would
forge a line of ``mast inspect`` output, an escape sequence would drive the terminal. Every
control character is printed as its Python escape instead.

>>> shown("run\\nfake: 0 error(s)\\x1b[2J")
'run\\\\nfake: 0 error(s)\\\\x1b[2J'
"""

from __future__ import annotations

import re

__all__ = ["shown", "shown_lines"]

# C0, DEL, C1, and the format characters that reorder or hide text (bidi overrides, line
# and paragraph separators, zero-width characters).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """``text`` with every control or invisible format character escaped."""
    value = str(text)
    if _UNSAFE.search(value) is None:
        return value
    return _UNSAFE.sub(_escape, value)


def shown_lines(text: object) -> str:
    """Like :func:`shown`, but the line breaks of a message written on several lines stay.

    >>> print(shown_lines("2 trace(s)\\nread twice: a\\x1b[2J"))
    2 trace(s)
    read twice: a\\x1b[2J
    """
    return "\n".join(shown(line) for line in str(text).split("\n"))
