"""Prevalence corrected for judge error: the Rogan–Gladen estimator and its interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mast
from mast import analysis
from mast.analysis.correction import rogan_gladen
from mast.errors import StatsInputError

pytestmark = pytest.mark.filterwarnings("ignore::mast.agree.stats.UndefinedMetricWarning")


def validation_report(tp: int, fn: int, tn: int, fp: int) -> mast.AgreementReport:
    """An agreement report of a judge against people with these 2x2 counts on mode 1.1."""
    ref: dict[str, dict[str, bool]] = {}
    judge: dict[str, dict[str, bool]] = {}
    cells = [(True, True)] * tp + [(True, False)] * fn + [(False, False)] * tn
    cells += [(False, True)] * fp
    for i, (human, judged) in enumerate(cells):
        ref[f"v{i}"] = {"1.1": human}
        judge[f"v{i}"] = {"1.1": judged}
    return mast.agreement(ref, judge, modes=["1.1"], bootstrap=0)


def sample(present: int, total: int) -> dict[str, dict[str, bool]]:
    return {f"s{i}": {"1.1": i < present} for i in range(total)}


def test_rogan_gladen_reproduces_the_published_epir_example() -> None:
    # epiR::epi.prev documentation: 150 cows tested, 23 positive, test sensitivity 0.96 and
    # specificity 0.89 -> "The estimated true prevalence of brucellosis in this herd is 5.1
    # cases per 100 cows".  (23/150 + 0.89 - 1) / (0.96 + 0.89 - 1) = 0.05098…
    assert round(100 * float(rogan_gladen(23 / 150, 0.96, 0.89)), 1) == 5.1
    # The same through prevalence(): a judge whose report has Se 96/100 and Sp 89/100.
    report = validation_report(tp=96, fn=4, tn=89, fp=11)
    prev = analysis.prevalence(sample(23, 150), modes=["1.1"], bootstrap=2000, correct_with=report)
    row = prev.table.iloc[0]
    assert row["sensitivity"] == pytest.approx(0.96) and row["specificity"] == pytest.approx(0.89)
    assert row["share_of_traces"] == pytest.approx(23 / 150)
    assert row["corrected"] == pytest.approx((23 / 150 - 0.11) / 0.85)
    assert round(100 * row["corrected"], 1) == 5.1
    assert row["corrected_low"] <= row["corrected"] <= row["corrected_high"]
    assert row["corrected_low"] == 0.0  # clipped at 0, as epiR's interval (0 to 13 per 100)


def test_the_interval_carries_the_uncertainty_of_the_validation_counts() -> None:
    small = validation_report(tp=24, fn=1, tn=22, fp=3)  # Se 0.96, Sp 0.88 on 50 cells
    large = validation_report(tp=960, fn=40, tn=880, fp=120)  # the same rates on 2,000
    data = sample(60, 200)
    narrow = analysis.prevalence(data, modes=["1.1"], bootstrap=2000, correct_with=large)
    wide = analysis.prevalence(data, modes=["1.1"], bootstrap=2000, correct_with=small)
    a, b = narrow.table.iloc[0], wide.table.iloc[0]
    assert a["corrected"] == pytest.approx(b["corrected"])
    assert (b["corrected_high"] - b["corrected_low"]) > 1.2 * (
        a["corrected_high"] - a["corrected_low"]
    )


def test_no_correction_for_a_judge_no_better_than_chance() -> None:
    report = validation_report(tp=5, fn=5, tn=5, fp=5)  # Se 0.5, Sp 0.5
    prev = analysis.prevalence(sample(3, 10), modes=["1.1"], bootstrap=100, correct_with=report)
    assert math.isnan(prev.table.iloc[0]["corrected"])
    assert any("no better than chance" in n for n in prev.notes)
    assert np.isnan(rogan_gladen([0.2], [0.4], [0.6])).all()
    assert float(rogan_gladen(0.01, 0.9, 0.9)) == 0.0  # below the false-positive floor: 0


def test_plain_prevalence_stays_the_default_and_category_level_is_refused() -> None:
    plain = analysis.prevalence(sample(3, 10), modes=["1.1"], bootstrap=0)
    assert "corrected" not in plain.table.columns
    with pytest.raises(StatsInputError, match="level='mode'"):
        analysis.prevalence(
            sample(3, 10),
            modes=["1.1"],
            level="category",
            bootstrap=0,
            correct_with=validation_report(1, 0, 1, 0),
        )
    with pytest.raises(StatsInputError, match="agreement report"):
        analysis.prevalence(sample(3, 10), modes=["1.1"], bootstrap=0, correct_with=object())
