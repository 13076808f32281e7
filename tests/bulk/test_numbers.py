"""No silent wrong numbers in bulk runs (issue 32, items 1, 4, 7, 8; issue 31 item 4).

* the endpoint that answered is part of the judge settings, the cache key and every record,
  also when it comes from the SDK's environment variables;
* budgets reserve what the answer mode can need, use the budget up while calls are in
  flight, report money really spent, hold across reruns of one results file;
* ``retry_failed`` asks the provider again for answers that could not be read, and a key
  has one line in the results file after a rerun;
* a provider call shared by several traces is charged once.

Every test runs the official SDKs against the local server of ``tests/fake_llm_server.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from synthetic_traces import synthetic

from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.bulk.runner import RetryPolicy, annotate_many
from mast.cli import main
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
KEY = "sk-numbers-test-key-0000000000000ZZZZ"
ANSWER = verdict_json(CODES, ("1.1",))
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
PRICES = {"openai/gpt-4o-mini": {"input": 1.0, "output": 1.0}}  # USD per million tokens


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- 32.4 budgets


def test_compact_answers_ask_for_and_reserve_far_fewer_output_tokens(
    fake_llm: FakeLLMServer,
) -> None:
    compact = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        answer="compact",
    )  # fmt: skip
    full = Judge("openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    assert compact.output_reserve <= full.output_reserve // 2
    fake_llm.default = Reply.text(ANSWER)
    annotate_many(synthetic(1), compact, cache=False, progress=False)
    # The cap is sent, so the reserve is a real bound on what the call can cost.
    assert fake_llm.completions[0].body["max_tokens"] == compact.output_reserve
    assert compact.describe()["max_tokens"] == compact.output_reserve


def test_the_budget_is_used_up_while_calls_are_in_flight(fake_llm: FakeLLMServer) -> None:
    # A call really costs $0.0011; its estimate (prompt + 8,192 output tokens) is about ten
    # times that. Four calls in flight reserve more than the whole budget: the run must wait
    # for answers to settle, not stop with nothing spent.
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100}, delay=0.05)
    judge = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        prices=PRICES,
    )  # fmt: skip
    budget = 0.03
    run = annotate_many(
        synthetic(40), judge, budget_usd=budget, concurrency=4, cache=False, progress=False,
        on_stop="return",
    )  # fmt: skip
    summary = run.summary
    assert summary.stopped == "budget" and summary.not_attempted
    assert summary.cost_usd <= budget
    assert summary.cost_usd >= budget / 2  # was $0.0000: stopped before the first answer
    assert len(fake_llm.completions) == summary.done
    # The message says what was really spent.
    assert f"${summary.cost_usd:.4f} spent" in (summary.stop_message or "")


def test_the_budget_holds_for_the_results_file_across_reruns(fake_llm: FakeLLMServer,
                                                             tmp_path: Path) -> None:  # fmt: skip
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    judge = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        prices=PRICES, max_tokens=200,
    )  # fmt: skip
    out = tmp_path / "r.jsonl"
    kw: dict[str, Any] = dict(out=out, cache=False, progress=False, on_stop="return")
    first = annotate_many(synthetic(20), judge, budget_usd=0.01, **kw)
    assert first.summary.stopped == "budget"
    calls = len(fake_llm.completions)
    # The same command again: the budget was for this results file, and it is spent.
    again = annotate_many(synthetic(20), judge, budget_usd=0.01, **kw)
    assert len(fake_llm.completions) == calls and again.summary.stopped == "budget"
    assert "earlier" in (again.summary.stop_message or "")
    # Spent so far is recorded beside the results file.
    spent = json.loads(Path(f"{out}.spent.json").read_text())
    assert spent["spent_usd"] == pytest.approx(first.summary.cost_usd)
    # The old behaviour, by name: a fresh budget for this run.
    fresh = annotate_many(synthetic(20), judge, budget_usd=0.01, budget_scope="run", **kw)
    assert len(fake_llm.completions) > calls and fresh.summary.done > 0


def test_cli_budget_stop_with_traces_left_exits_with_its_own_status(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 1000, "output": 100})
    chats = tmp_path / "chats.jsonl"
    with open(chats, "w", encoding="utf-8") as handle:
        for i in range(30):
            messages = [{"role": "user", "content": f"Question {i}: {i} + {i}?"}]
            handle.write(json.dumps({"id": f"c{i}", "messages": messages}) + "\n")
    prices = tmp_path / "prices.yaml"
    prices.write_text('"openai/gpt-4o-mini": {input: 1.0, output: 1.0}\n')
    out = tmp_path / "r.jsonl"
    argv = [
        "annotate", str(chats), "--model", "openai/gpt-4o-mini", "--base-url",
        fake_llm.openai_base_url, "--out", str(out), "--fewshot", "0", "--quiet",
        "--budget", "0.01", "--prices", str(prices), "--max-tokens", "200", "--no-cache",
    ]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "budget" in err and "not attempted" in err
    assert 0 < len(lines_of(out)) < 30


# --------------------------------------------------------------------------- 32.7 / 31.4


def test_retry_failed_asks_the_provider_again_for_unreadable_answers(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.text("I would rather not say.")
    out, cache = tmp_path / "r.jsonl", tmp_path / "cache"
    judge = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        repair_attempts=0,
    )  # fmt: skip
    kw: dict[str, Any] = dict(out=out, cache=cache, progress=False)
    bad = annotate_many(synthetic(3), judge, **kw)
    assert [a.status for a in bad] == ["parse_error"] * 3 and len(fake_llm.completions) == 3
    fake_llm.default = Reply.text(ANSWER)
    fixed = annotate_many(synthetic(3), judge, retry_failed=True, **kw)
    # The cached answer is the one that could not be read: the provider is asked again.
    assert len(fake_llm.completions) == 6
    assert [a.status for a in fixed] == ["ok"] * 3 and not any(a.cached for a in fixed)
    text = fixed.summary.format()
    assert "parse failure" in text and "transport" not in text
    # One line per key after the rerun.
    records = lines_of(out)
    assert sorted(r["trace_id"] for r in records) == ["t0", "t1", "t2"]
    assert {r["status"] for r in records} == {"ok"}


def test_superseded_lines_are_compacted_and_unreadable_lines_kept(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.error(400, "refused")
    out = tmp_path / "r.jsonl"
    judge = Judge("openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    kw: dict[str, Any] = dict(out=out, cache=False, progress=False, retry=FAST)
    annotate_many(synthetic(4), judge, **kw)
    # A line this mast cannot read (a newer layout) must survive a compaction.
    with open(out, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"schema_version": 99, "trace_id": "future", "status": "ok"}))
        handle.write("\n")
    fake_llm.default = Reply.text(ANSWER)
    annotate_many(synthetic(4), judge, retry_failed=True, **kw)
    records = lines_of(out)
    assert sorted(r["trace_id"] for r in records[:4]) == ["t0", "t1", "t2", "t3"]
    assert len(records) == 5 and records[4]["trace_id"] == "future"
    assert [r["status"] for r in records[:4]] == ["ok"] * 4


# --------------------------------------------------------------------------- 32.8 shared calls


def test_a_call_shared_by_two_traces_is_charged_once(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    # a and b have the same text, so the same prompt. a's first answer is unreadable and its
    # repair request is slow; meanwhile x ends and b starts: b finds a's first answer in the
    # cache before a's record (which pays for it) is written.
    def respond(request: Recorded) -> Reply:
        text = json.dumps(request.body)
        usage = {"input": 1000, "output": 100}
        if "other text" in text:
            return Reply.text(ANSWER, usage=usage, delay=0.3)
        if len(request.body["messages"]) > 2:  # the repair request
            return Reply.text(ANSWER, usage=usage, delay=2.0)
        return Reply.text("no idea", usage=usage)

    fake_llm.responder = respond
    same = [Step.make(0, "same text", agent="a")]
    traces = [
        Trace(id="a", task="same", steps=same),
        Trace(id="x", task="other", steps=[Step.make(0, "other text", agent="a")]),
        Trace(id="b", task="same", steps=same),
    ]
    judge = Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        prices=PRICES,
    )  # fmt: skip
    run = annotate_many(traces, judge, cache=tmp_path / "c", concurrency=2, progress=False)
    by_id = {a.trace_id: a for a in run}
    assert len(fake_llm.completions) == 3  # a, x, a's repair
    one_call = 1000 * 1e-6 + 100 * 1e-6
    assert by_id["a"].cost_usd == pytest.approx(2 * one_call)
    assert by_id["b"].cost_usd == 0.0 and by_id["b"].shared_with == ["a"]
    assert by_id["a"].shared_with == []
    assert run.summary.cost_usd == pytest.approx(3 * one_call)  # each call counted once
