"""Field-test fixes for the command line (issue 18): one-line errors, not tracebacks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.cli import main
from mast.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ANSWER = verdict_json(load_taxonomy().codes, ("1.3",))
TRACE = str(FIXTURES / "ag2" / "AG2_trace1.json")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# --- 5. bad --model / --format -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "fix"), [("gpt-4.1", "openai/gpt-4.1"), ("openai:gpt-4o", "openai/gpt-4o")]
)
def test_bad_model_is_one_line_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, fix: str
) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["annotate", TRACE, "--model", model, "--out", str(out), "-q"]) == 2
    line = one_line_error(capsys)
    assert f"'{fix}'" in line and "openai/openai:" not in line
    assert not out.exists()


@pytest.mark.parametrize("command", ["annotate", "inspect"])
def test_unknown_format_is_one_line_listing_the_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    extra = (
        ["--model", "heuristic", "--out", str(tmp_path / "r.jsonl")]
        if command == "annotate"
        else []
    )
    with pytest.raises(SystemExit) as info:
        main([command, TRACE, "--format", "nosuch", *extra])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nosuch" in err
    for name in ("whoandwhen", "codex-exec", "itbench", "auto"):
        assert name in err


# --- 1. duplicate ids across files -------------------------------------------------------------


def test_annotate_duplicate_ids_is_an_error_naming_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(TRACE, tmp_path / name / "run.json")
    out = tmp_path / "r.jsonl"
    code = main(
        [
            "annotate",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
            "--model",
            "heuristic",
            "--out",
            str(out),
            "-q",
        ]
    )
    assert code == 2
    line = one_line_error(capsys)
    assert str(tmp_path / "a" / "run.json") in line and str(tmp_path / "b" / "run.json") in line


# --- 3. rerun messages -------------------------------------------------------------------------


def test_rerun_after_failures_says_what_failed_earlier(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.error(400, "model does not exist")
    out = tmp_path / "r.jsonl"
    base = [
        "annotate",
        TRACE,
        "--model",
        "openai/gpt-4o-mini",
        "--base-url",
        fake_llm.openai_base_url,
        "--out",
        str(out),
        "--fewshot",
        "0",
        "-q",
        "--no-cache",
    ]
    assert main(base) == 1
    capsys.readouterr()
    assert main(base) == 1
    text = capsys.readouterr().out
    assert "1 failed earlier" in text and "http_400" in text and "--retry-failed" in text


# --- 4. --ground-truth -------------------------------------------------------------------------


def test_inspect_ground_truth_option_and_missing_ground_truth_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trial = tmp_path / "runs" / "trial-1"
    shutil.copytree(FIXTURES / "itbench_layout" / "copied" / "run-a", trial)
    (trial / "config.toml").unlink()
    assert main(["inspect", str(trial)]) == 0
    text = capsys.readouterr()
    assert "outcome=unknown" in text.out and "without ground truth" in text.out
    assert "--ground-truth" in text.out + text.err
    gt = FIXTURES / "itbench_layout" / "ground_truth" / "scenario_2" / "groundtruth.yaml"
    assert main(["inspect", str(trial), "--ground-truth", str(gt)]) == 0
    assert "outcome=success" in capsys.readouterr().out


# --- 7. plain-text traces ----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::mast.traces.segment.SegmentationWarning")
def test_plain_text_traces_are_counted_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("some notes that are no framework log\n")
    shutil.copy(TRACE, tmp_path)
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 plain-text trace(s)" in out and "notes" in out
    assert (
        main(
            [
                "annotate",
                str(tmp_path),
                "--model",
                "heuristic",
                "--out",
                str(tmp_path / "r.jsonl"),
                "-q",
            ]
        )
        == 0
    )
    assert "1 plain-text trace(s)" in capsys.readouterr().out


# --- 9. read-only output -----------------------------------------------------------------------


def test_unwritable_results_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    out = "/sys/mast-field-test-results.jsonl"  # sysfs refuses new files, even to root
    assert main(["annotate", TRACE, "--model", "heuristic", "--out", out, "-q"]) == 2
    line = one_line_error(capsys)
    assert out in line and "--out" in line


# --- 11. messages ------------------------------------------------------------------------------


def test_missing_key_names_the_environment_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "r.jsonl"
    assert main(["annotate", TRACE, "--model", "openai/gpt-4o", "--out", str(out), "-q"]) == 2
    line = one_line_error(capsys)
    assert "OPENAI_API_KEY" in line and "api_key=" not in line


def test_taxonomy_help_mentions_sre(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["taxonomy", "--help"])
    assert "sre" in capsys.readouterr().out
    assert main(["taxonomy", "sre"]) == 0


def test_results_file_in_inputs_is_reported_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(TRACE, tmp_path)
    out = tmp_path / "r.jsonl"
    assert main(["annotate", str(tmp_path), "--model", "heuristic", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 1
    assert main(["inspect", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.count("r.jsonl") == 1 and "results file" in err
