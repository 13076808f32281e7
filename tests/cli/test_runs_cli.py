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


def _two_models(tmp_path: Path) -> tuple[Path, Path]:
    """Model "good" agrees with the reference on every trace, model "bad" never; "bad"'s
    records come last, so keeping the last record per trace would score only "bad"."""
    truth = {"a": True, "b": False, "c": True, "d": False}
    rows = [
        Annotation(
            trace_id=t,
            status="ok",
            taxonomy="MAST 1.0",
            vector=FailureVector({"1.1": v if model == "good" else not v}),
            judge={"provider": "openai", "model": model, "config_hash": model},
        )
        for model in ("good", "bad")
        for t, v in truth.items()
    ]
    results = tmp_path / "runs.jsonl"
    results.write_text("".join(a.model_dump_json() + "\n" for a in rows))
    reference = tmp_path / "human.csv"
    reference.write_text("trace_id,1.1\n" + "".join(f"{t},{int(v)}\n" for t, v in truth.items()))
    return reference, results


def test_agree_scores_each_run_of_a_multi_run_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, results = _two_models(tmp_path)
    command = ["agree", "--reference", str(reference), "--candidate", str(results),
               "--bootstrap", "0", "--modes", "1.1"]  # fmt: skip
    assert main(command) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "holds 2 judge runs" in text and "each is scored on its own" in text
    summary = {line.split()[0]: line.split()[2] for line in text.splitlines()
               if line.startswith(("openai/good ", "openai/bad "))}  # fmt: skip
    assert summary == {"openai/good": "1.000", "openai/bad": "-1.000"}
    assert "== run openai/good ==" in text and "== run openai/bad ==" in text
    assert "Agreement of openai/good with human: 4 trace(s)" in text
    assert "2 judge runs (openai/good, openai/bad): each is scored on its own" in captured.err
    # JSON: one report per run, nothing merged
    assert main([*command, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "agreement_runs" and data["runs"] == ["openai/good", "openai/bad"]
    kappas = {name: rep["pooled"]["kappa"] for name, rep in data["reports"].items()}
    assert kappas == {"openai/good": 1.0, "openai/bad": -1.0}
    assert all(rep["pooled"]["n_cells"] == 4 for rep in data["reports"].values())
    # one run by name; an unknown run name is an error that lists the runs
    assert main([*command, "--candidate-annotator", "openai/good"]) == 0
    assert "pooled Cohen's kappa = 1.000 over 4 cells" in capsys.readouterr().out
    assert main([*command, "--candidate-annotator", "openai/other"]) == 2
    assert "openai/good, openai/bad" in capsys.readouterr().err


def test_agree_majority_of_runs_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, results = _two_models(tmp_path)
    third = [
        Annotation(
            trace_id=t,
            status="ok",
            taxonomy="MAST 1.0",
            vector=FailureVector({"1.1": t in ("a", "c")}),
            judge={"provider": "openai", "model": "good", "sample": 1, "config_hash": "g1"},
        )
        for t in "abcd"
    ]
    with results.open("a") as fh:
        fh.write("".join(a.model_dump_json() + "\n" for a in third))
    command = ["agree", "--reference", str(reference), "--candidate", str(results),
               "--bootstrap", "0", "--modes", "1.1",
               "--candidate-annotator", "majority"]  # fmt: skip
    assert main(command) == 0
    captured = capsys.readouterr()
    # 2 of 3 runs are right on every trace: the majority agrees fully
    assert "Agreement of majority of 3 runs with human" in captured.out
    assert "pooled Cohen's kappa = 1.000 over 4 cells" in captured.out
    assert "majority vote of 3 runs" in captured.err


def test_agreement_refuses_to_merge_runs_by_keeping_the_last_record(tmp_path: Path) -> None:
    from mast.agree import agreement
    from mast.agree.runs import split_runs
    from mast.bulk.store import read_annotations
    from mast.errors import StatsInputError

    _, results = _two_models(tmp_path)
    truth = {"a": True, "b": False, "c": True, "d": False}
    records = read_annotations(results)
    with pytest.raises(StatsInputError, match=r"2 runs of the judge \(openai/good, openai/bad\)"):
        agreement({t: {"1.1": v} for t, v in truth.items()}, records, modes=["1.1"])
    by_run = split_runs(records)
    rep = agreement({t: {"1.1": v} for t, v in truth.items()}, by_run["openai/good"],
                    modes=["1.1"], bootstrap=0)  # fmt: skip
    assert rep.pooled.kappa == 1.0


def test_sweep_confidence_picks_one_run_or_says_it_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, results = _two_models(tmp_path)
    base = ["agree", "--sweep-confidence", "--reference", str(reference), "--candidate",
            str(results), "--modes", "1.1"]  # fmt: skip
    assert main(base) == 0
    assert "the sweep pools their cells" in capsys.readouterr().err
    assert main([*base, "--candidate-annotator", "openai/good"]) == 0
    out = capsys.readouterr()
    assert "kappa 1.000" in out.out and "pools" not in out.err
