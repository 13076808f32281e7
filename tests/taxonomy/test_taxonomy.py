from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import mast
from mast._resources import data_dir
from mast.taxonomy import load_label_version, version_for_round

FINAL = [
    ("1.1", "Disobey Task Specification", "FC1"),
    ("1.2", "Disobey Role Specification", "FC1"),
    ("1.3", "Step Repetition", "FC1"),
    ("1.4", "Loss of Conversation History", "FC1"),
    ("1.5", "Unaware of Termination Conditions", "FC1"),
    ("2.1", "Conversation Reset", "FC2"),
    ("2.2", "Fail to Ask for Clarification", "FC2"),
    ("2.3", "Task Derailment", "FC2"),
    ("2.4", "Information Withholding", "FC2"),
    ("2.5", "Ignored Other Agent's Input", "FC2"),
    ("2.6", "Reasoning-Action Mismatch", "FC2"),
    ("3.1", "Premature Termination", "FC3"),
    ("3.2", "No or Incomplete Verification", "FC3"),
    ("3.3", "Incorrect Verification", "FC3"),
]


def test_final_taxonomy_has_the_fourteen_modes_in_order() -> None:
    tax = mast.load_taxonomy()
    assert [(m.code, m.name, m.category) for m in tax] == FINAL
    assert tax.codes == [c for c, _, _ in FINAL]
    assert all(m.id == f"FM-{m.code}" for m in tax)
    assert {m.stage for m in tax} == {"pre-execution", "execution", "post-execution"}
    assert all(m.definition and m.look_for and m.not_this for m in tax)
    assert tax.in_category("FC3") == ["3.1", "3.2", "3.3"]
    assert tax.category("2.4").name == "Inter-Agent Misalignment"


def test_aliases_resolve_to_codes() -> None:
    tax = mast.load_taxonomy()
    assert tax.code_for_name("Action-Reasoning Mismatch") == "2.6"
    assert tax.code_for_name("  information WITHOLDING ") == "2.4"
    # By definition: "result verification" (checking left out) is 3.2, "critical
    # verification" (a verifier that exists but is weak) is 3.3.
    assert tax.code_for_name("Lack of result verification") == "3.2"
    assert tax.code_for_name("Lack of critical verification") == "3.3"
    assert tax.code_for_name("Nonexistent mode") is None


def test_verification_modes_are_pinned_and_the_conflict_is_recorded() -> None:
    tax = mast.load_taxonomy()
    assert tax["3.2"].name == "No or Incomplete Verification"
    assert tax["3.3"].name == "Incorrect Verification"
    text = (data_dir("taxonomy") / "mast.yaml").read_text()
    # The conflicting official namings are documented in the file itself.
    assert "3.2 and 3.3" in text and "other way round" in text


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "tax.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _minimal() -> dict[str, object]:
    return {
        "name": "SRE",
        "version": "0.1",
        "categories": [{"code": "C1", "name": "Diagnosis"}],
        "modes": [
            {
                "code": "1.1",
                "id": "S-1.1",
                "name": "Wrong root cause",
                "category": "C1",
                "definition": "The agent names the wrong root cause.",
            },
        ],
    }


def test_custom_taxonomy_loads_from_a_path(tmp_path: Path) -> None:
    tax = mast.load_taxonomy(_write(tmp_path, _minimal()))
    assert tax.label == "SRE 0.1"
    assert tax.codes == ["1.1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["modes"].append(dict(d["modes"][0])), "duplicate mode codes"),
        (lambda d: d["modes"][0].update(category="C9"), "not one of the declared categories"),
        (lambda d: d["modes"][0].update(definiton="typo"), "Extra inputs are not permitted"),
        (lambda d: d["modes"][0].update(code="one"), "String should match pattern"),
        (lambda d: d.update(modes=[]), "at least one mode"),
    ],
)
def test_invalid_taxonomies_raise_clear_errors(tmp_path: Path, change, message: str) -> None:
    data = _minimal()
    change(data)
    with pytest.raises(mast.TaxonomyError, match=message) as info:
        mast.load_taxonomy(_write(tmp_path, data))
    assert str(tmp_path) in str(info.value)


