"""Tests of mast.agree.stats: published values, cross-checks, invariances, degenerate inputs.

Sources of the published values are given next to each test.  "irrCAC" refers to the output
printed in the README / overview vignette of Kilem Gwet's R package irrCAC (GitHub
kgwet/irrCAC; CRAN vignette "Calculating Chance-corrected Agreement Coefficients"), whose
example data come from Gwet (2014), *Handbook of Inter-Rater Reliability*, 4th ed.
"""

from __future__ import annotations

import doctest
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
)
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import mast.agree.metrics_base
import mast.agree.multirater
from mast.agree import stats
from mast.agree.stats import (
    ConfusionCounts,
    KappaEstimate,
    SpecificAgreement,
    UndefinedMetricWarning,
    accuracy,
    cohen_kappa,
    cohen_kappa_with_se,
    confusion_counts,
    f1,
    fleiss_kappa,
    fleiss_kappa_with_se,
    gwet_ac1,
    gwet_ac1_multi,
    krippendorff_alpha,
    pabak,
    percent_agreement,
    precision,
    recall,
    specific_agreement,
)

# ----------------------------------------------------------------------------- helpers


def pairs_from_table(table: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """Label vectors (y1 = row category, y2 = column category) realising a contingency table."""
    y1: list[int] = []
    y2: list[int] = []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            y1 += [i] * count
            y2 += [j] * count
    return y1, y2


def ratings_from_counts(counts: Sequence[Sequence[int]]) -> npt.NDArray[np.int64]:
    """items x raters labels realising an items x categories count table (equal row sums)."""
    return np.array([np.repeat(np.arange(len(row)), row) for row in counts])


def table_of(y1: npt.ArrayLike, y2: npt.ArrayLike, k: int) -> npt.NDArray[np.int64]:
    table = np.zeros((k, k), dtype=np.int64)
    np.add.at(table, (np.asarray(y1), np.asarray(y2)), 1)
    return table


# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", section C (nominal data,
# 4 observers x 12 units, missing values), transposed to items x raters.  Rows are units.
KRIPPENDORFF_2011: list[list[int | None]] = [
    # A     B     C     D
    [1, 1, None, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [None, 5, 5, 5],
    [None, None, 1, 1],
    [None, 3, None, None],
]

# Wikipedia "Fleiss' kappa", worked example: 10 subjects x 5 categories, 14 raters each
# (cell = number of raters who put the subject in the category).
WIKIPEDIA_FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# irrCAC dataset distrib.6raters (Gwet 2014): 15 patients x 5 diagnoses, 6 psychiatrists.
IRRCAC_DISTRIB_6RATERS = [
    [0, 0, 0, 6, 0],
    [0, 3, 0, 0, 3],
    [0, 1, 4, 0, 1],
    [0, 0, 0, 0, 6],
    [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0],
    [0, 0, 4, 0, 2],
    [2, 0, 3, 1, 0],
    [2, 0, 0, 4, 0],
    [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0],
    [1, 1, 0, 4, 0],
    [0, 3, 3, 0, 0],
    [1, 0, 0, 5, 0],
    [0, 2, 0, 3, 1],
]

# irrCAC dataset cont3x3abstractors (Gwet 2014): 2 raters x 100 subjects, 3 categories.
IRRCAC_CONT3X3 = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]

PAIRWISE: list[Callable[..., float]] = [
    accuracy,
    cohen_kappa,
    f1,
    gwet_ac1,
    pabak,
    percent_agreement,
    precision,
    recall,
]
MULTI: list[Callable[..., float]] = [fleiss_kappa, gwet_ac1_multi, krippendorff_alpha]


# -------------------------------------------------------------------------- published values


def test_cohen_kappa_wikipedia_example() -> None:
    # Wikipedia "Cohen's kappa", worked example: 50 proposals, 20 yes/yes, 5 A-yes/B-no,
    # 10 A-no/B-yes, 15 no/no: po = 0.7, pe = 0.5, kappa = 0.4.
    y1, y2 = pairs_from_table([[20, 5], [10, 15]])
    assert cohen_kappa(y1, y2) == pytest.approx(0.4, abs=1e-12)
    assert percent_agreement(y1, y2) == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("table", "kappa"),
    [
        ([[40, 9], [6, 45]], 0.70),  # po = 0.85, pe = 0.50
        ([[80, 10], [5, 5]], 0.32),  # po = 0.85, pe = 0.78: the prevalence paradox
    ],
)
def test_prevalence_paradox_feinstein_cicchetti_1990(table: list[list[int]], kappa: float) -> None:
    # Feinstein & Cicchetti (1990) J Clin Epidemiol 43:543-549, "High agreement but low
    # kappa: I.", as reproduced in Gerstman, "Epidemiology Kept Simple", Table 10.6: both
    # tables have po = 0.85, kappa 0.70 vs 0.32 (published to 2 decimals).
    y1, y2 = pairs_from_table(table)
    assert percent_agreement(y1, y2) == pytest.approx(0.85)
    assert cohen_kappa(y1, y2) == pytest.approx(kappa, abs=0.005)
    # PABAK = 2 po - 1 (Byrt, Bishop & Carlin 1993) is 0.70 for both: derived, not published.
    assert pabak(y1, y2) == pytest.approx(0.70)


