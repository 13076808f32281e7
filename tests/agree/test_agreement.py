"""Tests of the agreement reports (mast.agree): against mast.agree.stats, invariances, bootstrap
behaviour, exclusions, degenerate and hostile inputs, outputs, and the MAD human sample."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap as scipy_bootstrap

import mast
from mast.agree import (
    MACRO,
    POOLED,
    VERIFICATION,
    AgreementReport,
    agreement,
    agreement_among,
    agreement_by_version,
    labels_of,
    stats,
)
from mast.agree.resample import (
    binary_metrics,
    bootstrap_intervals,
    multi_features,
    multi_metrics,
)
from mast.agree.stats import UndefinedMetricWarning
from mast.errors import MastError, MissingDependencyError, StatsInputError
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector

CODES = mast.load_taxonomy().codes
Labels = dict[str, dict[str, bool | None]]


@contextmanager
def quiet() -> Iterator[None]:
    """Ignore UndefinedMetricWarning (tests that are not about it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield


def same(a: float, b: float, rel: float = 1e-12) -> bool:
    """Equal floats, NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15)


def random_pair(
    seed: int,
    n: int = 60,
    modes: list[str] = CODES,
    p_none: float = 0.05,
    flip: float = 0.15,
) -> tuple[Labels, Labels]:
    rng = np.random.default_rng(seed)
    prevalence = rng.uniform(0.05, 0.5, len(modes))
    ref_pos = rng.random((n, len(modes))) < prevalence
    cand_pos = ref_pos ^ (rng.random((n, len(modes))) < flip)
    ref_none = rng.random((n, len(modes))) < p_none
    cand_none = rng.random((n, len(modes))) < p_none
    ref: Labels = {}
    cand: Labels = {}
    for i in range(n):
        ref[f"t{i}"] = {
            c: None if ref_none[i, j] else bool(ref_pos[i, j]) for j, c in enumerate(modes)
        }
        cand[f"t{i}"] = {
            c: None if cand_none[i, j] else bool(cand_pos[i, j]) for j, c in enumerate(modes)
        }
    return ref, cand


def column(labels: Labels, ids: list[str], code: str) -> list[bool | None]:
    return [labels[i].get(code) for i in ids]


# ------------------------------------------------------------------------ vs mast.agree.stats


def test_stats_input_errors_are_mast_errors_and_value_errors() -> None:
    with pytest.raises(StatsInputError, match="same length") as info:
        stats.cohen_kappa([1, 0], [1])
    assert isinstance(info.value, MastError) and isinstance(info.value, ValueError)


def test_pooled_kappa_equals_stats_on_flattened_cells() -> None:
    ref, cand = random_pair(1)
    del cand["t3"], ref["t7"]  # one trace missing on each side
    rep = agreement(ref, cand, bootstrap=0)
    ids = sorted(set(ref) & set(cand), key=lambda t: int(t[1:]))
    y1 = [ref[i][c] for i in ids for c in CODES]
    y2 = [cand[i][c] for i in ids for c in CODES]
    expected = stats.cohen_kappa_with_se(y1, y2)
    assert rep.pooled.kappa == expected.kappa == stats.cohen_kappa(y1, y2)
    assert rep.pooled.se == expected.se
    assert (rep.pooled.wald_low, rep.pooled.wald_high) == (expected.ci_low, expected.ci_high)
    assert rep.pooled.n_cells == expected.n == stats.confusion_counts(y1, y2).n
    assert rep.n_traces == len(ids) == rep.pooled.n_traces


def test_per_mode_values_equal_stats_on_each_column() -> None:
    ref, cand = random_pair(2, n=80)
    rep = agreement(ref, cand, bootstrap=0)
    ids = list(ref)
    for code in CODES:
        y1, y2 = column(ref, ids, code), column(cand, ids, code)
        row = rep.per_mode.loc[code]
        est = stats.cohen_kappa_with_se(y1, y2)
        counts = stats.confusion_counts(y1, y2)
        specific = stats.specific_agreement(y1, y2)
        assert row["kappa"] == est.kappa and row["kappa_se"] == est.se
        assert (row["kappa_wald_low"], row["kappa_wald_high"]) == (est.ci_low, est.ci_high)
        assert (row["tp"], row["fp"], row["fn"], row["tn"], row["n"]) == (
            counts.tp,
            counts.fp,
            counts.fn,
            counts.tn,
            counts.n,
        )
        expected = {
            "ac1": stats.gwet_ac1(y1, y2, categories=[False, True]),
            "pabak": stats.pabak(y1, y2, categories=[False, True]),
            "precision": stats.precision(y1, y2),
            "recall": stats.recall(y1, y2),
            "f1": stats.f1(y1, y2),
            "accuracy": stats.accuracy(y1, y2),
            "pos_agreement": specific.positive,
            "neg_agreement": specific.negative,
            "prevalence_reference": (counts.tp + counts.fn) / counts.n,
            "prevalence_candidate": (counts.tp + counts.fp) / counts.n,
        }
        for name, value in expected.items():
            assert same(float(row[name]), value), (code, name, row[name], value)
        assert row["unknown_reference"] == sum(v is None for v in y1)
        assert row["unknown_candidate"] == sum(v is None for v in y2)
        assert row["unscored"] == sum(a is None or b is None for a, b in zip(y1, y2, strict=True))


def test_vectorized_binary_metrics_equal_stats_on_every_small_table() -> None:
    # Every 2x2 table with cells 0..3, degenerate ones included: the bootstrap's formulas
    # give exactly what mast.agree.stats gives, NaN where mast.agree.stats says undefined.
    for tp, fp, fn, tn in itertools.product(range(4), repeat=4):
        y1 = [True] * tp + [False] * fp + [True] * fn + [False] * tn
        y2 = [True] * tp + [True] * fp + [False] * fn + [False] * tn
        got = {k: float(v) for k, v in binary_metrics(np.array([tp, fp, fn, tn], float)).items()}
        with quiet():
            specific = stats.specific_agreement(y1, y2)
            expected = {
                "kappa": stats.cohen_kappa(y1, y2),
                "ac1": stats.gwet_ac1(y1, y2, categories=[False, True]),
                "pabak": stats.pabak(y1, y2, categories=[False, True]),
                "precision": stats.precision(y1, y2),
                "recall": stats.recall(y1, y2),
                "f1": stats.f1(y1, y2),
                "accuracy": stats.accuracy(y1, y2),
                "neg_agreement": specific.negative,
            }
        for name, value in expected.items():
            assert same(got[name], value), ((tp, fp, fn, tn), name, got[name], value)


def test_vectorized_multi_rater_metrics_equal_stats() -> None:
    rng = np.random.default_rng(3)
    shapes = [(1, 2), (2, 3), (5, 3), (12, 4), (30, 3)]
    checked = 0
    for (n, r), p_none, prevalence in itertools.product(shapes, (0.0, 0.3), (0.0, 0.1, 0.5)):
        for _ in range(4):
            cells = np.where(rng.random((n, r)) < prevalence, 1, 0).astype(np.int8)
            cells[rng.random((n, r)) < p_none] = -1
            ratings = [[None if v < 0 else bool(v) for v in item] for item in cells.tolist()]
            got = {k: float(v) for k, v in multi_metrics(multi_features(cells).sum(axis=0)).items()}
            with quiet():
                expected = {
                    "fleiss": stats.fleiss_kappa(ratings),
                    "alpha": stats.krippendorff_alpha(ratings),
                    "ac1": stats.gwet_ac1_multi(ratings, categories=[False, True]),
                }
            for name, value in expected.items():
                assert same(got[name], value), (cells.tolist(), name, got[name], value)
            checked += 1
    assert checked == 120


# ------------------------------------------------------------------- rows and exclusions


def test_merged_verification_row_is_kleene_or_of_3_2_and_3_3() -> None:
    ref = {
        "a": {"3.2": True, "3.3": None},
        "b": {"3.2": False, "3.3": False},
        "c": {"3.2": None, "3.3": False},
        "d": {"3.2": False, "3.3": True},
        "e": {"3.2": False, "3.3": False},
    }
    cand = {
        "a": {"3.2": False, "3.3": False},
        "b": {"3.2": True, "3.3": False},
        "c": {"3.2": True, "3.3": False},
        "d": {"3.2": True, "3.3": False},
        "e": {"3.2": False, "3.3": False},
    }
    merged_ref = [True, False, None, True, False]
    merged_cand = [False, True, True, True, False]
    with pytest.warns(UndefinedMetricWarning, match=r"precision for 3\.3"):
        rep = agreement(ref, cand, modes=["3.2", "3.3"], bootstrap=0)
    row = rep.verification
    assert row is not None and row.name == VERIFICATION
    counts = stats.confusion_counts(merged_ref, merged_cand)
    assert (row["tp"], row["fp"], row["fn"], row["tn"]) == (
        counts.tp,
        counts.fp,
        counts.fn,
        counts.tn,
    )
    assert row["kappa"] == stats.cohen_kappa(merged_ref, merged_cand)
    assert row["unknown_reference"] == 1 and row["unscored"] == 1
    # Not part of the pooled cells, and not when asked not to or when a mode is missing.
    assert rep.pooled.n_cells == rep.per_mode["n"].sum()
    with quiet():
        unmerged = agreement(ref, cand, modes=["3.2", "3.3"], merge_verification=False)
        assert unmerged.verification is None
        assert VERIFICATION not in agreement(ref, cand, modes=["3.2"]).to_frame().index


def test_macro_row_averages_the_defined_modes() -> None:
    ref = {f"t{i}": {"1.1": i % 2 == 0, "1.2": i % 3 == 0, "1.3": False} for i in range(12)}
    cand = {f"t{i}": {"1.1": i % 2 == 0, "1.2": i % 4 == 0, "1.3": False} for i in range(12)}
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 1\.3"):
        rep = agreement(ref, cand, modes=["1.1", "1.2", "1.3"], bootstrap=0)
    kappas = rep.per_mode["kappa"]
    assert math.isnan(kappas["1.3"])
    assert rep.macro["kappa"] == pytest.approx((kappas["1.1"] + kappas["1.2"]) / 2)
    assert any("averages the 2 of 3 modes" in note for note in rep.notes)


def test_one_macro_kappa_leaves_out_modes_where_the_reference_has_one_class() -> None:
    # 1.3: the reference never says yes; the candidate says yes once, so Cohen's kappa there
    # is 0.  The macro must not average that 0 in (it shows no skill either way), and the
    # table's macro row and report.context must be the same number with the same interval.
    ref = {f"t{i}": {"1.1": i % 2 == 0, "1.2": i % 3 == 0, "1.3": False} for i in range(12)}
    cand = {f"t{i}": {"1.1": i % 2 == 0, "1.2": i % 4 == 0, "1.3": i == 5} for i in range(12)}
    with pytest.warns(UndefinedMetricWarning, match=r"recall for 1\.3"):
        rep = agreement(ref, cand, modes=["1.1", "1.2", "1.3"], bootstrap=200, seed=3)
    kappas = rep.per_mode["kappa"]
    assert kappas["1.3"] == pytest.approx(0.0)
    expected = (kappas["1.1"] + kappas["1.2"]) / 2
    assert rep.macro["kappa"] == pytest.approx(expected)
    c = rep.context
    assert c.macro_kappa == rep.macro["kappa"] and c.macro_modes == ["1.1", "1.2"]
    assert (c.macro_low, c.macro_high) == (rep.macro["kappa_low"], rep.macro["kappa_high"])
    assert c.macro_low < expected < c.macro_high
    assert any("left out: 1.3" in note for note in rep.notes)
    data = json.loads(rep.to_json())
    macro_row = next(r for r in data["rows"] if r["row"] == MACRO)
    assert macro_row["kappa"] == data["context"]["macro_kappa"] == pytest.approx(expected)
    text = rep.to_text()
    assert f"macro kappa = {expected:.3f}" in text
    macro_line = next(line for line in text.splitlines() if line.startswith("macro "))
    assert f"{expected:.2f}" in macro_line  # the table row shows the same value
    # AC1 and the other metrics of the macro row average the same modes.
    ac1 = rep.per_mode["ac1"]
    assert rep.macro["ac1"] == pytest.approx((ac1["1.1"] + ac1["1.2"]) / 2)


def test_none_cells_are_excluded_and_counted_never_no() -> None:
    ref = {"a": {"1.1": True}, "b": {"1.1": None}, "c": {"1.1": False}, "d": {"1.1": True}}
    cand = {"a": {"1.1": True}, "b": {"1.1": False}, "c": {"1.1": None}, "d": {"1.1": True}}
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 1\.1"):  # both say yes twice
        rep = agreement(ref, cand, modes=["1.1"], bootstrap=0, merge_verification=False)
    row = rep.per_mode.loc["1.1"]
    assert (row["n"], row["tp"], row["fp"], row["fn"], row["tn"]) == (2, 2, 0, 0, 0)
    assert rep.excluded.unknown_cells == {"reference": {"1.1": 1}, "candidate": {"1.1": 1}}
    assert rep.excluded.unscored == {"1.1": 2}
    text = "\n".join(rep.excluded.lines())
    assert "1 unknown (None) cell(s)" in text and "cells not scored: 2" in text
    # Had None counted as "no", the table would differ: kappa is not computed on 4 pairs.
    assert rep.pooled.n_cells == 2


def test_traces_in_one_source_only_are_counted() -> None:
    ref = {"a": {"1.1": True}, "b": {"1.1": False}, "only-ref": {"1.1": True}}
    cand = {"a": {"1.1": True}, "b": {"1.1": True}, "only-cand": {"1.1": False}}
    rep = agreement(ref, cand, modes=["1.1"], bootstrap=0)
    assert rep.trace_ids == ["a", "b"]
    assert rep.excluded.missing == {"reference": ["only-cand"], "candidate": ["only-ref"]}
    lines = rep.excluded.lines({"reference": "human", "candidate": "judge"})
    assert any(line.startswith("judge: 1 trace(s)") and "only-ref" in line for line in lines)


def test_failed_annotations_are_excluded_and_counted() -> None:
    def ann(trace_id: str, status: str, value: bool | None) -> Annotation:
        return Annotation(
            trace_id=trace_id,
            status=status,  # type: ignore[arg-type]
            taxonomy="MAST 1.0",
            vector=FailureVector({"1.1": value}, codes=CODES),
        )

    human = {"a": {"1.1": True}, "b": {"1.1": False}, "c": {"1.1": True}, "d": {"1.1": False}}
    judged = [
        ann("a", "ok", True),
        ann("b", "parse_error", None),
        ann("c", "error", None),
        ann("d", "error", None),
        ann("d", "ok", False),  # retried: the later usable record counts
        ann("a", "error", None),  # a later failure does not replace a success
    ]
    rep = agreement(human, judged, modes=["1.1"], bootstrap=0)
    assert rep.trace_ids == ["a", "d"]
    assert rep.excluded.failed["candidate"] == {"parse_error": ["b"], "error": ["c"]}
    assert rep.excluded.duplicates == {"candidate": 2}
    assert rep.excluded.missing["candidate"] == []  # failed, not missing
    assert rep.per_mode.loc["1.1", "n"] == 2
    # 13 unanswered modes of the judge are unknown cells, not "no".
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 1\.2"):
        full = agreement(human, judged, bootstrap=0, modes=["1.1", "1.2"])
    assert full.excluded.unknown_cells["candidate"]["1.2"] == 2


def test_every_input_form_gives_the_same_report() -> None:
    ref, cand = random_pair(4, n=30)
    expected = agreement(ref, cand, bootstrap=50).to_frame()
    vectors = {t: FailureVector(v, codes=CODES) for t, v in cand.items()}
    rows = [{"trace_id": t, **v} for t, v in cand.items()]
    records = [{"trace_id": t, "status": "ok", "vector": v} for t, v in cand.items()]
    frame = pd.DataFrame.from_dict(cand, orient="index").astype("boolean")
    frame["cost_usd"] = 0.01
    frame_with_column = frame.reset_index(names="trace_id").assign(status="ok")
    for form in (vectors, rows, records, frame, frame_with_column):
        rep = agreement(ref, form, bootstrap=50)
        pd.testing.assert_frame_equal(rep.to_frame(), expected)
    assert agreement(ref, frame, bootstrap=0).excluded.ignored_fields == {"candidate": ["cost_usd"]}


def test_label_keys_resolve_by_code_then_name_and_unknown_codes_are_counted() -> None:
    ref = {
        "a": {"1.1": True, "Step Repetition": True, "9.9": True, "4.1 Made up": False},
        "b": {"1.1": False, "Step Repetition": False, "9.9": False},
    }
    # "3.2 Incorrect Verification": the code wins over a (swapped) name next to it.
    cand = {
        "a": {"1.1": True, "1.3": True, "3.2 Incorrect Verification": True},
        "b": {"1.1": False, "1.3": False, "3.2 Incorrect Verification": False},
    }
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 3\.2"):
        rep = agreement(ref, cand, modes=["1.1", "1.3", "3.2"], bootstrap=0)
    assert rep.per_mode.loc["1.3", "n"] == 2
    assert rep.excluded.unknown_codes == {"reference": {"4.1 Made up": 1, "9.9": 2}}
    assert rep.excluded.unknown_cells["reference"]["3.2"] == 2
    assert rep.excluded.unknown_cells["candidate"]["3.2"] == 0


def test_symmetry() -> None:
    ref, cand = random_pair(5, n=40)
    ab = agreement(ref, cand, bootstrap=300, seed=7).to_frame()
    ba = agreement(cand, ref, bootstrap=300, seed=7).to_frame()
    symmetric = ["kappa", "kappa_se", "ac1", "pabak", "f1", "accuracy", "pos_agreement"]
    symmetric += ["neg_agreement", "tp", "tn", "n", "unscored"]
    symmetric += [f"{m}_{b}" for m in ("kappa", "ac1", "pabak", "f1") for b in ("low", "high")]
    # The macro row averages the modes where the *reference* has both classes, so swapping
    # the sources can change it (in resamples where one side has a single class on a mode).
    rows = [r for r in ab.index if r != MACRO]
    pd.testing.assert_frame_equal(ab.loc[rows, symmetric], ba.loc[rows, symmetric])
    for left, right in [
        ("precision", "recall"),
        ("prevalence_reference", "prevalence_candidate"),
        ("fp", "fn"),
        ("unknown_reference", "unknown_candidate"),
        ("precision_low", "recall_low"),
    ]:
        pd.testing.assert_series_equal(ab.loc[rows, left], ba.loc[rows, right], check_names=False)


def test_invariant_to_trace_order() -> None:
    ref, cand = random_pair(6, n=40)
    rng = np.random.default_rng(0)
    order = list(ref)
    rng.shuffle(order)
    shuffled_ref = {t: ref[t] for t in order}
    rng.shuffle(order)
    shuffled_cand = {t: cand[t] for t in order}
    a = agreement(ref, cand, bootstrap=200, seed=3)
    b = agreement(shuffled_ref, shuffled_cand, bootstrap=200, seed=3)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    pd.testing.assert_frame_equal(a.intervals, b.intervals)
    assert a.trace_ids == b.trace_ids


def test_self_agreement_is_one_and_a_mode_nobody_flagged_is_undefined_not_one() -> None:
    labels = {f"t{i}": {"1.1": i % 3 == 0, "1.2": False, "1.3": i % 2 == 0} for i in range(9)}
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 1\.2") as caught:
        rep = agreement(labels, labels, modes=["1.1", "1.2", "1.3"], bootstrap=100)
    assert len(caught) == 1  # one warning listing everything, not one per statistic
    assert rep.per_mode.loc["1.1", "kappa"] == 1.0 == rep.per_mode.loc["1.3", "kappa"]
    assert math.isnan(rep.per_mode.loc["1.2", "kappa"])  # never 1.0
    assert math.isnan(rep.per_mode.loc["1.2", "kappa_low"])
    assert (
        rep.per_mode.loc["1.2", "ac1"] == 1.0 == rep.per_mode.loc["1.2", "pabak"]
    )  # by definition
    assert rep.pooled.kappa == 1.0
    assert "undef." in rep.to_text()


# ----------------------------------------------------------------------------- bootstrap


def test_bootstrap_is_reproducible_with_the_seed() -> None:
    ref, cand = random_pair(8, n=50)
    a = agreement(ref, cand, bootstrap=300, seed=11)
    b = agreement(ref, cand, bootstrap=300, seed=11)
    c = agreement(ref, cand, bootstrap=300, seed=12)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert not a.to_frame()["kappa_low"].equals(c.to_frame()["kappa_low"])
    assert agreement(ref, cand, bootstrap=100, seed=None).pooled.boot_low < a.pooled.kappa


def test_report_intervals_are_the_engines_intervals() -> None:
    ref, cand = random_pair(9, n=50, modes=["1.1"], p_none=0.0)
    rep = agreement(ref, cand, modes=["1.1"], bootstrap=400, seed=5)
    features = np.array(
        [
            [[r and c, not r and c, r and not c, not r and not c]]
            for r, c in ((ref[t]["1.1"], cand[t]["1.1"]) for t in rep.trace_ids)
        ],
        dtype=float,
    )
    engine = bootstrap_intervals(
        features, binary_metrics, n_resamples=400, confidence=0.95, rng=np.random.default_rng(5)
    )
    iv = rep.intervals.set_index(["row", "metric", "method"]).sort_index()
    for method, bounds in (("percentile", engine.percentile), ("bca", engine.bca)):
        # (equal up to summation order inside numpy reductions: 1e-12)
        assert iv.loc[("1.1", "kappa", method), "low"] == pytest.approx(bounds["kappa"][0][0])
        assert iv.loc[("1.1", "kappa", method), "high"] == pytest.approx(bounds["kappa"][1][0])
    assert rep.per_mode.loc["1.1", "kappa_low"] == engine.percentile["kappa"][0][0]


def test_bootstrap_percentile_and_bca_intervals_cover_a_known_kappa() -> None:
    # Population 2x2 probabilities (tp, fp, fn, tn); its kappa is the truth to cover.
    p = np.array([0.20, 0.08, 0.07, 0.65])
    p_ref, p_cand, p_agree = p[0] + p[2], p[0] + p[1], p[0] + p[3]
    p_exp = p_ref * p_cand + (1 - p_ref) * (1 - p_cand)
    truth = (p_agree - p_exp) / (1 - p_exp)  # 0.6239
    rng = np.random.default_rng(2024)
    covered = {"percentile": 0, "bca": 0}
    datasets = 200
    for _ in range(datasets):
        cells = rng.choice(4, size=120, p=p)
        features = np.eye(4)[cells][:, None, :]  # 120 traces x 1 row x 4 cell counts
        iv = bootstrap_intervals(
            features, binary_metrics, n_resamples=400, confidence=0.95, rng=rng
        )
        covered["percentile"] += (
            iv.percentile["kappa"][0][0] <= truth <= iv.percentile["kappa"][1][0]
        )
        covered["bca"] += iv.bca["kappa"][0][0] <= truth <= iv.bca["kappa"][1][0]
    # 95% nominal; with 200 datasets the Monte Carlo SE is 1.5 points.
    for method, hits in covered.items():
        assert 0.90 <= hits / datasets <= 0.99, (method, hits)


def test_percentile_and_bca_intervals_agree_with_scipy() -> None:
    # High agreement on few traces: a skewed bootstrap distribution, where BCa moves away
    # from the percentile interval, so the comparison tells the two methods apart.
    rng = np.random.default_rng(2)
    n = 40
    ref = rng.random((n, 3)) < 0.15
    cand = ref ^ (rng.random((n, 3)) < 0.04)
    codes = ["1.1", "1.2", "1.3"]
    rep = agreement(
        {f"t{i:03d}": dict(zip(codes, map(bool, ref[i]), strict=True)) for i in range(n)},
        {f"t{i:03d}": dict(zip(codes, map(bool, cand[i]), strict=True)) for i in range(n)},
        modes=codes,
        bootstrap=4000,
        seed=1,
    )

    def pooled_kappa(index: np.ndarray, axis: int = -1) -> np.ndarray:
        # Vectorized over scipy's resample batches: index is (..., n) trace indices.
        r, c = ref[index], cand[index]  # (..., n, 3)
        n_cells = r.shape[-1] * r.shape[-2]
        po = (r == c).sum(axis=(-1, -2)) / n_cells
        p1, p2 = r.sum(axis=(-1, -2)) / n_cells, c.sum(axis=(-1, -2)) / n_cells
        pe = p1 * p2 + (1 - p1) * (1 - p2)
        return np.asarray((po - pe) / (1 - pe))

    ours = rep.intervals.set_index(["row", "metric", "method"]).sort_index()
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        expected = scipy_bootstrap(
            (np.arange(n),),
            pooled_kappa,
            vectorized=True,
            n_resamples=4000,
            method=scipy_method,
            random_state=np.random.default_rng(3),
        ).confidence_interval
        got = ours.loc[(POOLED, "kappa", method)]
        # Two independent sets of 4000 resamples: equal up to Monte Carlo error.
        assert got["low"] == pytest.approx(expected.low, abs=0.015), method
        assert got["high"] == pytest.approx(expected.high, abs=0.015), method
    pct, bca = ours.loc[(POOLED, "kappa", "percentile")], ours.loc[(POOLED, "kappa", "bca")]
    assert bca["low"] < pct["low"] - 0.02  # the BCa correction is visible here


def test_bootstrap_over_traces_is_wider_than_wald_when_modes_cooccur() -> None:
    # Each trace either fails in every mode or in none: the cells are not independent, so
    # the cell-level Wald interval of the pooled kappa is too narrow; the trace bootstrap
    # sees the clustering.
    rng = np.random.default_rng(5)
    codes = CODES[:6]
    ref: Labels = {}
    cand: Labels = {}
    for i in range(60):
        bad = bool(rng.random() < 0.4)
        miss = bool(rng.random() < 0.2)
        ref[f"t{i}"] = dict.fromkeys(codes, bad)
        cand[f"t{i}"] = dict.fromkeys(codes, bad ^ miss)
    rep = agreement(ref, cand, modes=codes, bootstrap=1000)
    p = rep.pooled
    assert (p.boot_high - p.boot_low) > 1.8 * (p.wald_high - p.wald_low)


# ------------------------------------------------------------ degenerate and hostile input


def test_empty_input_degrades_honestly() -> None:
    with pytest.warns(UndefinedMetricWarning, match="no trace x mode cell could be compared"):
        rep = agreement({}, {}, bootstrap=100)
    assert rep.n_traces == 0 and rep.pooled.n_cells == 0
    assert math.isnan(rep.pooled.kappa) and rep.per_mode["kappa"].isna().all()
    assert json.loads(rep.to_json())["pooled"]["kappa"] is None
    assert "0 trace(s)" in rep.to_text()


def test_all_none_input_degrades_honestly_and_counts_every_cell() -> None:
    ref = {f"t{i}": dict.fromkeys(CODES[:3]) for i in range(5)}
    cand = {f"t{i}": dict.fromkeys(CODES[:3], True) for i in range(5)}
    with pytest.warns(UndefinedMetricWarning, match="no trace x mode cell"):
        rep = agreement(ref, cand, modes=CODES[:3], bootstrap=50)
    assert rep.n_traces == 5 and rep.pooled.n_cells == 0
    assert rep.excluded.unknown_cells["reference"] == dict.fromkeys(CODES[:3], 5)
    assert sum(rep.excluded.unscored.values()) == 15


def test_one_trace_gives_estimates_but_no_bootstrap_interval() -> None:
    ref = {"only": {c: i % 3 == 0 for i, c in enumerate(CODES)}}
    cand = {"only": {c: i % 4 == 0 for i, c in enumerate(CODES)}}
    with quiet():
        rep = agreement(ref, cand, bootstrap=200)
    assert rep.pooled.n_cells == 14 and not math.isnan(rep.pooled.kappa)
    assert math.isnan(rep.pooled.boot_low) and math.isnan(rep.pooled.boot_high)
    assert any("at least two traces" in note for note in rep.notes)


def test_bad_inputs_raise_clear_errors() -> None:
    ok = {"a": {"1.1": True}}
    with pytest.raises(StatsInputError, match=r"label 'maybe' for mode '1.1' of trace 'a'"):
        agreement(ok, {"a": {"1.1": "maybe"}})
    with pytest.raises(StatsInputError, match=r"modes must be distinct codes.*\['9\.9'\] unknown"):
        agreement(ok, ok, modes=["1.1", "9.9"])
    for bad in (-1, 1.5, True):
        with pytest.raises(StatsInputError, match="bootstrap must be an integer"):
            agreement(ok, ok, bootstrap=bad)  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="confidence"):
        agreement(ok, ok, confidence=1.0)
    with pytest.raises(StatsInputError, match="ci must be one of"):
        agreement(ok, ok, ci="normal")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="got a path or string"):
        agreement("human.csv", ok)
    with pytest.raises(StatsInputError, match="maps to int"):
        agreement(ok, {"a": 3})
    with pytest.raises(StatsInputError, match="no 'trace_id' field"):
        agreement(ok, [{"1.1": True}])
    with pytest.raises(StatsInputError, match="cannot read labels from int"):
        agreement(ok, 5)


@pytest.mark.filterwarnings("ignore:trace kept unsegmented")
def test_traces_need_an_annotator_when_they_carry_several(fixtures: Path) -> None:
    human = mast.traces.datasets.load_mad_human(fixtures / "mad" / "human_sample.json")
    with pytest.raises(StatsInputError, match=r"3 annotators \['annotator_1', 'annotator_2'"):
        agreement(human, human)
    with pytest.raises(StatsInputError, match="no trace carries labels from annotator 'nobody'"):
        agreement(human, human, reference_annotator="nobody", candidate_annotator="annotator_1")
    with quiet():
        a = agreement(
            human, human, reference_annotator="annotator_1", candidate_annotator="annotator_2"
        )
        b = agreement(labels_of(human, "annotator_1"), labels_of(human, "annotator_2"))
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert (a.reference_name, a.candidate_name) == ("annotator_1", "annotator_2")


# ------------------------------------------------------------------------------ outputs


def test_outputs_frame_markdown_dict_and_json() -> None:
    ref, cand = random_pair(10, n=25)
    rep = agreement(ref, cand, bootstrap=100, reference_name="human", candidate_name="judge")
    frame = rep.to_frame()
    assert list(frame.index) == [*CODES, VERIFICATION, POOLED, MACRO]
    assert {"kappa", "kappa_low", "kappa_high", "ac1", "f1_low", "tp"} <= set(frame.columns)
    markdown = rep.to_markdown()
    assert "| mode | name | n | kappa | 95% CI |" in markdown
    assert "| pooled | all cells |" in markdown and "Excluded" in markdown
    data = json.loads(rep.to_json())
    assert data["pooled"]["kappa"] == pytest.approx(rep.pooled.kappa)
    assert [r["row"] for r in data["rows"]] == list(frame.index)
    json.dumps(rep.to_dict(), allow_nan=False)  # plain JSON, no NaN
    assert set(rep.intervals["method"]) == {"percentile", "bca", "wald"}
    assert isinstance(rep, AgreementReport) and "judge with human" in str(rep)


def test_forest_plot_returns_a_figure() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    ref, cand = random_pair(11, n=25)
    with quiet():
        rep = agreement(ref, cand, bootstrap=100)
        fig = rep.plot()
        fig_f1 = rep.plot("f1")
    assert isinstance(fig, Figure) and isinstance(fig_f1, Figure)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0].startswith("1.1") and labels[-1].startswith("macro")
    with pytest.raises(StatsInputError, match="metric must be one of"):
        rep.plot("auc")


def test_plot_without_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    ref, cand = random_pair(12, n=10)
    with quiet():
        rep = agreement(ref, cand, bootstrap=0)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'mast-annotator\[plot\]'"):
        rep.plot()


def test_import_mast_stays_light_and_the_function_is_not_shadowed() -> None:
    code = (
        "import sys, mast\n"
        "assert 'pandas' not in sys.modules, 'import mast pulled in pandas'\n"
        "from mast.agree import AgreementReport\n"
        "assert callable(mast.agreement) and mast.agreement.__module__ == 'mast.agree'\n"
        "assert mast.agree.stats.cohen_kappa([1, 0], [1, 0]) == 1.0\n"
        "assert 'agreement_among' in dir(mast)\n"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": ""},
        check=False,
    )
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------- among annotators


def random_raters(
    seed: int, n: int = 40, r: int = 3, modes: list[str] = CODES[:5]
) -> dict[str, Labels]:
    rng = np.random.default_rng(seed)
    truth = rng.random((n, len(modes))) < 0.3
    raters: dict[str, Labels] = {}
    for k in range(r):
        noisy = truth ^ (rng.random(truth.shape) < 0.1)
        missing = rng.random(truth.shape) < 0.08
        raters[f"rater{k}"] = {
            f"t{i}": {c: None if missing[i, j] else bool(noisy[i, j]) for j, c in enumerate(modes)}
            for i in range(n)
            if not (k == 2 and i < 3)  # rater2 did not label t0..t2
        }
    return raters


def test_among_per_mode_and_pooled_equal_stats() -> None:
    modes = CODES[:5]
    raters = random_raters(1, modes=modes)
    rep = agreement_among(raters, modes=modes, bootstrap=0)
    ids = rep.trace_ids
    names = list(raters)
    assert names == rep.annotators and len(ids) == 40

    def ratings(code: str) -> list[list[bool | None]]:
        return [[raters[a].get(t, {}).get(code) for a in names] for t in ids]

    for code in modes:
        row = rep.per_mode.loc[code]
        est = stats.fleiss_kappa_with_se(ratings(code))
        assert row["fleiss"] == est.kappa and row["fleiss_se"] == est.se
        assert same(float(row["alpha"]), stats.krippendorff_alpha(ratings(code)))
        assert same(
            float(row["ac1"]), stats.gwet_ac1_multi(ratings(code), categories=[False, True])
        )
    stacked = [item for code in modes for item in ratings(code)]
    assert same(rep.pooled.fleiss, stats.fleiss_kappa(stacked))  # same items, other order
    assert same(rep.pooled.alpha, stats.krippendorff_alpha(stacked))
    assert rep.excluded.missing["rater2"] == ["t0", "t1", "t2"]
    for a, b in itertools.product(names, names):
        flat_a = [raters[a].get(t, {}).get(c) for t in ids for c in modes]
        flat_b = [raters[b].get(t, {}).get(c) for t in ids for c in modes]
        assert same(float(rep.pairwise.loc[a, b]), stats.cohen_kappa(flat_a, flat_b))
    assert (rep.pairwise.to_numpy() == rep.pairwise.to_numpy().T).all()
    per_mode = rep.pairwise_kappa("1.2")
    flat = {a: [raters[a].get(t, {}).get("1.2") for t in ids] for a in names}
    assert same(
        float(per_mode.loc["rater0", "rater1"]), stats.cohen_kappa(flat["rater0"], flat["rater1"])
    )


def test_among_bootstrap_reproducible_and_intervals_bracket_estimates() -> None:
    raters = random_raters(2)
    a = agreement_among(raters, modes=CODES[:5], bootstrap=300, seed=4)
    b = agreement_among(raters, modes=CODES[:5], bootstrap=300, seed=4)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    p = a.pooled
    assert p.fleiss_low <= p.fleiss <= p.fleiss_high and p.alpha_low <= p.alpha <= p.alpha_high
    assert (
        "Pairwise agreement" in a.to_text() and json.loads(a.to_json())["kind"] == "agreement_among"
    )


def test_majority_vote_and_tie_policies() -> None:
    raters = {
        "a": {"t1": {"1.1": True, "1.2": True, "1.3": None}},
        "b": {"t1": {"1.1": True, "1.2": False, "1.3": None}},
        "c": {"t1": {"1.1": False, "1.2": None, "1.3": None}},
        "d": {"t1": {"1.1": None, "1.2": None, "1.3": None}},
    }
    with quiet():
        rep = agreement_among(raters, modes=["1.1", "1.2", "1.3"], bootstrap=0)
    assert rep.majority()["t1"].to_dict() == {"1.1": True, "1.2": None, "1.3": None}
    assert rep.majority("present")["t1"].to_dict() == {"1.1": True, "1.2": True, "1.3": None}
    assert rep.majority("absent")["t1"].to_dict() == {"1.1": True, "1.2": False, "1.3": None}
    with pytest.raises(StatsInputError, match="tie must be one of"):
        rep.majority("coin")  # type: ignore[arg-type]
    # The majority is a reference like any other.
    with quiet():
        assert agreement(rep.majority(), raters["a"], modes=["1.1"]).per_mode.loc["1.1", "n"] == 1


def test_among_needs_two_annotators_and_valid_options() -> None:
    with pytest.raises(StatsInputError, match="at least two"):
        agreement_among({"solo": {"t": {"1.1": True}}})
    with pytest.raises(StatsInputError, match="tie must be one of"):
        agreement_among({"a": {}, "b": {}}, tie="flip")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match=r"annotators \['z'\] are not among"):
        agreement_among({"a": {}, "b": {}}, annotators=["a", "z"])


# ------------------------------------------------------------------ the MAD human sample


@pytest.mark.filterwarnings("ignore:trace kept unsegmented")
def test_mad_human_sample_agreement_per_version_end_to_end(fixtures: Path) -> None:
    human = mast.traces.datasets.load_mad_human(fixtures / "mad" / "human_sample.json")
    with pytest.warns(UndefinedMetricWarning, match="agreement by version"):
        rep = agreement_by_version(human, bootstrap=500)
    assert list(rep.reports) == ["round1", "rounds2-3", "final", "overall"]
    assert rep.versions == {
        "mad-human/2": "round1",
        "mad-human/7": "rounds2-3",
        "mad-human/4": "round1",
        "mad-human/16": "final",
    }
    names = ["annotator_1", "annotator_2", "annotator_3"]
    # Independently of the report: Fleiss' kappa over the stacked trace x mode cells.
    for version, traces in (
        ("overall", human),
        ("round1", [t for t in human if t.id in ("mad-human/2", "mad-human/4")]),
        ("final", [t for t in human if t.id == "mad-human/16"]),
    ):
        items = [[t.labels[a][c] for a in names] for t in traces for c in CODES]
        report = rep.reports[version]
        assert report.pooled.fleiss == stats.fleiss_kappa(items), version
        assert same(report.pooled.alpha, stats.krippendorff_alpha(items)), version
        assert report.n_traces == len(traces)
    overall = rep.reports["overall"]
    assert overall.pooled.fleiss == pytest.approx(0.93436, abs=1e-4)
    assert overall.pooled.alpha == pytest.approx(0.93483, abs=1e-4)
    assert overall.pairwise.loc["annotator_1", "annotator_3"] == 1.0
    # Round 1 traces agree perfectly; the one final-taxonomy trace does not (1.1 and 3.2).
    assert rep.reports["round1"].pooled.fleiss == 1.0
    assert rep.reports["final"].pooled.fleiss < 0.7
    # The draft modes without a final code are listed, with who marked them present.
    unmapped = rep.unmapped.set_index(["version", "draft_mode"])
    waiting = unmapped.loc[("round1", "3.4 Waiting for known information")]
    assert waiting["traces"] == 2 and list(waiting[names]) == [1, 1, 1]
    assert ("rounds2-3", "2.5 Disagreement induced inaction") in unmapped.index
    assert overall.excluded.unmapped["annotator_1"]["3.4 Waiting for known information"] == 2
    summary = rep.summary()
    assert list(summary.index) == list(rep.reports)
    text = rep.to_text()
    assert "round1" in text and "3.4 Waiting for known information" in text
    json.dumps(rep.to_dict(), allow_nan=False)
    assert len(rep.to_frame().index.get_level_values("version").unique()) == 4


@pytest.mark.filterwarnings("ignore:trace kept unsegmented")
def test_mad_human_sample_judge_style_report(fixtures: Path) -> None:
    human = mast.traces.datasets.load_mad_human(fixtures / "mad" / "human_sample.json")
    with pytest.warns(UndefinedMetricWarning, match=r"kappa for 1\.4, 2\.2, 2\.4, 3\.1"):
        rep = agreement(
            labels_of(human, "annotator_1"), labels_of(human, "annotator_2"), bootstrap=500
        )
    assert rep.pooled.kappa == pytest.approx(0.9, abs=1e-12)
    # Verification labels map by their texts: the final round's disagreement is on 3.3.
    assert rep.per_mode.loc["3.2", ["tp", "fp", "fn", "tn"]].tolist() == [3, 0, 0, 1]
    assert rep.per_mode.loc["3.3", ["tp", "fp", "fn", "tn"]].tolist() == [1, 0, 1, 2]
    assert rep.verification is not None and rep.verification["kappa"] == 1.0
    assert rep.excluded.unmapped["reference"]["3.4 Waiting for known information"] == 2
    assert any("only 4 traces" in note for note in rep.notes)


def test_unmapped_labels_and_versions_come_from_label_sources() -> None:
    trace = mast.Trace(
        id="x",
        labels={"h": FailureVector({"1.1": True}, codes=CODES)},
        label_sources={
            "h": mast.LabelSource(annotator="h", taxonomy_version="round1", unmapped={"Old": True})
        },
    )
    labels = labels_of([trace], "h")
    assert labels.versions == {"x": "round1"} and labels.unmapped == {"x": {"Old": True}}
    assert labels_of([trace], "nobody").missing == ("x",)


def test_any_bad_value_type_in_records_is_reported(tmp_path: Path) -> None:
    del tmp_path
    with pytest.raises(StatsInputError, match="the vector of trace 'a' is a list"):
        agreement({"a": {"1.1": True}}, [{"trace_id": "a", "vector": [True]}])
