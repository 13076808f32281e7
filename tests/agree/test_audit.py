"""mast.audit_taxonomy / mast taxonomy --audit: rules checked against labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mast
from mast.cli import main
from mast.traces.datasets import load_mad_human

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLANTED_TAX = FIXTURES / "audit" / "planted_taxonomy.yaml"
PLANTED = FIXTURES / "audit" / "planted_labels.csv"
HUMAN = FIXTURES / "mad" / "human_sample.json"


def _planted() -> dict[str, dict[str, dict[str, bool | None]]]:
    out: dict[str, dict[str, dict[str, bool | None]]] = {}
    rows = PLANTED.read_text(encoding="utf-8").splitlines()
    header = rows[0].split(",")
    for line in rows[1:]:
        cells = dict(zip(header, line.split(","), strict=True))
        labels = {c: (None if cells[c] == "" else cells[c] == "1") for c in ("1.1", "1.2", "1.3")}
        out.setdefault(cells["annotator"], {})[cells["trace_id"]] = labels
    return out


def test_planted_co_label_contradicts_the_exclusive_rule() -> None:
    audit = mast.audit_taxonomy(PLANTED_TAX, _planted())
    ab = audit.rule("1.1", "1.2")
    # t2: 1.1 by a, b (2 of 3), 1.2 by all three -> the majority co-marks an exclusive pair.
    assert ab.kind == "exclusive" and ab.contradicted and ab.contradicting == ["t2"]
    assert ab.co_labelled == 1 and ab.per_annotator == {"a": 1, "b": 1, "c": 0}
    assert ab.contradicted_by == ["a", "b"]
    bc = audit.rule("1.2", "1.3")
    # t2 (b, c, and a majority) and t3 (a, b): co-labels are allowed by a tie-break.
    assert bc.kind == "tie-break" and not bc.contradicted and bc.co_labelled == 2
    assert bc.per_annotator == {"a": 1, "b": 2, "c": 1}
    # t3 1.1: a no, b unknown, c yes -> a tie, unknown: counted out of `known`.
    assert audit.prevalence["1.1"]["known"] == 3 and audit.prevalence["1.1"]["majority"] == 3
    # The pair no rule names (1.1/1.3) is listed with its majority co-labels (t2, t4).
    assert [(p.modes, p.co_labelled) for p in audit.unruled_pairs] == [(("1.1", "1.3"), 2)]


def test_an_honest_exclusive_rule_is_not_flagged() -> None:
    labels = _planted()
    for annotator in labels.values():
        annotator["t2"]["1.1"] = False
    audit = mast.audit_taxonomy(PLANTED_TAX, labels)
    assert not audit.rule("1.1", "1.2").contradicted


def test_mad_human_sample_contradicts_no_exclusive_rule() -> None:
    audit = mast.audit_taxonomy(None, load_mad_human(HUMAN))
    assert audit.traces == 4 and audit.annotators == ["annotator_1", "annotator_2", "annotator_3"]
    assert any(r.kind == "exclusive" for r in audit.rules)
    assert [r.modes for r in audit.rules if r.contradicted] == []
    # The co-labels the 1.0 rules forbade are there: 1.3 with 1.5, 3.2 with 3.3.
    assert audit.rule("1.3", "1.5").co_labelled == 1
    assert audit.rule("3.2", "3.3").co_labelled == 2
    assert audit.notes == []  # labels and taxonomy are both in the paper convention


def test_convention_mismatch_is_noted() -> None:
    official = load_mad_human(HUMAN, verification="official")
    audit = mast.audit_taxonomy(None, official)
    assert audit.notes and "official" in audit.notes[0] and "paper" in audit.notes[0]
    assert mast.audit_taxonomy(mast.load_taxonomy(verification="official"), official).notes == []


def test_cli_audit_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["taxonomy", str(PLANTED_TAX), "--audit", str(PLANTED), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rules = {tuple(r["modes"]): r for r in data["rules"]}
    assert rules[("1.1", "1.2")]["kind"] == "exclusive"
    assert rules[("1.1", "1.2")]["co_labelled"] == 1
    assert rules[("1.1", "1.2")]["contradicted"] is True
    assert rules[("1.2", "1.3")]["contradicted"] is False
    assert main(["taxonomy", str(PLANTED_TAX), "--audit", str(PLANTED), "--strict"]) == 1
    text = capsys.readouterr().out
    assert "CONTRADICTED on t2" in text
    assert main(["taxonomy", "--audit", str(HUMAN)]) == 0
    text = capsys.readouterr().out
    assert "1.5 / 3.1" in text and "holds" in text and "CONTRADICTED" not in text


def test_cli_audit_of_one_label_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "judge.csv"
    path.write_text("trace_id,1.1,1.2,1.3\nt1,1,1,0\nt2,0,1,1\n", encoding="utf-8")
    assert main(["taxonomy", str(PLANTED_TAX), "--audit", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["annotators"] == ["judge"]
    assert {tuple(r["modes"]): r["contradicted"] for r in data["rules"]}[("1.1", "1.2")]


def test_missing_label_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["taxonomy", "--audit", "no-such-labels.json"]) != 0
    assert "no-such-labels.json" in capsys.readouterr().err
