"""The few-shot leak filter: an example whose text occurs in the trace being judged is not shown."""

from __future__ import annotations

from mast.judge.fewshot import FewShotExample
from mast.traces.model import Trace


def _normalized_text(trace: Trace) -> str:
    return " ".join(" ".join([trace.task or "", *(s.content for s in trace.steps)]).split())


# An example step this long that occurs verbatim in a trace marks the example as an excerpt.
_EXCERPT_PROBE = 120


def _is_excerpt_of(example: FewShotExample, haystack: str) -> bool:
    for step in example.steps:
        text = " ".join(step.content.split())
        if len(text) >= 40:
            middle = max(0, (len(text) - _EXCERPT_PROBE) // 2)
            if text[middle : middle + _EXCERPT_PROBE] in haystack:
                return True
    return False
