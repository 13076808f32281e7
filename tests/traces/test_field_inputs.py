"""Field-test fixes for reading inputs (issue 18): ids, ITBench layouts, odd files, encodings."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import mast
from mast.errors import TraceFormatError
from mast.traces.loaders import TraceLoadWarning, formats
from mast.traces.model import Outcome

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WW = FIXTURES / "whoandwhen_collision" / "Who&When"
LAYOUT = FIXTURES / "itbench_layout"


def load_all(*sources: str | Path, **kw: object) -> tuple[list[mast.Trace], list[TraceFormatError]]:
    errors: list[TraceFormatError] = []
    traces = list(mast.load_traces(list(sources), on_error="skip", errors=errors, **kw))  # type: ignore[arg-type]
    return traces, errors


# --- 1. Who&When ids ---------------------------------------------------------------------------


def test_whoandwhen_runs_sharing_a_question_id_get_distinct_stable_ids() -> None:
    hand = json.loads((WW / "Hand-Crafted" / "48.json").read_text(encoding="utf-8"))
    algo = json.loads((WW / "Algorithm-Generated" / "111.json").read_text(encoding="utf-8"))
    assert hand["question_ID"] == algo["question_ID"]  # the collision the fixture carries
    traces, errors = load_all(WW)
    assert errors == []
    by_id = {t.id: t for t in traces}
    assert set(by_id) == {"whoandwhen/algorithm-generated/111", "whoandwhen/hand-crafted/48"}
    assert {t.metadata["question_id"] for t in traces} == {hand["question_ID"]}
    assert by_id["whoandwhen/hand-crafted/48"].system == "Magentic-One"
    assert by_id["whoandwhen/algorithm-generated/111"].system == "CaptainAgent"
    again, _ = load_all(WW)
    assert [t.id for t in again] == [t.id for t in traces]  # stable across runs


def test_whoandwhen_subset_read_from_the_record_when_the_folder_does_not_say() -> None:
    hand = mast.load_trace(FIXTURES / "whoandwhen" / "hand-crafted-12.json")
    algo = mast.load_trace(FIXTURES / "whoandwhen" / "algorithm-generated-102.json")
    assert (hand.id, hand.system) == ("whoandwhen/hand-crafted/12", "Magentic-One")
    assert (algo.id, algo.system) == ("whoandwhen/algorithm-generated/102", "CaptainAgent")


def test_load_whoandwhen_sets_system_and_keeps_both_colliding_runs() -> None:
    runs = mast.datasets.load_whoandwhen(WW)
    assert sorted(t.id for t in runs) == [
        "whoandwhen/algorithm-generated/111",
        "whoandwhen/hand-crafted/48",
    ]
    assert {t.metadata["dataset"]["subset"]: t.system for t in runs} == {
        "Hand-Crafted": "Magentic-One",
        "Algorithm-Generated": "CaptainAgent",
    }


# --- 4. ITBench layouts ------------------------------------------------------------------------


def test_itbench_own_layout_finds_the_scenario_ground_truth() -> None:
    # Two tasks (a diagnosis, then a check by another model): two traces (issue 32).
    trace, check = mast.load_traces(LAYOUT / "agent_outputs" / "2" / "1")
    assert trace.outcome is Outcome.SUCCESS, trace.metadata["outcome_reason"]
    assert Path(trace.metadata["ground_truth_file"]).parent.name == "scenario_2"
    assert (trace.id, check.id) == ("itbench/2/1/task-1", "itbench/2/1/task-2")
    assert check.outcome is Outcome.UNKNOWN


def test_itbench_scenario_number_from_config_toml() -> None:
    trace = mast.load_trace(LAYOUT / "copied" / "run-a")  # folder names carry no number
    assert trace.outcome is Outcome.SUCCESS, trace.metadata["outcome_reason"]
    assert trace.metadata["scenario_id"] == "2"
    assert Path(trace.metadata["ground_truth_file"]).parent.name == "scenario_2"


def test_itbench_gz_sessions_and_every_sessions_model() -> None:
    traces = list(mast.load_traces(LAYOUT / "agent_outputs" / "2" / "1"))
    sessions = [s for t in traces for s in t.metadata["sessions"]]
    assert [Path(s["file"]).name.endswith(".jsonl.gz") for s in sessions] == [True, False]
    assert [s["model"] for s in sessions] == ["gpt-oss-120b", "gpt-5-codex"]
    assert [t.metadata["models"] for t in traces] == [["gpt-oss-120b"], ["gpt-5-codex"]]
    assert [t.model for t in traces] == ["gpt-oss-120b", "gpt-5-codex"]


def test_a_single_gz_session_file_loads() -> None:
    (path,) = (LAYOUT / "agent_outputs" / "2" / "1").rglob("*.jsonl.gz")
    trace = mast.load_trace(path)
    assert trace.format == "codex" and len(trace.steps) > 5


def test_itbench_explicit_ground_truth_file_or_folder(tmp_path: Path) -> None:
    trial = tmp_path / "exports" / "trial-7"
    shutil.copytree(LAYOUT / "copied" / "run-a", trial)
    (trial / "config.toml").unlink()
    (alone,) = mast.load_traces(trial)
    assert alone.outcome is Outcome.UNKNOWN
    assert "--ground-truth" in alone.metadata["outcome_reason"]
    gt_file = LAYOUT / "ground_truth" / "scenario_2" / "groundtruth.yaml"
    (given,) = mast.load_traces(trial, ground_truth=gt_file)
    assert given.outcome is Outcome.SUCCESS
    # A folder of scenario_N folders: the trial's scenario number picks one.
    shutil.copytree(LAYOUT / "copied" / "run-a", tmp_path / "exports" / "Scenario-2" / "1")
    (chosen,) = mast.load_traces(
        tmp_path / "exports" / "Scenario-2", ground_truth=LAYOUT / "ground_truth"
    )
    assert chosen.outcome is Outcome.SUCCESS


def test_itbench_skipped_session_file_is_warned_about(tmp_path: Path) -> None:
    trial = tmp_path / "Scenario-2" / "1"
    shutil.copytree(LAYOUT / "agent_outputs" / "2" / "1", trial)
    (trial / "sessions" / "notes.jsonl").write_text('{"hello": 1}\n{"hello": 2}\n')
    with pytest.warns(TraceLoadWarning, match="notes.jsonl"):
        trace, _ = mast.load_traces(trial)
    assert any("notes.jsonl" in p for p in trace.metadata["session_problems"])


_CHECK = "rollout-2026-01-15T18-20-00-019bc270-11aa-7c3e-9a55-2f0d6e1b4c21.jsonl"


def test_itbench_id_has_no_doubled_prefix(tmp_path: Path) -> None:
    trial = tmp_path / "itbench" / "7"
    shutil.copytree(LAYOUT / "agent_outputs" / "2" / "1", trial)
    assert [t.id for t in mast.load_traces(trial)] == ["itbench/7/task-1", "itbench/7/task-2"]
    (trial / "sessions" / "2026" / "01" / "15" / _CHECK).unlink()  # one task left
    assert mast.load_trace(trial).id == "itbench/7"


# --- 6. FIFOs and links ------------------------------------------------------------------------


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail instead of hanging forever if a read blocks."""

    def boom(*_: object) -> None:
        raise TimeoutError("the loader blocked")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_fifo_is_an_error_and_the_good_input_still_loads(tmp_path: Path, alarm: None) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    traces, errors = load_all(fifo, FIXTURES / "ag2" / "AG2_trace1.json")
    assert len(traces) == 1
    assert len(errors) == 1 and str(fifo) in str(errors[0]) and "FIFO" in str(errors[0])


