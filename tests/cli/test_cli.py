from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mast.cli import main


def test_taxonomy_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["taxonomy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MAST 1.0: 14 failure modes")
    assert "3.2   No or Incomplete Verification" in out
    assert len(out.strip().splitlines()) == 16


def test_taxonomy_examples_prints_the_pool_table(capsys: pytest.CaptureFixture[str]) -> None:
    from mast.judge.prompt.excerpts import load_pool

    assert main(["taxonomy", "--examples"]) == 0
    out = capsys.readouterr().out
    pool = load_pool()
    rows = [
        r for r in (line.split() for line in out.splitlines()[1:]) if r[1:2] in (["shows"], ["not"])
    ]
    # One row per (mode, excerpt) reading, with the excerpt's system and review verdict.
    assert len(rows) == sum(len(ex.readings) for ex in pool)
    assert {r[1] for r in rows} == {"shows", "not"}
    assert f"{len(pool)} excerpts from " in out and "ChatDev" in out and "Magentic-One" in out


def test_taxonomy_verbose_and_bad_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["taxonomy", "-v"]) == 0
    assert "accepted without being" in capsys.readouterr().out
    assert main(["taxonomy", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read taxonomy file" in capsys.readouterr().err


def test_inspect_examples_and_bad_files(capsys: pytest.CaptureFixture[str], fixtures: Path) -> None:
    assert main(["inspect"]) == 0
    out = capsys.readouterr().out
    assert "mad-human/4  [mad-human] system=MetaGPT" in out
    assert out.strip().endswith("7 trace(s) loaded, 0 error(s)")
    assert main(["inspect", str(fixtures / "bad" / "empty.json")]) == 1
    assert "empty file" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly() -> None:
    command = [sys.executable, "-m", "mast", "taxonomy", "-v"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.close()  # the reader leaves before reading, like `| head -0`
        err = reader.stderr.read().decode()
        assert reader.wait(timeout=30) == 141
    assert "BrokenPipe" not in err and "Traceback" not in err


def test_console_script_entry_point() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mast", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.startswith("mast ")


def test_control_characters_in_ids_are_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a file name with a newline (and a terminal escape) must not forge an output line
    name = "run\n9 trace(s) loaded, 0 error(s)\x1b[2J.json"
    (tmp_path / name).write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    (tmp_path / "bad\nerror: fake.json").write_text("{", encoding="utf-8")
    assert main(["inspect", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[-1] == "1 trace(s) loaded, 1 error(s)"
    assert "\x1b" not in captured.out and "\\x1b[2J" in captured.out
    assert "run\\n9 trace(s) loaded" in captured.out
    assert len(captured.err.strip().splitlines()) == 1 and "bad\\nerror: fake" in captured.err


def test_tables_as_json_for_scripts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    assert main(["inspect", "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["traces"]) == 7 and report["errors"] == []
    assert {"id", "format", "steps", "outcome", "labels"} <= set(report["traces"][0])
    assert main(["taxonomy", "--format", "json"]) == 0
    tax = json.loads(capsys.readouterr().out)
    assert [m["code"] for m in tax["modes"]][:2] == ["1.1", "1.2"] and tax["decision_rules"]
    from mast.label.queue import create_queue
    from mast.traces.model import Step, Trace

    queue = create_queue(tmp_path / "q.db", [Trace(id="t", steps=[Step.make(0, "hi")])])
    queue.submit("t", "ann", {"1.1": True})
    assert main(["label", "status", str(queue.path), "--format", "json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["size"] == 1 and status["labellers"] == {"ann": {"labelled": 1, "submissions": 1}}


def test_help_names_the_guide(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["agree", "--help"])
    assert "Guide: docs/agreement.md" in capsys.readouterr().out


def test_annotate_escapes_the_trace_ids_and_file_names_it_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # mast annotate's summary names traces (read twice) and files (unreadable): from the input
    run = tmp_path / "run\x1b[2J.json"
    run.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    (tmp_path / "bad\x1b]0;title\x07.json").write_text("{", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    argv = ["annotate", str(run), str(run), str(tmp_path / "bad\x1b]0;title\x07.json")]
    assert main([*argv, "--model", "heuristic", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "read twice, annotated once: " in captured.out
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.err
    assert "run\\x1b[2J" in captured.out and "bad\\x1b]0;title\\x07" in captured.err
