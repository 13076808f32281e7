"""Sampling strategies: sizes, seeds, balance, and inclusion probabilities that are exact."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from mast.label.sampling import Candidate, disagreement, sample


def _pool() -> list[Candidate]:
    out = []
    for i in range(40):
        system = "big" if i < 30 else "small"
        outcome = "failure" if i % 2 else "success"
        out.append(Candidate(f"t{i:02d}", system=system, outcome=outcome))
    return out


def test_random_is_seeded_and_weights_are_n_over_N() -> None:
    a = sample(_pool(), 10, strategy="random", seed=3)
    b = sample(_pool(), 10, strategy="random", seed=3)
    c = sample(_pool(), 10, strategy="random", seed=4)
    assert [x.trace_id for x in a] == [x.trace_id for x in b] != [x.trace_id for x in c]
    assert len({x.trace_id for x in a}) == 10
    assert {x.pi for x in a} == {0.25} and {x.weight for x in a} == {4.0}


def test_sample_larger_than_pool_takes_everything_with_weight_one() -> None:
    chosen = sample(_pool()[:5], 50, strategy="random")
    assert len(chosen) == 5 and {x.weight for x in chosen} == {1.0}


def test_stratified_balances_system_and_outcome() -> None:
    chosen = sample(_pool(), 8, strategy="stratified", seed=0)
    # four strata (big/small x success/failure): two each although "big" is 3x larger
    assert Counter((c.system, c.outcome) for c in chosen) == {
        ("big", "failure"): 2,
        ("big", "success"): 2,
        ("small", "failure"): 2,
        ("small", "success"): 2,
    }
    # weight = N_h / n_h: 15 big traces of each outcome, 5 small ones
    weights = {(c.system, c.outcome): c.weight for c in chosen}
    assert weights[("big", "failure")] == pytest.approx(15 / 2)


def test_stratified_fills_small_strata_then_gives_the_rest_to_big_ones() -> None:
    pool = [Candidate(f"a{i}", system="A") for i in range(20)] + [Candidate("b0", system="B")]
    chosen = sample(pool, 6, strategy="stratified", seed=1)
    assert Counter(c.system for c in chosen) == {"A": 5, "B": 1}
    assert {c.system: c.weight for c in chosen} == {"A": 4.0, "B": 1.0}


def test_stratified_prefers_traces_that_add_rare_judge_cells() -> None:
    judged = [Candidate(f"n{i}", judges=[{"1.1": False}]) for i in range(10)]
    judged.append(Candidate("pos", judges=[{"1.1": True}]))
    chosen = sample(judged, 2, strategy="stratified", seed=0)
    assert "pos" in {c.trace_id for c in chosen}  # the only positive cell is never missed


def test_disagreement_counts_modes_answered_both_ways() -> None:
    assert disagreement([{"1.1": True, "1.2": None}, {"1.1": True, "1.2": False}]) == 0
    assert disagreement([{"1.1": True, "1.2": True}, {"1.1": False, "1.2": False}]) == 2


def test_disagreement_needs_several_judgments() -> None:
    with pytest.raises(ValueError, match="several judgments"):
        sample(_pool(), 3, strategy="disagreement")


def _disputed_pool() -> list[Candidate]:
    out = []
    for i in range(12):
        disputed = {"1.1": True, "1.2": True, "1.3": True} if i < 3 else {}
        other = {code: False for code in disputed}
        out.append(Candidate(f"d{i}", judges=[disputed or {"1.1": False}, other or {"1.1": False}]))
    return out


def test_disagreement_inclusion_probabilities_are_proportional_to_size_and_sum_to_n() -> None:
    chosen = sample(_disputed_pool(), 4, strategy="disagreement", seed=0)
    assert len(chosen) == 4
    # sizes: 3 traces of 1 + 3 = 4, 9 traces of 1 -> total 21; pi = 4 * size / 21
    by_id = {c.trace_id: c for c in chosen}
    for c in by_id.values():
        expected = 4 * (4 if c.disputed == 3 else 1) / 21
        assert c.pi == pytest.approx(expected)


def test_disagreement_selection_frequencies_match_pi() -> None:
    """Over many seeds each trace is drawn about pi of the time (the design is what it says)."""
    pool = _disputed_pool()
    counts: Counter[str] = Counter()
    runs = 3000
    for seed in range(runs):
        counts.update(c.trace_id for c in sample(pool, 4, strategy="disagreement", seed=seed))
    assert counts["d0"] / runs == pytest.approx(16 / 21, abs=0.03)
    assert counts["d5"] / runs == pytest.approx(4 / 21, abs=0.03)
    assert sum(counts.values()) == 4 * runs


def test_disagreement_caps_certain_traces_at_pi_one() -> None:
    pool = [Candidate(f"c{i}", judges=[{}, {}]) for i in range(5)]
    pool.insert(
        0,
        Candidate(
            "hot",
            judges=[
                {f"1.{i}": True for i in range(1, 10)},
                {f"1.{i}": False for i in range(1, 10)},
            ],
        ),
    )
    chosen = sample(pool, 3, strategy="disagreement", seed=2)
    hot = [c for c in chosen if c.trace_id == "hot"]
    assert hot and hot[0].pi == 1.0
    rest = [c.pi for c in chosen if c.trace_id != "hot"]
    assert all(p == pytest.approx(2 / 5) for p in rest)


@pytest.mark.parametrize("strategy", ["random", "stratified", "disagreement"])
def test_no_duplicates_and_exact_size(strategy: str) -> None:
    pool = _disputed_pool()
    for n, seed in itertools.product([1, 5, 12], [0, 1, 2]):
        chosen = sample(pool, n, strategy=strategy, seed=seed)  # type: ignore[arg-type]
        ids = [c.trace_id for c in chosen]
        assert len(ids) == len(set(ids)) == n
