"""Print how MAD framework traces segment: steps per trace and characters per step.

Reads MAD records (``*.record.json``: a dataset record with ``mas_name`` and ``trace``) and
raw trace files (``*.txt``) under the given folders (default: the test fixtures) and prints
one row per trace: framework, whether it was segmented, steps, steps by kind, distinct
agents, paired tool calls, and min / median / max characters per step.

    PYTHONPATH=src python scripts/segment_report.py [FOLDER_OR_FILE ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from mast.traces.model import StepKind
from mast.traces.segment import Segmentation, SegmentationWarning, segment

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mad_frameworks"


def traces(paths: list[Path]) -> Iterator[tuple[str, str, str | None]]:
    """``(label, trace text, framework name)`` for every record or trace file found."""
    for path in paths:
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for f in files:
            if f.name.endswith(".record.json"):
                record = json.loads(f.read_text(encoding="utf-8"))
                trace = record["trace"]
                if isinstance(trace, dict):  # MAD full: {"key", "index", "trajectory"}
                    trace = trace["trajectory"]
                yield f.name, trace, record.get("mas_name")
            elif f.suffix == ".txt" and ".trajectory." not in f.name:
                # *.trajectory.txt repeat their record's trace; other .txt files are extra shapes
                yield f.name, f.read_text(encoding="utf-8"), None


def row(label: str, seg: Segmentation) -> dict[str, object]:
    sizes = [len(s.content) for s in seg.steps]
    kinds = Counter(s.kind.value for s in seg.steps)
    calls = {s.metadata.get("call_id") for s in seg.steps if s.kind is StepKind.TOOL_CALL}
    answered = {
        s.metadata.get("call_id") for s in seg.steps if s.kind is StepKind.TOOL_RESULT
    } & calls
    return {
        "trace": label,
        "framework": seg.framework,
        "segmented": seg.segmented,
        "steps": len(seg.steps),
        "msg/call/res/sys/log": "/".join(str(kinds.get(k.value, 0)) for k in StepKind),
        "agents": len({s.agent for s in seg.steps if s.agent}),
        "paired calls": f"{len(answered)}/{len(calls)}",
        "chars min": min(sizes),
        "median": int(statistics.median(sizes)),
        "max": max(sizes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT])
    args = parser.parse_args(argv)
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SegmentationWarning)
        for label, text, framework in traces(args.paths):
            rows.append(row(label, segment(text, framework=framework)))
    if not rows:
        print("no traces found", file=sys.stderr)
        return 1
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for r in rows:
        print("  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths, strict=True)))
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