def test_paradox_table_specific_agreement_and_ac1_by_hand() -> None:
    # Hand-derived from the formulas (not published values) on the paradox table
    # (a, b, c, d) = (80, 10, 5, 5): PA = 160 / 175, NA = 10 / 25; AC1 with
    # pi+ = (90 + 85) / 200 = 0.875, pe = 2 * 0.875 * 0.125 = 0.21875,
    # AC1 = (0.85 - 0.21875) / 0.78125 = 0.808.
    y1, y2 = pairs_from_table([[5, 5], [10, 80]])  # category 1 = positive
    sa = specific_agreement(y1, y2)
    assert sa.positive == pytest.approx(160 / 175)
    assert sa.negative == pytest.approx(10 / 25)
    assert sa.n == 100
    assert gwet_ac1(y1, y2) == pytest.approx(0.808)


def test_cohen_kappa_gerstman_xray_example() -> None:
    # Gerstman, "Epidemiology Kept Simple" (Wiley), Illustrative Example 10.1: X-ray
    # readings, a = 1467, d = 16232, N = 19790, rater margins f1 = 2249 and g1 = 2776, so
    # b = 2249 - 1467 = 782 and c = 2776 - 1467 = 1309; po = 0.8943, pe = 0.7780, kappa = 0.524.
    y1, y2 = pairs_from_table([[1467, 782], [1309, 16232]])
    assert percent_agreement(y1, y2) == pytest.approx(0.8943, abs=5e-5)
    assert cohen_kappa(y1, y2) == pytest.approx(0.524, abs=5e-4)


def test_fleiss_kappa_wikipedia_example() -> None:
    # Wikipedia "Fleiss' kappa" worked example: P-bar = 0.378, P-bar-e = 0.213, kappa = 0.210.
    ratings = ratings_from_counts(WIKIPEDIA_FLEISS_COUNTS)
    assert ratings.shape == (10, 14)
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_alpha_2011_example() -> None:
    # Krippendorff (2011), section C: nominal alpha of the 4 observers x 12 units data with
    # missing values is 0.743 (to 3 decimals); irrCAC's krippen.alpha.raw prints 0.74342.
    assert krippendorff_alpha(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011) == pytest.approx(0.74342, abs=5e-6)


def test_irrcac_cac_raw4raters() -> None:
    # irrCAC's cac.raw4raters is the same Krippendorff data (unit 12's single rating sits in
    # another column, which no coefficient here depends on).  irrCAC README:
    # fleiss.kappa.raw 0.76117 (se 0.15302), gwet.ac1.raw 0.77544, krippen.alpha.raw 0.74342.
    est = fleiss_kappa_with_se(KRIPPENDORFF_2011)
    assert est.kappa == pytest.approx(0.76117, abs=5e-6)
    assert est.se == pytest.approx(0.15302, abs=5e-6)
    assert est.n == 12
    assert fleiss_kappa(KRIPPENDORFF_2011) == est.kappa
    assert gwet_ac1_multi(KRIPPENDORFF_2011) == pytest.approx(0.77544, abs=5e-6)


