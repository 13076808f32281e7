"""``mast annotate --attribution`` and ``mast agree --attribution``: options and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast.cli import main
from mast.cli.annotate import ATTRIBUTION_METHODS
from mast.judge.attribute import METHODS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "whoandwhen_attr"


def test_cli_offers_exactly_the_library_methods() -> None:
    assert ATTRIBUTION_METHODS == METHODS


def test_heuristic_judge_cannot_attribute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "annotate",
            str(FIXTURES),
            "--model",
            "heuristic",
            "--attribution",
            "all-at-once",
            "--out",
            str(tmp_path / "r.jsonl"),
            "-q",
        ]
    )
    assert code == 2 and "needs an LLM judge" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_unknown_method_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["annotate", str(FIXTURES), "--model", "heuristic", "--attribution", "guess",
              "--out", str(tmp_path / "r.jsonl")])  # fmt: skip
    assert info.value.code == 2


def test_agree_attribution_needs_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agree", "--attribution", "--reference", str(FIXTURES)]) == 2
    assert "--candidate" in capsys.readouterr().err


def test_agree_attribution_on_a_plain_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The heuristic judge names no decisive error: every labelled run is scored unanswered.
    out = tmp_path / "r.jsonl"
    assert main(["annotate", str(FIXTURES), "--model", "heuristic", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    code = main(
        [
            "agree",
            "--attribution",
            "--reference",
            str(FIXTURES),
            "--candidate",
            str(out),
            "--format",
            "json",
            "--bootstrap",
            "0",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["overall"]["agent"] == {
        "correct": 0, "answered": 0, "total": 8, "accuracy": None, "ci": [None, None],
        "accuracy_all": 0.0, "ci_all": [None, None],
    }  # fmt: skip
    assert report["excluded_past_end"] == ["whoandwhen/hand-crafted/33-cut"]


def test_agree_attribution_without_labels_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    out = tmp_path / "r.jsonl"
    out.write_text("")
    assert main(["agree", "--attribution", "--reference", str(chat), "--candidate", str(out)]) == 2
    assert "carries attribution labels" in capsys.readouterr().err


def test_annotate_attribution_reports_what_it_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_llm_server import FakeLLMServer, Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-attribution-0000000000")
    body = {"found": True, "agent": "WebSurfer", "step_id": "s2", "reason": "r", "quote": ""}
    with FakeLLMServer() as server:
        server.default = Reply.text(json.dumps(body))
        out = tmp_path / "a.jsonl"
        code = main(
            [
                "annotate",
                str(FIXTURES / "Hand-Crafted"),
                "--model",
                "openai/gpt-4.1",
                "--base-url",
                server.openai_base_url,
                "--attribution",
                "all-at-once",
                "--out",
                str(out),
                "--no-cache",
                "-q",
            ]
        )
        assert code == 0 and len(server.completions) == 5  # one call per run
    text = capsys.readouterr().out
    assert "5 provider call(s)" in text
    assert "all-at-once: decisive error named for 5 of 5 trace(s)" in text
