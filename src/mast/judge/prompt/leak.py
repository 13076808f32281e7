"""The few-shot leak filter: an example cut from the trace being judged is not shown.

Showing the judge a worked answer for the very trace it judges would inflate agreement, so an
example whose own content occurs in the trace is left out. Text that many runs of a framework
share (system prompts, role prompts, tool schemas, fixed tool or terminal replies) says
nothing about which run an example came from, so it is not evidence of a leak:

- lines that occur in examples from two or more different runs count as shared, and so do the
  lines listed in ``fewshot/shared_text.txt``: excerpt lines found in two or more runs of the
  excerpt's corpus (written by ``scripts/fewshot_sources.py`` from the datasets);
- an example leaks only when its task, or lines of its own from at least two different steps
  (one, for a one-step example), occur in the trace. A framework prompt is one step, so an
  example never leaks by sharing it;
- an example with some, but too few, of its own lines in the trace is kept, and
  :func:`partial` names it ("may come from this trace").

>>> from mast.traces.model import Step, Trace
>>> from mast.judge.prompt.excerpts import load_pool
>>> pool = load_pool()
>>> trace = Trace(id="t", steps=[Step.make(0, "unrelated text " * 10)])
>>> leaked(pool, trace)
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from mast._resources import data_dir
from mast.traces.model import Trace

__all__ = [
    "TraceText",
    "leaked",
    "normalized_text",
    "partial",
    "read_shared_text",
    "shared_text",
]

# Lines shorter than this (after collapsing whitespace) are too common to identify a run.
MIN_PROBE_CHARS = 40
SHARED_TEXT_FILE = "shared_text.txt"


class _StepLike(Protocol):
    @property
    def content(self) -> str: ...


class _ExampleLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def source(self) -> object: ...
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


@lru_cache(maxsize=1)
def shared_text() -> frozenset[str]:
    """The bundled list of excerpt lines that recur across runs of their corpus."""
    file = data_dir("fewshot") / SHARED_TEXT_FILE
    if not file.is_file():
        return frozenset()
    return read_shared_text(file.read_text(encoding="utf-8"))


def read_shared_text(text: str) -> frozenset[str]:
    """The lines of a shared-text file: a header of ``#`` comment lines, a blank line, then
    one line per entry. Entries may start with ``#`` themselves (Markdown headings of
    framework prompts), so only the header is read as comments.

    >>> sorted(read_shared_text("# header\\n\\n## Plan for solving the task\\nA  line\\n"))
    ['## Plan for solving the task', 'A line']
    """
    lines = text.splitlines()
    if lines and lines[0].startswith("#") and "" in lines:
        lines = lines[lines.index("") + 1 :]  # the header ends at the first blank line
    else:  # no header block: comment lines are those that start with "# "
        lines = [x for x in lines if not x.startswith("# ")]
    return frozenset(_norm(x) for x in lines if x.strip())


# One example as the probes read it: (run, task, contents of its steps).
_Key = tuple[tuple[str, str, str, tuple[str, ...]], ...]
# Per example: its id, its task (normalized, when long enough to probe with) and, per step
# with own lines, those lines, each with its key word (see _key_word).
_Probes = tuple[tuple[str, str | None, tuple[tuple[tuple[str, str | None], ...], ...]], ...]


class TraceText:
    """A trace's text as the probes search it (:func:`normalized_text`), made once for
    both :func:`leaked` and :func:`partial`, with the set of its words."""

    def __init__(self, trace: Trace) -> None:
        self.text = normalized_text(trace)
        self._words: frozenset[str] | None = None

    def __contains__(self, line: str) -> bool:
        return line in self.text

    @property
    def words(self) -> frozenset[str]:
        """The words of the text (split at whitespace)."""
        if self._words is None:
            self._words = frozenset(self.text.split())
        return self._words

    def holds(self, line: str, key: str | None) -> bool:
        """``line in self.text``, ruled out first by its key word when that is no word of
        the text (a set lookup instead of a scan of the whole text)."""
        if key is not None and key not in self.words:
            return False
        return line in self.text


def _key_word(line: str) -> str | None:
    """The longest inner word of ``line`` (not its first or last: those may be parts of
    longer words where the line occurs), or None for a line of two words or fewer.

    Both texts have their whitespace collapsed, so where ``line`` occurs in a text, each
    inner word of it is a whole word of that text: a line whose key word the text lacks
    does not occur in it."""
    words = line.split()
    return max(words[1:-1], key=len) if len(words) > 2 else None


def _key(examples: Sequence[_ExampleLike]) -> _Key:
    return tuple(
        (ex.id, str(getattr(ex, "run", ex.source)), ex.task or "",
         tuple(step.content for step in ex.steps))
        for ex in examples
    )  # fmt: skip


@dataclass(frozen=True)
class _ProbeSet:
    examples: _Probes
    # Every probe line with a key word, by that word, and those without one, each as
    # (example index, step index, line): a trace is searched only for the lines whose key
    # word it has (one set intersection), not for every line of every example.
    by_key: Mapping[str, tuple[tuple[int, int, str], ...]]
    keyless: tuple[tuple[int, int, str], ...]


@lru_cache(maxsize=16)
def _probe_set(key: _Key, corpus_shared: frozenset[str]) -> _ProbeSet:
    examples = _probes(key, corpus_shared)
    by_key: dict[str, list[tuple[int, int, str]]] = {}
    keyless: list[tuple[int, int, str]] = []
    for ex_i, (_id, _task, steps) in enumerate(examples):
        for step_i, own in enumerate(steps):
            for line, word in own:
                place = (ex_i, step_i, line)
                if word is None:
                    keyless.append(place)
                else:
                    by_key.setdefault(word, []).append(place)
    return _ProbeSet(examples, {k: tuple(v) for k, v in by_key.items()}, tuple(keyless))


@lru_cache(maxsize=16)
def _probes(key: _Key, corpus_shared: frozenset[str]) -> _Probes:
    # The probes depend on the examples only: built once per pool, not once per trace (by
    # content, so an example changed in place is read anew).
    sources: dict[str, set[str]] = {}
    for _id, run, _task, contents in key:
        for content in contents:
            for line in _lines(content):
                sources.setdefault(line, set()).add(run)
    shared = {line for line, where in sources.items() if len(where) > 1} | corpus_shared
    out = []
    for ex_id, _run, ex_task, contents in key:
        task = _norm(ex_task)
        steps = []
        for content in contents:
            own = tuple((line, _key_word(line)) for line in _lines(content) if line not in shared)
            if own:
                steps.append(own)
        out.append((ex_id, task if len(task) >= MIN_PROBE_CHARS else None, tuple(steps)))
    return tuple(out)


def _overlap(
    examples: Sequence[_ExampleLike], trace: Trace | TraceText
) -> dict[str, tuple[int, int]]:
    """Per example: (steps with own lines in the trace, steps needed); task hits count as all."""
    haystack = trace if isinstance(trace, TraceText) else TraceText(trace)
    probes = _probe_set(_key(examples), shared_text())
    found: set[tuple[int, int]] = set()  # (example, step) with an own line in the trace
    candidates = [p for word in probes.by_key.keys() & haystack.words for p in probes.by_key[word]]
    for ex_i, step_i, line in [*candidates, *probes.keyless]:
        if (ex_i, step_i) not in found and line in haystack.text:
            found.add((ex_i, step_i))
    out: dict[str, tuple[int, int]] = {}
    for ex_i, (ex_id, task, steps) in enumerate(probes.examples):
        if task is not None and task in haystack:
            out[ex_id] = (1, 1)
            continue
        hits = sum(1 for step_i in range(len(steps)) if (ex_i, step_i) in found)
        out[ex_id] = (hits, min(2, len(steps)))
    return out


def leaked(examples: Sequence[_ExampleLike], trace: Trace | TraceText) -> list[str]:
    """Ids of the ``examples`` whose own content occurs in ``trace`` (see the module doc)."""
    return [i for i, (hits, need) in _overlap(examples, trace).items() if hits and hits >= need]


def partial(examples: Sequence[_ExampleLike], trace: Trace | TraceText) -> list[str]:
    """Ids of the ``examples`` with some of their own content in ``trace``, too little to drop."""
    return [i for i, (hits, need) in _overlap(examples, trace).items() if 0 < hits < need]
