"""mast.analysis against values computed by hand on small frames, and the interval helpers
against published values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import mast
from mast import analysis
from mast.agree.resample import resample_weights
from mast.analysis.proportions import newcombe, odds_ratio, wilson
from mast.errors import StatsInputError
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector, Outcome, Trace

MODES = ["1.1", "1.3", "2.6"]  # 1.1 and 1.3 are FC1, 2.6 is FC2

# The hand-computed frame used throughout (None = unknown):
#
#   id  system  outcome  1.1    1.3    2.6
#   t1  A       failure  True   True   False
#   t2  A       failure  True   False  True
#   t3  A       success  False  True   None
#   t4  B       failure  False  False  True
#   t5  B       success  None   True   False
#   t6  B       success  False  False  False
#   t7  B       failure  (annotation failed: status "error")
VECTORS = {
    "t1": {"1.1": True, "1.3": True, "2.6": False},
    "t2": {"1.1": True, "1.3": False, "2.6": True},
    "t3": {"1.1": False, "1.3": True, "2.6": None},
    "t4": {"1.1": False, "1.3": False, "2.6": True},
    "t5": {"1.1": None, "1.3": True, "2.6": False},
    "t6": {"1.1": False, "1.3": False, "2.6": False},
}
FIELDS = {
    "t1": {"system": "A", "outcome": "failure"},
    "t2": {"system": "A", "outcome": "failure"},
    "t3": {"system": "A", "outcome": "success"},
    "t4": {"system": "B", "outcome": "failure"},
    "t5": {"system": "B", "outcome": "success"},
    "t6": {"system": "B", "outcome": "success"},
    "t7": {"system": "B", "outcome": "failure"},
}


def _annotations() -> list[Annotation]:
    anns = [
        Annotation(trace_id=t, status="ok", taxonomy="MAST 1.0", vector=FailureVector(v))
        for t, v in VECTORS.items()
    ]
    anns.append(
        Annotation(
            trace_id="t7",
            status="error",
            error="timeout",
            taxonomy="MAST 1.0",
            vector=FailureVector({c: None for c in MODES}),
        )
    )
    return anns


def _results_frame() -> pd.DataFrame:
    """The same data in the layout of mast.to_frame (index trace_id, judge model column)."""
    frame: pd.DataFrame = mast.to_frame(_annotations())
    return frame


def _row(table: pd.DataFrame, **where: object) -> pd.Series:
    mask = np.ones(len(table), dtype=bool)
    for key, value in where.items():
        mask &= (table[key] == value).to_numpy()
    assert mask.sum() == 1, where
    row: pd.Series = table[mask].iloc[0]
    return row


# ------------------------------------------------------------------ interval helpers


@pytest.mark.parametrize(
    ("x1", "n1", "x2", "n2", "low", "high"),
    [
        # Newcombe (1998), Stat Med 17:873-890, table II, method 10 (hybrid score).
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (6, 7, 2, 7, 0.0582, 0.8062),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0000),
    ],
)
def test_newcombe_matches_published_intervals(
    x1: int, n1: int, x2: int, n2: int, low: float, high: float
) -> None:
    got = newcombe(x1, n1, x2, n2)
    assert got == pytest.approx((low, high), abs=1e-4)


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        # Newcombe (1998), Stat Med 17:857-872, table I, Wilson score interval (method 3).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_published_intervals(x: int, n: int, low: float, high: float) -> None:
    assert wilson(x, n) == pytest.approx((low, high), abs=1e-4)


def test_odds_ratio_woolf_by_hand() -> None:
    # [[10, 20], [30, 40]]: OR = 10*40 / (20*30) = 0.6667; SE(log OR) =
    # sqrt(1/10 + 1/20 + 1/30 + 1/40) = 0.45644; exp(log(0.6667) -/+ 1.95996 * 0.45644)
    # = exp(-1.30006), exp(0.48913) = 0.2725, 1.6309.  All cells >= 5: Woolf.
    r = odds_ratio(10, 20, 30, 40)
    assert r.method == "woolf" and not r.corrected
    assert r.estimate == pytest.approx(2 / 3)
    assert (r.low, r.high) == pytest.approx((0.2725, 1.6309), abs=1e-4)


def test_odds_ratio_haldane_anscombe_for_a_zero_cell() -> None:
    # [[0, 5], [5, 5]]: plain OR = 0.  Haldane-Anscombe: (0.5 * 5.5) / (5.5 * 5.5) = 0.0909;
    # Woolf on the corrected cells: SE = sqrt(1/0.5 + 3/5.5) = 1.59545.
    r = odds_ratio(0, 5, 5, 5, method="woolf")
    assert r.corrected
    assert r.estimate == pytest.approx(0.5 / 5.5)
    se = math.sqrt(1 / 0.5 + 3 / 5.5)
    assert r.low == pytest.approx(math.exp(math.log(0.5 / 5.5) - 1.959964 * se), rel=1e-5)


def test_odds_ratio_exact_matches_r_fisher_test() -> None:
    # Fisher's tea-tasting table [[3, 1], [1, 3]]; R's fisher.test gives p = 0.4857 and the
    # conditional 95% CI 0.2117329 - 621.9337505 (R's root finder stops earlier at the upper
    # end than scipy's, hence the looser tolerance there).
    r = odds_ratio(3, 1, 1, 3)
    assert r.method == "exact"
    assert r.p_value == pytest.approx(0.4857, abs=1e-4)
    assert r.low == pytest.approx(0.2117329, rel=1e-3)
    assert r.high == pytest.approx(621.9337505, rel=1e-2)
    assert r.estimate == 9.0  # the sample odds ratio (3*3)/(1*1)


def test_odds_ratio_undefined_without_a_margin() -> None:
    r = odds_ratio(0, 0, 3, 4)  # nobody has the mode: no odds ratio
    assert math.isnan(r.estimate) and math.isnan(r.low) and r.method == ""


# ------------------------------------------------------------------ adapter


def test_collect_counts_failed_records_and_reads_every_source_shape() -> None:
    expected = [[1, 1, 0], [1, 0, 1], [0, 1, -1], [0, 0, 1], [-1, 1, 0], [0, 0, 0]]
    sources = [
        (_annotations(), "error"),
        (_results_frame(), "error"),
        ({**VECTORS, "t7": None}, "no_vector"),
    ]
    for source, status in sources:
        data = analysis.collect(source, traces=FIELDS, modes=MODES)
        assert data.values.tolist() == expected
        assert data.ids == ["t1", "t2", "t3", "t4", "t5", "t6"]
        assert data.fields["system"].tolist() == ["A", "A", "A", "B", "B", "B"]
        assert data.excluded.failed == {status: ["t7"]}


def test_results_frame_judge_column_does_not_clash_with_the_traced_model() -> None:
    frame = _results_frame()
    assert "model" not in frame.columns
    frame["judge"] = "openai/gpt-4.1"
    traces = {t: {**f, "model": "kimi-k2"} for t, f in FIELDS.items()}
    data = analysis.collect(frame, traces=traces, modes=MODES)
    assert set(data.fields["judge"]) == {"openai/gpt-4.1"}
    assert set(data.fields["model"]) == {"kimi-k2"}


def test_frame_with_runs_keeps_one_row_per_run_and_trace() -> None:
    frame = _results_frame().reset_index()
    both = pd.concat([frame.assign(run="before"), frame.assign(run="after")])
    data = analysis.collect(both, traces=FIELDS, modes=MODES)
    assert len(data) == 12
    assert data.fields["run"].tolist() == ["before"] * 6 + ["after"] * 6
    assert data.excluded.failed == {"error": ["t7", "t7"]}


def test_traces_objects_give_fields_and_missing_ones_are_listed() -> None:
    traces = [
        Trace(id=t, system=f["system"], outcome=Outcome(f["outcome"]), metadata={"trial": 1})
        for t, f in FIELDS.items()
        if t != "t6"
    ]
    data = analysis.collect(VECTORS, traces=traces, modes=MODES)
    assert data.fields["outcome"].tolist()[:5] == [
        "failure",
        "failure",
        "success",
        "failure",
        "success",
    ]
    assert data.fields["trial"].tolist()[0] == 1
    assert data.excluded.no_fields == ["t6"]
    assert data.fields["system"].tolist()[5] is None


def test_traces_with_labels_are_a_source() -> None:
    human = [t for t in mast.traces.datasets.example_traces() if t.format == "mad-human"]
    data = analysis.collect(human, annotator="annotator_1")
    assert len(data) == 4 and data.fields["system"].tolist()[0] == "AG2"


def test_frame_gives_nullable_booleans() -> None:
    out = analysis.frame(VECTORS, traces=FIELDS, modes=MODES)
    assert str(out["1.1"].dtype) == "boolean"
    assert out["1.1"].isna().tolist() == [False, False, False, False, True, False]


def test_bad_inputs_raise_helpful_errors() -> None:
    with pytest.raises(StatsInputError, match="trace field 'model'"):
        analysis.prevalence(VECTORS, by="model", modes=MODES, bootstrap=0)
    with pytest.raises(StatsInputError, match="not codes"):
        analysis.prevalence(VECTORS, modes=["9.9"], bootstrap=0)
    with pytest.raises(StatsInputError, match="read_annotations"):
        analysis.prevalence("results.jsonl")
    with pytest.raises(StatsInputError, match="bootstrap"):
        analysis.prevalence(VECTORS, modes=MODES, bootstrap=-1)


# ------------------------------------------------------------------ prevalence


def test_prevalence_per_mode_by_hand() -> None:
    prev = analysis.prevalence(_annotations(), traces=FIELDS, modes=MODES, bootstrap=0)
    t = prev.table
    # 1.1: known in t1 t2 t3 t4 t6 (5), present in t1 t2 -> 2/5; t5 unknown.
    # 1.3: known in all 6, present in t1 t3 t5 -> 3/6.
    # 2.6: known in 5 (t3 unknown), present in t2 t4 -> 2/5.
    # Flags: 2 + 3 + 2 = 7 -> shares of flags 2/7, 3/7, 2/7.
    assert t["n_present"].tolist() == [2, 3, 2]
    assert t["n_known"].tolist() == [5, 6, 5]
    assert t["n_unknown"].tolist() == [1, 0, 1]
    assert t["share_of_traces"].tolist() == pytest.approx([0.4, 0.5, 0.4])
    assert t["share_of_flags"].tolist() == pytest.approx([2 / 7, 3 / 7, 2 / 7])
    assert t["total_flags"].tolist() == [7, 7, 7]
    assert prev.excluded.unknown_cells == {"1.1": 1, "1.3": 0, "2.6": 1}
    assert prev.excluded.failed == {"error": ["t7"]}  # a failed call is not a row of "no"


def test_prevalence_per_category_by_hand() -> None:
    cats = analysis.prevalence(VECTORS, level="category", modes=MODES, bootstrap=0).table
    # FC1 = 1.1 or 1.3: t1 t2 t3 yes; t4 no (both known False); t5 yes (1.3, despite 1.1
    # unknown); t6 no -> 4/6.  FC2 = 2.6: 2/5.  Flags: FC1 has 2 + 3 = 5 of 7, FC2 2 of 7.
    assert cats["row"].tolist() == ["FC1", "FC2"]
    assert cats["share_of_traces"].tolist() == pytest.approx([4 / 6, 2 / 5])
    assert cats["n_flags"].tolist() == [5, 2]
    assert cats["share_of_flags"].tolist() == pytest.approx([5 / 7, 2 / 7])
    assert sum(cats["share_of_flags"]) == pytest.approx(1.0)


def test_category_is_unknown_only_when_no_mode_is_present_and_some_are_unknown() -> None:
    v = {"a": {"1.1": None, "1.3": False}, "b": {"1.1": None, "1.3": True}}
    cats = analysis.prevalence(v, level="category", modes=["1.1", "1.3"], bootstrap=0).table
    assert cats["n_known"].tolist() == [1] and cats["n_present"].tolist() == [1]


def test_prevalence_grouped_by_hand() -> None:
    t = analysis.prevalence(VECTORS, traces=FIELDS, by="system", modes=MODES, bootstrap=0).table
    # A (t1 t2 t3): 1.1 2/3, 1.3 2/3, 2.6 1/2 (t3 unknown); flags 5 -> 1.1 is 2/5 of them.
    # B (t4 t5 t6): 1.1 0/2 (t5 unknown), 1.3 1/3, 2.6 1/3; flags 2.
    a11 = _row(t, system="A", row="1.1")
    assert a11["share_of_traces"] == pytest.approx(2 / 3)
    assert a11["share_of_flags"] == pytest.approx(2 / 5)
    assert _row(t, system="A", row="2.6")["share_of_traces"] == pytest.approx(0.5)
    b11 = _row(t, system="B", row="1.1")
    assert (b11["n_present"], b11["n_known"], b11["n_unknown"]) == (0, 2, 1)
    assert _row(t, system="B", row="1.3")["total_flags"] == 2
    assert list(t.columns[:2]) == ["system", "row"]


def test_missing_group_field_is_its_own_group() -> None:
    fields = {k: dict(v) for k, v in FIELDS.items()}
    fields["t6"]["system"] = None
    t = analysis.prevalence(VECTORS, traces=fields, by="system", modes=MODES, bootstrap=0).table
    assert set(t["system"]) == {"A", "B", "(none)"}
    assert _row(t, system="(none)", row="1.1")["n_traces"] == 1


def test_prevalence_bootstrap_is_the_percentile_bootstrap_over_traces() -> None:
    # Re-do the bootstrap naively with the same random draws and compare.
    seed, b = 7, 200
    prev = analysis.prevalence(VECTORS, modes=MODES, bootstrap=b, seed=seed)
    values = analysis.collect(VECTORS, modes=MODES).values
    draws = np.random.default_rng(seed).integers(0, 6, size=(b, 6))
    ratios = []
    for idx in draws:
        v = values[idx]
        ratios.append([(v[:, j] == 1).sum() / (v[:, j] >= 0).sum() for j in range(3)])
    naive = np.quantile(np.array(ratios), [0.025, 0.975], axis=0)
    assert prev.table["traces_low"].tolist() == pytest.approx(naive[0].tolist())
    assert prev.table["traces_high"].tolist() == pytest.approx(naive[1].tolist())
    again = analysis.prevalence(VECTORS, modes=MODES, bootstrap=b, seed=seed)
    pd.testing.assert_frame_equal(prev.table, again.table)
    assert (prev.table["traces_low"] <= prev.table["share_of_traces"]).all()
    assert (prev.table["share_of_traces"] <= prev.table["traces_high"]).all()


def test_resample_weights_are_counts_of_the_draws() -> None:
    w = resample_weights(6, 3, np.random.default_rng(1))
    draws = np.random.default_rng(1).integers(0, 6, size=(3, 6))
    assert w.tolist() == [np.bincount(d, minlength=6).tolist() for d in draws]


def test_prevalence_wilson_interval() -> None:
    prev = analysis.prevalence(VECTORS, modes=MODES, ci="wilson")
    assert (prev.table.at[0, "traces_low"], prev.table.at[0, "traces_high"]) == pytest.approx(
        wilson(2, 5)
    )


def test_unknown_never_counts_as_no() -> None:
    as_false = {t: {c: bool(x) for c, x in v.items()} for t, v in VECTORS.items()}
    unknown = analysis.prevalence(VECTORS, modes=MODES, bootstrap=0).table
    falsified = analysis.prevalence(as_false, modes=MODES, bootstrap=0).table
    assert unknown.at[0, "share_of_traces"] == pytest.approx(2 / 5)
    assert falsified.at[0, "share_of_traces"] == pytest.approx(2 / 6)


# ------------------------------------------------------------------ modes per trace


def test_modes_per_trace_by_hand() -> None:
    r = analysis.modes_per_trace(_annotations(), traces=FIELDS, modes=MODES, bootstrap=0)
    # Counts: t1 2, t2 2, t3 1, t4 1, t5 1, t6 0 -> mean 7/6.  Failed t1 t2 t4: 5/3;
    # successful t3 t5 t6: 2/3.  t3 and t5 have an unknown cell (their count is a floor).
    row = r.table.iloc[0]
    assert row["mean"] == pytest.approx(7 / 6)
    assert row["mean_failed"] == pytest.approx(5 / 3)
    assert row["mean_success"] == pytest.approx(2 / 3)
    assert (row["n_failed"], row["n_success"], row["n_with_unknown"]) == (3, 3, 2)
    assert row["max"] == 2 and row["median"] == 1.0
    assert r.per_trace["n_modes"].tolist() == [2, 2, 1, 1, 1, 0]
    assert r.excluded.failed == {"error": ["t7"]}


def test_modes_per_trace_grouped_and_complete_only() -> None:
    r = analysis.modes_per_trace(VECTORS, traces=FIELDS, by="system", modes=MODES, bootstrap=0)
    # A: (2 + 2 + 1) / 3; B: (1 + 1 + 0) / 3.
    assert r.table["mean"].tolist() == pytest.approx([5 / 3, 2 / 3])
    complete = analysis.modes_per_trace(
        VECTORS, traces=FIELDS, modes=MODES, complete=True, bootstrap=0
    )
    # Without t3 and t5: (2 + 2 + 1 + 0) / 4.
    assert complete.table.at[0, "mean"] == pytest.approx(5 / 4)
    assert complete.excluded.left_out["incomplete vector (complete=True)"] == ["t3", "t5"]


def test_modes_per_trace_without_outcomes_says_so() -> None:
    r = analysis.modes_per_trace(VECTORS, modes=MODES, bootstrap=0)
    assert math.isnan(r.table.at[0, "mean_failed"])
    assert any("outcome" in note for note in r.notes)


# ------------------------------------------------------------------ co-occurrence


def test_cooccurrence_by_hand() -> None:
    co = analysis.cooccurrence(VECTORS, modes=MODES)
    # 1.1 & 1.3, both known in t1 t2 t3 t4 t6 (n = 5): 1.1 in 2, 1.3 in 2, both in 1 (t1).
    # phi = (5*1 - 2*2) / sqrt(2*3*2*3) = 1/6; P(1.3 | 1.1) = 1/2.
    assert co.phi.loc["1.1", "1.3"] == pytest.approx(1 / 6)
    assert co.conditional.loc["1.1", "1.3"] == pytest.approx(0.5)
    assert co.known.loc["1.1", "1.3"] == 5
    # 1.1 & 2.6, both known in t1 t2 t4 t6 (n = 4): 2, 2, both 1 (t2): phi = (4 - 4) / 4 = 0.
    assert co.phi.loc["1.1", "2.6"] == pytest.approx(0.0)
    # 1.3 & 2.6, both known in t1 t2 t4 t5 t6 (n = 5): 2, 2, never together:
    # phi = (0 - 4) / 6 = -2/3; P(2.6 | 1.3) = 0.
    assert co.phi.loc["1.3", "2.6"] == pytest.approx(-2 / 3)
    assert co.conditional.loc["1.3", "2.6"] == 0.0
    assert (co.phi.to_numpy() == co.phi.to_numpy().T).all()
    assert co.table["phi"].tolist() == pytest.approx([1 / 6, 0.0, -2 / 3])  # by phi


def test_phi_equals_pearson_on_the_pairwise_complete_traces() -> None:
    co = analysis.cooccurrence(VECTORS, modes=MODES)
    values = analysis.collect(VECTORS, modes=MODES).values
    both = (values[:, 1] >= 0) & (values[:, 2] >= 0)
    pearson = np.corrcoef(values[both, 1], values[both, 2])[0, 1]
    assert co.phi.loc["1.3", "2.6"] == pytest.approx(pearson)


def test_phi_is_nan_for_a_mode_never_flagged() -> None:
    v = {"a": {"1.1": False, "1.3": True}, "b": {"1.1": False, "1.3": False}}
    co = analysis.cooccurrence(v, modes=["1.1", "1.3"])
    assert math.isnan(co.phi.loc["1.1", "1.3"]) and math.isnan(co.conditional.loc["1.1", "1.3"])


# ------------------------------------------------------------------ outcomes


def test_outcome_analysis_by_hand() -> None:
    r = analysis.outcome_analysis(
        _annotations(), traces=FIELDS, modes=MODES, bootstrap=0, min_known=0.0
    )
    t = r.table.set_index("row")
    # 1.1 (known in t1 t2 t3 t4 t6): present & failed 2 (t1 t2), present & succeeded 0,
    # absent & failed 1 (t4), absent & succeeded 2 (t3 t6).  Rates 2/3 vs 0/2.
    # lift = P(fail | 1.1) / P(fail) = (2/2) / (3/5) = 5/3.
    # OR has a zero cell: Haldane-Anscombe (2.5 * 2.5) / (0.5 * 1.5) = 8.333, exact CI.
    # Fisher: P(a) = C(3,a) C(2,2-a) / C(5,2) = .1, .6, .3 for a = 0, 1, 2; observed a = 2
    # -> p = .1 + .3 = 0.4.
    one = t.loc["1.1"]
    assert (one["present_failure"], one["n_failure"]) == (2, 3)
    assert (one["present_success"], one["n_success"]) == (0, 2)
    assert one["lift"] == pytest.approx(5 / 3)
    assert one["odds_ratio"] == pytest.approx(6.25 / 0.75)
    assert bool(one["corrected"]) and one["or_ci"] == "exact"
    assert one["p_value"] == pytest.approx(0.4)
    assert (one["diff_low"], one["diff_high"]) == pytest.approx(newcombe(2, 3, 0, 2))
    assert math.isinf(one["or_high"])
    # 1.3 (known everywhere): a = 1 (t1), b = 2 (t3 t5), c = 2 (t2 t4), d = 1 (t6).
    # OR = 1*1 / (2*2) = 0.25; lift = (1/3) / (3/6) = 2/3; Fisher p = 1 (symmetric table).
    # Present in 2 of 3 successful runs: "common in successes", not a failure predictor.
    three = t.loc["1.3"]
    assert three["odds_ratio"] == pytest.approx(0.25) and not bool(three["corrected"])
    assert three["lift"] == pytest.approx(2 / 3)
    assert three["p_value"] == pytest.approx(1.0)
    assert three["association"] == "common in successes"
    assert t.loc["2.6", "n_unknown"] == 1  # t3
    assert r.excluded.failed == {"error": ["t7"]}


def test_outcome_analysis_leaves_unknown_outcomes_out_and_counts_them() -> None:
    fields = {k: dict(v) for k, v in FIELDS.items()}
    fields["t6"]["outcome"] = "unknown"
    fields["t5"]["outcome"] = "timeout"
    r = analysis.outcome_analysis(VECTORS, traces=fields, modes=MODES, bootstrap=0)
    assert r.excluded.left_out["outcome unknown"] == ["t6"]
    assert r.excluded.left_out["outcome 'timeout' is neither 'success' nor 'failure'"] == ["t5"]
    assert r.table["n_failure"].iloc[1] + r.table["n_success"].iloc[1] == 4


def test_boolean_outcome_column_reads_true_as_success() -> None:
    frame = _results_frame()
    frame["task_completed"] = [False, False, True, False, True, True, None]
    frame["task_completed"] = frame["task_completed"].astype("boolean")
    a = analysis.outcome_analysis(frame, outcome="task_completed", modes=MODES, bootstrap=0)
    b = analysis.outcome_analysis(VECTORS, traces=FIELDS, modes=MODES, bootstrap=0)
    pd.testing.assert_frame_equal(a.table, b.table)


def _planted() -> tuple[dict[str, dict[str, bool]], dict[str, dict[str, str]]]:
    """40 runs: 3.3 in 15/20 failures and 2/20 successes (predicts failure); 1.3 in 18/20
    of both (common everywhere); 2.6 in 6/20 failures and 5/20 successes (noise)."""
    vectors, fields = {}, {}
    for i in range(40):
        failed = i < 20
        k = i if failed else i - 20
        vectors[f"r{i}"] = {
            "3.3": k < (15 if failed else 2),
            "1.3": k < 18,
            "2.6": (k % 20) < (6 if failed else 5),
        }
        fields[f"r{i}"] = {"outcome": "failure" if failed else "success"}
    return vectors, fields


def test_outcome_analysis_separates_a_predictor_from_a_common_mode() -> None:
    vectors, fields = _planted()
    r = analysis.outcome_analysis(
        vectors, traces=fields, modes=["1.3", "2.6", "3.3"], bootstrap=20, seed=3
    )
    t = r.table.set_index("row")
    # 3.3: a = 15, b = 2, c = 5, d = 18 -> OR = 270 / 10 = 27, all cells... b < 5: exact CI.
    assert t.loc["3.3", "odds_ratio"] == pytest.approx(27.0)
    assert t.loc["3.3", "association"] == "predicts failure"
    assert t.loc["1.3", "association"] == "common in successes"
    reg = r.regression
    assert reg is not None
    coef = reg.set_index("row")["coef"]
    assert coef["3.3"] > 1.0 and abs(coef["1.3"]) < 0.5
    assert reg.set_index("row").loc["3.3", "sign_stability"] == 1.0
    assert r.regression_info["n"] == 40


def test_regression_is_sklearn_l2_logistic_with_unpenalized_intercept() -> None:
    # Minimize C * sum(log(1 + exp(-s_i (x_i w + b)))) + |w|^2 / 2 directly (s = +-1) and
    # compare: checks the penalty, C and that the intercept is not penalized.
    from scipy.optimize import minimize

    vectors, fields = _planted()
    C = 0.5
    r = analysis.outcome_analysis(
        vectors, traces=fields, modes=["1.3", "2.6", "3.3"], C=C, bootstrap=0
    )
    data = analysis.collect(vectors, modes=["1.3", "2.6", "3.3"])
    x = data.values.astype(float)
    s = np.array([1.0 if int(i[1:]) < 20 else -1.0 for i in data.ids])

    def loss(theta: np.ndarray) -> float:
        z = x @ theta[:3] + theta[3]
        return float(C * np.logaddexp(0, -s * z).sum() + 0.5 * theta[:3] @ theta[:3])

    best = minimize(loss, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    got = r.regression.set_index("row")["coef"] if r.regression is not None else None
    assert got is not None
    assert [got["1.3"], got["2.6"], got["3.3"]] == pytest.approx(best[:3].tolist(), abs=1e-3)
    assert r.regression_info["intercept"] == pytest.approx(best[3], abs=1e-3)


def test_regression_leaves_out_modes_unknown_in_many_traces() -> None:
    vectors, fields = _planted()
    for i in range(0, 40, 3):
        vectors[f"r{i}"]["2.6"] = None  # type: ignore[assignment]
    r = analysis.outcome_analysis(
        vectors, traces=fields, modes=["1.3", "2.6", "3.3"], bootstrap=0, min_known=0.9
    )
    assert "min_known" in r.regression_info["dropped_modes"]["2.6"]
    assert r.regression_info["n"] == 40


# ------------------------------------------------------------------ comparison


def test_compare_groups_by_hand() -> None:
    r = analysis.compare(_annotations(), traces=FIELDS, by="system", groups=("A", "B"), modes=MODES)
    t = r.table.set_index("row")
    # 1.1: A 2/3, B 0/2 (t5 unknown) -> -2/3, Newcombe interval of 0/2 - 2/3.
    assert t.loc["1.1", "difference"] == pytest.approx(-2 / 3)
    assert (t.loc["1.1", "diff_low"], t.loc["1.1", "diff_high"]) == pytest.approx(
        newcombe(0, 2, 2, 3)
    )
    assert (t.loc["1.1", "unknown_a"], t.loc["1.1", "unknown_b"]) == (0, 1)
    # 1.3: A 2/3, B 1/3: Fisher's p for [[1, 2], [2, 1]] is 1.
    assert t.loc["1.3", "difference"] == pytest.approx(-1 / 3)
    assert t.loc["1.3", "p_value"] == pytest.approx(1.0)
    # 2.6: A 1/2 (t3 unknown), B 1/3 -> -1/6; ratio 2/3.
    assert t.loc["2.6", "difference"] == pytest.approx(-1 / 6)
    assert t.loc["2.6", "ratio"] == pytest.approx(2 / 3)
    assert r.names == ("A", "B")
    assert r.excluded.failed == {"error": ["t7"]}
    assert r.excluded.unknown_cells == {"1.1": 1, "1.3": 0, "2.6": 1}


def test_compare_two_sources_and_bootstrap() -> None:
    before = {k: VECTORS[k] for k in ("t1", "t2", "t3")}
    after = {k: VECTORS[k] for k in ("t4", "t5", "t6")}
    r = analysis.compare(before, after, names=("before", "after"), modes=MODES)
    by_field = analysis.compare(VECTORS, traces=FIELDS, by="system", modes=MODES)
    pd.testing.assert_frame_equal(r.table, by_field.table)
    boot = analysis.compare(before, after, modes=MODES, ci="bootstrap", bootstrap=300, seed=1)
    assert (boot.table["diff_low"] <= boot.table["difference"]).all()
    assert (boot.table["ci_method"] == "bootstrap").all()


def test_compare_needs_two_groups() -> None:
    fields = {k: {"system": f"s{i % 3}"} for i, k in enumerate(VECTORS)}
    with pytest.raises(StatsInputError, match="groups="):
        analysis.compare(VECTORS, traces=fields, by="system", modes=MODES)
    r = analysis.compare(VECTORS, traces=fields, by="system", groups=("s0", "s1"), modes=MODES)
    assert r.excluded.left_out["system in neither group"] == ["t3", "t6"]


# ------------------------------------------------------------------ results and plots


def test_results_print_and_render_html_with_exclusions() -> None:
    prev = analysis.prevalence(_annotations(), modes=MODES, bootstrap=0)
    text = str(prev)
    assert "status 'error'" in text and "unknown (None)" in text
    html = prev._repr_html_()
    assert "<table" in html and "t7" in html


def test_plots_return_figures_without_pyplot() -> None:
    import sys

    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from mast import plots

    vectors, fields = _planted()
    figures = [
        analysis.prevalence(vectors, traces=fields, by="outcome", bootstrap=50).plot(),
        analysis.prevalence(vectors, traces=fields, by="outcome", level="category").plot(
            "share_of_flags"
        ),
        analysis.cooccurrence(vectors).plot(),
        analysis.cooccurrence(vectors).plot("conditional"),
        analysis.outcome_analysis(vectors, traces=fields, bootstrap=0).plot(),
        analysis.outcome_analysis(vectors, traces=fields, bootstrap=0).plot("lift"),
        analysis.modes_per_trace(vectors, traces=fields, bootstrap=50).plot(),
        analysis.compare(vectors, traces=fields, by="outcome").plot(),
    ]
    human = [t for t in mast.traces.datasets.example_traces() if t.format == "mad-human"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mast.agree.stats.UndefinedMetricWarning)
        rep = mast.agreement(
            human,
            human,
            reference_annotator="annotator_1",
            candidate_annotator="annotator_2",
            bootstrap=50,
        )
    figures.append(plots.agreement_forest(rep))
    assert all(isinstance(f, Figure) for f in figures)
    assert "matplotlib.pyplot" not in sys.modules  # nothing is ever shown
    buffer = __import__("io").BytesIO()
    figures[4].savefig(buffer, format="png")  # drawing works (the Agg canvas, no display)
    assert buffer.getvalue().startswith(b"\x89PNG")


def test_import_mast_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mast; print(sorted(m for m in ('pandas', 'matplotlib', 'sklearn', "
        "'scipy') if m in sys.modules)); mast.analysis; print('pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


@pytest.mark.parametrize(
    "module",
    ["mast.analysis", "mast.analysis.data", "mast.analysis.proportions", "mast.analysis.plots"],
)
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0


def test_plot_labels_from_traces_are_shown_literally() -> None:
    # A "$" in a system name must not be read as matplotlib mathtext (which would raise
    # while drawing, or typeset something else).
    pytest.importorskip("matplotlib")
    import io

    fields = {"t1": {"system": r"a$\frac$b"}, "t2": {"system": "$x^2$"}, "t3": {"system": "5$"}}
    v = {"t1": {"1.1": True}, "t2": {"1.1": False}, "t3": {"1.1": True}}
    fig = analysis.prevalence(v, traces=fields, by="system", modes=["1.1"], bootstrap=0).plot()
    fig.savefig(io.BytesIO(), format="png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert sorted(labels) == sorted([r"\$x^2\$", r"5\$", r"a\$\frac\$b"])
