"""What the judge shows as worked examples: the ``fewshot=`` setting, resolved per trace.

``fewshot`` accepts:

- ``None`` (default): the bundled excerpt pool, as many excerpts as it takes to give every
  mode a positive and a near miss;
- an ``int``: that many excerpts of the pool (``0`` = zero-shot);
- a path: a folder or file of whole-trace examples (or an excerpt pool file);
- a sequence of :class:`~mast.judge.prompt.fewshot.FewShotExample` or
  :class:`~mast.judge.prompt.excerpts.Excerpt`, used as given.

Per trace, examples cut from that very trace are left out (:mod:`mast.judge.prompt.leak`) and,
unless they were given explicitly, the selection is made again from the rest.

>>> shots = Shots.resolve(0)
>>> shots.chosen, shots.for_trace(__import__("mast").Trace(id="t")).chosen
([], [])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mast.errors import FewShotError
from mast.judge.prompt.excerpts import DATASETS, Excerpt, is_pool_file, load_pool, select_excerpts
from mast.judge.prompt.fewshot import (
    POSITIVE_RATE_RANGE,
    FewShotExample,
    load_examples,
    positive_rate,
    select_examples,
    unquoted_positives,
)
from mast.judge.prompt.leak import TraceText, leaked, partial
from mast.judge.prompt.render import shown_examples
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Trace

__all__ = ["FewShot", "Shot", "Shots"]

Shot = FewShotExample | Excerpt
FewShot = int | str | Path | Sequence[Shot] | None


@dataclass(frozen=True)
class Shots:
    """The pool of examples, the ones chosen, and notes on the choice."""

    pool: list[Shot]
    chosen: list[Shot]
    explicit: bool = False
    count: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """Ids of the chosen examples, in prompt order."""
        return [ex.id for ex in self.chosen]

    @classmethod
    def resolve(
        cls, fewshot: FewShot, taxonomy: Taxonomy | None = None, *, exclude: Sequence[str] = ()
    ) -> Shots:
        """Turn a ``fewshot=`` value into a pool and a choice (see the module docstring).

        ``exclude`` names datasets (``"whoandwhen"``, ``"ag2"``, ``"mad-full"``, ``"agentrx"``)
        whose excerpts are never shown, for example the one an evaluation is run on; an
        excerpt of a run two datasets hold (Who&When runs AgentRx ships too) leaves with either.
        """
        tax = taxonomy or load_taxonomy()
        notes: list[str] = []
        if isinstance(exclude, str):
            exclude = [exclude]
        unknown = sorted(set(exclude) - set(DATASETS))
        if unknown:
            raise ValueError(
                f"fewshot_exclude: unknown dataset(s) {unknown}; known: {list(DATASETS)}"
            )
        if isinstance(fewshot, bool):
            raise TypeError("fewshot must be a number, a path or a list of examples, not a bool")
        if isinstance(fewshot, (str, Path)):
            return cls._given(_without(_from_path(Path(fewshot), tax), exclude))
        if fewshot is not None and not isinstance(fewshot, int):
            return cls._given(_without(list(fewshot), exclude))
        if fewshot is not None and fewshot < 0:
            raise ValueError(f"fewshot must be >= 0, got {fewshot}")
        if fewshot == 0:
            return cls([], [], count=0)
        try:
            excerpts = load_pool(taxonomy=tax)
        except FewShotError:
            if tax == load_taxonomy():
                raise  # the bundled pool is broken: a bug to surface, not to hide
            # The bundled pool reads MAST's codes, not a custom taxonomy's.
            notes.append(
                f"the bundled few-shot excerpts do not fit taxonomy {tax.label}: zero-shot "
                "(pass fewshot=[...] or a path with examples for it)"
            )
            return cls([], [], count=0, notes=notes)
        # An excerpt leaves with every dataset that holds its run (Who&When runs AgentRx
        # ships too go with agentrx).
        bundled: list[Shot] = [ex for ex in excerpts if not set(ex.datasets) & set(exclude)]
        if exclude:
            notes.append(f"few-shot excerpts of {', '.join(sorted(exclude))} left out on request")
        if tax.verification not in (None, "paper"):
            # The bundled readings of 3.2/3.3 are written in the paper's meanings: in another
            # convention they are not shown (mast.judge.prompt.render), and an excerpt with
            # nothing else to show is not chosen.
            bundled = shown_examples(bundled, tax)
            notes.append(
                f"{tax.verification} convention of 3.2/3.3: the bundled excerpts' readings of "
                "3.2 and 3.3 (written in the paper's meanings) are left out of the prompt"
            )
        return cls(bundled, _select(bundled, fewshot), count=fewshot, notes=notes)

    @classmethod
    def _given(cls, pool: list[Shot]) -> Shots:
        """Examples given by the user: all shown, with notes on a skewed positive rate and on
        positives whose evidence has no quote."""
        whole = [ex for ex in pool if isinstance(ex, FewShotExample)]
        notes: list[str] = []
        rate = positive_rate(whole)
        low, high = POSITIVE_RATE_RANGE
        if whole and not math.isnan(rate) and not low <= rate <= high:
            notes.append(
                f"the whole-trace examples mark {rate:.0%} of their labels present; human "
                f"majority labels mark about 20%, so keep it within {low:.0%}-{high:.0%} "
                "to avoid skewing the judge"
            )
        notes += unquoted_positives(whole)
        return cls(pool, list(pool), explicit=True, notes=notes)

    def for_trace(self, trace: Trace) -> Shots:
        """The choice for ``trace``: without examples whose own content is in the trace.

        Examples with some own text in the trace, too little to tell, are kept with a note.
        """
        text = TraceText(trace)  # searched by both tests below
        # Over the whole pool, so that the gap is never filled with another excerpt of it.
        out = set(leaked(self.chosen if self.explicit else self.pool, text))
        shots = self
        if out & set(self.ids):
            if self.explicit:
                chosen = [ex for ex in self.chosen if ex.id not in out]
            else:
                chosen = _select([ex for ex in self.pool if ex.id not in out], self.count)
            gone = ", ".join(i for i in self.ids if i in out)
            note = f"few-shot example(s) {gone} left out: they are excerpts of this trace"
            shots = replace(self, chosen=chosen, notes=[*self.notes, note])
        maybe = partial(shots.chosen, text)
        if maybe:
            note = f"few-shot example(s) {', '.join(maybe)} kept: they may come from this trace"
            shots = replace(shots, notes=[*shots.notes, note])
        return shots


def _without(shots: list[Shot], exclude: Sequence[str]) -> list[Shot]:
    return [s for s in shots if not (isinstance(s, Excerpt) and set(s.datasets) & set(exclude))]


def _select(pool: Sequence[Shot], count: int | None) -> list[Shot]:
    excerpts = [ex for ex in pool if isinstance(ex, Excerpt)]
    whole = [ex for ex in pool if isinstance(ex, FewShotExample)]
    chosen: list[Shot] = list(select_excerpts(excerpts, count=count))
    if whole:
        left = None if count is None else max(0, count - len(chosen))
        chosen += select_examples(whole, count=left)
    return chosen


def _from_path(path: Path, tax: Taxonomy) -> list[Shot]:
    if path.is_file():
        if is_pool_file(path):
            return list(load_pool(path, taxonomy=tax))
        return list(load_examples(path, taxonomy=tax))
    if not path.is_dir():
        raise FewShotError(f"{path}: no such file or folder of few-shot examples")
    files = sorted(p for p in path.iterdir() if p.is_file())
    pools = [p for p in files if is_pool_file(p)]
    whole = [p for p in files if p.suffix.lower() in (".yaml", ".yml", ".json") and p not in pools]
    shots: list[Shot] = list(load_examples(path, taxonomy=tax)) if whole else []
    for pool in pools:
        shots += load_pool(pool, taxonomy=tax)
    if not shots:
        raise FewShotError(f"{path}: no few-shot example files (*.yaml, *.yml, *.json) here")
    return shots
