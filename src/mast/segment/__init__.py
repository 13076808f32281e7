"""Split raw framework logs (MAD trajectories) into steps.

``segment(text, framework=...)`` picks a segmenter by framework name (the MAD record's
``mas_name``) or by detecting the log's markers, and falls back to one unsegmented ``log``
step, with the reason recorded, when no segmenter applies or one fails.

>>> seg = segment("plain text nobody can split")
>>> seg.segmented, len(seg.steps), seg.steps[0].kind.value
(False, 1, 'log')
"""

from __future__ import annotations

from dataclasses import dataclass

from mast.trace import Step, StepKind


@dataclass(frozen=True)
class Segmentation:
    """The steps of one raw log and how they were obtained."""

    steps: list[Step]
    framework: str | None
    segmented: bool
    reason: str | None = None


def unsegmented(text: str, reason: str, framework: str | None = None) -> Segmentation:
    """The fallback: the whole log as one ``log`` step, with why it was not split."""
    step = Step.make(0, text, kind=StepKind.LOG, metadata={"unsegmented": True})
    return Segmentation(steps=[step], framework=framework, segmented=False, reason=reason)


def segment(text: str, *, framework: str | None = None) -> Segmentation:
    """Split ``text`` into steps; see the module docstring."""
    return unsegmented(text, "no segmenter for this log format yet", framework)