def test_irrcac_distrib_6raters() -> None:
    # irrCAC README, distrib.6raters: Fleiss 0.4139265 (se 0.08119291), AC1 0.4448007,
    # Krippendorff's alpha 0.4204384.
    ratings = ratings_from_counts(IRRCAC_DISTRIB_6RATERS)
    est = fleiss_kappa_with_se(ratings)
    assert est.kappa == pytest.approx(0.4139265, abs=5e-8)
    assert est.se == pytest.approx(0.08119291, abs=5e-9)
    assert gwet_ac1_multi(ratings) == pytest.approx(0.4448007, abs=5e-8)
    assert krippendorff_alpha(ratings) == pytest.approx(0.4204384, abs=5e-8)


def test_irrcac_cont3x3abstractors() -> None:
    # irrCAC README, cont3x3abstractors: Cohen 0.7964094 (se 0.05891072), Gwet's AC1
    # 0.8493305, Brennan-Prediger 0.835, Krippendorff's alpha 0.7972585, percent agreement 0.89.
    y1, y2 = pairs_from_table(IRRCAC_CONT3X3)
    est = cohen_kappa_with_se(y1, y2)
    assert est.kappa == pytest.approx(0.7964094, abs=5e-8)
    assert est.se == pytest.approx(0.05891072, abs=5e-9)
    assert gwet_ac1(y1, y2) == pytest.approx(0.8493305, abs=5e-8)
    assert pabak(y1, y2) == pytest.approx(0.835, abs=1e-12)
    assert krippendorff_alpha(np.column_stack([y1, y2])) == pytest.approx(0.7972585, abs=5e-8)
    assert percent_agreement(y1, y2) == pytest.approx(0.89)


# ------------------------------------------------------------------------------ cross-checks


