"""MAST verdicts into Inspect logs (inspect_ai's own reader and writer), mast as a Scout
scanner run by Scout's own runner, and mast as an Inspect scorer run by Inspect's ``score``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mast
from fake_llm_server import Reply, verdict_json
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector

pytest.importorskip("inspect_ai")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "inspect" / "mast_fixture.eval"


def _results(tmp_path: Path) -> Path:
    ok = Annotation(
        trace_id="mast_fixture/add-1",
        status="ok",
        taxonomy="MAST 1.0",
        vector=FailureVector({"1.3": True, "2.6": False, "3.1": None}),
        findings={
            "1.3": Finding(
                code="1.3", present=True, evidence=[Evidence(step_id="s2")], rationale="twice"
            )
        },
        judge={"provider": "openai", "model": "openai/gpt-4.1"},
    )
    failed = Annotation(
        trace_id="mast_fixture/capital-1", status="error", error="timeout",
        taxonomy="MAST 1.0", vector=FailureVector(), judge={"model": "openai/gpt-4.1"},
    )  # fmt: skip
    path = tmp_path / "results.jsonl"
    path.write_text(ok.model_dump_json() + "\n" + failed.model_dump_json() + "\n")
    return path


def test_scores_written_into_an_eval_log_read_back_with_inspect(tmp_path: Path, capsys) -> None:
    from inspect_ai.log import read_eval_log

    log = tmp_path / "run.eval"
    shutil.copy(FIXTURE, log)
    results = _results(tmp_path)
    scored = tmp_path / "scored.eval"
    assert main(["export", "inspect", str(results), "--log", str(log), "--out", str(scored)]) == 0
    out = capsys.readouterr()
    assert "wrote 2 score(s) to inspect" in out.out
    assert "failed annotation mast_fixture/capital-1" in out.err
    samples = {s.id: s for s in read_eval_log(str(scored)).samples}
    add = samples["add-1"].scores
    assert add["mast/1.3"].value == 1.0 and add["mast/1.3"].answer == "present"
    assert add["mast/1.3"].explanation == "twice"
    assert add["mast/1.3"].metadata["step_ids"] == ["s2"]
    assert add["mast/2.6"].value == 0.0 and "mast/3.1" not in add  # unknown: no score
    assert "match" in add  # the task's own score stays
    assert not [n for n in samples["capital-1"].scores if n.startswith("mast/")]
    # The original is untouched; --in-place rewrites a log and a rerun replaces, never adds.
    assert not [n for n in read_eval_log(str(log)).samples[0].scores if n.startswith("mast/")]
    for _ in range(2):
        assert main(["export", "inspect", str(results), "--log", str(scored), "--in-place"]) == 0
    again = {s.id: s for s in read_eval_log(str(scored)).samples}
    assert sorted(again["add-1"].scores) == sorted(add)
    assert [t.id for t in mast.load_traces(scored)] == [
        "mast_fixture/add-1",
        "mast_fixture/capital-1",
    ]


# Scout's log reader calls inspect_ai's run_coroutine inside Scout's own running loop, which
# applies nest_asyncio2 to the whole process: asyncio.run, the loop classes and Task are patched
# for good, and from then on every asyncio.run in a worker thread leaves an unclosed loop behind
# (a ResourceWarning at whichever later test the collector runs in). The scan runs in a child.
_SCOUT_SCAN = """
import json, sys
import inspect_scout as scout
from mast.export import mast_scanner
base_url, logs, scans = sys.argv[1:4]
scanner = mast_scanner("openai/gpt-4.1", base_url=base_url, api_key="sk-test", fewshot=0)
status = scout.scan([scanner], scout.transcripts_from(logs), scans=scans, display="none")
frame = scout.scan_results_df(status.location).scanners["mast"]
print(json.dumps({
    "complete": status.complete,
    "rows": len(frame),
    "present": [bool(v) for v in frame[frame["label"] == "mast/1.3"]["value"]],
    "answers_2_1": sorted(set(frame[frame["label"] == "mast/2.1"]["answer"])),
}))
"""


def test_scout_scanner_under_scouts_runner(tmp_path: Path, fake_llm) -> None:
    pytest.importorskip("inspect_scout")
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FIXTURE, logs / "run.eval")
    codes = mast.load_taxonomy().codes
    fake_llm.enqueue(*[Reply.text(verdict_json(codes, present=("1.3",))) for _ in range(2)])
    args = [fake_llm.openai_base_url, str(logs), str(tmp_path / "scans")]
    child = subprocess.run(
        [sys.executable, "-c", _SCOUT_SCAN, *args], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["complete"], child.stderr[-3000:]
    assert result["rows"] == 2 * len(codes)  # two transcripts, every mode judged
    assert result["present"] == [True, True]
    assert result["answers_2_1"] == ["absent"]
    assert len(fake_llm.requests) == 2  # one judge call per transcript


def test_inspect_scorer_rescores_a_log() -> None:
    from inspect_ai import score
    from inspect_ai.log import read_eval_log

    from mast.export import mast_scorer

    log = score(read_eval_log(str(FIXTURE)), [mast_scorer("heuristic")], display="none")
    add = {s.id: s for s in log.samples}["add-1"].scores["mast"]
    # The heuristic judges 2.1 on this sample (absent) and leaves the rest unknown (NaN).
    assert add.value["2.1"] == 0.0
    assert len(add.value) == 14 and sum(v == v for v in add.value.values()) == 1
    metrics = {m.name: m.value for s in log.results.scores for m in s.metrics.values()}
    assert metrics  # Inspect computed its metrics over the mast scores
