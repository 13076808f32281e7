"""TRAIL's measures (location, joint location+category, category F1) against a hand count."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mast.agree.trail import trail_scores
from mast.traces.trail import load_trail

TRAIL = Path(__file__).resolve().parents[1] / "fixtures" / "trail"

# Labels of the fixture (tests/fixtures/trail/gaia_rows.jsonl):
#   aaa111: a3 Rate Limiting (2.3), a4 Language-only (1.1), a4 Goal Deviation (4.3)
#   bbb222: b2 Formatting Errors (1.8), b3 Resource Not Found (2.6)
PREDICTED = {
    "trail/aaa111": [{"location": "a3", "category": "Rate Limiting"}, ("a2", "1.1")],
    "trail/bbb222": [("b2", "Formatting Errors"), ("b3", "Service Errors")],
}


def test_measures_equal_the_hand_count() -> None:
    rep = trail_scores(PREDICTED, load_trail(TRAIL / "gaia_rows.jsonl"))
    # location: aaa111 names a3 of {a3, a4} = 1/2; bbb222 names both = 1; mean 3/4
    assert rep.location_accuracy == pytest.approx(0.75)
    # joint: aaa111 (a3, 2.3) of 3 labelled pairs = 1/3; bbb222 (b2, 1.8) of 2 = 1/2
    assert rep.joint_accuracy == pytest.approx((1 / 3 + 1 / 2) / 2)
    # categories per trace: F1 1 for 2.3, 1.1, 1.8; 0 for 4.3, 2.6 (missed) and 2.5 (wrong)
    # weighted by labelled traces (1 each, 2.5 has none): 3/5; macro over the 6 rows: 3/6
    assert rep.category_f1_weighted == pytest.approx(0.6)
    assert rep.category_f1_macro == pytest.approx(0.5)
    assert rep.per_category["2.5"] == {"support": 0, "predicted": 1, "both": 0, "f1": 0.0}
    assert "joint accuracy" in rep.to_text() and '"joint_accuracy"' in rep.to_json()


def test_weighted_f1_matches_scikit_learn() -> None:
    sklearn = pytest.importorskip("sklearn.metrics")
    codes = ["1.1", "1.8", "2.3", "2.5", "2.6", "4.3"]
    gold = [{"2.3", "1.1", "4.3"}, {"1.8", "2.6"}]
    pred = [{"2.3", "1.1"}, {"1.8", "2.5"}]
    y_true = [[c in g for c in codes] for g in gold]
    y_pred = [[c in p for c in codes] for p in pred]
    rep = trail_scores(PREDICTED, load_trail(TRAIL / "gaia_rows.jsonl"))
    want = sklearn.f1_score(y_true, y_pred, average="weighted", zero_division=0)
    assert rep.category_f1_weighted == pytest.approx(want)
    assert rep.category_f1_macro == pytest.approx(
        sklearn.f1_score(y_true, y_pred, average="macro", zero_division=0)
    )


def test_a_trace_without_prediction_counts_as_predicting_nothing() -> None:
    rep = trail_scores(
        {"trail/aaa111": [("a3", "2.3")], "other": []}, load_trail(TRAIL / "gaia_rows.jsonl")
    )
    assert rep.not_predicted == ["trail/bbb222"] and rep.unlabelled == ["other"]
    assert rep.location_accuracy == pytest.approx((1 / 2 + 0) / 2)
    assert not math.isnan(rep.category_f1_weighted)
