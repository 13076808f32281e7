"""Smoke test of the benchmark entry point: every benchmark runs and fills its rows.

No timing is asserted (absolute times depend on the machine); ``bench/run.py --smoke`` runs
each benchmark at toy sizes against the local fake server, with the re-implementation of
the official annotator (no install, no network).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = {
    "throughput", "overhead", "memory", "cost", "parser", "agreement", "distributed", "ratelimit",
    "latency",
    "scale",
}  # fmt: skip


@pytest.mark.slow
def test_bench_smoke_writes_every_row(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--no-official"]
    proc = subprocess.run(
        [*command, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    rows = payload["rows"]
    assert {row["bench"] for row in rows} == BENCHMARKS
    for row in rows:
        for key in ("what", "ours", "official", "ratio", "target", "verdict"):
            assert str(row[key]).strip(), f"{row['what']!r}: empty {key}"
        assert row["verdict"] in ("pass", "FAIL", "info")
        assert "error" not in row["ours"].lower()
    assert payload["meta"]["official"] == "baseline (re-implementation)"

    table = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    header = "| what | ours | official or baseline | ratio | target | pass/fail | machine | date |"
    assert header in table
    # which code made the numbers: the checkout's commit (when git can tell), in the table too
    code = payload["meta"]["code"]
    assert f"code at {code}," in table
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert code.split()[0] == head.stdout.strip()
    main, _, rest = table.partition("## Targets, read from this run")
    body = [line for line in main.splitlines() if line.startswith("| ") and " | " in line]
    # header + one line per row (the profile table is not written in smoke mode)
    assert len(body) == 1 + len(rows)
    # The targets, each read from the run (none of a benchmark this checkout has is left
    # unmeasured by a full smoke run).
    targets = [line for line in rest.splitlines() if line.startswith("| ")][1:]
    assert len(targets) >= 6
    unmeasured = [line for line in targets if "not measured" in line]
    assert all("benchmark in this checkout" in line for line in unmeasured), unmeasured
    measured = [line for line in targets if line not in unmeasured]
    assert all(
        " pass" in line or " FAIL" in line or "not measurable in this run" in line
        for line in measured
    )

    # The parser benchmark reads the hand-labelled corpus with both parsers.
    parser = payload["data"]["parser"]
    assert parser["cells"] == 14 * parser["files"] > 0
    assert parser["misread"]["ours"] == []
    assert len(parser["misread"]["official"]) > 0