def test_unreadable_taxonomy_files(tmp_path: Path) -> None:
    with pytest.raises(mast.TaxonomyError, match="cannot read"):
        mast.load_taxonomy(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("modes: [unclosed")
    with pytest.raises(mast.TaxonomyError, match="not valid YAML"):
        mast.load_taxonomy(bad)


# The mapping table from the foundation issue (facts from the released human file).
ROUND1 = {
    "1.1": "Poor task constraint compliance",
    "1.2": "Disobey role specification",
    "1.3": "Step repetition",
    "1.4": "Backtracking interruption",
    "1.5": "Unaware of stopping conditions",
    "2.1": "Conversation reset",
    "2.2": "Fail to elicit clarification",
    "2.3": "Derailment from task",
    "2.4": "Withholding relevant information",
    "2.5": "Ignoring suggestions from agents",
    "2.6": "Inconsistency between reasoning and action",
    "3.1": "Ill specified termination condition leading to premature termination",
    "3.2": "Lack of result verification",
    "3.3": "Lack of critical verification",
}
ROUNDS23_CODES = {
    "1.1": "1.1",
    "1.2": "1.7",
    "1.3": "1.5",
    "1.4": "1.6",
    "1.5": "1.3",
    "2.1": "2.1",
    "2.2": "2.2",
    "2.3": "2.3",
    "2.4": "2.6",
    "2.5": "2.7",
    "2.6": "1.2",
    "3.1": "3.1",
    "3.2": "3.3",  # draft 3.3 "Lack of result verification"
    "3.3": "3.2",  # draft 3.2 "Lack of critical verification"
}


def test_round1_maps_by_definition() -> None:
    version = load_label_version("round1")
    assert len(version.modes) == 18
    for final, name in ROUND1.items():
        mode = version.match(name)
        assert mode is not None and mode.maps_to == final, name
    assert sorted(m.code for m in version.unmapped) == ["1.3", "2.1", "3.1", "3.4"]


def test_rounds23_maps_by_definition() -> None:
    version = load_label_version("rounds2-3")
    assert len(version.modes) == 17
    by_draft = {m.code: m.maps_to for m in version.modes}
    for final, draft in ROUNDS23_CODES.items():
        assert by_draft[draft] == final
    assert sorted(m.code for m in version.unmapped) == ["1.4", "2.4", "2.5"]


def test_matching_is_by_name_and_tolerates_the_files_spelling() -> None:
    round1 = load_label_version("round1")
    # The number in the label is the draft number; the name decides.
    assert round1.match("2.2 Step repetition\n\nUnnecessary reiteration…").maps_to == "1.3"
    assert round1.match("2.4 Conversation reset \n\ndefinition").maps_to == "2.1"
    assert round1.match("9.9 Step repetition").maps_to == "1.3"
    assert round1.match("1.4 Fail to elicit clarification\n(between agents)\n…").maps_to == "2.2"
    final = load_label_version("final")
    assert final.match("2.4 Information Witholding").maps_to == "2.4"
    assert final.match("2.5 Ignored Other Agents' Input").maps_to == "2.5"
    assert final.match("2.5 Something else entirely") is None
    assert round1.match("2.2") is None  # a bare number never matches


def test_rounds_pick_their_version() -> None:
    assert version_for_round("Round 1").version == "round1"
    assert version_for_round("round 3").version == "rounds2-3"
    assert version_for_round("Generlazability").version == "final"
    assert version_for_round("Round 9") is None


def test_custom_label_version_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": "x", "version": "x", "modes": [{"code": "1", "name": "Foo", "maps_to": "9.9"}]}
        )
    )
    with pytest.raises(mast.TaxonomyError, match=r"maps_to codes \['9.9'\]"):
        load_label_version(path)
    with pytest.raises(mast.TaxonomyError, match="no label version"):
        load_label_version("round7")