@pytest.mark.parametrize(("seed", "k", "n"), [(0, 2, 40), (1, 2, 500), (2, 3, 60), (3, 5, 200)])
def test_cohen_kappa_matches_sklearn_and_statsmodels(seed: int, k: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    y1 = rng.integers(0, k, n)
    # a correlated second rater, so kappa is away from 0
    y2 = np.where(rng.random(n) < 0.6, y1, rng.integers(0, k, n))
    assert cohen_kappa(y1, y2) == pytest.approx(cohen_kappa_score(y1, y2), abs=1e-12)
    sm = cohens_kappa(table_of(y1, y2, k))
    est = cohen_kappa_with_se(y1, y2)
    assert est.kappa == pytest.approx(sm.kappa, abs=1e-12)
    assert est.se == pytest.approx(sm.std_kappa, rel=1e-10)
    assert est.n == n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_metrics_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y1 = rng.random(300) < 0.3
    y2 = np.where(rng.random(300) < 0.7, y1, rng.random(300) < 0.4)
    assert accuracy(y1, y2) == pytest.approx(accuracy_score(y1, y2))
    assert precision(y1, y2) == pytest.approx(precision_score(y1, y2))
    assert recall(y1, y2) == pytest.approx(recall_score(y1, y2))
    assert f1(y1, y2) == pytest.approx(f1_score(y1, y2))
    c = confusion_counts(y1, y2)
    assert (c.tp, c.fp, c.fn, c.tn) == (
        int(np.sum(y1 & y2)),
        int(np.sum(~y1 & y2)),
        int(np.sum(y1 & ~y2)),
        int(np.sum(~y1 & ~y2)),
    )


@pytest.mark.parametrize(("seed", "raters", "k"), [(0, 3, 2), (1, 5, 3), (2, 8, 4)])
def test_fleiss_kappa_matches_statsmodels(seed: int, raters: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, 50)
    ratings = np.where(
        rng.random((50, raters)) < 0.6, truth[:, None], rng.integers(0, k, (50, raters))
    )
    counts, _ = aggregate_raters(ratings)
    assert fleiss_kappa(ratings) == pytest.approx(sm_fleiss_kappa(counts), abs=1e-12)


def _alpha_by_pairs(ratings: Sequence[Sequence[Any]]) -> float:
    """Nominal alpha straight from Krippendorff's (2011) definition, pair by pair."""
    coincidences: dict[tuple[Any, Any], float] = {}
    for unit in ratings:
        values = [v for v in unit if v is not None]
        m = len(values)
        for i in range(m):
            for j in range(m):
                if i != j:
                    key = (values[i], values[j])
                    coincidences[key] = coincidences.get(key, 0.0) + 1.0 / (m - 1)
    n_c: dict[Any, float] = {}
    for (c, _), o in coincidences.items():
        n_c[c] = n_c.get(c, 0.0) + o
    n = sum(n_c.values())
    observed = sum(o for (c, k), o in coincidences.items() if c != k) / n
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n * (n - 1))
    return 1.0 - observed / expected


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_krippendorff_alpha_matches_pairwise_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, 40)
    values = np.where(rng.random((40, 4)) < 0.7, truth[:, None], rng.integers(0, 3, (40, 4)))
    ratings = [[int(v) if rng.random() > 0.3 else None for v in row] for row in values]
    assert krippendorff_alpha(ratings) == pytest.approx(_alpha_by_pairs(ratings), abs=1e-12)
    assert krippendorff_alpha(KRIPPENDORFF_2011) == pytest.approx(
        _alpha_by_pairs(KRIPPENDORFF_2011), abs=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_two_rater_forms_agree(seed: int) -> None:
    # gwet_ac1_multi and gwet_ac1 are separate code paths; on two complete raters they must
    # agree.  Likewise Fleiss' kappa on two raters is Scott's pi, computed here by hand.
    rng = np.random.default_rng(seed)
    y1 = rng.integers(0, 3, 80)
    y2 = np.where(rng.random(80) < 0.5, y1, rng.integers(0, 3, 80))
    ratings = np.column_stack([y1, y2])
    assert gwet_ac1_multi(ratings) == pytest.approx(gwet_ac1(y1, y2), abs=1e-12)
    pooled = np.bincount(np.concatenate([y1, y2]), minlength=3) / 160
    po = float(np.mean(y1 == y2))
    scott_pi = (po - np.sum(pooled**2)) / (1 - np.sum(pooled**2))
    assert fleiss_kappa(ratings) == pytest.approx(scott_pi, abs=1e-12)


def test_cohen_confidence_interval_is_wald() -> None:
    y1, y2 = pairs_from_table(IRRCAC_CONT3X3)
    est95 = cohen_kappa_with_se(y1, y2)
    est90 = cohen_kappa_with_se(y1, y2, confidence=0.90)
    assert est95.ci_high - est95.kappa == pytest.approx(1.959963985 * est95.se)
    assert est95.kappa - est95.ci_low == pytest.approx(1.959963985 * est95.se)
    assert est90.ci_high - est90.kappa == pytest.approx(1.644853627 * est90.se)
    fest = fleiss_kappa_with_se(ratings_from_counts(IRRCAC_DISTRIB_6RATERS), confidence=0.99)
    assert fest.ci_high - fest.kappa == pytest.approx(2.575829304 * fest.se)


# ---------------------------------------------------------------------------- invariances


SYMMETRIC: list[Callable[..., float]] = [cohen_kappa, gwet_ac1, pabak, percent_agreement]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symmetry_and_item_order_invariance(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y1 = rng.random(120) < 0.2
    y2 = np.where(rng.random(120) < 0.8, y1, rng.random(120) < 0.5)
    order = rng.permutation(120)
    for metric in SYMMETRIC:
        value = metric(y1, y2)
        assert metric(y2, y1) == pytest.approx(value, abs=1e-12), metric.__name__
        assert metric(y1[order], y2[order]) == pytest.approx(value, abs=1e-12), metric.__name__
    assert specific_agreement(y1, y2) == specific_agreement(y2, y1)
    assert cohen_kappa_with_se(y1, y2).se == pytest.approx(cohen_kappa_with_se(y2, y1).se)
    assert precision(y1, y2) == recall(y2, y1)
    assert f1(y1, y2) == pytest.approx(specific_agreement(y1, y2).positive)


@pytest.mark.parametrize("metric", MULTI)
def test_multi_rater_invariant_to_item_and_rater_order(metric: Callable[..., float]) -> None:
    ratings = np.array(KRIPPENDORFF_2011, dtype=object)
    rng = np.random.default_rng(7)
    value = metric(ratings)
    shuffled = ratings[rng.permutation(12)][:, rng.permutation(4)]
    assert metric(shuffled) == pytest.approx(value, abs=1e-12)


def test_labels_are_nominal_names() -> None:
    # Renaming categories must not change nominal statistics.
    y1, y2 = pairs_from_table(IRRCAC_CONT3X3)
    names = {0: "Ectopic", 1: "AIU", 2: "NIU"}
    s1, s2 = [names[v] for v in y1], [names[v] for v in y2]
    for metric in (cohen_kappa, gwet_ac1, pabak, percent_agreement):
        assert metric(s1, s2) == pytest.approx(metric(y1, y2), abs=1e-12)
    ratings = np.array(KRIPPENDORFF_2011, dtype=object)
    renamed = [[None if v is None else f"cat{v}" for v in row] for row in ratings]
    for multi in MULTI:
        assert multi(renamed) == pytest.approx(multi(ratings), abs=1e-12)


def test_self_agreement_is_one() -> None:
    y = [True, False, True, True, False, False, True]
    for metric in (cohen_kappa, gwet_ac1, pabak, percent_agreement, f1, accuracy):
        assert metric(y, y) == 1.0, metric.__name__
    ratings = np.column_stack([y, y, y])
    for multi in MULTI:
        assert multi(ratings) == 1.0, multi.__name__
    est = cohen_kappa_with_se(y, y)
    assert (est.kappa, est.se, est.ci_low, est.ci_high) == (1.0, 0.0, 1.0, 1.0)


def test_bool_int_and_float_labels_are_the_same_categories() -> None:
    y1 = [True, False, True, False, True]
    y2 = [1, 0, 0, 0, 1.0]
    assert cohen_kappa(y1, y2) == cohen_kappa([1, 0, 1, 0, 1], [1, 0, 0, 0, 1])
    assert confusion_counts(np.array(y1), np.array([1, 0, 0, 0, 1])) == ConfusionCounts(2, 0, 1, 2)


# --------------------------------------------------------------------------- missing values


def test_missing_pairs_dropped_like_filtering() -> None:
    y1 = [1, 0, None, 1, float("nan"), 0, 1, 0]
    y2 = [1, 1, 1, None, 0, 0, np.nan, 0]
    kept1, kept2 = [1, 0, 0, 0], [1, 1, 0, 0]
    for metric in PAIRWISE:
        assert metric(y1, y2) == pytest.approx(metric(kept1, kept2)), metric.__name__
    assert confusion_counts(y1, y2).n == 4


def test_missing_values_from_numpy_and_pandas() -> None:
    y1 = np.array([1.0, 0.0, np.nan, 1.0, 0.0, 1.0])
    y2 = pd.Series([1.0, 1.0, 0.0, np.nan, 0.0, 1.0])
    expected = cohen_kappa([1, 0, 0, 1], [1, 1, 0, 1])
    assert cohen_kappa(y1, y2) == pytest.approx(expected)
    nullable = pd.Series([True, False, None, True, False, True], dtype="boolean")
    assert cohen_kappa(nullable, y2) == pytest.approx(expected)
    frame = pd.DataFrame(KRIPPENDORFF_2011, dtype="float64")  # None -> NaN
    assert krippendorff_alpha(frame) == pytest.approx(krippendorff_alpha(KRIPPENDORFF_2011))


def test_missing_raise() -> None:
    metrics: list[Callable[..., object]] = [
        *PAIRWISE,
        confusion_counts,
        specific_agreement,
        cohen_kappa_with_se,
    ]
    for metric in metrics:
        with pytest.raises(ValueError, match=r"1 of 3 pairs have a missing label.*index 1"):
            metric([1, None, 0], [1, 1, 0], missing="raise")
    assert cohen_kappa([1, 0, 0], [1, 1, 0], missing="raise") == pytest.approx(0.4)


def test_invalid_missing_option() -> None:
    with pytest.raises(ValueError, match=r"missing must be one of \('drop', 'raise'\); got 'skip'"):
        cohen_kappa([1, 0], [1, 0], missing="skip")  # type: ignore[arg-type]


# -------------------------------------------------------------------- degenerate inputs


@pytest.mark.parametrize("metric", PAIRWISE)
@pytest.mark.parametrize("empty", [([], []), ([None, None], [1, float("nan")])])
def test_empty_after_dropping_is_undefined(
    metric: Callable[..., float], empty: tuple[list[Any], list[Any]]
) -> None:
    with pytest.warns(UndefinedMetricWarning, match="no complete pair"):
        assert math.isnan(metric(*empty))
    with pytest.warns(UndefinedMetricWarning):
        assert metric(*empty, replace_undefined_by=-1.0) == -1.0


def test_empty_confusion_counts_and_estimates() -> None:
    assert confusion_counts([], []) == ConfusionCounts(0, 0, 0, 0)
    with pytest.warns(UndefinedMetricWarning):
        est = cohen_kappa_with_se([], [])
    assert est.n == 0
    assert all(math.isnan(v) for v in (est.kappa, est.se, est.ci_low, est.ci_high))


@pytest.mark.parametrize(
    "metric", [*PAIRWISE, confusion_counts, specific_agreement, cohen_kappa_with_se]
)
def test_length_mismatch(metric: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match="same length; got 3 and 2"):
        metric([1, 0, 1], [1, 0])


def test_constant_raters_kappa_undefined_but_ac1_pabak_defined() -> None:
    # A failure mode nobody flagged: both raters say False on every trace.
    never = [False] * 10
    with pytest.warns(UndefinedMetricWarning, match="expected agreement is 1") as record:
        assert math.isnan(cohen_kappa(never, never))
    assert record[0].filename == __file__  # the warning points at the caller
    with pytest.warns(UndefinedMetricWarning):
        assert cohen_kappa(never, never, replace_undefined_by=0.0) == 0.0
    with pytest.warns(UndefinedMetricWarning):
        est = cohen_kappa_with_se(never, never, replace_undefined_by=0.0)
    assert est.kappa == 0.0 and math.isnan(est.se) and est.n == 10
    # AC1 and PABAK are 1.0 here by definition (pe = 0 for AC1), without a warning.
    assert gwet_ac1(never, never) == 1.0
    assert pabak(never, never) == 1.0
    assert gwet_ac1_multi(np.column_stack([never] * 3)) == 1.0
    for multi in (fleiss_kappa, krippendorff_alpha):
        with pytest.warns(UndefinedMetricWarning, match="same label"):
            assert math.isnan(multi(np.column_stack([never] * 3)))


def test_constant_but_opposite_raters_kappa_is_zero() -> None:
    # pe = 0 and po = 0: kappa is defined and 0 (no warning; warnings are errors here).
    assert cohen_kappa([1, 1, 1], [0, 0, 0]) == 0.0
    assert pabak([1, 1, 1], [0, 0, 0]) == -1.0


def test_single_item() -> None:
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(cohen_kappa([1], [1]))
    assert cohen_kappa([1], [0]) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="at least two pairs"):
        est = cohen_kappa_with_se([1], [0])
    assert est.kappa == 0.0 and math.isnan(est.se)
    assert percent_agreement(["a"], ["a"]) == 1.0
    # One item, two different ratings: Fleiss' kappa = (0 - 0.5) / 0.5 = -1, SE undefined.
    with pytest.warns(UndefinedMetricWarning, match="at least two rated items"):
        fest = fleiss_kappa_with_se([[1, 0]])
    assert fest.kappa == -1.0 and math.isnan(fest.se) and fest.n == 1


def test_precision_recall_f1_degenerate() -> None:
    ref = [True, True, False, False]
    none = [False] * 4
    with pytest.warns(UndefinedMetricWarning, match="candidate has no positive"):
        assert math.isnan(precision(ref, none))
    with pytest.warns(UndefinedMetricWarning, match="reference has no positive"):
        assert recall(none, ref, replace_undefined_by=0.0) == 0.0
    assert recall(ref, none) == 0.0
    assert precision(none, ref) == 0.0
    # F1 is 2tp / (2tp + fp + fn): 0.0 when only one side has positives, undefined if neither.
    assert f1(ref, none) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="neither"):
        assert math.isnan(f1(none, none))


