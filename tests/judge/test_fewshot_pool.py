"""The bundled few-shot excerpt pool and how the judge uses it (issue 15)."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import pytest
import yaml

import mast
from mast.errors import FewShotError
from mast.judge.prompt.excerpts import Excerpt, coverage, load_pool, select_excerpts
from mast.judge.prompt.fewshot import load_examples
from mast.judge.prompt.leak import leaked, shared_text
from mast.judge.prompt.render import example_block, render_system
from mast.judge.prompt.shots import Shots
from mast.judge.prompt.tokens import estimate_tokens
from mast.traces.datasets import examples_path
from mast.traces.model import Step, Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAD_EXAMPLES = FIXTURES / "fewshot_mad"
POOL = load_pool()
CODES = mast.load_taxonomy().codes

# Every MAD human-labelled trace the project bundles (the set agreement is measured on).
MAD_HUMAN_FILES = [
    FIXTURES / "mad" / "human_sample.json",
    FIXTURES / "mad" / "human_with_nan.json",
    examples_path() / "mad_human_sample.json",
    *sorted((FIXTURES / "mad_frameworks").glob("*/*_human_*.record.json")),
]


def _mad_human_traces() -> list[Trace]:
    traces = []
    for path in MAD_HUMAN_FILES:
        # Some records are unsegmented or carry label quirks: the warnings are not the point.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces += list(mast.load_traces(path))
    return traces


MAD_HUMAN = _mad_human_traces()


def test_every_mode_has_a_positive_and_a_near_miss() -> None:
    cov = coverage(POOL)
    assert list(cov) == CODES
    for code, (positives, near_misses) in cov.items():
        assert positives, f"no excerpt shows {code}"
        assert near_misses, f"no near miss for {code}"


def test_one_root_mode_per_excerpt_and_quotes_are_verbatim() -> None:
    for ex in POOL:
        by_id = {s.id: s.content for s in ex.steps}
        assert ex.shows is None or ex.shows.mode in CODES
        assert len({r.mode for r in ex.readings}) == len(ex.readings), ex.id
        for reading in ex.readings:
            assert reading.quote in by_id[reading.step], (ex.id, reading.mode)
            assert len(reading.why.split()) >= 8, (ex.id, reading.mode)


def test_every_reading_the_prompt_shows_carries_its_verbatim_quote() -> None:
    # The evidence policy grounds a positive only on a quote found in a cited step; the
    # excerpts' readings must teach that style: each shown line carries a non-empty quote
    # that is in the step it cites (whitespace collapsed, as the prompt shows it).
    for convention in ("paper", "official"):
        tax = mast.load_taxonomy(verification=convention)
        system = render_system(taxonomy=tax, examples=POOL)
        shown = 0
        for ex in POOL:
            if f"({ex.id})" not in system:  # nothing left to show in this convention
                assert convention == "official", ex.id
                assert {r.mode for r in ex.readings} <= {"3.2", "3.3"}, ex.id
                continue
            block = system.split(f"({ex.id})", 1)[1].split("\n## Excerpt ", 1)[0]
            steps = {s.id: " ".join(s.content.split()) for s in ex.steps}
            for r in ex.readings:
                if convention == "official" and r.mode in ("3.2", "3.3"):
                    continue
                quote = " ".join(r.quote.split())
                assert quote and quote in steps[r.step], (ex.id, r.mode)
                assert f'{r.mode} {tax[r.mode].name}: [{r.step}] "{quote}"' in block, (
                    ex.id,
                    r.mode,
                )
                shown += 1
        assert shown >= len(POOL)


def test_the_pool_names_its_sources_and_licences() -> None:
    assert len({ex.id for ex in POOL}) == len(POOL)
    for ex in POOL:
        # Step ids are the run's message numbers, counted from 1.
        assert [s.id for s in ex.steps] == [f"s{i + 1}" for i in ex.source.history], ex.id
    header = (mast._resources.data_dir("fewshot") / "excerpts.yaml").read_text(encoding="utf-8")
    assert "MIT licence" in header and "CC-BY-4.0" in header and "[…]" in header
    assert {ex.dataset for ex in POOL} <= {"whoandwhen", "ag2", "mad-full", "agentrx"}


def test_no_excerpt_comes_from_a_mad_human_labelled_trace() -> None:
    assert len(MAD_HUMAN) >= 8
    haystack = "\n".join(
        " ".join(" ".join([t.task or "", *(s.content for s in t.steps)]).split()) for t in MAD_HUMAN
    )
    lines = {
        (ex.id, ex.run, " ".join(line.replace("[…]", " ").split()))
        for ex in POOL
        for step in ex.steps
        for line in step.content.split("\n")
    }
    # Framework text (Magentic-One's "We are working to address the following user
    # request:") occurs in several runs; it is not content of any one of them.
    sources: dict[str, set[str]] = {}
    for _, source, line in lines:
        sources.setdefault(line, set()).add(source)
    # So does text the corpus repeats across its runs (fewshot/shared_text.txt).
    checked = 0
    for ex_id, _, line in sorted(lines):
        if len(line) >= 40 and len(sources[line]) == 1 and line not in shared_text():
            assert line not in haystack, (ex_id, line[:80])
            checked += 1
    assert checked > 100
    # And the judge's own leak filter agrees: no MAD human trace drops a pool excerpt.
    for trace in MAD_HUMAN:
        assert leaked(POOL, trace) == [], trace.id


def test_token_estimates_are_within_ten_percent_of_the_real_count() -> None:
    recorded = json.loads((FIXTURES / "tokens" / "fewshot_counts.json").read_text())
    whole = load_examples(MAD_EXAMPLES)
    assert sorted(recorded) == sorted(s.id for s in [*POOL, *whole])
    checked = 0
    for shot in [*POOL, *whole]:
        text = example_block(shot)
        entry = recorded[shot.id]
        if entry["sha256"] != hashlib.sha256(text.encode()).hexdigest():
            # The pool's blocks must be current; the whole-trace fixtures' blocks also change
            # with the answer format, which other work may change: those are then not checked.
            assert shot not in POOL, (
                f"{shot.id} changed since its tokens were counted: run scripts/fewshot_tokens.py"
            )
            continue
        estimate = estimate_tokens(text)
        for encoding in ("o200k_base", "cl100k_base"):
            real = entry[encoding]
            assert abs(estimate - real) <= 0.10 * real, (shot.id, encoding, estimate, real)
        checked += 1
    assert checked >= len(POOL)


def test_the_default_judge_shows_every_mode_positive_and_near_miss() -> None:
    judge = mast.Judge("openai/gpt-4.1", api_key="sk-test-not-a-key")
    chosen = [ex for ex in judge.examples if isinstance(ex, Excerpt)]
    assert chosen and len(chosen) == len(judge.examples)
    cov = coverage(chosen)
    assert all(pos and near for pos, near in cov.values())
    system = render_system(examples=chosen)
    assert "# Worked excerpts" in system and "# Worked examples" not in system
    # One line says what the cut mark means.
    assert system.count('"[…]" marks where text of the original message was left out') == 1
    for ex in chosen:
        assert f"({ex.id})" in system
        for reading in ex.readings:
            assert " ".join(reading.quote.split()) in system
    assert system.count("\nShows ") == sum(1 for ex in chosen if ex.shows)


def test_selection_by_count_and_budget() -> None:
    assert select_excerpts(POOL, count=0) == []
    two = select_excerpts(POOL, count=2)
    assert len(two) == 2
    assert select_excerpts(list(reversed(POOL)), count=2) == sorted(
        two, key=lambda ex: [e.id for e in reversed(POOL)].index(ex.id)
    )
    costs = {ex.id: estimate_tokens(ex.text()) for ex in POOL}
    budget = 1500
    chosen = select_excerpts(POOL, token_budget=budget)
    assert chosen and sum(costs[ex.id] for ex in chosen) <= budget
    with pytest.raises(ValueError):
        select_excerpts(POOL, count=-1)


def test_fewshot_settings_resolve() -> None:
    assert Shots.resolve(0).chosen == []
    assert len(Shots.resolve(3).chosen) == 3
    everything = Shots.resolve(None)
    assert {ex.id for ex in everything.chosen} <= {ex.id for ex in POOL}
    pool_file = mast._resources.data_dir("fewshot") / "excerpts.yaml"
    assert [ex.id for ex in Shots.resolve(str(pool_file)).chosen] == [ex.id for ex in POOL]
    whole = Shots.resolve(MAD_EXAMPLES)
    assert [ex.id for ex in whole.chosen] == [ex.id for ex in load_examples(MAD_EXAMPLES)]
    with pytest.raises(ValueError):
        Shots.resolve(-1)
    with pytest.raises(FewShotError, match="no such file"):
        Shots.resolve("no/such/folder")


def test_whole_trace_example_sets_outside_ten_to_thirty_percent_are_noted() -> None:
    examples = load_examples(MAD_EXAMPLES)
    rates = {ex.id: sum(ex.labels.values()) / len(ex.labels) for ex in examples}
    # The palindromes example alone marks more than 30% of its labels present.
    assert rates["metagpt-programdev-palindromes"] > 0.30
    noted = Shots.resolve([ex for ex in examples if ex.id == "metagpt-programdev-palindromes"])
    assert any("10%-30%" in note for note in noted.notes)
    balanced = Shots.resolve([ex for ex in examples if ex.id == "metagpt-mmlu-compareto"])
    assert 0.10 <= rates["metagpt-mmlu-compareto"] <= 0.30
    assert balanced.notes == []


def _write_pool(tmp_path: Path, excerpt: dict[str, object]) -> Path:
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump({"excerpts": [excerpt]}), encoding="utf-8")
    return path


def _one() -> dict[str, object]:
    return {
        "id": "x",
        "source": {"dataset": "whoandwhen", "path": "Hand-Crafted/1.json", "history": [1]},
        "steps": [{"id": "s2", "agent": "a", "content": "we will assume 1000 items"}],
        "shows": {"mode": "2.2", "step": "s2", "quote": "assume 1000", "why": "guessed"},
    }


def test_pool_errors_name_the_file_and_the_excerpt(tmp_path: Path) -> None:
    assert [ex.id for ex in load_pool(_write_pool(tmp_path, _one()))] == ["x"]
    bad_quote = {**_one(), "shows": {"mode": "2.2", "step": "s2", "quote": "nope", "why": "w"}}
    with pytest.raises(FewShotError, match=r"pool\.yaml: excerpt x: .*verbatim"):
        load_pool(_write_pool(tmp_path, bad_quote))
    bad_step = {**_one(), "shows": {"mode": "2.2", "step": "s9", "quote": "assume", "why": "w"}}
    with pytest.raises(FewShotError, match="s9"):
        load_pool(_write_pool(tmp_path, bad_step))
    bad_code = {**_one(), "shows": {"mode": "9.9", "step": "s2", "quote": "assume", "why": "w"}}
    with pytest.raises(FewShotError, match=r"9\.9"):
        load_pool(_write_pool(tmp_path, bad_code))
    nothing = {**_one(), "shows": None}
    with pytest.raises(FewShotError, match="needs a `shows` reading"):
        load_pool(_write_pool(tmp_path, nothing))


def test_an_excerpt_of_the_judged_run_is_left_out_and_replaced() -> None:
    ex = next(e for e in POOL if e.id == "ww-ag99-arithmetic-only")
    # A trace that contains this excerpt's steps (the run it was cut from).
    run = Trace(
        id="ww-99",
        task="How much will I save by getting annual passes …",
        steps=[Step.make(int(s.id[1:]) - 1, s.content.replace("[…]\n", "")) for s in ex.steps],
    )
    assert leaked(POOL, run) == [ex.id]
    judge = mast.Judge("openai/gpt-4.1", api_key="sk-test-not-a-key")
    prompt = judge.render(run)
    assert f"({ex.id})" not in prompt.system
    # The gap it leaves (a positive for 3.2) is filled from the rest of the pool.
    others = [i for i in coverage(POOL)["3.2"][0] if i != ex.id]
    assert any(f"({i})" in prompt.system for i in others), others
