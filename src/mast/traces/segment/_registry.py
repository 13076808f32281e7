"""Which segmenter handles which framework: names, aliases and format markers.

>>> [canonical_framework(n) for n in ("Magentic-One", " chat dev ", "GAIA")]
['Magentic-One', 'ChatDev', None]
>>> detect_log("[2025-31-03 20:40:53 INFO] **[Preprocessing]**\\n")
'ChatDev'
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mast.traces.segment import (
    _ag2,
    _appworld,
    _chatdev,
    _hyperagent,
    _magentic,
    _metagpt,
    _openmanus,
)
from mast.traces.segment._common import Parsed

Segmenter = Callable[[str], "Parsed | None"]

SEGMENTERS: dict[str, Segmenter] = {
    "AG2": _ag2.segment_text,
    "AppWorld": _appworld.segment_text,
    "ChatDev": _chatdev.segment_text,
    "HyperAgent": _hyperagent.segment_text,
    "Magentic-One": _magentic.segment_text,
    "MetaGPT": _metagpt.segment_text,
    "OpenManus": _openmanus.segment_text,
}

# MAD ``mas_name`` spellings (and a few obvious variants), compared without case, spaces,
# hyphens, underscores or dots.
_ALIASES = {
    "ag2": "AG2",
    "autogen": "AG2",
    "mathchat": "AG2",
    "appworld": "AppWorld",
    "chatdev": "ChatDev",
    "hyperagent": "HyperAgent",
    "magentic": "Magentic-One",
    "magenticone": "Magentic-One",
    "metagpt": "MetaGPT",
    "openmanus": "OpenManus",
    "manus": "OpenManus",
}
_SQUEEZE = re.compile(r"[\s_.\-]+")


def canonical_framework(name: str | None) -> str | None:
    """The segmenter name for a ``mas_name`` spelling, or ``None`` if it is not a framework."""
    if not name:
        return None
    return _ALIASES.get(_SQUEEZE.sub("", name.lower()))


# Format markers, most specific first; each is searched once over the text (linear).
_MARKERS: list[tuple[str, list[re.Pattern[str]]]] = [
    (
        "ChatDev",
        [
            re.compile(
                r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z]+\] (?:\*\*\[Preprocessing\]\*\*"
                r"|System: \*\*\[(?:chatting|RolePlaying)\]\*\*|[^\n]*?: \*\*\[Start Chat\]\*\*"
                r"|[^\n]*?<->[^\n]*? on : [^\n]*?, turn \d+\*\*)",
                re.M,
            )
        ],
    ),
    ("HyperAgent", [re.compile(r"^[ \t]*HyperAgent_[^\s]* - [A-Z]+ - ", re.M)]),
    (
        "Magentic-One",
        [
            re.compile(
                r"^SCENARIO\.PY STARTING !#!#|^-{10} (?:\w+ \()?MagenticOne\w*\)? -{10}", re.M
            )
        ],
    ),
    ("OpenManus", [re.compile(r"\| app\.(?:agent|flow|tool)\.[\w.]+:\w+:\d+ - ")]),
    (
        "MetaGPT",
        [
            re.compile(
                r"^=== MetaGPT Agent Communication Log"
                r"|^\[[\d: -]+\] (?:FROM: [^\n]* TO: |NEW MESSAGES:)"
                r"|\| metagpt\.[\w.]+:\w+:\d+ - "
                r"|\| [\w.]+:_act:\d+ - [^\s()]+\([^)\n]+\): to do ",
                re.M,
            )
        ],
    ),
    (
        "AppWorld",
        [re.compile(r"^\*{3,} Task \d+/\d+ \(|^Response from Supervisor Agent[ \t]*$", re.M)],
    ),
    # Both the YAML-like block start and its role/name trailer must be present.
    (
        "AG2",
        [
            re.compile(r"^[ \t]*(?:- )?content[ \t]*:", re.M),
            re.compile(r"^[ \t]*role[ \t]*:[^\n]*\n[ \t]*name[ \t]*:", re.M),
        ],
    ),
    ("AG2", [re.compile(r"^[\w.@-]+ \(to [\w.@-]+\):[ \t]*$", re.M)]),
]


def detect_log(text: str) -> str | None:
    """The framework whose markers ``text`` carries, or ``None``."""
    for name, patterns in _MARKERS:
        if all(p.search(text) for p in patterns):
            return name
    return None
