"""Every excerpt step is its source message with each cut marked (issue 30).

The source texts come from tests/fixtures/excerpt_sources.json.gz (written from the datasets by
scripts/fewshot_sources.py); three runs are also read through run_messages from the verbatim
fixture files, so the addressing itself is checked.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from mast.judge.prompt.excerpt_check import CUT, check_excerpt, run_messages
from mast.judge.prompt.excerpts import Excerpt, load_pool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = json.loads(gzip.decompress((FIXTURES / "excerpt_sources.json.gz").read_bytes()))
POOL = load_pool()


def _messages(ex: Excerpt) -> dict[int, str]:
    return {int(i): text for i, text in SOURCES[ex.run].items() if i.isdigit()}


@pytest.mark.parametrize("ex", POOL, ids=[ex.id for ex in POOL])
def test_every_step_rebuilds_from_its_source(ex: Excerpt) -> None:
    assert check_excerpt(ex, _messages(ex)) == []


@pytest.mark.parametrize("ex", [e for e in POOL if e.task], ids=[e.id for e in POOL if e.task])
def test_a_task_is_the_runs_own_text(ex: Excerpt) -> None:
    # `task:` is the run's question (or a message's text) verbatim, whitespace aside.
    assert " ".join(ex.task.split()) in " ".join(SOURCES[ex.run]["task"].split())  # type: ignore[union-attr]


def _replace_step(ex: Excerpt, step_id: str, content: str) -> Excerpt:
    # No validation: the planted text may no longer hold a reading's quote.
    steps = tuple(
        s.model_copy(update={"content": content}) if s.id == step_id else s for s in ex.steps
    )
    return ex.model_copy(update={"steps": steps})


def _by_id(name: str) -> Excerpt:
    return next(ex for ex in POOL if ex.id == name)


def test_a_planted_unmarked_cut_fails() -> None:
    ex = _by_id("ww-ag27-confirms-after-done")
    step = ex.steps[0]  # a whole message of several sentences
    sentences = step.content.split("\n\n")
    assert len(sentences) >= 3
    # Leave out a middle paragraph without a mark: the two remaining parts are no longer one
    # piece of the source.
    cut = "\n\n".join([sentences[0], *sentences[2:]])
    problems = check_excerpt(_replace_step(ex, step.id, cut), _messages(ex))
    assert problems and "unmarked cut" in problems[0], problems
    # Marked, the same cut passes.
    marked = "\n\n".join([sentences[0], CUT, *sentences[2:]])
    assert check_excerpt(_replace_step(ex, step.id, marked), _messages(ex)) == []
    # Cutting the end or the start without a mark fails too.
    end = check_excerpt(_replace_step(ex, step.id, sentences[0]), _messages(ex))
    assert any("end of the message" in p for p in end), end
    start = check_excerpt(_replace_step(ex, step.id, sentences[-1]), _messages(ex))
    assert any("start of the message" in p for p in start), start


def test_a_changed_word_fails() -> None:
    ex = _by_id("ww-ag27-confirms-after-done")
    step = ex.steps[0]
    changed = step.content.replace("complete", "finished", 1)
    assert changed != step.content
    assert check_excerpt(_replace_step(ex, step.id, changed), _messages(ex))


def test_a_left_out_step_that_mentions_the_quoted_entity_fails() -> None:
    # hc51 shows the ledger step s15, which repeats the instruction quoted at s16 between the
    # cited steps s11 and s16; leaving it out hides a mention of the quote.
    ex = _by_id("ww-hc51-same-instruction-again")
    data = ex.model_dump(by_alias=True)
    keep = [i for i, s in enumerate(data["steps"]) if s["id"] != "s15"]
    data["steps"] = [data["steps"][i] for i in keep]
    data["source"]["history"] = [data["source"]["history"][i] for i in keep]
    problems = check_excerpt(Excerpt.model_validate(data), _messages(ex))
    assert any("message 14 (s15)" in p and "left out" in p for p in problems), problems


def test_run_messages_reads_the_datasets_layout(tmp_path: Path) -> None:
    (tmp_path / "whoandwhen" / "Hand-Crafted").mkdir(parents=True)
    shutil.copy(
        FIXTURES / "whoandwhen" / "hand-crafted-12.json",
        tmp_path / "whoandwhen" / "Hand-Crafted" / "12.json",
    )
    shutil.copytree(FIXTURES / "ag2", tmp_path / "ag2")
    (tmp_path / "mad").mkdir()
    shutil.copy(FIXTURES / "mad" / "full_record_chatdev.json", tmp_path / "mad")
    checked = 0
    for name in (
        "ww-hc12-list-copied-wrong",
        "ag2-t3-decimal-answer",
        "chatdev-review-finished-ignored",
    ):
        ex = _by_id(name)
        messages = run_messages(ex.source, tmp_path)
        assert check_excerpt(ex, messages) == []
        for i, text in _messages(ex).items():
            assert messages[i] == text
            checked += 1
    assert checked > 70


def test_run_messages_reads_agentrx_magentic_one_runs() -> None:
    # AgentRx's Magentic-One GAIA runs are a JSON list of {content, role}; mast bundles them.
    from mast.judge.prompt.excerpts import Source
    from mast.traces.agentrx import bundled_agentrx_path

    root = bundled_agentrx_path().parent
    path = "magentic_one/trajectories/5d0080cb-90d7-4712-bc33-848150e917d3.json"
    raw = json.loads((root / "agentrx" / path).read_text(encoding="utf-8"))
    messages = run_messages(Source(dataset="agentrx", path=path, history=(0,)), root)
    assert messages == [m["content"] for m in raw] and len(messages) > 30
    assert Source(dataset="agentrx", path=path, history=(0,)).system == "Magentic-One"


def test_who_and_when_runs_agentrx_ships_too_are_known() -> None:
    # AgentRx's Magentic-One runs include Who&When Hand-Crafted runs, message for message. An
    # excerpt of one is an AgentRx excerpt too (left out with fewshot_exclude=["agentrx"]):
    # the table says which, and the bundled AgentRx copy rebuilds exactly those excerpts.
    from mast.judge.prompt.excerpts import AGENTRX_COPIES, Source
    from mast.traces.agentrx import bundled_agentrx_path

    root = bundled_agentrx_path().parent
    folder = root / "agentrx" / "magentic_one" / "trajectories"
    copies = {
        p.stem: [" ".join(str(m["content"]).split()) for m in json.loads(p.read_text("utf-8"))]
        for p in folder.glob("*.json")
    }
    assert set(AGENTRX_COPIES.values()) <= set(copies)
    shared = 0
    for ex in POOL:
        if ex.source.dataset != "whoandwhen" or not ex.source.path.startswith("Hand-Crafted/"):
            continue
        if ex.source.path in AGENTRX_COPIES:
            assert ex.datasets == ("whoandwhen", "agentrx")
            path = f"magentic_one/trajectories/{AGENTRX_COPIES[ex.source.path]}.json"
            copy = Source(dataset="agentrx", path=path, history=ex.source.history)
            assert check_excerpt(ex, run_messages(copy, root)) == [], ex.id
            shared += 1
        else:  # a run missing from the table would have every shown step in some copy
            pieces = [" ".join(p.split()) for s in ex.steps for p in s.content.split(CUT)]
            pieces = [p for p in pieces if len(p) >= 40]
            for run in copies.values():
                text = " ".join(run)
                assert not all(p in text for p in pieces), ex.id
    assert shared >= 3  # hc27, hc51 and hc57 are in the pool
    from mast.judge.prompt.shots import Shots

    left = Shots.resolve(None, exclude=["agentrx"]).pool
    assert not any("agentrx" in ex.datasets for ex in left if isinstance(ex, Excerpt))
    assert {ex.id for ex in POOL if ex.source.path in AGENTRX_COPIES} & {
        ex.id for ex in left
    } == set()


def test_no_entry_has_a_wrong_review() -> None:
    wrong = [ex.id for ex in POOL if ex.review is not None and ex.review.verdict == "wrong"]
    assert wrong == [], f"entries a second reader found wrong ship: {wrong}"
    for ex in POOL:
        if ex.review is not None and ex.review.verdict == "arguable":
            assert len(ex.review.note.split()) >= 5, ex.id


def test_a_dataset_can_be_left_out_of_the_pool() -> None:
    import mast
    from mast.judge.prompt.shots import Shots

    full = Shots.resolve(None)
    assert any(ex.dataset == "agentrx" for ex in full.pool)  # type: ignore[union-attr]
    shots = Shots.resolve(None, exclude=["agentrx"])
    assert shots.pool and all(ex.dataset != "agentrx" for ex in shots.pool)  # type: ignore[union-attr]
    assert all(ex.dataset != "agentrx" for ex in shots.chosen)  # type: ignore[union-attr]
    assert any("agentrx left out" in n for n in shots.notes)
    judge = mast.Judge("openai/gpt-4.1", api_key="sk-test-not-a-key", fewshot_exclude=["agentrx"])
    assert judge.examples and not [
        e for e in judge.examples if getattr(e, "dataset", "") == "agentrx"
    ]
    # An explicit list is filtered too, and a misspelt dataset is an error.
    given = Shots.resolve(list(full.pool), exclude=("agentrx",))
    assert all(ex.dataset != "agentrx" for ex in given.chosen)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="unknown dataset"):
        Shots.resolve(None, exclude=["agent-rx"])


def test_every_entry_has_a_second_reading() -> None:
    # Both readers' reviews are in: an entry added later must be reviewed before it ships.
    missing = [ex.id for ex in POOL if ex.review is None]
    assert missing == [], f"entries without a second reader's review: {missing}"
    readers = {ex.review.reader for ex in POOL if ex.review}
    # the two first readers' reviews are in; later entries name their own second reader
    assert {"shots1", "shots2"} <= readers and all(r.strip() for r in readers)
