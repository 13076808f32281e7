"""Dedicated attribution methods in bulk: resumable, cached, keyed apart from annotations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.bulk.types import config_hash
from mast.judge.attribute import AttributionJudge
from mast.judge.judge import Judge
from mast.traces.model import Step, Trace

KEY = "sk-attribution-bulk-key-000000QQQQ"


def trace(n: int) -> Trace:
    return Trace(
        id=f"run{n}",
        task="Sum the numbers.",
        steps=[Step.make(i, f"message {i + 1} text", agent="Coder") for i in range(n)],
    )


def step_by_step(target: int) -> Any:
    def respond(request: Recorded) -> Reply:
        user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
        last = int(re.findall(r"^\[s(\d+)\] ", user, flags=re.MULTILINE)[-1])
        body = {"found": last == target, "agent": None, "step_id": None, "reason": "", "quote": ""}
        return Reply.text(json.dumps(body))

    return respond


def test_bulk_run_is_resumable_and_cached(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.responder = step_by_step(2)
    traces = [trace(4), trace(5)]
    attributor = AttributionJudge(
        Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY), "step-by-step"
    )
    out, cache = tmp_path / "r.jsonl", tmp_path / "cache"
    first = mast.annotate_many(traces, attributor, out=out, cache=cache, progress=False)
    assert len(fake_llm.completions) == 4  # two calls per trace
    assert [a.decisive_error.step_id for a in first if a.decisive_error] == ["s2", "s2"]
    again = mast.annotate_many(traces, attributor, out=out, cache=cache, progress=False)
    assert len(fake_llm.completions) == 4 and again.summary.resumed == 2
    # a fresh results file answers from the response cache
    fresh = mast.annotate_many(
        traces, attributor, out=tmp_path / "s.jsonl", cache=cache, progress=False
    )
    assert len(fake_llm.completions) == 4 and all(a.cached for a in fresh)
    # records of the plain judge and of the attribution method key apart
    assert attributor.describe()["attribution"] == "step-by-step"
    assert config_hash(attributor) != config_hash(
        Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY)
    )


def test_step_by_step_through_the_batch_api(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    # Each step's question is a batch item; the next step's goes in the next round.
    fake_llm.responder = step_by_step(2)
    attributor = AttributionJudge(
        Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY), "step-by-step"
    )
    run = mast.annotate_many(
        [trace(3), trace(4)],
        attributor,
        out=tmp_path / "r.jsonl",
        cache=tmp_path / "cache",
        batch=True,
        batch_poll_interval=0.01,
        progress=False,
    )
    assert fake_llm.completions == []  # no live call
    assert len(fake_llm.batch_requests) == 4  # s1 and s2 of each trace
    assert [a.decisive_error.step_id for a in run if a.decisive_error] == ["s2", "s2"]
    body = fake_llm.batch_requests[0].body
    assert body["response_format"]["json_schema"]["name"] == "mast_attribution"