def test_specific_agreement_degenerate() -> None:
    with pytest.warns(UndefinedMetricWarning, match="negative label"):
        sa = specific_agreement([1, 1, 1], [1, 1, 1])
    assert sa.positive == 1.0 and math.isnan(sa.negative) and sa.n == 3
    assert isinstance(sa, SpecificAgreement)


@pytest.mark.parametrize("metric", MULTI)
@pytest.mark.parametrize(
    "ratings",
    [
        [],
        np.empty((0, 3)),
        [[None, None], [None, None]],
        [[1], [0], [1]],  # one rater: no item has two ratings
        [[1, None], [None, 0]],
    ],
)
def test_multi_rater_nothing_pairable(metric: Callable[..., float], ratings: Any) -> None:
    with pytest.warns(UndefinedMetricWarning):
        assert metric(ratings, replace_undefined_by=-2.0) == -2.0


def test_fleiss_with_se_undefined() -> None:
    with pytest.warns(UndefinedMetricWarning):
        est = fleiss_kappa_with_se([[1, 1], [1, 1]])
    assert isinstance(est, KappaEstimate)
    assert math.isnan(est.kappa) and math.isnan(est.se) and est.n == 2


def test_items_with_one_rating_count_for_prevalence_only() -> None:
    # Gwet (2014) convention, by hand: items (1,1,1), (1,1,0), (0,0,0) and a single rating 1.
    # pa = (1 + 1/3 + 1) / 3 = 7/9; pi_1 = (1 + 2/3 + 0 + 1) / 4 = 2/3;
    # pe = 4/9 + 1/9 = 5/9; kappa = (7/9 - 5/9) / (4/9) = 0.5.
    ratings = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [None, 1, None]]
    assert fleiss_kappa(ratings) == pytest.approx(0.5)
    # An item with no rating at all is dropped entirely.
    assert fleiss_kappa([*ratings, [None, None, None]]) == pytest.approx(0.5)


