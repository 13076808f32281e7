"""The scripted Who&When run (scripts/attribution_whoandwhen.py) reproduces the accuracies
and call counts counted by hand in tests/fixtures/whoandwhen_attr/scripted.yaml."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "attribution_whoandwhen", ROOT / "scripts" / "attribution_whoandwhen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scripted_judge_reproduces_the_hand_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")  # restored after the test
    script = _script()
    assert script.run(tmp_path) == []
    out = capsys.readouterr().out
    assert "all-at-once    calls=9 " in out and "binary-search  calls=27" in out
    # the results files are real annotate output: one record per run and method
    for method in ("all-at-once", "step-by-step", "binary-search"):
        assert len((tmp_path / f"{method}.jsonl").read_text().splitlines()) == 9


def test_a_wrong_hand_count_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    script = _script()
    report = {
        "traces": [{}] * 8,
        "excluded_past_end": ["x"],
        "overall": {
            m: {"correct": 1, "answered": 2, "total": 2} for m in ("agent", "step", "step_within")
        },
        "groups": [],
    }
    want = script._script()["expected"]["all-at-once"]
    problems = script._compare("all-at-once", report, 9, want)
    assert any("overall agent (answered) is [1, 2]" in p for p in problems)
    assert any("no agent accuracy for Hand-Crafted" in p for p in problems)
