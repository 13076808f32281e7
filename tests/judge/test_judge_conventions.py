"""The judge in either 3.2/3.3 convention, and the trace header's roster of agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.cache import cache_taxonomy
from mast.bulk.types import config_hash
from mast.cli import main
from mast.judge.judge import Judge
from mast.judge.prompt.render import roster_line
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_trace
from mast.traces.model import Step, Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _trace() -> Trace:
    return Trace(id="t", steps=[Step.make(0, "done, verified", agent="Coder")])


def test_official_judge_renders_the_official_definitions() -> None:
    paper = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0)
    official = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0, verification="official")
    assert official.taxonomy["3.3"].name == "No or Incorrect Verification"
    system = official.render(_trace()).system
    assert "### 3.2 Weak Verification" in system
    assert "### 3.3 No or Incorrect Verification" in system
    assert "No or Incomplete Verification" not in system and "3.3 Incorrect" not in system
    assert "3.2 / 3.3 (tie-break): For one result and the checking of it: if no step" in system
    assert "### 3.2 No or Incomplete Verification" in paper.render(_trace()).system
    # Everything but 3.2/3.3 and their rule is the same text.
    assert system.split("### 3.1")[0] == paper.render(_trace()).system.split("### 3.1")[0]


def test_convention_is_in_records_and_keys_and_paper_records_still_resume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paper = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0)
    official = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0, verification="official")
    assert paper.describe()["verification"] == "paper"
    assert official.describe()["verification"] == "official"
    assert config_hash(paper) != config_hash(official)
    # The paper default is left out of the resume key: records made before the convention
    # was recorded (all in the paper convention) keep their key and resume.
    new_key = config_hash(paper)
    before = {k: v for k, v in paper.describe().items() if k != "verification"}
    monkeypatch.setattr(paper, "describe", lambda: before)
    assert config_hash(paper) == new_key
    assert cache_taxonomy(paper.taxonomy) != cache_taxonomy(official.taxonomy)
    assert Judge("openai/gpt-4.1", api_key="sk-test", verification="paper").taxonomy is (
        load_taxonomy()
    )


def test_official_judge_leaves_out_the_excerpts_paper_readings_of_verification() -> None:
    official = Judge("openai/gpt-4.1", api_key="sk-test", verification="official")
    paper = Judge("openai/gpt-4.1", api_key="sk-test")
    excerpts = official.render(_trace()).system.split("# Worked excerpts")[1]
    for mode in ("3.2", "3.3"):
        assert f"Shows {mode} " not in excerpts and f"Not {mode} " not in excerpts
    assert "Shows 3.2 " in paper.render(_trace()).system.split("# Worked excerpts")[1]
    assert any("left out of the prompt" in n for n in official._notes)
    assert "Shows 1.1 " in excerpts  # the other modes keep their excerpts


def test_heuristic_judge_refuses_another_convention() -> None:
    with pytest.raises(ValueError, match="needs an LLM judge"):
        Judge("heuristic", verification="official")
    assert Judge("heuristic", verification="paper").describe()["verification"] == "paper"


def test_roster_line_and_chatdev_roles() -> None:
    chatdev = load_trace(FIXTURES / "mad" / "full_record_chatdev.json")
    judge = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0)
    user = judge.render(chatdev).user
    roster = roster_line(chatdev)
    assert roster is not None and roster in user
    assert roster == (
        "AGENTS: Chief Executive Officer (5 steps), Chief Product Officer (2 steps), Chief "
        "Technology Officer (3 steps), Programmer (8 steps), Code Reviewer (6 steps), Counselor "
        "(1 step)"
    )
    # ChatDev flips an agent between role=user and role=assistant per phase: not shown.
    assert "agent=Programmer role=" not in user and "agent=Programmer kind=" in user
    assert roster_line(Trace(id="x", steps=[Step.make(0, "log")])) is None
    many = Trace(id="m", steps=[Step.make(i, "x", agent=f"a{i}") for i in range(25)])
    assert (roster_line(many) or "").endswith("a19 (1 step), and 5 more agents")


def test_cli_annotate_records_the_convention(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    codes = load_taxonomy().codes
    fake_llm.default = Reply.text(verdict_json(codes, ("3.3",)))
    out = tmp_path / "r.jsonl"
    argv = ["annotate", str(FIXTURES / "ag2" / "AG2_trace1.json"), "--model", "openai/gpt-4o-mini"]
    argv += ["--base-url", fake_llm.openai_base_url, "--out", str(out), "--fewshot", "0", "-q"]
    assert main([*argv, "--verification", "official", "--no-cache"]) == 0
    record = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert record["judge"]["verification"] == "official"
    sent = fake_llm.completions[-1].body["messages"][0]["content"]
    assert "3.3 No or Incorrect Verification" in sent
