"""Benchmarks of mast against the official MAST annotator, side by side, in one run.

    python bench/run.py            # full sizes (several minutes); writes bench/RESULTS.md
    python bench/run.py --quick    # small sizes (< 2 minutes); writes bench/quick/
    python bench/run.py --quick --no-official --out /tmp/b    # no install: re-implementation

Writes ``RESULTS.md`` (one table row per benchmark target) and ``results.json`` (every
measurement) into ``--out``. See ``bench/README.md`` for what each benchmark does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "src"))  # measure the checkout, not an installed copy

import _benchmarks  # noqa: E402
from _common import Row, machine  # noqa: E402
from _official import Official  # noqa: E402
from _targets import target_lines  # noqa: E402

# Never let a real key or endpoint near the benchmark: every server is on 127.0.0.1.
for _name in list(os.environ):
    if _name.startswith(("OPENAI_", "ANTHROPIC_", "AZURE_OPENAI")):
        del os.environ[_name]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def code_version() -> str:
    """The commit the benchmarked code is at, and whether the checkout has changes on top:
    a result is only as good as knowing which code made it."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown (not a git checkout)"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench")
    return commit + (" with uncommitted changes in src/ or bench/" if changed else "")


def render_markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    when, host = meta["date"], meta["machine"]
    lines = [
        "# Benchmark results",
        "",
        f"`{meta['command']}` — {meta['mode']} run, {meta['official']}, model "
        f"`{meta['model']}` priced from `mast.judge.providers.pricing` "
        f"(as of {meta['prices_as_of']}), "
        f"code at {meta.get('code', 'unknown')}, "
        f"{meta['elapsed_s']:.0f} s in all, load average {meta['load_before']} before / "
        f"{meta['load_after']} after (other work on the machine makes absolute times noisy; "
        "the ratios compare both sides measured in the same run).",
        "",
        "| what | ours | official or baseline | ratio | target | pass/fail | machine | date |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = r.verdict if not r.note else f"{r.verdict}: {r.note}"
        cells = [r.what, r.ours, r.official, r.ratio, r.target, verdict, host, when]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += [
        "",
        "## Targets, read from this run",
        "",
        # docs/performance.md shows this table (a pymdownx.snippets section).
        "<!-- --8<-- [start:targets] -->",
        "",
        *target_lines(rows, set(meta["benchmarks"]), set(_benchmarks.ALL)),
        "",
        "<!-- --8<-- [end:targets] -->",
        "",
        f"Official side: {meta['official_detail']}",
        "",
    ]
    profile = meta.get("profile")
    if profile:
        lines += [
            "Where mast's time goes in the overhead benchmark (cProfile, share of own time):",
            "",
            "| part | share |",
            "|---|---|",
        ]
        lines += [f"| {k} | {v:.0%} |" for k, v in profile.items() if v >= 0.005]
        lines.append("")
    lines += [
        "Reproduce: `python bench/run.py` (installs `agentdash` into `bench/.venv-official` on "
        "first run). Method: `bench/README.md`. Every number is in `results.json`.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (< 2 minutes)")
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes: checks that every benchmark runs"
    )
    parser.add_argument(
        "--no-official",
        action="store_true",
        help="do not install agentdash; use the re-implementation (labelled as such)",
    )
    parser.add_argument("--out", type=Path, help="output folder (default bench/ or bench/quick/)")
    parser.add_argument("--model", default="gpt-4.1", help="model name both sides use")
    parser.add_argument(
        "--only", help="comma-separated subset: " + ",".join(_benchmarks.ALL), default=""
    )
    args = parser.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    out = args.out or (BENCH if mode == "full" else BENCH / mode)
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(_benchmarks.ALL)
    unknown = set(names) - set(_benchmarks.ALL)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    started = time.perf_counter()
    code = code_version()  # before the run: what was benchmarked, not what is there after
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    official = Official.resolve(use_official=not args.no_official)
    work = Path(tempfile.mkdtemp(prefix="mast-bench-"))
    cfg = _benchmarks.Config.make(mode=mode, model=args.model, work=work)
    rows: list[Row] = []
    data: dict[str, Any] = {}
    failed: list[str] = []
    try:
        for name in names:
            print(f"[bench] {name} …", flush=True)
            t0 = time.perf_counter()
            try:
                _benchmarks.ALL[name](cfg, official, rows, data)
            except Exception as exc:  # one broken benchmark must not hide the others
                traceback.print_exc()
                failed.append(name)
                rows.append(
                    Row(
                        name,
                        f"{name}: benchmark crashed",
                        f"error: {exc}",
                        "n/a",
                        "n/a",
                        "runs",
                        False,
                        type(exc).__name__,
                    )
                )
            print(f"[bench] {name} done in {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    from mast.judge.providers.pricing import PRICES_AS_OF

    command = "python bench/run.py" + ("" if mode == "full" else f" --{mode}")
    command += " --no-official" if args.no_official else ""
    command += f" --only {args.only}" if args.only else ""
    command += f" --out {args.out}" if args.out else ""
    meta = {
        "command": command,
        "code": code,
        "mode": mode,
        "official": official.label,
        "official_detail": (
            f"{official.label}"
            + (f", openai {official.versions.get('openai')}" if official.versions else "")
            + (f" — {official.reason}" if official.reason else "")
            + ". It is driven as its README shows: `annotator(key, model=…)` then "
            "`produce_taxonomy(trace)` per trace, pointed at the local server through "
            "`OPENAI_BASE_URL` (it builds `OpenAI(api_key=…)` without a base URL)."
        ),
        "model": args.model,
        "benchmarks": names,
        "prices_as_of": PRICES_AS_OF,
        "machine": machine(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "elapsed_s": time.perf_counter() - started,
        "load_before": load_before,
        "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "profile": data.get("overhead", {}).get("profile_shares"),
        "config": {k: str(v) for k, v in vars(cfg).items() if k != "work"},
    }
    (out / "RESULTS.md").write_text(render_markdown(rows, meta), encoding="utf-8")
    payload = {"meta": meta, "rows": [r.as_dict() for r in rows], "data": data}
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print((out / "RESULTS.md").read_text(encoding="utf-8"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
