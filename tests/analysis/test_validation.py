"""``mast.validate`` and ``mast validate``: offline with the heuristic judge on the bundled
sample, and end to end through the official OpenAI client against the local test server."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from pathlib import Path

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.analysis.validation import validate
from mast.cli import main
from mast.errors import DuplicateLabelsWarning, StatsInputError
from mast.traces.datasets import examples_path, load_mad_human

pytestmark = pytest.mark.filterwarnings("ignore::mast.agree.stats.UndefinedMetricWarning")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = examples_path() / "mad_human_sample.json"
CODES = mast.load_taxonomy().codes
KEY = "sk-validate-test-key-000000000000000000"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))


def kappa(tp: int, fp: int, fn: int, tn: int) -> float:
    tp_, fp_, fn_, tn_ = (Fraction(x) for x in (tp, fp, fn, tn))
    n = tp_ + fp_ + fn_ + tn_
    pe = ((tp_ + fn_) * (tp_ + fp_) + (fp_ + tn_) * (fn_ + tn_)) / (n * n)
    return float(((tp_ + tn_) / n - pe) / (1 - pe))


def test_validate_heuristic_offline_on_the_bundled_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "validation"
    argv = ["validate", "--model", "heuristic", "--dataset", str(SAMPLE), "--out", str(out)]
    argv += ["--bootstrap", "200", "-q"]
    code = main(argv)
    printed = capsys.readouterr().out
    assert code == 0
    assert "heuristic on" in printed and "constant baseline" in printed
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md", "results.jsonl"]
    report = (out / "report.md").read_text(encoding="utf-8")
    for needle in (
        "## Agreement with each reference",
        "| annotator_1 |",
        "| majority |",
        "human ceiling κ",
        "constant κ",
        "chance κ",
        "κ unknown→no",
        "## Against the majority, per taxonomy version of the labels",
        "| round1 |",
        "3.2∨3.3",
        "know which modes are common but not when",
        "3.2/3.3 convention: judge paper; human labels paper.",
        "| system |",
        "| MetaGPT |",
    ):
        assert needle in report, needle
    assert "**Warning:**" not in report
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["kind"] == "validation" and data["n_traces"] == 4
    assert data["conventions"] == {"reference": "paper", "candidate": "paper", "differ": False}
    assert [r["system"] for r in data["per_system"]] == ["AG2", "MetaGPT"]
    assert sum(r["traces"] for r in data["per_system"]) == 4
    assert [r["reference"] for r in data["summary"]] == [
        *("annotator_1", "annotator_2", "annotator_3", "majority")
    ]
    majority = data["summary"][-1]
    assert majority["cells_asked"] == 56 and 0 < majority["cells_scored"] < 56
    assert data["duplicate_groups"] == [] and data["n_blocks"] == 4
    assert data["cost_usd"] == 0.0 and data["failed"] == {}
    # A second run resumes from results.jsonl and gives the same numbers.
    assert main(argv) == 0
    again = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert again["summary"] == data["summary"]


def test_validate_against_the_local_openai_server_end_to_end(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    flagged = ("1.5", "3.3")
    fake_llm.default = Reply.text(verdict_json(CODES, flagged))
    out = tmp_path / "gpt"
    argv = [
        *("validate", "--model", "openai/gpt-4o-mini", "--base-url", fake_llm.openai_base_url),
        *("--dataset", str(SAMPLE), "--out", str(out), "--fewshot", "0", "--bootstrap", "100"),
        "-q",
    ]
    assert main(argv) == 0
    calls = [r for r in fake_llm.requests if r.is_completion]
    assert len(calls) == 4 and {r.body["model"] for r in calls} == {"gpt-4o-mini"}
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    # The server answers {1.5, 3.3} for every trace: a constant judge.  Its pooled kappa
    # against the majority, by hand from the majority labels:
    human = load_mad_human(SAMPLE)
    vote = mast.agree.labels_of(human, "majority")
    cells = [(vote[t][c], c in flagged) for t in vote for c in CODES if vote[t][c] is not None]
    counts = (
        sum(r and j for r, j in cells),
        sum((not r) and j for r, j in cells),
        sum(r and not j for r, j in cells),
        sum((not r) and not j for r, j in cells),
    )
    majority = data["summary"][-1]
    assert majority["pooled_kappa"] == pytest.approx(kappa(*counts))
    assert majority["pooled_kappa"] > 0.1  # flagging common modes pays off when pooled …
    assert majority["cells_scored"] == majority["cells_asked"] == len(cells)
    assert majority["macro_kappa"] == pytest.approx(0.0)  # … but shows no skill on any mode
    assert majority["constant_kappa"] >= majority["pooled_kappa"] - 1e-12
    assert data["cost_usd"] > 0 and data["cost_unknown"] == 0
    assert "openai/gpt-4o-mini" in (out / "report.md").read_text(encoding="utf-8")
    # Validated in the shape mast annotate runs by default, and the report says so.
    assert data["answer"] == "compact"
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["judge"]["answer"] for r in records} == {"compact"}
    # Rerun: resumed from results.jsonl, nothing paid twice.
    assert main(argv) == 0
    assert len([r for r in fake_llm.requests if r.is_completion]) == 4
    assert "cost $" in capsys.readouterr().out


def test_validate_within_a_budget_reports_what_was_not_attempted(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.default = Reply.text(verdict_json(CODES, ("3.3",)))
    judge = mast.Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0
    )
    report = validate(
        judge, SAMPLE, out=tmp_path / "v", budget_usd=0.0, bootstrap=0, progress=False
    )
    assert report.failed.get("not attempted")
    assert any("stopped early" in n for n in report.notes)
    assert "without a usable annotation (not attempted)" in report.to_markdown()


def test_validate_in_python_with_duplicated_blocks(tmp_path: Path) -> None:
    records = json.loads((FIXTURES / "mad" / "human_sample.json").read_text(encoding="utf-8"))
    by_id = {r["trace_id"]: r for r in records}
    by_id[4]["annotations"] = by_id[2]["annotations"]  # trace 2's labels copied onto trace 4
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.warns(DuplicateLabelsWarning):
        traces = load_mad_human(path)
    report = mast.validate(mast.Judge("heuristic"), traces, bootstrap=100, progress=False)
    assert report.duplicate_groups == [["mad-human/2", "mad-human/4"]] and report.n_blocks == 3
    assert report.majority.context.resampling == "label blocks"
    assert "4 traces carry only 3 distinct label blocks" in report.to_markdown()
    assert report.to_dict()["n_blocks"] == 3


def test_validate_needs_people_labels(tmp_path: Path) -> None:
    traces = [t for t in mast.datasets.example_traces() if t.format != "mad-human"]
    with pytest.raises(StatsInputError, match="two or more people"):
        validate(mast.Judge("heuristic"), traces, bootstrap=0, progress=False)
    with pytest.raises(StatsInputError, match="no such file"):
        validate(mast.Judge("heuristic"), tmp_path / "missing.json", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["validate", "--model", "heuristic", "--dataset", "nope.json", "-q"]) == 2


def test_offline_hint_names_how_this_caller_passes_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32 item 11: the CLI's hint names --dataset PATH, Python's names mast.validate."""
    from mast.cli import main
    from mast.errors import DatasetUnavailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    argv = ["validate", "--model", "heuristic", "--dataset", "mad-human", "-q"]
    assert main([*argv, "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "pass its path: mast validate --dataset MAD_human_labelled_dataset.json" in err
    assert "load_mad_human(" not in err
    with pytest.raises(DatasetUnavailableError, match=r"mast\.validate\(judge, 'MAD_human"):
        mast.validate(mast.Judge("heuristic"), "mad-human")


def test_report_md_does_not_end_with_warning_paragraphs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 11: report.md ended with one UndefinedMetricWarning paragraph per report."""
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    sample = mast.traces.datasets.examples_path() / "mad_human_sample.json"
    report = mast.validate(
        mast.Judge("heuristic"), sample, out=tmp_path, progress=False, bootstrap=20
    )
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "UndefinedMetricWarning" not in text
    assert any("values undefined on this data" in n for n in report.notes)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert any("undefined" in n for n in data["reports"]["majority"]["notes"])
