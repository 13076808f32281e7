"""Split raw framework logs (MAD trajectories) into steps.

``segment(text, framework=...)`` picks a segmenter by framework name (the MAD record's
``mas_name``; case, spaces and hyphens do not matter) or by detecting the log's markers,
and falls back to one unsegmented ``log`` step, with the reason recorded and a
:class:`SegmentationWarning`, when no segmenter applies or one fails. Supported: AG2,
AppWorld, ChatDev, HyperAgent, Magentic-One, MetaGPT, OpenManus.

Every character of the log ends up in some step: text a segmenter strips from a step's
content (a timestamp prefix, a speaker line) is kept in ``step.metadata["header"]`` (and
``["footer"]``), so :func:`reassemble` gives the log back up to whitespace. Traces that are
serialized run records (AG2 and HyperAgent in MAD: JSON, Python ``repr`` or a YAML-like
dump; some MetaGPT runs: JSON with the log under ``content``) are unwrapped first: the
steps cover the ``trajectory``, the ``problem_statement`` (or ``prompt``) becomes
:attr:`Segmentation.task`, and the other fields (``note`` holds human labels, ``other_data``
the reference answer) are left out and named in ``metadata["excluded"]``.

Step ids (``s1``, ``s2``, …) and tool ``call_id`` values depend only on the input text, so
evidence that cites them stays valid across runs.

>>> import warnings
>>> with warnings.catch_warnings():  # a SegmentationWarning says why it was not split
...     warnings.simplefilter("ignore", SegmentationWarning)
...     seg = segment("plain text nobody can split")
>>> seg.segmented, len(seg.steps), seg.steps[0].kind.value
(False, 1, 'log')
>>> seg = segment("[2025-31-03 20:41:17 INFO] **[Preprocessing]**\\n\\n**task_prompt**: add 2+2\\n")
>>> seg.framework, seg.segmented, seg.task, seg.steps[0].kind.value
('ChatDev', True, 'add 2+2', 'system')
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any

from mast.traces import outcomes
from mast.traces.model import Step, StepKind
from mast.traces.segment._ag2 import from_messages
from mast.traces.segment._common import Parsed, reassemble, squash
from mast.traces.segment._container import Unwrapped, unwrap
from mast.traces.segment._registry import SEGMENTERS, canonical_framework, detect_log

__all__ = [
    "FRAMEWORKS",
    "Segmentation",
    "SegmentationWarning",
    "canonical_framework",
    "detect_framework",
    "reassemble",
    "segment",
    "squash",
    "unsegmented",
]

FRAMEWORKS: tuple[str, ...] = tuple(sorted(SEGMENTERS))
"""Framework names :func:`segment` has a segmenter for (its ``Segmentation.framework``)."""


class SegmentationWarning(UserWarning):
    """A log could not be split into steps and was kept as one unsegmented step."""


@dataclass(frozen=True)
class Segmentation:
    """The steps of one raw log and how they were obtained."""

    steps: list[Step]
    framework: str | None
    segmented: bool
    reason: str | None = None
    """Why the log was not segmented, or a note on how it was (e.g. a corrected framework)."""
    task: str | None = None
    """The task as the trace text states it (AG2/HyperAgent problem statement, AppWorld
    task banner, ChatDev task prompt, MetaGPT requirement, Magentic-One user turn)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Extras found on the way: container shape, excluded wrapper fields, instance id,
    AppWorld ``evaluation_success``, Magentic-One ``final_answer``."""
    outcome: outcomes.OutcomeReading = outcomes.UNKNOWN
    """The run's outcome where the text states it (an AG2 record's ``other_data.correct``,
    an AppWorld log's evaluation), read by :mod:`mast.traces.outcomes` as every loader
    reads it, with the field it came from."""


def unsegmented(
    text: str,
    reason: str,
    framework: str | None = None,
    *,
    task: str | None = None,
    outcome: outcomes.OutcomeReading = outcomes.UNKNOWN,
) -> Segmentation:
    """The fallback: the whole log as one ``log`` step, with why it was not split."""
    step = Step.make(0, text, kind=StepKind.LOG, metadata={"unsegmented": True})
    return Segmentation(
        steps=[step],
        framework=framework,
        segmented=False,
        reason=reason,
        task=task,
        outcome=outcome,
    )


def detect_framework(text: str) -> str | None:
    """The framework a raw trace comes from, judged by its format markers, or ``None``.

    >>> detect_framework("SCENARIO.PY STARTING !#!#\\n---------- user ----------\\nHi\\n")
    'Magentic-One'
    """
    found = unwrap(text)
    if found is not None and found.messages is not None:
        return "AG2" if any("name" in m for m in found.messages) else None
    return detect_log(found.log if found is not None and found.log is not None else text)


def segment(text: str, *, framework: str | None = None) -> Segmentation:
    """Split ``text`` into steps; see the module docstring.

    ``framework`` is a framework name such as a MAD ``mas_name``; when it is missing or not
    a known framework (MAD swaps ``mas_name`` and ``benchmark_name`` on two records, giving
    ``"GAIA"``) the framework is detected from the text. Never raises for bad input: a log
    it cannot split comes back whole, with a :class:`SegmentationWarning`.
    """
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    result = _segment_or_fail(text, framework)
    if isinstance(result, Segmentation):
        return result
    # Warn only here, outside every ``try``: with warnings turned into errors the warning
    # must reach the caller, not be taken for a segmenter failure.
    warnings.warn(f"trace kept unsegmented: {result.reason}", SegmentationWarning, stacklevel=2)
    return unsegmented(
        result.text, result.reason, result.framework, task=result.task, outcome=result.outcome
    )


@dataclass(frozen=True)
class _Failure:
    text: str
    reason: str
    framework: str | None
    task: str | None = None
    outcome: outcomes.OutcomeReading = outcomes.UNKNOWN


def _segment_or_fail(text: str, framework: str | None) -> Segmentation | _Failure:
    if not text.strip():
        return _Failure(text, "empty trace", framework)
    try:
        found = unwrap(text)
    except Exception as exc:  # a bug here must not lose the trace
        return _Failure(text, f"could not read the trace ({type(exc).__name__}: {exc})", framework)
    task = found.task if found is not None else None
    name = canonical_framework(framework)
    log = text if found is None else found.log
    try:
        return _segment(log, found, framework, name)
    except Exception as exc:  # a segmenter bug must never lose the trace
        why = f"{name or 'the'} segmenter failed ({type(exc).__name__}: {exc})"
        reading = found.outcome if found is not None else outcomes.UNKNOWN
        return _Failure(_payload(text, found), why, name or framework, task, reading)


def _payload(text: str, found: Unwrapped | None) -> str:
    """What a fallback may show: the trajectory, never a wrapper's labels or answers."""
    if found is None:
        return text
    if found.log is not None:
        return found.log
    return json.dumps(found.messages, ensure_ascii=False, indent=1, default=str)