# ------------------------------------------------------------------------ categories (q)


def test_ac1_and_pabak_depend_on_number_of_categories() -> None:
    y1, y2 = [1, 1, 0, 0], [1, 0, 0, 0]
    # q = 2 by default for binary labels: PABAK = 2 * 0.75 - 1 = 0.5.
    assert pabak(y1, y2) == 0.5
    # q = 3: (3 * 0.75 - 1) / 2 = 0.625.
    assert pabak(y1, y2, categories=[0, 1, 2]) == pytest.approx(0.625)
    # AC1, q = 3: pi = (3/8, 5/8, 0), pe = (15/64 + 15/64) / 2 = 15/64,
    # AC1 = (0.75 - 15/64) / (49/64) = 33/49.
    assert gwet_ac1(y1, y2, categories=[0, 1, 2]) == pytest.approx(33 / 49)


def test_nominal_constant_labels_need_categories() -> None:
    with pytest.warns(UndefinedMetricWarning, match="fewer than two categories"):
        assert math.isnan(gwet_ac1(["a", "a"], ["a", "a"]))
    with pytest.warns(UndefinedMetricWarning, match="fewer than two categories"):
        assert math.isnan(pabak(["a", "a"], ["a", "a"]))
    with pytest.warns(UndefinedMetricWarning, match="fewer than two categories"):
        assert math.isnan(gwet_ac1_multi([["a", "a"], ["a", "a"]]))
    assert gwet_ac1(["a", "a"], ["a", "a"], categories=["a", "b"]) == 1.0
    assert gwet_ac1_multi([["a", "a"], ["a", "a"]], categories=["a", "b"]) == 1.0


