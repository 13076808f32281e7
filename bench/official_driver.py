"""Drive the official annotator the way its README shows, and report timings as JSON.

Runs inside ``bench/.venv-official`` (``--impl agentdash``) or, for the re-implementation,
with any Python that has the ``openai`` client (``--impl baseline``). It imports nothing
from mast. The server comes from ``OPENAI_BASE_URL`` (the OpenAI client reads it; the
official annotator builds ``OpenAI(api_key=...)`` without a base URL), the key is a dummy.

    python official_driver.py annotate --impl agentdash --data mad.json --model gpt-4.1
    python official_driver.py parse --impl agentdash answer1.txt answer2.md ...
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any


def make_annotator(impl: str, model: str) -> Any:
    if impl == "agentdash":
        from agentdash import annotator

        # As the README shows: annotator(openai_api_key, model=...).
        return annotator("dummy-key-for-localhost", model=model)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from baseline_annotator import BaselineAnnotator

    return BaselineAnnotator("dummy-key-for-localhost", model=model)


def annotate(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    ann = make_annotator(args.impl, args.model)
    if args.examples:
        # The package reads few-shot examples from app/taxonomy_definitions_examples/
        # examples.txt next to its install folder and otherwise sends none; setting the
        # attribute it loads them into gives it the same examples mast gets.
        ann.examples = Path(args.examples).read_text(encoding="utf-8")
    # As the README's batch example: read the traces, annotate them one by one.
    records = json.loads(Path(args.data).read_text(encoding="utf-8"))
    per_trace: list[float] = []
    per_trace_cpu: list[float] = []
    failures = 0
    errors = 0
    for record in records[: args.limit or None]:
        trace = record["trace"]["trajectory"]
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = ann.produce_taxonomy(trace)
            failures += result["total_failures"]
        except Exception as exc:  # the README's error handling: report and go on
            errors += 1
            print(f"API error: {exc}", file=sys.stderr)
        per_trace.append(time.perf_counter() - t0)
        per_trace_cpu.append(time.process_time() - c0)
    sample = records[0]["trace"]["trajectory"] if records else ""
    prompt_chars = (
        len(ann._create_evaluation_prompt(sample))
        if hasattr(ann, "_create_evaluation_prompt")
        else None
    )
    return {
        "impl": args.impl,
        "traces": len(per_trace),
        "errors": errors,
        "failures_found": failures,
        "wall_s": time.perf_counter() - started,
        "per_trace_s": per_trace,
        "per_trace_cpu_s": per_trace_cpu,
        "static_prompt_chars": None if prompt_chars is None else prompt_chars - len(sample),
    }


def parse(args: argparse.Namespace) -> dict[str, Any]:
    if args.impl == "agentdash":
        from agentdash.annotator import annotator

        # Its parser needs no client: skip __init__ (which only stores key and client).
        ann = annotator.__new__(annotator)
        read_modes = ann._parse_response
        read_task = ann._extract_task_completion
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import baseline_annotator as base

        read_modes, read_task = base.parse, base.task_completion
    out: dict[str, Any] = {}
    for name in args.files:
        text = Path(name).read_text(encoding="utf-8")
        out[Path(name).name] = {"modes": read_modes(text), "task_completed": read_task(text)}
    return out


def main() -> int:
    logging.disable(logging.WARNING)  # the package logs a warning per unparsed mode
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="task", required=True)
    a = sub.add_parser("annotate")
    a.add_argument("--impl", choices=["agentdash", "baseline"], required=True)
    a.add_argument("--data", required=True)
    a.add_argument("--model", required=True)
    a.add_argument("--examples")
    a.add_argument("--limit", type=int, default=0)
    p = sub.add_parser("parse")
    p.add_argument("--impl", choices=["agentdash", "baseline"], required=True)
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    result = annotate(args) if args.task == "annotate" else parse(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
