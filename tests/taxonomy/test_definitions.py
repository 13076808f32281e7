"""The taxonomy text and the label versions say what the human rubric says (issue 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import mast
from mast._resources import data_dir
from mast.taxonomy import load_label_version
from mast.traces.datasets import load_mad_human
from mast.traces.readings import apply_reading

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUMAN_SAMPLE = FIXTURES / "mad" / "human_sample.json"

PAIRS = [
    {"1.1", "2.3"},
    {"1.3", "1.4"},
    {"1.3", "1.5"},
    {"1.2", "2.6"},
    {"2.2", "2.4"},
    {"3.1", "3.2"},
    {"3.2", "3.3"},
    {"1.4", "2.6"},
]


def test_every_confusable_pair_has_a_decision_rule() -> None:
    tax = mast.load_taxonomy()
    ruled = [set(rule.modes) for rule in tax.decision_rules]
    for pair in PAIRS:
        assert pair in ruled, f"no decision rule for {sorted(pair)}"
    kinds = {frozenset(r.modes): r.kind for r in tax.decision_rules}
    # The annotators co-label 1.3 with 1.5 (every human majority with 1.3 has 1.5).
    assert kinds[frozenset({"1.3", "1.5"})] == "co-label"
    loop = next(r.rule for r in tax.decision_rules if set(r.modes) == {"1.3", "1.5"})
    assert "mark both" in loop
    assert "do not add 1.3" not in loop


def test_rules_never_ban_a_second_real_failure() -> None:
    # Issue 29: a rule separates two readings of one event; two events get both modes.
    tax = mast.load_taxonomy()
    for rule in tax.decision_rules:
        text = " ".join(rule.rule.split())
        assert "One failure gets one mode" not in text
        if rule.kind == "tie-break":
            assert text.startswith("For one "), rule.modes
            assert "both" in text, rule.modes
    # The judge is never shown "the part of the result that is wrong".
    assert all("part of the result that is wrong" not in r.rule for r in tax.decision_rules)


def test_rule_fixes_of_issue_29() -> None:
    tax = mast.load_taxonomy()
    # 1.5 needs a stopping condition met or recognisable; a turn limit alone is not 1.5.
    assert "cuts it off" not in tax["1.5"].definition
    assert any("the limit alone is not 1.5" in n for n in tax["1.5"].not_this)
    # 2.6 covers a report contradicting a tool result or the system's own earlier output.
    assert "tool result" in tax["2.6"].definition
    # 3.2 keeps the draft rubric's qualifier: a check the system could and should have made.
    assert "could and should" in tax["3.2"].definition
    # 1.1 counts at any point of the run, the final answer included.
    assert "final answer included" in tax["1.1"].definition


def test_official_convention_swaps_only_verification() -> None:
    paper = mast.load_taxonomy()
    official = mast.load_taxonomy(verification="official")
    assert official["3.3"].name == "No or Incorrect Verification"
    assert official["3.2"].name == "Weak Verification"
    assert official.verification == "official" and paper.verification == "paper"
    for code in paper.codes:
        if code not in ("3.1", "3.2", "3.3"):
            assert official[code] == paper[code]
    # 3.1 differs only in the boundary that names the unchecked-result mode (official 3.3).
    assert official["3.1"].model_copy(update={"not_this": ()}) == paper["3.1"].model_copy(
        update={"not_this": ()}
    )
    rule = next(r for r in official.decision_rules if set(r.modes) == {"3.2", "3.3"})
    assert "it is 3.3" in rule.rule and "Weak" not in paper["3.2"].name
    # The paper's 3.1/3.2 rule is the 3.1/3.3 rule there; no text names a paper meaning.
    ruled = [set(r.modes) for r in official.decision_rules]
    assert {"3.1", "3.3"} in ruled and {"3.1", "3.2"} not in ruled
    texts = [t for m in official for t in (m.definition, *m.look_for, *m.not_this)]
    texts += [r.rule for r in official.decision_rules]
    assert not any("No or Incomplete" in t or "3.3 Incorrect" in t for t in texts)
    back = official.in_convention("paper")
    assert back.modes == paper.modes and back.decision_rules == paper.decision_rules
    assert mast.load_taxonomy(verification="paper") is paper


def test_unknown_convention_is_a_clear_error() -> None:
    with pytest.raises(mast.TaxonomyError, match=r"no 3\.2/3\.3 convention 'strict'"):
        mast.load_taxonomy(verification="strict")
    with pytest.raises(mast.TaxonomyError, match="declares none"):
        mast.load_taxonomy("sre", verification="official")


def test_verification_meanings_follow_the_paper() -> None:
    tax = mast.load_taxonomy()
    # 3.2 holds with or without a verifier role; 3.3 needs a check that happened.
    assert "with or without a verifier role" in tax["3.2"].definition
    assert "verification actually took place" in tax["3.3"].definition
    assert "supposed to" not in tax["3.2"].definition


def test_human_rubric_inclusions_are_not_excluded() -> None:
    tax = mast.load_taxonomy()
    # Human 1.1: "constraints or requirements of a given task" (no "explicit" needed).
    assert "explicit" not in tax["1.1"].definition
    # Human 3.1 counts pending verification of outputs as necessary information.
    assert "verification of outputs" in tax["3.1"].definition
    not_31 = " ".join(tax["3.1"].not_this)
    assert "stopped before verifying" not in not_31
    # 1.4's look-for list describes losing recent context, not redoing work (that is 1.3).
    assert not any("recomputes" in item for item in tax["1.4"].look_for)
    # Repeated framework text is named as not 1.3.
    assert any("framework text" in item for item in tax["1.3"].not_this)


def test_differences_with_the_human_rubric_are_recorded_in_the_file() -> None:
    text = (data_dir("taxonomy") / "mast.yaml").read_text(encoding="utf-8")
    for marker in ("# Human rubric", "other way round", "ITBench"):
        assert marker in text


def _draft(version: str, name: str) -> mast.taxonomy.DraftMode:
    mode = load_label_version(version).match(name)
    assert mode is not None, name
    return mode


@pytest.mark.parametrize("version", ["round1", "rounds2-3"])
def test_draft_verification_labels_map_by_their_text(version: str) -> None:
    result = _draft(version, "Lack of result verification")
    critical = _draft(version, "Lack of critical verification")
    assert (result.maps_to, critical.maps_to) == ("3.2", "3.3")
    assert (result.code_for("by-number"), critical.code_for("by-number")) == ("3.3", "3.2")
    # The reason quotes the file's own text for the label.
    assert "Omission of proper checking" in result.reason
    assert "verifier exists in the system" in critical.reason


def test_final_round_maps_by_text_and_records_the_name_conflict() -> None:
    final = load_label_version("final")
    named_32 = final.match("3.2 No or Incomplete Verification\n\nLack of critical verification")
    named_33 = final.match("3.3 Incorrect Verification\n\nLack of result verification")
    assert named_32 is not None and named_33 is not None
    assert (named_32.maps_to, named_33.maps_to) == ("3.3", "3.2")
    assert (named_32.code_for("by-number"), named_33.code_for("by-number")) == ("3.2", "3.3")
    header = (data_dir("taxonomy") / "versions" / "final.yaml").read_text(encoding="utf-8")
    assert "names and the texts disagree" in header


def test_version_reasons_quote_the_human_file() -> None:
    """Every quoted reason is text that the bundled MAD sample prints with its label."""
    records = yaml.safe_load(HUMAN_SAMPLE.read_text(encoding="utf-8").replace("NaN", "null"))
    labels = {a["failure mode"] for record in records for a in record["annotations"]}
    corpus = " ".join(" ".join(label.split()) for label in labels)
    for version in ("round1", "rounds2-3", "final"):
        for mode in load_label_version(version).modes:
            for quote in re.findall(r'"([^"]+)"', mode.reason):
                assert " ".join(quote.split()) in corpus, (version, mode.name, quote)


@pytest.mark.parametrize("name", ["official", "by-number"])
def test_by_number_reading_swaps_verification_labels_only(name: str) -> None:
    by_text = load_mad_human(HUMAN_SAMPLE)
    by_number = load_mad_human(HUMAN_SAMPLE, verification=name)
    assert [t.id for t in by_text] == [t.id for t in by_number]
    changed = 0
    for a, b in zip(by_text, by_number, strict=True):
        assert b.metadata["label_reading"] == "official"
        assert {s.verification for s in a.label_sources.values()} == {"paper"}
        assert {s.verification for s in b.label_sources.values()} == {"official"}
        for annotator, vector in a.labels.items():
            other = b.labels[annotator]
            assert other["3.2"] == vector["3.3"] and other["3.3"] == vector["3.2"]
            for code in vector:
                if code not in ("3.2", "3.3"):
                    assert other[code] == vector[code]
            changed += vector["3.2"] != vector["3.3"]
    # Rounds 2 (trace 7) and final (trace 16) have labels where the two differ.
    assert changed >= 2
    # Round 2's "result verification" (draft 3.3), marked by all three, is final 3.2.
    seven = next(t for t in by_text if t.id == "mad-human/7")
    assert [seven.labels[a]["3.2"] for a in sorted(seven.labels)] == [True, True, True]


def test_apply_reading_rejects_unknown_readings() -> None:
    with pytest.raises(ValueError, match="'paper' or 'official'"):
        apply_reading([], "by-name")
    traces = load_mad_human(HUMAN_SAMPLE)
    assert apply_reading(traces, "by-definition") == traces
    assert apply_reading(traces, "paper") == traces
    # Moving there and back gives the labels as loaded.
    there = apply_reading(traces, "official")
    back = apply_reading(there, "paper")
    assert [t.labels for t in back] == [t.labels for t in traces]


def test_o1_labels_of_the_full_file_record_their_convention() -> None:
    from mast.traces.datasets import load_mad

    full = FIXTURES / "mad" / "full_record_chatdev.json"
    official = load_mad(full)
    assert official[0].label_sources["o1"].verification == "official"
    paper = load_mad(full, verification="paper")
    assert paper[0].label_sources["o1"].verification == "paper"
    o1, moved = official[0].labels["o1"], paper[0].labels["o1"]
    assert (moved["3.2"], moved["3.3"]) == (o1["3.3"], o1["3.2"])
    assert all(moved[c] == o1[c] for c in o1 if c not in ("3.2", "3.3"))
    streamed = list(load_mad(full, stream=True, verification="paper"))
    assert streamed[0].labels["o1"] == moved


def test_version_file_readings_must_name_final_codes(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "x",
                "version": "x",
                "modes": [
                    {"code": "1", "name": "Foo", "maps_to": "3.2", "readings": {"by-number": "9.9"}}
                ],
            }
        )
    )
    with pytest.raises(mast.TaxonomyError, match=r"9\.9"):
        load_label_version(path)


def test_decision_rules_must_name_known_codes(tmp_path: Path) -> None:
    data = yaml.safe_load((data_dir("taxonomy") / "mast.yaml").read_text(encoding="utf-8"))
    data["decision_rules"] = [{"modes": ["3.2", "9.9"], "rule": "x"}]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(mast.TaxonomyError, match="unknown codes"):
        mast.load_taxonomy(path)
