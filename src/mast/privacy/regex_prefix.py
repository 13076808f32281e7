"""The literal strings every match of a regular expression starts with.

The secret patterns (:mod:`mast.privacy.secret_patterns`) use them as a cheap pre-check: most
texts contain none of ``sk-``, ``AKIA``, ``-----BEGIN `` …, and a substring test is far
cheaper than running a regular expression over a long trace.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

__all__ = ["literal_prefixes"]


def literal_prefixes(regex: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literal strings one of which every match of ``regex`` starts with (after zero-width
    assertions), or None when there is no such set (a repeat, a class other than a few plain
    characters or an empty alternative first, case-insensitive flags, more than 16
    alternatives, or a pattern the parser cannot take apart).

    >>> literal_prefixes(re.compile(r"(?<![a-z])sk-(?:ant-)?[A-Za-z0-9]{20,}"))
    ('sk-',)
    >>> literal_prefixes(re.compile(r"(?:xox[bp]|xapp)-\\d"))
    ('xoxb', 'xoxp', 'xapp')
    >>> literal_prefixes(re.compile(r"[?&]sig="))
    ('?sig=', '&sig=')
    >>> literal_prefixes(re.compile(r"\\d+x")) is None
    True
    """
    if regex.flags & re.IGNORECASE:
        return None
    try:
        name = "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
        parser = importlib.import_module(name)
        found = _prefixes(list(parser.parse(regex.pattern, regex.flags)), parser)
    except Exception:  # an unusual pattern: no pre-check, the regex always runs
        return None
    return tuple(dict.fromkeys(found)) if found else None


def _prefixes(nodes: list[Any], parser: Any) -> list[str] | None:
    names = parser  # the parser module re-exports the opcode constants
    zero_width = (names.ASSERT, names.ASSERT_NOT, names.AT)
    out = [""]
    for op, arg in nodes:
        if op in zero_width:
            continue
        if op is names.LITERAL:
            out = [o + chr(arg) for o in out]
            continue
        if (
            op is names.IN
            and 0 < len(arg) <= _MAX_CLASS
            and all(a is names.LITERAL for a, _ in arg)
        ):
            # A small class of plain characters, [srp] or [?&]: one prefix per character.
            wider = [o + chr(c) for o in out for _, c in arg]
            if len(wider) > _MAX_PREFIXES:
                break
            out = wider
            continue
        if op is names.SUBPATTERN:
            inner = _prefixes(list(arg[3]), parser)
            if inner:
                out = [o + i for o in out for i in inner]
        elif op is names.BRANCH:
            options = [_prefixes(list(branch), parser) for branch in arg[1]]
            if all(options):
                out = [o + i for o in out for option in options for i in option or []]
        break  # after anything that is not a plain literal, the prefix ends
    return out if all(out) and len(out) <= _MAX_PREFIXES else None


_MAX_PREFIXES = 16
_MAX_CLASS = 4