def _segment(
    log: str | None, found: Unwrapped | None, given: str | None, name: str | None
) -> Segmentation | _Failure:
    notes: list[str] = []
    task = found.task if found is not None else None
    parsed: Parsed | None
    if found is not None and found.messages is not None:
        parsed = from_messages(found.messages)
        if name is None and any("name" in m for m in found.messages):
            name = "AG2"
    else:
        assert log is not None  # unwrap gives messages or a log
        if name is None:
            name = detect_log(log)
            if name is None:
                why = f"unknown framework {given!r} and " if given else ""
                return _Failure(log, why + "no known log format markers", given, task)
            if given:
                notes.append(f"{given!r} is not a known framework; detected {name} markers")
        parsed = SEGMENTERS[name](log)
        if parsed is None:
            detected = detect_log(log)
            if detected is not None and detected != name:
                notes.append(f"named {given!r} but the log has {detected} markers")
                name, parsed = detected, SEGMENTERS[detected](log)
        if parsed is None:
            return _Failure(log, f"no {name} log markers found", name, task)
    if not parsed.steps:
        why = f"the {name or 'message'} segmenter found no steps"
        return _Failure(log if log is not None else _payload("", found), why, name, task)
    metadata = dict(parsed.metadata)
    reading = found.outcome if found is not None else outcomes.UNKNOWN
    if reading.field is None and "evaluation_success" in metadata:
        reading = outcomes.appworld(metadata["evaluation_success"])
    if found is not None:
        metadata["container"] = found.shape
        metadata.update(found.fields)
        if found.excluded:
            metadata["excluded"] = list(found.excluded)
    return Segmentation(
        steps=parsed.steps,
        framework=name or given,
        segmented=True,
        reason="; ".join(notes) or None,
        task=task or parsed.task,
        metadata=metadata,
        outcome=reading,
    )
