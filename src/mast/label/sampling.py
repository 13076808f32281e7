"""Which traces to label: random, stratified and disagreement-driven samples, with weights.

Every strategy returns the chosen trace ids together with each one's *inclusion
probability* ``pi`` (the chance the design gave it to be drawn) and its weight ``1 / pi``.
Weighting each labelled trace by ``1 / pi`` (Horvitz–Thompson) turns prevalence measured on
the sample back into an estimate for all the traces the queue was drawn from:

* ``random``: a simple random sample; every trace has ``pi = n / N`` and the sample is
  representative as it is.
* ``stratified``: traces are grouped by (system, outcome) and the groups are given equal
  shares of the sample (as far as their size allows), so small systems are not drowned by big
  ones. Within a group, traces whose judge answers add cells that are still rare in the
  sample (a mode's positives, or its negatives) are preferred. ``pi = n_h / N_h`` for a trace
  of group ``h``; it corrects the mix of groups, not the preference within a group.
* ``disagreement``: traces where judges or repeated samples disagree are drawn with
  probability proportional to ``1 + (number of modes in dispute)`` (systematic sampling with
  probability proportional to size, so ``pi`` is known exactly). Such a sample is **not**
  representative: use the weights for any prevalence estimate.

>>> items = [Candidate(f"t{i}", system="A" if i < 6 else "B", outcome="failure")
...          for i in range(8)]
>>> chosen = sample(items, 4, strategy="stratified", seed=1)
>>> sorted(c.system for c in chosen), sorted({c.weight for c in chosen})
(['A', 'A', 'B', 'B'], [1.0, 3.0])
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["STRATEGIES", "Candidate", "Chosen", "Strategy", "disagreement", "sample"]

Strategy = Literal["random", "stratified", "disagreement"]
STRATEGIES: tuple[Strategy, ...] = ("random", "stratified", "disagreement")


@dataclass(frozen=True)
class Candidate:
    """A trace that may be drawn, with what the strategies look at."""

    trace_id: str
    system: str | None = None
    outcome: str = "unknown"
    judges: Sequence[Mapping[str, bool | None]] = field(default_factory=tuple)
    """The judge's vectors for this trace: one per judge or repeated sample."""


@dataclass(frozen=True)
class Chosen:
    """A drawn trace: its inclusion probability and weight (``1 / pi``)."""

    trace_id: str
    system: str | None
    outcome: str
    pi: float
    disputed: int = 0

    @property
    def weight(self) -> float:
        return 1.0 / self.pi


def disagreement(judges: Sequence[Mapping[str, bool | None]]) -> int:
    """Number of modes on which the given judge vectors answer both yes and no.

    >>> disagreement([{"1.1": True, "1.2": False}, {"1.1": False, "1.2": False}])
    1
    """
    codes = {code for vector in judges for code in vector}
    return sum(
        1
        for code in codes
        if {v.get(code) for v in judges} >= {True, False}  # both answers given
    )


