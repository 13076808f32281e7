"""Finishing touches on a converted trace that need to know the file it came from.

* **Who&When ids.** A Who&When run's ``question_ID`` names the benchmark question, not the
  run: 21 questions were run in both subsets, so it cannot be the trace id. A run is
  ``whoandwhen/<subset>/<number>`` (``whoandwhen/hand-crafted/12``), from the dataset's
  folders (``Hand-Crafted/12.json``) or, for a file outside them, from what the record
  carries (Algorithm-Generated runs keep the generated experts' ``system_prompt``). The
  question id stays in ``metadata["question_id"]``; ``system`` names the system that made
  the subset's runs, as the dataset card says (Magentic-One, CaptainAgent).
* **Text that cannot be encoded.** JSON may escape half of a surrogate pair (``"\\ud800"``);
  Python reads it, but no UTF-8 writer (results file, HTTP request) can write it, so each
  lone surrogate becomes U+FFFD.

>>> subset_of("Who&When/Hand-Crafted/12.json", {}), subset_of("x.json", {"system_prompt": {}})
('hand-crafted', 'algorithm-generated')
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath
from typing import Any

from mast.traces.model import Trace

__all__ = ["WHOANDWHEN_SYSTEMS", "scrub_surrogates", "subset_of", "whoandwhen_identity"]

WHOANDWHEN_SYSTEMS = {"hand-crafted": "Magentic-One", "algorithm-generated": "CaptainAgent"}
"""The system that made each Who&When subset's runs (from the dataset card)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def subset_of(path: str | PurePath, record: dict[str, Any]) -> str | None:
    """``"hand-crafted"``, ``"algorithm-generated"`` or None, from the path, else the record."""
    parts = [p.lower().replace("_", "-") for p in PurePath(path).parts]
    for part in reversed(parts[:-1]):
        if part in WHOANDWHEN_SYSTEMS:
            return part
    for name in WHOANDWHEN_SYSTEMS:  # a copied file named after its subset
        if parts and parts[-1].startswith(name):
            return name
    if "system_prompt" in record or "is_correct" in record:
        return "algorithm-generated"
    if "is_corrected" in record:
        return "hand-crafted"
    return None


def whoandwhen_identity(trace: Trace, path: Path, location: str | None) -> None:
    """Give a Who&When run its unique id, ``question_id`` and ``system`` (in place)."""
    question = trace.metadata.get("question_ID")
    if question is not None:
        trace.metadata["question_id"] = str(question)
    subset = subset_of(path, trace.metadata)
    stem = path.name.split(".")[0]
    number = re.search(r"(\d+)$", stem)
    run = number.group(1) if number else stem
    if location is not None:
        run = f"{stem}:{location.split()[-1]}"  # one of many runs in a JSON Lines file
    trace.id = f"whoandwhen/{subset}/{run}" if subset else f"whoandwhen/{run}"
    if subset is not None:
        trace.metadata["subset"] = subset
        trace.system = trace.system or WHOANDWHEN_SYSTEMS[subset]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _encodable(value: Any) -> bool:
    if isinstance(value, str):
        if value.isascii():
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodable(v) for v in value)
    return True


def scrub_surrogates(trace: Trace) -> Trace:
    """The trace with every lone surrogate replaced by U+FFFD (the same trace when none)."""
    # One encode of all step text (C speed) instead of one per string: loading stays fast.
    parts = [trace.task or "", trace.system or ""]
    for step in trace.steps:
        parts += (step.content, step.agent or "")
    if (
        _encodable("".join(parts))
        and _encodable(trace.metadata)
        and all(not s.metadata or _encodable(s.metadata) for s in trace.steps)
    ):
        return trace
    return Trace.model_validate(_clean(trace.model_dump(mode="json")))
