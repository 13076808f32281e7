"""The few-shot leak filter ignores framework boilerplate and still catches real excerpts."""

from __future__ import annotations

from pathlib import Path

import pytest

import mast
from mast.judge.prompt.fewshot import FewShotExample, load_examples
from mast.judge.prompt.leak import leaked, normalized_text
from mast.traces.model import Step, Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = load_examples(FIXTURES / "fewshot_mad")
BY_ID = {ex.id: ex for ex in EXAMPLES}
HUMAN = {t.id: t for t in mast.load_traces(FIXTURES / "mad" / "human_sample.json")}


def test_sharing_the_mathchat_system_prompt_is_not_a_leak() -> None:
    cards, ribbon = BY_ID["ag2-gsmplus-cards"], BY_ID["ag2-gsmplus-ribbon"]
    # Both AG2 examples open with MathChat's system prompt, as every AG2 MathChat run does.
    prompt_line = cards.steps[0].content.split("\n")[0]
    assert prompt_line in ribbon.steps[0].content
    other_run = mast.load_trace(FIXTURES / "ag2" / "AG2_trace3.json")
    assert prompt_line in other_run.steps[0].content
    assert leaked(EXAMPLES, other_run) == []
    # Alone (nothing to compare with) the prompt is still one step: not enough to leak.
    assert leaked([cards], other_run) == []


def test_an_example_cut_from_the_judged_trace_is_caught() -> None:
    assert leaked(EXAMPLES, HUMAN["mad-human/2"]) == ["ag2-gsmplus-ribbon"]
    assert leaked(EXAMPLES, HUMAN["mad-human/7"]) == ["ag2-gsmplus-cards"]
    assert leaked(EXAMPLES, HUMAN["mad-human/4"]) == ["metagpt-programdev-palindromes"]


def test_an_example_whose_task_is_the_trace_task_is_caught() -> None:
    cards = BY_ID["ag2-gsmplus-cards"]
    assert cards.task is not None
    trace = Trace(id="t", task=cards.task, steps=[Step.make(0, "a different run entirely")])
    assert leaked([cards], trace) == [cards.id]


# --- the bundled excerpt pool on real Who&When runs (issue 30) ------------------------------

WW_RUNS = sorted((FIXTURES / "whoandwhen_attr").glob("*/*.json")) + sorted(
    (FIXTURES / "whoandwhen").glob("*.json")
)


def _ww_trace(path: Path) -> Trace:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mast.load_trace(path)


def test_the_pool_is_dropped_only_on_its_own_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from mast.judge.prompt.excerpts import load_pool

    pool = load_pool()
    # Runs among the fixtures that excerpts were cut from (path below tests/fixtures).
    own_runs = {
        "whoandwhen/hand-crafted-12.json": ["ww-hc12-list-copied-wrong"],
        "whoandwhen_attr/Hand-Crafted/6.json": ["ww-hc6-first-snippet"],
    }

    def own(path: Path) -> list[str]:
        return own_runs.get(path.relative_to(FIXTURES).as_posix(), [])

    traces = {p: _ww_trace(p) for p in WW_RUNS}
    assert len(traces) >= 10
    for path, trace in traces.items():
        assert leaked(pool, trace) == own(path), path
    # Without the corpus's shared text (Magentic-One's ledger template lines, the CaptainAgent
    # terminal's fixed reply), excerpts are dropped on runs they do not come from.
    import mast.judge.prompt.leak as leak_module

    monkeypatch.setattr(leak_module, "shared_text", lambda: frozenset())
    wrong = [p.name for p, t in traces.items() if leaked(pool, t) != own(p)]
    assert wrong, "the corpus text no longer matters: make this test find a case that needs it"


