"""``mast annotate --samples/--models`` and ``mast agree --consensus/--sweep-confidence``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.verdict import Finding
from mast.taxonomy import load_taxonomy
from mast.traces.model import FailureVector

CODES = load_taxonomy().codes


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def write_chats(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            messages = [
                {"role": "user", "content": f"Question {i}: what is {i} + {i}?"},
                {"role": "assistant", "content": f"It is {2 * i}."},
            ]
            handle.write(json.dumps({"id": f"chat-{i}", "messages": messages}) + "\n")


def answer(present: tuple[str, ...]) -> str:
    modes = {
        c: {"evidence": [], "rationale": "", "present": c in present, "confidence": 0.7}
        for c in CODES
    }
    return json.dumps({"summary": "s", "modes": modes, "task_completed": True})


def test_samples_and_models_resume_and_feed_consensus(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = {"n": 0}

    def respond(request: Recorded) -> Reply:
        calls["n"] += 1
        # every third answer flips 2.1: the runs do not always agree
        return Reply.text(answer(("1.1", "2.1") if calls["n"] % 3 == 0 else ("1.1",)))

    fake_llm.responder = respond
    chats, out = tmp_path / "chats.jsonl", tmp_path / "results.jsonl"
    write_chats(chats, 3)
    command = [
        "annotate", str(chats), "--models", "openai/gpt-4o-mini,openai/gpt-4.1",
        "--samples", "2", "--temperature", "0.7", "--base-url", fake_llm.openai_base_url,
        "--out", str(out), "--fewshot", "0", "--quiet",
    ]  # fmt: skip
    assert main(command) == 0
    text = capsys.readouterr().out
    assert "== openai/gpt-4o-mini ==" in text and "== openai/gpt-4.1 ==" in text
    assert "mast agree --consensus" in text
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 * 2 * 3 and len(fake_llm.completions) == 12
    assert {(r["judge"]["model"], r["judge"].get("sample", 0)) for r in records} == {
        ("gpt-4o-mini", 0), ("gpt-4o-mini", 1), ("gpt-4.1", 0), ("gpt-4.1", 1)
    }  # fmt: skip
    # the same command again resumes everything: no new call
    assert main(command) == 0
    assert len(fake_llm.completions) == 12
    assert "6 already done" in capsys.readouterr().out  # per model: 3 traces x 2 samples
    # self-consistency of the four runs
    assert main(["agree", "--consensus", str(out)]) == 0
    report = capsys.readouterr().out
    assert "Self-consistency of 4 run(s) over 3 trace(s)" in report
    assert "openai/gpt-4.1#1" in report


def test_consensus_needs_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "one.jsonl"
    one = Annotation(trace_id="t", status="ok", taxonomy="MAST 1.0",
                     vector=FailureVector({"1.1": True}), judge={"model": "m"})  # fmt: skip
    out.write_text(one.model_dump_json() + "\n")
    assert main(["agree", "--consensus", str(out)]) == 1
    assert "two runs or more" in capsys.readouterr().err


def test_sweep_confidence_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = {"a": True, "b": False, "c": True, "d": False, "e": False}
    said = {"a": (True, 0.9), "b": (True, 0.6), "c": (True, 0.5), "d": (False, 0.7),
            "e": (True, 0.55)}  # fmt: skip
    reference = tmp_path / "human.csv"
    reference.write_text("trace_id,1.1\n" + "".join(f"{t},{int(v)}\n" for t, v in truth.items()))
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            Annotation(
                trace_id=t,
                status="ok",
                taxonomy="MAST 1.0",
                vector=FailureVector({"1.1": v}),
                findings={"1.1": Finding(code="1.1", present=v, confidence=c)},
                judge={"model": "m"},
            ).model_dump_json()
            + "\n"
            for t, (v, c) in said.items()
        )
    )
    base = ["agree", "--sweep-confidence", "--reference", str(reference), "--candidate",
            str(results)]  # fmt: skip
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "best cut-off by kappa: 0.900 (kappa 0.545" in text
    assert "overestimate" in text
    assert main([*base, "--fit", "0.6", "--seed", "1"]) == 0
    fitted = capsys.readouterr().out
    assert "held-out" in fitted and "overestimate" not in fitted
    assert main([*base, "--fit", "1.5"]) == 2


def test_agreement_shows_self_consistency_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "runs.jsonl"
    rows = []
    for trace, values in {
        "a": (True, True, False),
        "b": (False,) * 3,
        "c": (True, False, True),
    }.items():
        for k, value in enumerate(values):
            judge = {"provider": "openai", "model": "m", "config_hash": f"h{k}"}
            judge.update({"sample": k} if k else {})
            rows.append(Annotation(trace_id=trace, status="ok", taxonomy="MAST 1.0",
                                   vector=FailureVector({"1.1": value}), judge=judge))  # fmt: skip
    results.write_text("".join(a.model_dump_json() + "\n" for a in rows))
    reference = tmp_path / "human.csv"
    reference.write_text("trace_id,1.1\na,1\nb,0\nc,1\n")
    command = ["agree", "--reference", str(reference), "--candidate", str(results),
               "--bootstrap", "0", "--modes", "1.1"]  # fmt: skip
    assert main(command) == 0
    text = capsys.readouterr().out
    assert "pooled Cohen's kappa" in text
    assert "Self-consistency of 3 run(s) over 3 trace(s)" in text
    assert "flip rate 66.7%" in text


def test_samples_are_refused_on_the_ray_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = ["annotate", str(tmp_path), "--model", "heuristic", "--out", str(tmp_path / "o"),
               "--engine", "ray", "--samples", "2"]  # fmt: skip
    assert main(command) == 2
    assert "--samples needs the local engine" in capsys.readouterr().err
