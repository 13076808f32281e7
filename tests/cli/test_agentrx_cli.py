"""End to end on AgentRx through the official OpenAI client and the local test server:
``mast annotate --taxonomy agentrx`` then per-category agreement with the labels, and
``mast validate --dataset agentrx`` with its baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.cli import main
from mast.taxonomy import load_taxonomy
from mast.traces.agentrx import bundled_agentrx_path, load_agentrx

pytestmark = pytest.mark.filterwarnings("ignore::mast.agree.stats.UndefinedMetricWarning")

KEY = "sk-agentrx-test-key-00000000000000000000"
CODES = load_taxonomy("agentrx").codes
TAU = bundled_agentrx_path() / "tau_retail"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _answer(present: tuple[str, ...], agent: str, step: str) -> str:
    data = json.loads(verdict_json(CODES, present))
    data["decisive_error"] = {"agent": agent, "step_id": step, "modes": [present[0]], "reason": "x"}
    return json.dumps(data)


def test_annotate_with_the_agentrx_taxonomy_and_agree_per_category(
    tmp_path: Path, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # A constant judge: every run shows 4.0 (Misinterpretation of Tool Output) and 1.0.
    fake_llm.default = Reply.text(_answer(("1.0", "4.0"), "Assistant", "s3"))
    results = tmp_path / "results.jsonl"
    argv = ["annotate", str(TAU), "--model", "openai/gpt-4o-mini", "--taxonomy", "agentrx"]
    argv += ["--base-url", fake_llm.openai_base_url, "--fewshot", "0", "--out", str(results)]
    assert main([*argv, "-q"]) == 0
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(records) == 15 and {r["taxonomy"] for r in records} == {"AgentRx 1.0"}
    assert all(set(r["vector"]) == set(CODES) for r in records)
    # the prompt lists the AgentRx categories, and never the task's expected actions
    calls = [r for r in fake_llm.requests if r.is_completion]
    prompt = json.dumps(calls[0].body)
    assert "Misinterpretation of Tool Output" in prompt and "Intent Not Supported" in prompt
    assert "r_outputs" not in prompt and "You are Yusuf Rossi" not in prompt
    capsys.readouterr()
    agree = ["agree", "--reference", str(TAU), "--candidate", str(results)]
    agree += ["--taxonomy", "agentrx", "--bootstrap", "0", "--format", "json"]
    assert main(agree) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["row"]: r for r in data["rows"]}
    assert set(CODES) <= set(rows)
    labels = {t.id: t.labels["agentrx"] for t in load_agentrx(TAU)}
    # per category, by hand: the judge says yes to 1.0 and 4.0 on all 15 runs, no elsewhere
    for code in CODES:
        yes = sum(v[code] is True for v in labels.values())
        judged = code in ("1.0", "4.0")
        want = (yes, 15 - yes, 0, 0) if judged else (0, 0, yes, 15 - yes)
        row = rows[code]
        assert (row["n"], row["tp"], row["fp"], row["fn"], row["tn"]) == (15, *want), code


def test_validate_on_agentrx_writes_its_report_with_baselines(
    tmp_path: Path, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.text(_answer(("4.0",), "Assistant", "s3"))
    out = tmp_path / "validation"
    argv = ["validate", "--model", "openai/gpt-4o-mini", "--dataset", "agentrx"]
    argv += ["--taxonomy", "agentrx", "--base-url", fake_llm.openai_base_url, "--fewshot", "0"]
    argv += ["--out", str(out), "--bootstrap", "0", "-q"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "37 runs" in printed and "root-cause agent" in printed
    assert {"report.json", "report.md", "results.jsonl"} <= {p.name for p in out.iterdir()}
    report = (out / "report.md").read_text(encoding="utf-8")
    for needle in (
        "Root cause and any-failure localisation",
        "| always the first step |",
        "| the agent with most steps |",
        "the most frequent category",
        "Agreement per category",
    ):
        assert needle in report, needle
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    runs = load_agentrx()
    # The judge always names agent "Assistant" at s3: count by hand from the labels.
    roots = [t.metadata["agentrx"]["root_cause"] for t in runs]
    overall = data["attribution"]["overall"]
    assert overall["agent"]["correct"] == sum(r["agent"] == "Assistant" for r in roots)
    assert overall["step"]["correct"] == sum(r["step_id"] == "s3" for r in roots)
    any_hits = sum("s3" in {f["step_id"] for f in t.metadata["agentrx"]["failures"]} for t in runs)
    assert overall["any_step"]["correct"] == any_hits and overall["any_step"]["total"] == 37
    # baselines: the first step (s1) is never a labelled root cause here
    first = data["baselines"]["always the first step"]["overall"]
    assert first["step"]["correct"] == sum(r["step_id"] == "s1" for r in roots) == 0
    most = data["baselines"]["the agent with most steps"]["overall"]
    assert most["agent"]["total"] == 37
    # root-cause category: the judge always says 4.0; the most frequent root cause is 4.0 too
    rc = data["root_cause_category"]
    count_4 = sum(r["category"] == "4.0" for r in roots)
    assert rc["correct"] == count_4 == rc["baseline_correct"] and rc["baseline_category"] == "4.0"
    assert rc["total"] == 37
    assert {r["row"] for r in data["categories"]["rows"]} >= set(CODES)


def test_validate_on_agentrx_with_a_mast_judge_shows_the_approximate_mapping(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    codes = load_taxonomy().codes
    data = json.loads(verdict_json(codes, ("2.5",)))
    data["decisive_error"] = {"agent": "Orchestrator", "step_id": "s2", "modes": ["2.5"]}
    fake_llm.default = Reply.text(json.dumps(data))
    out = tmp_path / "v"
    argv = ["validate", "--model", "openai/gpt-4o-mini", "--dataset", str(TAU), "--out", str(out)]
    argv += ["--base-url", fake_llm.openai_base_url, "--fewshot", "0", "--bootstrap", "0", "-q"]
    assert main(argv) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "APPROXIMATE mapping" in report
    side = json.loads((out / "report.json").read_text())["side_by_side_approximate"]
    row = {r["category"]: r for r in side}["4.0"]  # mapped to 2.5 and 3.3: always flagged
    assert row["with_flagged"] == f"{row['with']}/{row['with']}"


def test_validate_trail_without_a_download_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--model", "heuristic", "--dataset", "trail", "-q"]) == 2
    assert "gated on the Hugging Face Hub" in capsys.readouterr().err


def test_validate_on_agentrx_never_shows_agentrx_excerpts(
    tmp_path: Path, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    import mast
    from mast.analysis.validation_localisation import agentrx_excerpts

    # the bundled pool holds τ-bench excerpts from AgentRx runs …
    leaked = agentrx_excerpts(mast.Judge("openai/gpt-4o-mini", api_key=KEY))
    assert leaked
    # … and Who&When excerpts of the six Hand-Crafted runs AgentRx ships too
    assert {
        "ww-hc27-path-left-out",
        "ww-hc51-same-instruction-again",
        "ww-hc57-oko-left-out",
    } <= set(leaked)
    codes = load_taxonomy().codes
    fake_llm.default = Reply.text(verdict_json(codes, ("2.5",)))
    out = tmp_path / "v"
    argv = ["validate", "--model", "openai/gpt-4o-mini", "--dataset", str(TAU), "--out", str(out)]
    argv += ["--base-url", fake_llm.openai_base_url, "--bootstrap", "0", "-q"]
    assert main(argv) == 0
    # … and none of them reaches a prompt while validating on AgentRx
    for request in (r for r in fake_llm.requests if r.is_completion):
        body = json.dumps(request.body)
        assert not any(name in body for name in leaked)
    notes = json.loads((out / "report.json").read_text())["notes"]
    assert not any("CONTAMINATION" in n for n in notes)


def test_validate_fewshot_exclude_adds_to_the_agentrx_exclusion(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    import mast
    from mast.analysis.validation_localisation import agentrx_excerpts
    from mast.cli.validate import fewshot_exclude

    assert fewshot_exclude(["ag2"], on_agentrx=False) == ["ag2"]
    assert fewshot_exclude([], on_agentrx=True) == ["agentrx"]
    default = mast.Judge("openai/gpt-4o-mini", api_key=KEY)
    whoandwhen = [ex.id for ex in default.examples if getattr(ex, "dataset", None) == "whoandwhen"]
    agentrx = agentrx_excerpts(default)
    assert whoandwhen and agentrx  # the default choice shows both …
    fake_llm.default = Reply.text(verdict_json(load_taxonomy().codes, ("2.5",)))
    argv = ["validate", "--model", "openai/gpt-4o-mini", "--dataset", str(TAU)]
    argv += ["--out", str(tmp_path / "v"), "--base-url", fake_llm.openai_base_url]
    argv += ["--bootstrap", "0", "-q", "--fewshot", "3", "--fewshot-exclude", "whoandwhen"]
    assert main(argv) == 0
    bodies = [json.dumps(r.body) for r in fake_llm.requests if r.is_completion]
    assert bodies and all("EXCERPT" in b for b in bodies)  # examples are still shown …
    # … but none of Who&When (asked for) nor of AgentRx (always, on AgentRx runs)
    for body in bodies:
        assert not any(name in body for name in [*whoandwhen, *agentrx])


def test_validate_on_a_trail_download_scores_trails_measures(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    trail = Path(__file__).resolve().parents[1] / "fixtures" / "trail" / "gaia_rows.jsonl"
    codes = load_taxonomy("trail").codes
    data = json.loads(verdict_json(codes, ("2.3",)))
    data["modes"]["2.3"]["first_step"] = "s3"  # the third span of each fixture trace
    fake_llm.default = Reply.text(json.dumps(data))
    out = tmp_path / "v"
    argv = ["validate", "--model", "openai/gpt-4o-mini", "--dataset", str(trail)]
    argv += ["--taxonomy", "trail", "--base-url", fake_llm.openai_base_url, "--fewshot", "0"]
    argv += ["--out", str(out), "--bootstrap", "0", "-q"]
    assert main(argv) == 0
    got = json.loads((out / "report.json").read_text())["trail"]
    # by hand: aaa111's s3 is span a3 (Rate Limiting, labelled): location 1/2, joint 1/3;
    # bbb222's s3 is span b3 (labelled Resource Not Found, not 2.3): location 1/2, joint 0
    assert got["location_accuracy"] == pytest.approx(0.5, abs=1e-6)
    assert got["joint_accuracy"] == pytest.approx((1 / 3 + 0) / 2, abs=1e-6)  # JSON: 6 places
    assert "TRAIL measures" in (out / "report.md").read_text()
