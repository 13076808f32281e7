"""3.2/3.3 conventions named in agreement reports, and agreement per system."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import mast
from mast.agree import labels_of, stats
from mast.cli import main
from mast.errors import VerificationConventionWarning
from mast.traces.datasets import load_mad_human

HUMAN = Path(__file__).resolve().parents[1] / "fixtures" / "mad" / "human_sample.json"


def _quiet_agreement(*args: object, **kwargs: object) -> mast.AgreementReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mast.agree.stats.UndefinedMetricWarning)
        return mast.agreement(*args, bootstrap=0, **kwargs)  # type: ignore[arg-type]


def test_same_convention_names_both_and_does_not_warn() -> None:
    human = load_mad_human(HUMAN)
    rep = _quiet_agreement(labels_of(human, "annotator_1"), labels_of(human, "annotator_2"))
    assert rep.conventions == {"reference": "paper", "candidate": "paper"}
    assert not rep.conventions_differ
    assert "3.2/3.3 convention: annotator_1: paper; annotator_2: paper" in rep.to_text()
    assert not rep.to_text().startswith("WARNING")


def test_different_conventions_warn_and_lead_with_the_merged_row() -> None:
    paper = load_mad_human(HUMAN)
    official = load_mad_human(HUMAN, verification="official")
    with pytest.warns(VerificationConventionWarning, match="annotator_1 uses paper"):
        rep = _quiet_agreement(labels_of(paper, "annotator_1"), labels_of(official, "annotator_2"))
    assert rep.conventions_differ and "annotator_2 uses official" in rep.notes[0]
    text = rep.to_text()
    assert text.startswith("WARNING: 3.2/3.3 conventions differ")
    table = text.split("\n\n")[1].splitlines()[2:]  # the per-mode table, below its rule
    rows = [line.split()[0] for line in table]
    assert rows[0] == "3.2∨3.3", rows  # the merged row, comparable in both conventions, first
    data = rep.to_dict()
    assert data["conventions"] == {"reference": "paper", "candidate": "official", "differ": True}


def test_unknown_convention_is_not_a_difference_and_can_be_given() -> None:
    human = load_mad_human(HUMAN)
    plain = {t: dict(v) for t, v in labels_of(human, "annotator_2").items()}
    rep = _quiet_agreement(labels_of(human, "annotator_1"), plain)
    assert rep.conventions["candidate"] is None and not rep.conventions_differ
    assert "annotator_2: not recorded" not in rep.to_text()  # the plain mapping is "candidate"
    with pytest.warns(VerificationConventionWarning):
        given = _quiet_agreement(
            labels_of(human, "annotator_1"), plain, candidate_verification="official"
        )
    assert given.conventions["candidate"] == "official"


def test_judge_records_carry_their_convention() -> None:
    from mast.agree.conventions import source_verification

    records = [
        {"trace_id": "t", "status": "ok", "vector": {}, "judge": {"verification": "official"}}
    ]
    assert source_verification(records) == "official"
    # A mast judge record from before the convention was recorded: the paper's (the only one).
    old = [{"trace_id": "t", "status": "ok", "vector": {}, "judge": {}, "taxonomy": "MAST 1.0"}]
    assert source_verification(old) == "paper"
    both = [*records, {**records[0], "judge": {"verification": "paper"}}]
    assert source_verification(both) == "mixed"


def test_per_system_breakdown_matches_kappa_on_each_subset() -> None:
    human = load_mad_human(HUMAN)
    a1, a2 = labels_of(human, "annotator_1"), labels_of(human, "annotator_2")
    rep = _quiet_agreement(a1, a2)
    frame = rep.per_system
    assert list(frame.index) == ["AG2", "MetaGPT"]
    assert frame["traces"].tolist() == [2, 2] and frame["cells"].tolist() == [28, 28]
    meta = [t.id for t in human if t.system == "MetaGPT"]
    codes = mast.load_taxonomy().codes
    y1 = [a1[i][c] for i in meta for c in codes]
    y2 = [a2[i][c] for i in meta for c in codes]
    assert frame.loc["MetaGPT", "kappa"] == pytest.approx(stats.cohen_kappa(y1, y2))
    assert rep.to_dict()["per_system"][1]["system"] == "MetaGPT"
    # Plain mappings know no systems: the breakdown is empty, not invented.
    plain = _quiet_agreement(dict(a1.items()), dict(a2.items()))
    assert plain.per_system.empty
    assert _quiet_agreement(dict(a1.items()), dict(a2.items()), systems={"mad-human/2": "AG2"}
                            ).per_system.index.tolist() == ["AG2", "unknown"]  # fmt: skip


def test_cli_agree_warns_names_both_and_leads_with_merged_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    human = load_mad_human(HUMAN)
    path = tmp_path / "other.csv"
    codes = mast.load_taxonomy().codes
    lines = ["trace_id," + ",".join(codes)]
    for trace in human:
        vec = trace.labels["annotator_2"]
        lines.append(
            trace.id + "," + ",".join("" if vec[c] is None else str(int(vec[c])) for c in codes)
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = [
        *("agree", "--reference", str(HUMAN), "--reference-annotator", "annotator_1"),
        *("--candidate", str(path), "--candidate-verification", "official", "--bootstrap", "0"),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("WARNING: 3.2/3.3 conventions differ: annotator_1 uses paper")
    assert "other uses official" in captured.out
    assert "VerificationConventionWarning" in captured.err
    table = captured.out.split("\n\n")[1].splitlines()[2:]
    assert table[0].split()[0] == "3.2∨3.3"
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["conventions"]["differ"] is True