@pytest.mark.parametrize(
    ("categories", "message"),
    [
        ([0], r"labels \[1\] are not among categories=\[0\]"),
        ([0, 1, 1], "distinct"),
        ([0, 1, None], "non-missing"),
        ("01", "sequence of labels"),
    ],
)
def test_bad_categories(categories: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gwet_ac1([1, 0], [1, 1], categories=categories)
    with pytest.raises(ValueError, match=message):
        gwet_ac1_multi([[1, 0], [1, 1]], categories=categories)


# --------------------------------------------------------------------------- hostile inputs


@pytest.mark.parametrize("metric", [confusion_counts, accuracy, precision, recall, f1])
@pytest.mark.parametrize("bad", [[0, 1, 2], ["yes", "no", "no"], [0.5, 1, 0]])
def test_binary_functions_reject_non_binary_labels(
    metric: Callable[..., Any], bad: list[Any]
) -> None:
    message = f"{metric.__name__} needs binary labels"
    with pytest.raises(ValueError, match=message):
        metric(bad, [1, 0, 1])
    with pytest.raises(ValueError, match=message):
        metric([1, 0, 1], bad)


def test_specific_agreement_rejects_non_binary() -> None:
    with pytest.raises(ValueError, match=r"binary labels .* got 'maybe'"):
        specific_agreement(["maybe", 1], [1, 0])


@pytest.mark.parametrize(
    ("y1", "message"),
    [
        ([[1, 0], [0, 1]], "1-D sequence"),
        ("1010", "1-D sequence"),
        (5, "1-D sequence"),
        ([(1, 2), 3], r"scalar labels .* got \(1, 2\) of type tuple at index 0"),
        ([1, {"a": 1}], "scalar labels"),
        ([1, [0]], "scalar labels"),
    ],
)
def test_malformed_label_vectors(y1: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cohen_kappa(y1, [1, 0])


@pytest.mark.parametrize(
    ("ratings", "message"),
    [
        ([1, 0, 1], r"shape \(3,\) \(1-D\)$"),
        ([[1, 0], [1]], "because its rows have unequal lengths"),
        (np.zeros((2, 2, 2)), r"shape \(2, 2, 2\) \(3-D\)"),
        ("ab", r"got str read as an array of shape \(\)"),
        ([[1, [0]], [1, 1]], "scalar labels .* at index \\(0, 1\\)"),
    ],
)
@pytest.mark.parametrize("metric", [*MULTI, fleiss_kappa_with_se])
def test_malformed_ratings(metric: Callable[..., Any], ratings: Any, message: str) -> None:
    with pytest.raises(ValueError, match=f"^ratings must .*{message}"):
        metric(ratings)


@pytest.mark.parametrize("level", ["interval", "ordinal", "ratio", "Nominal"])
def test_krippendorff_only_nominal(level: str) -> None:
    with pytest.raises(ValueError, match=f"level must be one of \\('nominal',\\); got '{level}'"):
        krippendorff_alpha(KRIPPENDORFF_2011, level=level)


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1, float("nan"), "95%"])
def test_bad_confidence(confidence: Any) -> None:
    with pytest.raises(ValueError, match="confidence must be a number strictly between 0 and 1"):
        cohen_kappa_with_se([1, 0, 1], [1, 0, 0], confidence=confidence)
    with pytest.raises(ValueError, match="confidence must be"):
        fleiss_kappa_with_se([[1, 0], [1, 1]], confidence=confidence)


# ------------------------------------------------------------------------------ housekeeping


def test_public_api() -> None:
    assert stats.__all__ == sorted(stats.__all__)
    assert all(hasattr(stats, name) for name in stats.__all__)
    assert issubclass(UndefinedMetricWarning, UserWarning)
    for name in stats.__all__:
        obj = getattr(stats, name)
        assert obj.__doc__, f"{name} has no docstring"


def test_outputs_are_python_floats() -> None:
    y1, y2 = pairs_from_table(IRRCAC_CONT3X3)
    for metric in (cohen_kappa, gwet_ac1, pabak, percent_agreement):
        assert type(metric(y1, y2)) is float
    est = cohen_kappa_with_se(y1, y2)
    assert all(type(v) is float for v in (est.kappa, est.se, est.ci_low, est.ci_high))
    assert type(krippendorff_alpha(KRIPPENDORFF_2011)) is float
    assert type(fleiss_kappa(KRIPPENDORFF_2011)) is float


def test_docstring_examples() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = [
            doctest.testmod(module, raise_on_error=False)
            for module in (stats, mast.agree.metrics_base, mast.agree.multirater)
        ]
    assert sum(r.attempted for r in results) >= 20
    assert sum(r.failed for r in results) == 0
