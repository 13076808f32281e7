"""mast inspect says 'unknown' for an annotator whose labels are unknown, never 'none'
(issue 32 item 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

import mast
from mast.cli import main
from mast.traces.model import FailureVector, Step, Trace


def test_inspect_tells_unknown_labels_from_none_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = mast.load_taxonomy().codes
    trace = Trace(
        id="t1",
        steps=[Step.make(0, "hello", agent="a")],
        labels={
            "unsure": FailureVector({}, codes=codes),
            "clean": FailureVector({c: False for c in codes}, codes=codes),
            "partial": FailureVector({"1.3": True, "2.1": False}, codes=codes),
        },
    )
    path = tmp_path / "t1.json"
    path.write_text(trace.model_dump_json(), encoding="utf-8")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "unsure: unknown (no mode answered)" in out
    assert "clean: none," in out
    assert "partial: 1.3 (12 of 14 unknown)" in out