def test_symlink_loop_and_dangling_link_are_errors(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "gone").symlink_to(tmp_path / "missing.json")
    traces, errors = load_all(
        tmp_path / "a", tmp_path / "gone", FIXTURES / "ag2" / "AG2_trace1.json"
    )
    assert len(traces) == 1
    text = [str(e) for e in errors]
    assert len(text) == 2
    assert str(tmp_path / "a") in text[0] and "loop" in text[0]
    assert str(tmp_path / "gone") in text[1] and "missing.json" in text[1]


# --- 7. mixed folders --------------------------------------------------------------------------


def test_results_and_label_files_are_reported_once_per_file(tmp_path: Path) -> None:
    record = {"trace_id": "t1", "status": "ok", "schema_version": 1, "vector": {"1.1": True}}
    (tmp_path / "results.jsonl").write_text(
        "".join(json.dumps({**record, "trace_id": f"t{i}"}) + "\n" for i in range(19))
    )
    rows = [{"trace_id": f"t{i}", "annotator": "a", "1.1": True, "2.6": False} for i in range(5)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "labels.json").write_text(json.dumps(rows))
    shutil.copy(FIXTURES / "ag2" / "AG2_trace1.json", tmp_path)
    traces, errors = load_all(tmp_path)
    assert len(traces) == 1
    by_file = {Path(e.path or "").name: str(e) for e in errors}
    assert len(errors) == 3 and set(by_file) == {"results.jsonl", "labels.jsonl", "labels.json"}
    assert "results file" in by_file["results.jsonl"] and "mast agree" in by_file["results.jsonl"]
    assert "label table" in by_file["labels.jsonl"] and "label table" in by_file["labels.json"]
    assert all(len(text) < 400 for text in by_file.values())