def test_a_run_rebuilt_from_an_excerpts_source_drops_only_that_excerpt() -> None:
    import gzip
    import json

    from mast.judge.prompt.excerpts import load_pool

    pool = load_pool()
    sources = json.loads(gzip.decompress((FIXTURES / "excerpt_sources.json.gz").read_bytes()))
    for run, messages in sources.items():
        steps = [
            Step.make(int(i), text)
            for i, text in sorted(
                messages.items(), key=lambda x: int(x[0]) if x[0].isdigit() else -1
            )
            if i.isdigit()
        ]
        trace = Trace(id=run, steps=steps)
        own = sorted(ex.id for ex in pool if ex.run == run)
        assert sorted(leaked(pool, trace)) == own, run


def test_partial_overlap_is_kept_with_a_note() -> None:
    from mast.judge.prompt.excerpts import load_pool
    from mast.judge.prompt.leak import partial
    from mast.judge.prompt.shots import Shots

    pool = load_pool()
    ex = next(e for e in pool if e.id == "ww-ag27-confirms-after-done")
    # One own line of the excerpt, inside an unrelated trace: too little to drop it.
    own_line = ex.steps[2].content
    trace = Trace(id="t", steps=[Step.make(0, "unrelated " * 20), Step.make(1, own_line)])
    assert leaked(pool, trace) == []
    assert partial(pool, trace) == [ex.id]
    shots = Shots.resolve(None).for_trace(trace)
    assert any("may come from this trace" in n and ex.id in n for n in shots.notes), shots.notes


def test_shared_text_entries_may_start_with_a_hash() -> None:
    # Framework prompts have Markdown headings ("## Results …"): as entries of the shared-text
    # file they must count, and only the file's header is read as comments.
    from mast._resources import data_dir
    from mast.judge.prompt.leak import SHARED_TEXT_FILE, read_shared_text, shared_text

    text = "# header\n# more header\n\n## Results (including code blocks) and reason\n- x  y\n"
    assert read_shared_text(text) == {"## Results (including code blocks) and reason", "- x y"}
    # the bundled file: every line after its header is an entry
    raw = (data_dir("fewshot") / SHARED_TEXT_FILE).read_text(encoding="utf-8").splitlines()
    body = raw[raw.index("") + 1 :]
    assert body and len(shared_text()) == len({" ".join(x.split()) for x in body if x.strip()})


def test_the_key_word_shortcut_finds_what_a_plain_search_finds() -> None:
    from mast.judge.prompt.leak import TraceText, _key_word

    trace = Trace(
        id="t",
        steps=[
            Step.make(0, "alpha  beta gamma\ndelta-epsilon zeta eta theta"),
            Step.make(1, "iota"),
        ],
    )
    text = TraceText(trace)
    assert text.text == "alpha beta gamma delta-epsilon zeta eta theta iota"
    # Lines that start or end inside a word, cross a step or a line break, or lack a word.
    for line in [
        "lpha beta gam",
        "gamma delta-epsilon zeta",
        "ta-epsilon zeta eta th",
        "theta iota",
        "beta gamma delta",
        "beta gamm delta",
        "eta theta iota kappa",
        "alpha beta",
        "epsilon",
        "zeta et",
    ]:
        assert text.holds(line, _key_word(line)) is (line in text.text), line
    # On real excerpts and traces, the same ids as the plain search over every line.
    for human in HUMAN.values():
        plain = _plain_leaks(EXAMPLES, normalized_text(human))
        assert leaked(EXAMPLES, human) == [ex.id for ex in EXAMPLES if ex.id in plain]
    assert any(leaked(EXAMPLES, human) for human in HUMAN.values())


def _plain_leaks(examples: list[FewShotExample], haystack: str) -> set[str]:
    from mast.judge.prompt.leak import _key, _probes, shared_text

    out = set()
    for ex_id, task, steps in _probes(_key(examples), shared_text()):
        if task is not None and task in haystack:
            out.add(ex_id)
            continue
        hits = sum(1 for own in steps if any(line in haystack for line, _ in own))
        if hits and hits >= min(2, len(steps)):
            out.add(ex_id)
    return out
