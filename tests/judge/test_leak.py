"""The few-shot leak filter ignores framework boilerplate and still catches real excerpts."""

from __future__ import annotations

from pathlib import Path

import mast
from mast.judge.fewshot import load_examples
from mast.judge.leak import leaked
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