def test_unknown_shape_lists_every_format(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError) as info:
        mast.load_trace(FIXTURES / "bad" / "unknown_shape.json")
    for name in formats():
        assert name in str(info.value)
    assert len(str(info.value)) < 600


# --- 8. encodings ------------------------------------------------------------------------------

CHAT = {
    "id": "enc",
    "messages": [
        {"role": "user", "content": "Fix the bug in café ☕"},
        {"role": "assistant", "content": "Done ✓"},
    ],
}


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("bom.json", b"\xef\xbb\xbf" + json.dumps(CHAT, ensure_ascii=False).encode()),
        (
            "bom.jsonl",
            b"\xef\xbb\xbf"
            + "\n".join(json.dumps(m, ensure_ascii=False) for m in CHAT["messages"]).encode(),  # type: ignore[attr-defined]
        ),
        ("utf16.json", json.dumps(CHAT, ensure_ascii=False).encode("utf-16")),
        (
            "utf16be.jsonl",
            b"\xfe\xff"
            + "\n".join(json.dumps(m, ensure_ascii=False) for m in CHAT["messages"]).encode(  # type: ignore[attr-defined]
                "utf-16-be"
            ),
        ),
        ("utf16.txt", "[INFO] café step one\n[INFO] step two\n".encode("utf-16")),
        ("bom.json.gz", gzip.compress(b"\xef\xbb\xbf" + json.dumps(CHAT).encode())),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_bom_and_utf16_files_are_read(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a text log may be reported as unsegmented
        trace = mast.load_trace(path)
    assert "caf" in trace.steps[0].content or trace.steps[0].content.startswith("Fix")
    assert "\ufeff" not in trace.steps[0].content


def test_lone_surrogate_is_replaced_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.json"
    path.write_text(
        '{"id": "s", "messages": [{"role": "user", "content": "bad \\ud800 here"},'
        ' {"role": "assistant", "content": "pair \\ud83d\\ude00 ok"}]}'
    )
    trace = mast.load_trace(path)
    assert trace.steps[0].content == "bad \ufffd here"
    assert trace.steps[1].content == "pair \U0001f600 ok"
    trace.model_dump_json()  # raised UnicodeEncodeError before
