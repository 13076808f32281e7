"""The server that answers is part of the judge settings, the cache key and every record
(issue 32 item 1), whichever way it was chosen: ``base_url=``, ``--base-url`` or the SDK's
environment variables.

Every test runs the official SDKs against the local server of ``tests/fake_llm_server.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic_traces import synthetic

from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.runner import annotate_many, config_hash
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy

CODES = load_taxonomy().codes
KEY = "sk-numbers-test-key-0000000000000ZZZZ"
ANSWER = verdict_json(CODES, ("1.1",))


# --------------------------------------------------------------------------- 32.1 endpoint


def test_the_endpoint_from_openai_base_url_keys_the_cache_and_names_the_records(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, cache = tmp_path / "r.jsonl", tmp_path / "cache"
    with FakeLLMServer() as other:
        fake_llm.default = Reply.text(verdict_json(CODES, ("1.1",)))
        other.default = Reply.text(verdict_json(CODES, ("2.6",)))
        monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
        first = annotate_many(
            synthetic(3), Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0),
            out=out, cache=cache, progress=False,
        )  # fmt: skip
        assert len(fake_llm.completions) == 3
        assert {a.judge["endpoint"] for a in first} == {fake_llm.openai_base_url}
        monkeypatch.setenv("OPENAI_BASE_URL", other.openai_base_url)
        judge = Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0)
        assert judge.describe()["endpoint"] == other.openai_base_url
        second = annotate_many(synthetic(3), judge, out=out, cache=cache, progress=False)
        # Neither the results file nor the cache may answer for the other server.
        assert len(other.completions) == 3 and second.summary.resumed == 0
        assert not any(a.cached for a in second)
        assert {a.judge["endpoint"] for a in second} == {other.openai_base_url}
        assert [a.vector["2.6"] for a in second] == [True] * 3
        assert first[0].judge["config_hash"] != second[0].judge["config_hash"]
    # The OpenAI-only cache-routing field goes only to api.openai.com, never to a server
    # named by OPENAI_BASE_URL (compatible servers may reject unknown fields).
    assert all("prompt_cache_key" not in r.body for r in fake_llm.completions)


def test_the_endpoint_never_carries_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://bot:pw-secret-123@proxy.example:8443/v1?key=zz")
    with pytest.warns(UserWarning, match="user name and password"):
        judge = Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0)
    assert judge.describe()["endpoint"] == "https://proxy.example:8443/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    default = Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0)
    assert default.describe()["endpoint"] == "https://api.openai.com/v1"


def test_anthropic_and_azure_endpoints_come_from_their_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    plain = Judge("anthropic/claude-sonnet-4-5", fewshot=0)
    assert plain.describe()["endpoint"] == "https://api.anthropic.com"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic/")
    local = Judge("anthropic/claude-sonnet-4-5", fewshot=0)
    assert local.describe()["endpoint"] == "http://127.0.0.1:9/anthropic"
    assert config_hash(local) != config_hash(plain)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://one.openai.azure.com")
    one = Judge("azure/my-deployment", fewshot=0)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://two.openai.azure.com/")
    two = Judge("azure/my-deployment", fewshot=0)
    assert one.describe()["endpoint"] == "https://one.openai.azure.com"
    assert two.describe()["endpoint"] == "https://two.openai.azure.com"
    assert config_hash(one) != config_hash(two)


def test_attribution_runs_key_the_endpoint_too(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast.judge.attribute import AttributionJudge

    answer = json.dumps(
        {"found": True, "agent": "solver", "step_id": "s2", "reason": "wrong sum", "quote": ""}
    )
    traces = [t.model_copy(update={"outcome": "failure"}) for t in synthetic(2)]
    out, cache = tmp_path / "who.jsonl", tmp_path / "cache"
    with FakeLLMServer() as other:
        fake_llm.default = other.default = Reply.text(answer)
        for server in (fake_llm, other):
            monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
            base = Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0)
            run = annotate_many(
                traces, AttributionJudge(base, "all-at-once"), out=out, cache=cache,
                progress=False,
            )  # fmt: skip
            assert len(server.completions) == 2
            assert {a.judge["endpoint"] for a in run} == {server.openai_base_url}


def test_records_of_another_server_are_not_resumed_and_the_run_says_which_setting_differs(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "r.jsonl"
    fake_llm.default = Reply.text(ANSWER)
    kw = dict(out=out, cache=False, progress=False)
    with FakeLLMServer() as other:
        other.default = Reply.text(ANSWER)
        annotate_many(synthetic(3), Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0,
                                          base_url=fake_llm.openai_base_url), **kw)  # fmt: skip
        moved = Judge("openai/gpt-4o-mini", api_key=KEY, fewshot=0, base_url=other.openai_base_url)
        urls = fake_llm.openai_base_url, other.openai_base_url
        with caplog.at_level("WARNING", logger="mast"):
            again = annotate_many(synthetic(4), moved, **kw)
    assert again.summary.resumed == 0 and again.summary.done == 4
    assert again.summary.judged_otherwise == 3  # the fourth trace had no record at all
    assert "3 of them had a record by another judge setting" in again.summary.format()
    said = [r.getMessage() for r in caplog.records if "another judge setting" in r.getMessage()]
    assert len(said) == 1  # once per run, not once per trace
    assert "(endpoint: {} → {})".format(*urls) in said[0]  # the one setting that differs
    assert len([json.loads(line) for line in out.read_text().splitlines()]) == 7  # both kept
