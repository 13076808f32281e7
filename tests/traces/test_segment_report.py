"""scripts/segment_report.py: steps per trace and characters per step for every sample."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).parents[1] / "fixtures" / "mad_frameworks"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "segment_report", ROOT / "scripts" / "segment_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_report_has_one_segmented_row_per_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_script().main([str(SAMPLES)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    header = lines[0].split()
    assert header[:4] == ["trace", "framework", "segmented", "steps"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    records = {p.name for p in SAMPLES.glob("*/*.record.json")}
    shapes = {p.name for p in (SAMPLES / "derived").glob("*.txt")}
    assert set(rows) == records | shapes and len(records) == 8
    for name, cells in rows.items():
        assert cells[2] == "True", name  # segmented
        low, median, high = map(int, cells[-3:])
        assert 0 < low <= median <= high, name
    openmanus = rows["openmanus_human_gen_gaia.record.json"]
    assert openmanus[1] == "OpenManus" and openmanus[6] == "18/18"  # paired tool calls
    assert "warning" not in captured.err
