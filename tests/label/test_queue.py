"""Queue storage: versions never overwritten, concurrent labellers, crash safety, export into
``mast agree``."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from mast.cli import main
from mast.errors import MastError
from mast.label.export import write_labels, write_weights
from mast.label.queue import LabelQueue, QueueError, create_queue, is_queue
from mast.traces.model import Step, Trace

ROOT = Path(__file__).resolve().parents[2]


def _traces(n: int = 6) -> list[Trace]:
    return [
        Trace(
            id=f"t{i}",
            system="A" if i % 2 else "B",
            steps=[
                Step.make(0, f"step of {i}", agent="planner"),
                Step.make(1, "done", agent="coder"),
            ],
        )
        for i in range(n)
    ]


@pytest.fixture
def queue(tmp_path: Path) -> LabelQueue:
    return create_queue(tmp_path / "q.db", _traces(), sample=4, seed=0)


def test_create_refuses_an_existing_file_and_duplicate_ids(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    create_queue(path, _traces())
    with pytest.raises(QueueError, match="already exists"):
        create_queue(path, _traces())
    with pytest.raises(QueueError, match="occurs twice"):
        create_queue(tmp_path / "other.db", _traces() + _traces()[:1])
    assert not (tmp_path / "other.db").exists()


def test_is_queue_only_for_queues(tmp_path: Path, queue: LabelQueue) -> None:
    plain = tmp_path / "plain.db"
    plain.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert is_queue(queue.path) and not is_queue(plain) and not is_queue(tmp_path / "nope.db")
    with pytest.raises(QueueError, match="not a labelling queue"):
        LabelQueue(plain)


def test_secrets_are_redacted_in_the_stored_trace(tmp_path: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    trace = Trace(id="s", steps=[Step.make(0, f"OPENAI_API_KEY={key}")])
    q = create_queue(tmp_path / "q.db", [trace])
    assert key not in q.item(0).trace.steps[0].content
    assert key.encode() not in (tmp_path / "q.db").read_bytes()


def test_versions_are_added_never_overwritten(queue: LabelQueue) -> None:
    tid = queue.trace_ids[0]
    first = queue.submit(tid, "ann", {"1.1": True}, evidence={"1.1": "s1"}, note="first")
    second = queue.submit(tid, "ann", {"1.1": False})
    assert (first.version, second.version) == (1, 2)
    assert [s.labels["1.1"] for s in queue.submissions("ann")] == [True, False]
    assert queue.latest("ann")[tid].labels["1.1"] is False
    assert first.labels["1.2"] is None  # not given = unknown, never "no"
    assert first.evidence == {"1.1": "s1"}


def test_evidence_is_kept_only_for_yes_answers(queue: LabelQueue) -> None:
    sub = queue.submit(queue.trace_ids[0], "ann", {"1.1": False}, evidence={"1.1": "s1"})
    assert sub.evidence == {}


def test_bad_submissions_are_refused(queue: LabelQueue) -> None:
    with pytest.raises(QueueError, match="not in this queue"):
        queue.submit("nope", "ann", {})
    with pytest.raises(QueueError, match=r"9\.9"):
        queue.submit(queue.trace_ids[0], "ann", {"9.9": True})
    with pytest.raises(QueueError, match="labeller"):
        queue.submit(queue.trace_ids[0], "  ", {})
    assert isinstance(QueueError("x"), MastError)


def test_concurrent_labellers_lose_nothing(queue: LabelQueue) -> None:
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            q = LabelQueue(queue.path)  # each labeller has its own connection
            for round_ in range(5):
                for tid in q.trace_ids:
                    q.submit(tid, name, {"1.1": round_ % 2 == 0})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"l{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    subs = queue.submissions()
    assert len(subs) == 4 * 5 * queue.size
    for name in ("l0", "l1", "l2", "l3"):
        versions = sorted(s.version for s in subs if s.labeller == name and s.trace_id == "t0")
        if versions:
            assert versions == [1, 2, 3, 4, 5]
    assert queue.progress() == {f"l{i}": queue.size for i in range(4)}


def test_a_process_killed_mid_write_leaves_whole_submissions_only(queue: LabelQueue) -> None:
    # The child holds a write transaction open (its insert done, not committed) and is killed.
    tid = queue.trace_ids[0]
    queue.submit(tid, "ann", {"1.1": True})
    script = textwrap.dedent(
        f"""
        import sqlite3, sys, time
        db = sqlite3.connect({str(queue.path)!r}, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO submissions (trace_id, labeller, version, created, labels_json, "
            "evidence_json, note) VALUES (?, 'ann', 2, 'x', '{{}}', '{{}}', 'half')", ({tid!r},)
        )
        print("inserted", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "inserted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    subs = queue.submissions("ann")
    assert [(s.version, s.note) for s in subs] == [(1, "")]
    assert queue.submit(tid, "ann", {"1.1": False}).version == 2  # the file is still usable


def test_export_round_trips_into_mast_agree(
    tmp_path: Path, queue: LabelQueue, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = queue.trace_ids[:2]
    queue.submit(a, "ann", {"1.1": True, "1.3": False})
    queue.submit(a, "bob", {"1.1": True, "1.3": True})
    queue.submit(b, "ann", {"1.1": False})
    queue.submit(b, "bob", {"1.1": False, "1.3": None})
    queue.submit(b, "bob", {"1.1": True})  # newer version wins
    out = tmp_path / "labels.csv"
    assert write_labels(queue, out) == 4
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [(r["trace_id"], r["annotator"]) for r in rows] == [
        (a, "ann"),
        (a, "bob"),
        (b, "ann"),
        (b, "bob"),
    ]
    assert rows[0]["1.1"] == "true" and rows[0]["1.3"] == "false" and rows[0]["1.2"] == ""
    assert rows[3]["1.1"] == "true"

    jsonl = tmp_path / "labels.jsonl"
    write_labels(queue, jsonl)
    first = json.loads(jsonl.read_text().splitlines()[0])
    assert first["1.2"] is None and first["1.1"] is True

    # mast agree reads the export, and the queue directly, with the same result
    capsys.readouterr()
    assert main(["agree", "--among", str(out), "--format", "json", "--bootstrap", "0"]) == 0
    from_csv = json.loads(capsys.readouterr().out)
    assert main(["agree", "--among", str(queue.path), "--format", "json", "--bootstrap", "0"]) == 0
    from_db = json.loads(capsys.readouterr().out)
    assert from_csv["overall"]["pooled"] == from_db["overall"]["pooled"]
    # 1.1 on two traces: (True, True) and (False, True); 1.3 on one: (False, True)
    assert from_db["overall"]["pooled"]["n_items"] == 3

    ref = tmp_path / "ann.csv"
    with ref.open("w") as handle:
        handle.write("trace_id,1.1\n" + f"{a},true\n{b},false\n")
    code = main(
        ["agree", "--reference", str(ref), "--candidate", str(out), "--candidate-annotator",
         "bob", "--bootstrap", "0"]
    )  # fmt: skip
    assert code == 0


def test_weights_file(tmp_path: Path, queue: LabelQueue) -> None:
    write_weights(queue, tmp_path / "w.csv")
    rows = list(csv.DictReader((tmp_path / "w.csv").read_text().splitlines()))
    assert len(rows) == 4 and {float(r["weight"]) for r in rows} == {1.5}  # 6 traces, 4 drawn


def test_cli_new_status_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(t.model_dump_json() + "\n" for t in _traces()))
    db = tmp_path / "q.db"
    args = ["label", "new", str(db), "--traces", str(traces), "--sample", "3", "--seed", "7"]
    assert main([*args, "--strategy", "stratified"]) == 0
    out = capsys.readouterr().out
    assert "3 of 6 traces" in out and "not in proportion" in out
    assert main(["label", "status", str(db)]) == 0
    assert "no labels yet" in capsys.readouterr().out
    q = LabelQueue(db)
    q.submit(q.trace_ids[0], "ann", {"1.1": True})
    assert main(["label", "status", str(db)]) == 0
    assert "ann: 1/3 labelled" in capsys.readouterr().out
    assert main(["label", "export", str(db), "--out", str(tmp_path / "l.csv")]) == 0
    assert main(["label", "new", str(db), "--traces", str(traces)]) == 2  # exists
    assert "already exists" in capsys.readouterr().err
    bad = ["label", "new", str(tmp_path / "d.db"), "--traces", str(traces)]
    assert main([*bad, "--strategy", "disagreement"]) == 2
    assert "several judgments" in capsys.readouterr().err


def test_cli_new_with_results_for_disagreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mast.judge.annotation import Annotation
    from mast.traces.model import FailureVector

    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(t.model_dump_json() + "\n" for t in _traces()))
    results = tmp_path / "results.jsonl"
    lines = []
    for i, t in enumerate(_traces()):
        for model, value in (("a", True), ("b", i < 2)):
            ann = Annotation(
                trace_id=t.id, status="ok", taxonomy="MAST 1.0",
                vector=FailureVector({"1.1": value}),
                judge={"model": model, "config_hash": model},
            )  # fmt: skip
            lines.append(ann.model_dump_json())
    results.write_text("\n".join(lines) + "\n")
    db = tmp_path / "q.db"
    args = ["label", "new", str(db), "--traces", str(traces), "--results", str(results)]
    assert main([*args, "--sample", "2", "--strategy", "disagreement"]) == 0
    assert "NOT representative" in capsys.readouterr().out
    q = LabelQueue(db)
    judges = q.item(0).judges
    assert sorted(j["judge"] for j in judges) == ["a", "b"]
    assert sum(q.weights().values()) == pytest.approx(6, rel=0.5)
