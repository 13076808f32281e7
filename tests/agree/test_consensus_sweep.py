"""mast.consensus on hand-made results and mast.sweep_confidence against a hand computation."""

from __future__ import annotations

import math

import pytest

import mast
from mast.judge.annotation import Annotation
from mast.judge.verdict import Finding
from mast.traces.model import FailureVector

T, F, N = True, False, None


def ann(trace: str, sample: int, cells: dict[str, bool | None], status: str = "ok") -> Annotation:
    return Annotation(
        trace_id=trace,
        status=status,  # type: ignore[arg-type]
        taxonomy="MAST 1.0",
        vector=FailureVector(cells, codes=list(cells)),
        judge={"provider": "openai", "model": "m", **({"sample": sample} if sample else {})},
    )


def runs() -> list[Annotation]:
    return [
        ann("t1", 0, {"1.1": T, "1.2": F}),
        ann("t1", 1, {"1.1": T, "1.2": F}),
        ann("t1", 2, {"1.1": F, "1.2": F}),
        ann("t2", 0, {"1.1": F, "1.2": T}),
        ann("t2", 1, {"1.1": F, "1.2": N}),
        ann("t2", 2, {"1.1": F, "1.2": F}),
        ann("t3", 0, {"1.1": T, "1.2": T}),
        ann("t3", 1, {"1.1": T, "1.2": T}),
        ann("t3", 2, {"1.1": T, "1.2": T}),
        ann("t4", 0, {"1.1": T, "1.2": T}),  # judged once: not in the comparison
        ann("t3", 1, {"1.1": N, "1.2": N}, status="error"),  # failed: left out, counted
    ]


def test_consensus_by_hand() -> None:
    rep = mast.consensus(runs())
    assert rep.runs == ["openai/m", "openai/m#1", "openai/m#2"]
    assert rep.majority["t1"].to_dict() == {"1.1": T, "1.2": F}
    assert rep.majority["t2"].to_dict() == {"1.1": F, "1.2": None}  # one yes, one no: a tie
    assert rep.majority["t3"].to_dict() == {"1.1": T, "1.2": T}
    assert "t4" not in rep.majority
    # flips: 1.1 on t1; 1.2 on t2 (its unknown answer does not count)
    assert (rep.per_mode["1.1"].flips, rep.per_mode["1.1"].n_traces) == (1, 3)
    assert rep.per_mode["1.2"].flip_rate == pytest.approx(1 / 3)
    assert rep.pooled_flip_rate == pytest.approx(2 / 6)
    # Fleiss on 1.1, items (T,T,F) (F,F,F) (T,T,T): P = 7/9, Pe = 41/81 -> 22/40
    assert rep.per_mode["1.1"].fleiss_kappa == pytest.approx(0.55)
    # Cohen, run 0 vs run 2 over the six cells: po = 2/3, pe = 4/9 -> 0.4
    assert rep.pairwise_kappa[("openai/m", "openai/m#2")] == pytest.approx(0.4)
    assert rep.excluded == {"failed records": 1, "traces judged by one run only": 1}
    text = rep.to_text()
    assert "flip rate 33.3%" in text and "beside agreement with people" in text
    assert rep.to_dict()["per_mode"]["1.1"]["flips"] == 1


def test_consensus_of_different_models_and_undefined_kappa() -> None:
    a = [ann("t1", 0, {"1.1": T}), ann("t2", 0, {"1.1": T})]
    b = [
        Annotation(trace_id=t, status="ok", taxonomy="MAST 1.0",
                   vector=FailureVector({"1.1": T}), judge={"provider": "anthropic", "model": "c"})
        for t in ("t1", "t2")
    ]  # fmt: skip
    rep = mast.consensus(a + b)
    assert rep.runs == ["openai/m", "anthropic/c"]
    assert rep.pooled_flip_rate == 0.0
    assert math.isnan(rep.mean_pairwise_kappa)  # both always said yes: kappa is undefined
    assert "undef." in rep.to_text()


def sweep_case() -> tuple[dict[str, dict[str, bool | None]], list[Annotation]]:
    reference: dict[str, dict[str, bool | None]] = {
        "a": {"1.1": T}, "b": {"1.1": F}, "c": {"1.1": T}, "d": {"1.1": F}, "e": {"1.1": F}
    }  # fmt: skip
    said = {"a": (T, 0.9), "b": (T, 0.6), "c": (T, 0.5), "d": (F, 0.7), "e": (T, 0.55)}
    anns = [
        Annotation(
            trace_id=t,
            status="ok",
            taxonomy="MAST 1.0",
            vector=FailureVector({"1.1": v}),
            findings={"1.1": Finding(code="1.1", present=v, confidence=c)},
        )
        for t, (v, c) in said.items()
    ]
    return reference, anns


def test_sweep_against_a_hand_computation() -> None:
    reference, anns = sweep_case()
    rep = mast.sweep_confidence(reference, anns)
    *tried, above = rep.points  # the last cut-off is just above the highest confidence
    by_cut = {p.threshold: p for p in tried}
    assert sorted(by_cut) == [0.0, 0.5, 0.55, 0.6, 0.9] and above.threshold > 0.9
    # by hand: kappa = (po - pe) / (1 - pe) at each cut-off
    assert by_cut[0.0].kappa == pytest.approx(0.16 / 0.56)  # po 3/5, pe .44
    assert by_cut[0.55].kappa == pytest.approx(-0.08 / 0.52)  # po 2/5, pe .48
    assert by_cut[0.6].kappa == pytest.approx(0.08 / 0.48)  # po 3/5, pe .52
    assert by_cut[0.9].kappa == pytest.approx(0.24 / 0.44)  # po 4/5, pe .56
    assert above.positives == 0 and above.kappa == pytest.approx(0.0)
    assert by_cut[0.0].f1 == pytest.approx(2 / 3) and by_cut[0.6].f1 == pytest.approx(0.5)
    assert rep.best.threshold == 0.9
    assert rep.warning == mast.agree.sweep.OVERFIT_WARNING
    assert "overestimate" in rep.to_text()
    by_f1 = mast.sweep_confidence(reference, anns, metric="f1")
    assert by_f1.best.threshold == 0.0  # 2/3 at 0.0 and at 0.9: the lower cut-off wins


def test_sweep_fitted_on_a_subset_reports_the_rest_apart() -> None:
    reference, anns = sweep_case()
    rep = mast.sweep_confidence(reference, anns, fit={"a", "b", "d"})
    assert rep.best.threshold == 0.9 and rep.best.kappa == pytest.approx(1.0)
    assert rep.warning is None
    assert rep.held_out is not None
    assert rep.held_out.n_cells == 2 and rep.held_out.kappa == pytest.approx(0.0)
    with pytest.raises(ValueError, match="metric"):
        mast.sweep_confidence(reference, anns, metric="auc")  # type: ignore[arg-type]
