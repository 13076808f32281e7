"""Whole-trace few-shot examples: loading, gold labels, errors, selection.

mast bundles no whole-trace examples any more (its few-shot material is the excerpt pool,
tested in test_fewshot_pool.py); these tests use the former bundled files, which are cut
from MAD human-labelled traces and now live in tests/fixtures/fewshot_mad/.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import yaml

import mast
from mast.errors import FewShotError, MastError
from mast.judge.prompt.fewshot import (
    FewShotExample,
    estimate_example_tokens,
    load_examples,
    select_examples,
    unquoted_positives,
)
from mast.judge.prompt.render import _example_answer, render_system
from mast.judge.prompt.shots import Shots
from mast.judge.reply.parse import parse_response
from mast.taxonomy import load_taxonomy

CODES = load_taxonomy().codes
MAD_EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "fewshot_mad"
BUNDLED = load_examples(MAD_EXAMPLES)


def test_bundled_examples_load_and_cover_all_codes() -> None:
    assert len(BUNDLED) >= 3
    assert len({ex.id for ex in BUNDLED}) == len(BUNDLED)
    for ex in BUNDLED:
        assert list(ex.labels) == CODES or sorted(ex.labels) == sorted(CODES)
        assert "CC-BY-4.0" in ex.attribution
        assert re.search(r"\[s\d+\]", ex.rationale), ex.id
        # short excerpts: a few thousand characters of steps at most
        assert sum(len(s.content) for s in ex.steps) < 5000, ex.id
        assert all(s.content.strip() for s in ex.steps)
        assert [s.index for s in ex.steps] == [int(s.id[1:]) - 1 for s in ex.steps]
    covered = {c for ex in BUNDLED for c in ex.positives}
    assert len(covered) >= 8


def _majority(trace: mast.Trace) -> dict[str, bool]:
    votes = [trace.labels[f"annotator_{i}"] for i in (1, 2, 3)]
    out = {}
    for code in CODES:
        values = [v[code] for v in votes]
        assert None not in values
        out[code] = sum(bool(v) for v in values) >= 2
    return out


def test_gold_labels_are_the_human_majority(fixtures: Path) -> None:
    # The bundled MAD examples must carry the majority of the three annotators, mapped to
    # final codes by the dataset loader (independently of how the files were written).
    human = {t.metadata["mad_trace_id"]: t for t in mast.traces.datasets.load_mad_human(
        fixtures / "mad" / "human_sample.json")}  # fmt: skip
    checked = 0
    for ex in BUNDLED:
        match = re.search(r"trace_id (\d+)", ex.source)
        if match and int(match.group(1)) in human:
            assert ex.labels == _majority(human[int(match.group(1))]), ex.id
            checked += 1
    assert checked == len(BUNDLED)


@pytest.mark.parametrize("example", BUNDLED, ids=lambda ex: ex.id)
def test_gold_answer_round_trips_through_the_parser(example: FewShotExample) -> None:
    # The answer the prompt shows for the example (with the file's quotes).
    answer = _example_answer(example, load_taxonomy())
    verdict = mast.judge.reply.grounding.ground(
        parse_response(json.dumps(answer)), example.to_trace()
    )
    assert verdict.vector.to_dict() == example.labels
    assert verdict.task_completed is example.task_completed
    for code, refs in example.evidence.items():
        assert [e.step_id for e in verdict.findings[code].evidence] == refs
        # every cited step exists and every quote is found in it: under the evidence policy
        # the examples teach grounded evidence, not bare citations (grounded None)
        assert all(e.grounded is True for e in verdict.findings[code].evidence), code
        assert not verdict.findings[code].dropped


def test_step_ids_alone_give_citations_not_evidence() -> None:
    # The step-id-only form still loads and renders, with empty quotes (none is invented):
    # the evidence policy counts those as citations (grounded None).
    example = BUNDLED[1].model_copy(update={"quotes": {}})
    answer = _example_answer(example, load_taxonomy())
    shown = [e for c in example.positives for e in answer["modes"][c]["evidence"]]
    assert shown and all(e["quote"] == "" for e in shown)
    verdict = mast.judge.reply.grounding.ground(
        parse_response(json.dumps(answer)), example.to_trace()
    )
    assert all(e.grounded is None for c in example.positives for e in verdict.findings[c].evidence)
    assert (
        unquoted_positives([example])
        and "example ag2-gsmplus-ribbon" in (unquoted_positives([example])[0])
    )


# ---------------------------------------------------------------- selection


def test_selection_by_count_is_deterministic_and_balanced() -> None:
    assert select_examples(BUNDLED, count=0) == []
    one = select_examples(BUNDLED, count=1)
    assert len(one) == 1
    # the first pick covers the most modes
    assert len(one[0].positives) == max(len(ex.positives) for ex in BUNDLED)
    two = select_examples(BUNDLED, count=2)
    assert two[0] == one[0]
    gains = [len(set(ex.positives) - set(one[0].positives)) for ex in BUNDLED if ex != one[0]]
    assert len(set(two[1].positives) - set(one[0].positives)) == max(gains)
    assert select_examples(BUNDLED) == select_examples(BUNDLED, count=len(BUNDLED) + 5)
    assert len(select_examples(BUNDLED)) == len(BUNDLED)


def test_selection_does_not_depend_on_input_order() -> None:
    reference = select_examples(BUNDLED, count=3)
    for perm in itertools.permutations(BUNDLED):
        assert select_examples(list(perm), count=3) == reference


def test_selection_by_token_budget() -> None:
    costs = {ex.id: estimate_example_tokens(ex) for ex in BUNDLED}
    assert select_examples(BUNDLED, token_budget=0) == []
    assert select_examples(BUNDLED, token_budget=min(costs.values()) - 1) == []
    budget = sorted(costs.values())[0] + sorted(costs.values())[1]
    chosen = select_examples(BUNDLED, token_budget=budget)
    assert chosen and sum(costs[ex.id] for ex in chosen) <= budget
    everything = select_examples(BUNDLED, token_budget=sum(costs.values()))
    assert len(everything) == len(BUNDLED)
    assert len(select_examples(BUNDLED, count=1, token_budget=10**6)) == 1


def test_selection_rejects_negative_limits() -> None:
    with pytest.raises(ValueError):
        select_examples(BUNDLED, count=-1)
    with pytest.raises(ValueError):
        select_examples(BUNDLED, token_budget=-5)


def test_clean_example_is_preferred_once_positives_are_covered() -> None:
    base = BUNDLED[0].model_dump()
    all_positive = FewShotExample.model_validate(
        {
            **base,
            "id": "all",
            "labels": dict.fromkeys(CODES, True),
            "evidence": {},
            "quotes": {},
            "notes": {},
        }
    )
    clean = FewShotExample.model_validate(
        {**base, "id": "clean", "labels": dict.fromkeys(CODES, False), "evidence": {}, "quotes": {},
         "notes": {}}
    )  # fmt: skip
    half = FewShotExample.model_validate(
        {**base, "id": "half", "labels": {c: i % 2 == 0 for i, c in enumerate(CODES)},
         "evidence": {}, "quotes": {}, "notes": {}}
    )  # fmt: skip
    assert [ex.id for ex in select_examples([half, clean, all_positive])] == [
        "all",
        "clean",
        "half",
    ]


# ---------------------------------------------------------------- loading and errors


def _write(folder: Path, name: str, data: object) -> Path:
    path = folder / name
    if name.endswith(".json"):
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _minimal(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "id": "mini",
        "source": "written for the tests",
        "attribution": "mast developers",
        "task": "Add 2 and 2.",
        "labels": dict.fromkeys(CODES, False) | {"3.3": True},
        "rationale": "The checker at [s2] accepts 5.",
        "evidence": {"3.3": ["s2"]},
        "steps": [
            {"id": "s1", "agent": "solver", "content": "2 + 2 = 5"},
            {"id": "s2", "agent": "checker", "content": "Looks right."},
        ],
    }
    data.update(changes)
    return data


def test_load_a_folder_yaml_and_json(tmp_path: Path) -> None:
    _write(tmp_path, "b.yaml", _minimal(id="b"))
    _write(tmp_path, "a.json", _minimal(id="a"))
    (tmp_path / "README.md").write_text("not an example")
    loaded = load_examples(tmp_path)
    assert [ex.id for ex in loaded] == ["a", "b"]
    assert loaded[0].steps[1].index == 1
    assert load_examples(tmp_path / "b.yaml")[0].id == "b"


def test_step_ids_and_index_can_be_left_out(tmp_path: Path) -> None:
    steps = [{"content": "first"}, {"id": "s7", "content": "later"}]
    path = _write(tmp_path, "x.yaml", _minimal(steps=steps, evidence={"3.3": ["s7"]},
                                                rationale="See [s7]."))  # fmt: skip
    ex = load_examples(path)[0]
    assert [(s.id, s.index) for s in ex.steps] == [("s1", 0), ("s7", 6)]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"extra_field": 1}, "extra_field"),
        ({"labels": dict.fromkeys(CODES[:-1], False), "evidence": {}}, "missing ['3.3']"),
        ({"labels": dict.fromkeys([*CODES, "1.6"], False), "evidence": {}}, "taxonomy ['1.6']"),
        ({"evidence": {"3.3": ["s9"]}}, "cites steps ['s9']"),
        ({"evidence": {"1.1": ["s1"]}}, "labelled false"),
        ({"rationale": "See [s4]."}, "cites steps ['s4']"),
        ({"steps": []}, "at least one step"),
        ({"labels": "all false"}, "labels"),
    ],
)
def test_invalid_examples_name_the_file(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    path = _write(tmp_path, "bad.yaml", _minimal(**changes))
    with pytest.raises(FewShotError) as info:
        load_examples(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    assert isinstance(info.value, MastError)


def test_unquoted_numeric_codes_get_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "num.yaml"
    text = yaml.safe_dump(_minimal(), sort_keys=False).replace("'1.1':", "1.1:")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FewShotError, match="quote them as strings"):
        load_examples(path)


def test_duplicate_ids_and_bad_syntax(tmp_path: Path) -> None:
    _write(tmp_path, "one.yaml", _minimal())
    _write(tmp_path, "two.yaml", _minimal())
    with pytest.raises(FewShotError, match="already used"):
        load_examples(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(FewShotError, match="not valid JSON"):
        load_examples(broken)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FewShotError, match="no few-shot example files"):
        load_examples(empty)
    with pytest.raises(FewShotError, match="no such file"):
        load_examples(tmp_path / "missing")


def test_custom_taxonomy_checks_its_own_codes(tmp_path: Path) -> None:
    tax_path = tmp_path / "tax.yaml"
    tax_path.write_text(
        yaml.safe_dump(
            {
                "name": "Mini",
                "version": "1",
                "categories": [{"code": "X", "name": "x"}],
                "modes": [{"code": "9.1", "id": "M", "name": "Wrong Sum", "category": "X",
                           "definition": "d"}],
            }
        )
    )  # fmt: skip
    tax = load_taxonomy(tax_path)
    folder = tmp_path / "ex"
    folder.mkdir()
    _write(folder, "m.yaml", _minimal(labels={"9.1": True}, evidence={"9.1": ["s2"]}))
    assert load_examples(folder, taxonomy=tax)[0].labels == {"9.1": True}
    with pytest.raises(FewShotError, match="missing"):
        load_examples(folder)  # the MAST codes are missing


# ---------------------------------------------------------------- quoted evidence


def test_evidence_items_with_quotes_load_and_reach_the_prompt(tmp_path: Path) -> None:
    evidence = {"3.3": [{"step": "s2", "quote": "Looks right."}, "s1"]}
    path = _write(tmp_path, "q.yaml", _minimal(evidence=evidence))
    ex = load_examples(path)[0]
    assert ex.evidence == {"3.3": ["s2", "s1"]}  # the ids, as before
    assert ex.quotes == {"3.3": {"s2": "Looks right."}}
    assert ex.unquoted == [] and ex.file == path
    answer = _example_answer(ex, load_taxonomy())
    assert answer["modes"]["3.3"]["evidence"] == [
        {"step_id": "s2", "quote": "Looks right."},
        {"step_id": "s1", "quote": ""},
    ]
    # the decisive error is the earliest cited step, s1, which has no quote of its own
    assert answer["decisive_error"]["step_id"] == "s1"
    assert answer["decisive_error"]["quote"] == ""
    system = render_system(examples=[ex])
    assert '{"step_id": "s2", "quote": "Looks right."}' in system
    # step_id (the answer format's name) is accepted too, and folded lines match
    data = _minimal(
        evidence={"3.3": [{"step_id": "s1", "quote": "2 +\n   2 = 5"}]},
        steps=[{"id": "s1", "content": "2 + 2 = 5"}, {"id": "s2", "content": "Looks right."}],
    )
    again = load_examples(_write(tmp_path, "r.yaml", data))[0]
    assert again.quotes == {"3.3": {"s1": "2 +\n   2 = 5"}}
    decisive = _example_answer(again, load_taxonomy())["decisive_error"]
    assert decisive["step_id"] == "s1" and decisive["quote"] == "2 + 2 = 5"


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ({"3.3": [{"step": "s2", "quote": "Looks wrong."}]}, "evidence for 3.3 at s2: the quote"),
        ({"3.3": [{"step": "s2", "quote": "  "}]}, "evidence for 3.3 at s2: the quote is empty"),
        ({"3.3": [{"quote": "Looks right."}]}, "is not a step id or"),
        ({"3.3": [{"step": "s2", "quote": "Looks right.", "why": "x"}]}, "is not a step id or"),
        ({"3.3": [{"step": "s9", "quote": "Looks right."}]}, "cites steps ['s9']"),
    ],
)
def test_a_bad_quote_names_the_file_the_code_and_the_step(
    tmp_path: Path, evidence: object, message: str
) -> None:
    path = _write(tmp_path, "bad.yaml", _minimal(evidence=evidence))
    with pytest.raises(FewShotError) as err:
        load_examples(path)
    assert str(path) in str(err.value) and message in str(err.value), err.value


def test_positives_without_quotes_are_noted_with_their_file(tmp_path: Path) -> None:
    _write(tmp_path, "bare.yaml", _minimal(id="bare"))  # evidence: step ids only
    _write(tmp_path, "quoted.yaml", _minimal(
        id="quoted", evidence={"3.3": [{"step": "s2", "quote": "Looks right."}]}))  # fmt: skip
    examples = load_examples(tmp_path)
    notes = unquoted_positives(examples)
    assert len(notes) == 1
    assert str(tmp_path / "bare.yaml") in notes[0] and "3.3" in notes[0]
    assert "ungrounded evidence" in notes[0]
    # the judge's notes carry it (as they carry a skewed positive rate)
    shots = Shots.resolve(tmp_path)
    assert [n for n in shots.notes if "ungrounded" in n] == notes
    assert not unquoted_positives(BUNDLED)  # the fixture examples all quote their evidence