def sample(
    candidates: Sequence[Candidate],
    n: int | None,
    *,
    strategy: Strategy = "random",
    seed: int = 0,
) -> list[Chosen]:
    """Draw ``n`` of ``candidates`` (all of them when ``n`` is None or not smaller)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    ids = [c.trace_id for c in candidates]
    if len(set(ids)) != len(ids):
        dup = sorted(k for k, v in Counter(ids).items() if v > 1)[:5]
        raise ValueError(f"duplicate trace ids among the candidates: {', '.join(dup)}")
    if n is not None and n < 1:
        raise ValueError(f"the sample size must be at least 1; got {n}")
    rng = random.Random(seed)
    size = len(candidates) if n is None else min(n, len(candidates))
    if strategy == "disagreement":
        return _by_disagreement(candidates, size, rng)
    if size == len(candidates):
        return [_chosen(c, 1.0) for c in candidates]
    if strategy == "random":
        picked = rng.sample(list(candidates), size)
        return [_chosen(c, size / len(candidates)) for c in picked]
    return _stratified(candidates, size, rng)


def _chosen(c: Candidate, pi: float) -> Chosen:
    return Chosen(c.trace_id, c.system, c.outcome, pi, disagreement(c.judges))


def _stratified(candidates: Sequence[Candidate], size: int, rng: random.Random) -> list[Chosen]:
    strata: dict[tuple[str, str], list[Candidate]] = defaultdict(list)
    for c in candidates:
        strata[(c.system or "", c.outcome)].append(c)
    quota = _equal_allocation({k: len(v) for k, v in strata.items()}, size)
    positives: Counter[str] = Counter()
    negatives: Counter[str] = Counter()
    chosen: list[Chosen] = []
    for key in sorted(strata):
        pool = list(strata[key])
        rng.shuffle(pool)  # ties are broken at random, reproducibly
        for _ in range(quota[key]):
            best = max(pool, key=lambda c: _rarity(c, positives, negatives))
            pool.remove(best)
            for vector in best.judges:
                for code, value in vector.items():
                    if value is True:
                        positives[code] += 1
                    elif value is False:
                        negatives[code] += 1
            chosen.append(_chosen(best, quota[key] / len(strata[key])))
    return chosen


def _rarity(c: Candidate, positives: Counter[str], negatives: Counter[str]) -> float:
    """How much this trace's judge cells would add to the cells that are still rare."""
    score = 0.0
    for vector in c.judges:
        for code, value in vector.items():
            if value is True:
                score += 1.0 / (1 + positives[code])
            elif value is False:
                score += 1.0 / (1 + negatives[code])
    return score / max(1, len(c.judges))


def _equal_allocation(
    sizes: Mapping[tuple[str, str], int], total: int
) -> dict[tuple[str, str], int]:
    """Split ``total`` as evenly as the strata sizes allow (smallest strata filled first)."""
    quota = dict.fromkeys(sizes, 0)
    left = total
    open_keys = sorted(sizes, key=lambda k: (sizes[k], k))
    while left > 0 and open_keys:
        share = max(1, left // len(open_keys))
        for key in list(open_keys):
            take = min(share, sizes[key] - quota[key], left)
            quota[key] += take
            left -= take
            if quota[key] == sizes[key]:
                open_keys.remove(key)
            if left == 0:
                break
    return quota


def _by_disagreement(
    candidates: Sequence[Candidate], size: int, rng: random.Random
) -> list[Chosen]:
    if not any(len(c.judges) >= 2 for c in candidates):
        raise ValueError(
            "the disagreement strategy needs several judgments per trace: give --results "
            "with several judges (--models) or repeated samples (--samples)"
        )
    sizes = [1.0 + disagreement(c.judges) for c in candidates]
    pis = _inclusion(sizes, size)
    # Systematic PPS: random order, one random start in [0, 1), then points one apart along
    # the cumulative inclusion probabilities; a unit is drawn when a point falls in its
    # interval. As every pi <= 1 and they sum to ``size``, exactly ``size`` units are drawn.
    order = list(range(len(candidates)))
    rng.shuffle(order)
    point = rng.random()
    chosen: list[Chosen] = []
    cumulative = 0.0
    for i in order:
        lower, cumulative = cumulative, cumulative + pis[i]
        if len(chosen) < size and lower <= point < cumulative:
            chosen.append(_chosen(candidates[i], pis[i]))
            point += 1.0
    if len(chosen) < size:  # float rounding left the last point just past the end
        taken = {c.trace_id for c in chosen}
        rest = [i for i in reversed(order) if candidates[i].trace_id not in taken]
        chosen += [_chosen(candidates[i], pis[i]) for i in rest[: size - len(chosen)]]
    return chosen


def _inclusion(sizes: Sequence[float], n: int) -> list[float]:
    """Inclusion probabilities proportional to size, summing to ``n``, capped at 1."""
    pis = [0.0] * len(sizes)
    certain: set[int] = set()
    while True:
        rest = [i for i in range(len(sizes)) if i not in certain]
        total = sum(sizes[i] for i in rest)
        slots = n - len(certain)
        over = {i for i in rest if slots * sizes[i] / total >= 1.0}
        if not over:
            for i in rest:
                pis[i] = slots * sizes[i] / total
            for i in certain:
                pis[i] = 1.0
            return pis
        certain |= over
