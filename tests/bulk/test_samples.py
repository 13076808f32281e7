"""Repeated judgments: Judge(samples=K) in annotate_many makes K calls per trace, each cached,
billed and resumed on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.runner import annotate_many
from mast.bulk.store import read_annotations
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
KEY = "sk-samples-test-key-0000000000000ZZZZ"
PRICES = {"openai/gpt-4o-mini": {"input": 1.0, "output": 2.0}}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def traces(n: int) -> list[Trace]:
    return [
        Trace(
            id=f"t{i}",
            task=f"Task number {i}",
            steps=[Step.make(0, f"Add {i} and 1.", agent="user"), Step.make(1, "Done.", agent="a")],
        )
        for i in range(n)
    ]


def judge_for(server: FakeLLMServer, **kw: Any) -> Judge:
    return Judge(
        "openai/gpt-4o-mini",
        base_url=server.openai_base_url,
        api_key=KEY,
        fewshot=0,
        prices=PRICES,
        temperature=0.7,
        **kw,
    )


def test_samples_make_k_records_and_k_paid_calls_per_trace(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    answers = iter([("1.1",), ("1.1", "2.6"), ()] * 4)
    fake_llm.responder = lambda _request: Reply.text(
        verdict_json(CODES, next(answers)), usage={"input": 1000, "output": 100}
    )
    out, cache = tmp_path / "results.jsonl", tmp_path / "cache"
    run = annotate_many(traces(2), judge_for(fake_llm, samples=3), out=out, cache=cache,
                        progress=False)  # fmt: skip
    assert len(fake_llm.completions) == 6
    assert [(a.trace_id, a.judge.get("sample", 0)) for a in run] == [
        ("t0", 0), ("t0", 1), ("t0", 2), ("t1", 0), ("t1", 1), ("t1", 2)
    ]  # fmt: skip
    assert len({a.judge["config_hash"] for a in run}) == 3
    # every sample is its own paid call: 1000 in + 100 out at $1/$2 per million
    assert all(a.cost_usd == pytest.approx(0.0012) for a in run)
    assert run.summary.cost_usd == pytest.approx(6 * 0.0012)
    assert run.summary.done == 6 and run.summary.calls == 6
    assert len(read_annotations(out)) == 6
    frame = mast.to_frame(out)
    # rows in file order (sample by sample), one per trace and sample
    assert sorted(zip(frame.index, frame["sample"], strict=True)) == [
        ("t0", 0), ("t0", 1), ("t0", 2), ("t1", 0), ("t1", 1), ("t1", 2)
    ]  # fmt: skip
    # the same command again: everything resumes from the results file, no call
    again = annotate_many(traces(2), judge_for(fake_llm, samples=3), out=out, cache=cache,
                          progress=False)  # fmt: skip
    assert len(fake_llm.completions) == 6
    assert again.summary.resumed == 6
    assert [a.vector.to_dict() for a in again] == [a.vector.to_dict() for a in run]


def test_each_sample_has_its_own_cache_entry(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.text(verdict_json(CODES, ("1.3",)))
    cache = tmp_path / "cache"
    annotate_many(traces(1), judge_for(fake_llm, samples=2), cache=cache, progress=False)
    assert len(fake_llm.completions) == 2
    # without a results file, a rerun is answered from the cache: both samples, no call
    rerun = annotate_many(traces(1), judge_for(fake_llm, samples=2), cache=cache, progress=False)
    assert len(fake_llm.completions) == 2
    assert [a.cached for a in rerun] == [True, True]
    # three samples: the first two come from the cache, only the third is called
    annotate_many(traces(1), judge_for(fake_llm, samples=3), cache=cache, progress=False)
    assert len(fake_llm.completions) == 3


def test_sample_zero_keeps_the_plain_judge_settings(fake_llm: FakeLLMServer) -> None:
    judge = judge_for(fake_llm, samples=2)
    assert "sample" not in judge.describe()
    assert judge.for_sample(1).describe()["sample"] == 1
    assert mast.bulk.runner.config_hash(judge) == mast.bulk.runner.config_hash(judge_for(fake_llm))
    with pytest.raises(ValueError, match="samples"):
        judge_for(fake_llm, samples=0)
