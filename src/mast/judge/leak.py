"""The few-shot leak filter: an example cut from the trace being judged is not shown.

Showing the judge a worked answer for the very trace it judges would inflate agreement, so an
example whose own content occurs in the trace is left out. Text that many runs of a framework
share (system prompts, role prompts, tool schemas) says nothing about which run an example
came from, so it is not evidence of a leak:

- lines that occur in examples from two or more different runs count as shared;
- an example leaks only when its task, or lines of its own from at least two different steps
  (one, for a one-step example), occur in the trace. A framework prompt is one step, so an
  example never leaks by sharing it.

>>> from mast.traces.model import Step, Trace
>>> from mast.judge.excerpts import load_pool
>>> pool = load_pool()
>>> trace = Trace(id="t", steps=[Step.make(0, "unrelated text " * 10)])
>>> leaked(pool, trace)
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from mast.traces.model import Trace

__all__ = ["leaked", "normalized_text"]

# Lines shorter than this (after collapsing whitespace) are too common to identify a run.
MIN_PROBE_CHARS = 40


class _StepLike(Protocol):
    @property
    def content(self) -> str: ...


class _ExampleLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def task(self) -> str | None: ...
    @property
    def steps(self) -> Sequence[_StepLike]: ...


def _norm(text: str) -> str:
    return " ".join(text.split())


def normalized_text(trace: Trace) -> str:
    """The trace's task and step contents with whitespace collapsed (what probes search)."""
    return _norm(" ".join([trace.task or "", *(s.content for s in trace.steps)]))


def _lines(text: str) -> Iterable[str]:
    for line in text.split("\n"):
        line = _norm(line.replace("[…]", " "))
        if len(line) >= MIN_PROBE_CHARS:
            yield line


def _shared_lines(examples: Sequence[_ExampleLike]) -> set[str]:
    sources: dict[str, set[str]] = {}
    for ex in examples:
        for step in ex.steps:
            for line in _lines(step.content):
                sources.setdefault(line, set()).add(getattr(ex, "run", ex.source))
    return {line for line, where in sources.items() if len(where) > 1}


def leaked(examples: Sequence[_ExampleLike], trace: Trace) -> list[str]:
    """Ids of the ``examples`` whose own content occurs in ``trace`` (see the module doc)."""
    haystack = normalized_text(trace)
    shared = _shared_lines(examples)
    out = []
    for ex in examples:
        task = _norm(ex.task or "")
        if len(task) >= MIN_PROBE_CHARS and task in haystack:
            out.append(ex.id)
            continue
        own_steps = 0
        hits = 0
        for step in ex.steps:
            own = [line for line in _lines(step.content) if line not in shared]
            if not own:
                continue
            own_steps += 1
            if any(line in haystack for line in own):
                hits += 1
        if hits and hits >= min(2, own_steps):
            out.append(ex.id)
    return out
