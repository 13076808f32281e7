"""The command line prints a warning as one line, ``warning: Category: message``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

from mast.cli import _warning_line


def test_a_warning_is_one_clean_line_with_its_category(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("some notes that are no framework log\nline two\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run(
        [sys.executable, "-m", "mast", "inspect", "notes.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines == [
        "warning: SegmentationWarning: trace kept unsegmented: no known log format markers"
    ]
    assert ".py:" not in done.stderr


def test_a_multi_line_message_stays_on_one_line_and_showwarning_is_restored() -> None:
    out = io.StringIO()
    _warning_line("first line\n  second line", UserWarning, "x.py", 3, file=out)
    assert out.getvalue() == "warning: UserWarning: first line second line\n"
    before = warnings.showwarning
    from mast.cli import main

    assert main(["taxonomy"]) == 0
    assert warnings.showwarning is before
