"""Scale (issue 37): ``mast annotate`` on 10⁴ and 10⁵ small traces, first run and rerun.

Synthetic seven-step chat traces (mast's own JSON Lines layout, about 2 KB each, written into
the benchmark's temporary folder; the free disk is checked first) go through the command
users run, ``mast annotate INPUT --model M --out FILE --cache DIR``, each in a child process
whose peak RSS (``VmHWM``) the parent reads:

* with the heuristic judge (no calls: what mast itself costs per trace), and
* with an OpenAI judge (``openai/<model>``) against the local benchmark server
  (``_server.py``, no latency: every request is answered at once, so the run is bound by
  mast's CPU per trace, the hardest case for the rerun ratio).

Each size runs twice on the same results file: the first run does everything, the rerun
has nothing left to do (it must make 0 calls: read from the summary, and for the server
from the server's own log). Rows: first run wall and peak RSS, rerun wall, peak and calls,
results file and cache bytes per 1,000 traces, and whether the peak stays flat from the
smallest size to the largest. Wall times include the interpreter's start and imports (what
a user waits for); the load average is recorded with every run.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from _common import Row, clean_env, fmt_s, run_child
from _official import Official
from _server import ServerProcess

# (heuristic sizes, server sizes) by mode; the smoke mode (the test suite's) stays tiny.
SIZES = {
    "full": ((10_000, 100_000), (10_000, 100_000)),
    "quick": ((2_000, 20_000), (1_000, 10_000)),
    "smoke": ((30, 60), (20,)),
}
PEAK_MB = 300.0
RERUN_SHARE = 0.10
FLAT = 1.15  # "flat": the peak at the largest size at most this times the smallest's
BYTES_PER_TRACE = 24_000  # input + results + cache + a compaction's copy, with room to spare
CONCURRENCY = 32

_AGENTS = ("planner", "coder", "reviewer")
_WORDS = [
    "the",
    "plan",
    "step",
    "code",
    "test",
    "review",
    "fix",
    "file",
    "value",
    "result",
    "check",
    "answer",
    "task",
    "agent",
    "run",
    "output",
    "error",
    "list",
    "parse",
    "write",
    "read",
    "loop",
    "branch",
    "merge",
    "request",
    "reply",
]


def write_chat_traces(path: Path, n: int, *, seed: int = 0) -> int:
    """``n`` seven-step chat traces (a user task, then three agents in turn) as mast JSON
    Lines; returns the file's size in bytes. Streams: memory holds one trace."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            steps = []
            for k in range(7):
                words = " ".join(rng.choice(_WORDS) for _ in range(30 + rng.randrange(20)))
                agent = "user" if k == 0 else _AGENTS[k % 3]
                steps.append(
                    {"id": f"s{k + 1}", "index": k, "agent": agent,
                     "role": "user" if k == 0 else "assistant", "content": words}
                )  # fmt: skip
            record = {"id": f"scale-{i:07d}", "task": f"Solve task {i}: {steps[0]['content']}",
                      "system": "chat", "steps": steps}  # fmt: skip
            handle.write(json.dumps(record) + "\n")
    return path.stat().st_size


def _cli(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One ``mast annotate`` in a child process: its summary numbers, wall and peak RSS."""
    code = (
        "import contextlib, io, json, sys\n"
        "from mast.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    status = main(sys.argv[1:])\n"
        "print(json.dumps({'status': status, 'out': buf.getvalue()}))\n"
    )
    load = os.getloadavg()[0]
    child = run_child([sys.executable, "-c", code, *argv], env=env, timeout=4 * 3600)
    out = child.result["out"]
    if child.result["status"] != 0:
        raise RuntimeError(f"mast annotate exited {child.result['status']}:\n{out}")
    counts = re.search(r"(\d+) trace\(s\): (\d+) annotated, (\d+) failed, (\d+) already done", out)
    calls = re.search(r"(\d+) provider call\(s\)", out)
    if counts is None or calls is None:
        raise RuntimeError(f"no summary in the output of mast annotate:\n{out}")
    total, done, failed, resumed = (int(x) for x in counts.groups())
    return {
        "wall_s": child.wall_s,
        "peak_mb": child.max_rss_mb,
        "total": total,
        "done": done,
        "failed": failed,
        "resumed": resumed,
        "calls": int(calls.group(1)),
        "load_1min": load,
    }


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _one(
    judge: str, n: int, traces: Path, work: Path, model_args: list[str], server: Any
) -> dict[str, Any]:
    out, cache = work / f"{judge}-{n}.jsonl", work / f"{judge}-{n}-cache"
    argv = ["annotate", str(traces), *model_args, "--out", str(out), "--cache", str(cache)]
    argv += ["--quiet", "--concurrency", str(CONCURRENCY)]
    env = clean_env(OPENAI_API_KEY="sk-bench-local")  # the local server takes any key
    served = len(server.usage()) if server is not None else 0
    first = _cli(argv, env)
    after_first = len(server.usage()) if server is not None else 0
    result = {"traces": n, "first": first, "results_bytes": _bytes(out)}
    result["cache_bytes"] = _bytes(cache) if cache.exists() else 0
    rerun = _cli(argv, env)
    if server is not None:
        first["server_requests"] = after_first - served
        rerun["server_requests"] = len(server.usage()) - after_first
    result["rerun"] = rerun
    out.unlink(missing_ok=True)
    shutil.rmtree(cache, ignore_errors=True)
    return result


def _rows(judge: str, results: list[dict[str, Any]], rows: list[Row], allowed: int) -> None:
    label = "heuristic judge" if judge == "heuristic" else "local server (openai judge)"
    for r in results:
        n, first, rerun = r["traces"], r["first"], r["rerun"]
        share = rerun["wall_s"] / first["wall_s"]
        served = rerun.get("server_requests")
        calls = rerun["calls"] if served is None else max(rerun["calls"], served)
        rows.append(
            Row(
                "scale",
                f"{label}, {n:,} traces: first run",
                f"{fmt_s(first['wall_s'])} wall, peak {first['peak_mb']:.0f} MB, "
                f"{first['done']}/{n} done, {first['calls']} calls",
                "n/a",
                "n/a",
                f"peak ≤ {PEAK_MB:.0f} MB",
                first["peak_mb"] <= PEAK_MB and first["done"] == n,
                f"load {first['load_1min']:.1f}",
            )
        )
        rows.append(
            Row(
                "scale",
                f"{label}, {n:,} traces: rerun with nothing to do",
                f"{fmt_s(rerun['wall_s'])} wall, peak {rerun['peak_mb']:.0f} MB, "
                f"{rerun['calls']} calls"
                + ("" if served is None else f" ({served} requests at the server)")
                + f", {rerun['resumed']}/{n} already done",
                "n/a",
                f"{share:.1%} of the first run's time",
                f"0 calls, ≤ {RERUN_SHARE:.0%} of the first run's time, peak ≤ {PEAK_MB:.0f} MB",
                calls == 0 and share <= RERUN_SHARE and rerun["peak_mb"] <= PEAK_MB,
                f"load {rerun['load_1min']:.1f}",
            )
        )
        rows.append(
            Row(
                "scale",
                f"{label}, {n:,} traces: results file and cache per 1,000 traces",
                f"results {r['results_bytes'] * 1000 / n / 1e6:.2f} MB, cache "
                f"{r['cache_bytes'] * 1000 / n / 1e6:.2f} MB per 1,000 traces",
                "n/a",
                "n/a",
                "reported",
                None,
                f"disk allowed about {allowed:,} traces",
            )
        )
    if len(results) > 1:
        small, big = results[0], results[-1]
        peaks = [
            max(small["first"]["peak_mb"], small["rerun"]["peak_mb"]),
            max(big["first"]["peak_mb"], big["rerun"]["peak_mb"]),
        ]
        rows.append(
            Row(
                "scale",
                f"{label}: peak RSS from {small['traces']:,} to {big['traces']:,} traces",
                f"{peaks[0]:.0f} MB → {peaks[1]:.0f} MB",
                "n/a",
                f"{peaks[1] / peaks[0]:.2f}×",
                f"flat: ≤ {FLAT:.2f}× and ≤ {PEAK_MB:.0f} MB",
                peaks[1] <= FLAT * peaks[0] and peaks[1] <= PEAK_MB,
            )
        )


def scale(cfg: Any, official: Official, rows: list[Row], data: dict[str, Any]) -> None:
    heuristic_sizes, server_sizes = SIZES.get(cfg.mode, SIZES["full"])
    work = cfg.work / "scale"
    work.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work).free
    allowed = free // BYTES_PER_TRACE
    largest = max(*heuristic_sizes, *server_sizes)
    if largest > allowed:
        raise RuntimeError(
            f"{free / 1e9:.1f} GB free in {work} allows about {allowed:,} traces of this "
            f"benchmark, it needs {largest:,}: free space or run it with --quick"
        )
    inputs: dict[int, Path] = {}
    info: dict[str, Any] = {"free_disk_bytes": free, "traces_disk_allows": allowed}
    for n in sorted({*heuristic_sizes, *server_sizes}):
        inputs[n] = work / f"traces-{n}.jsonl"
        info[f"input_bytes_{n}"] = write_chat_traces(inputs[n], n)
    runs: dict[str, list[dict[str, Any]]] = {}
    runs["heuristic"] = [
        _one("heuristic", n, inputs[n], work, ["--model", "heuristic"], None)
        for n in heuristic_sizes
    ]
    with ServerProcess(latency=0.0, workdir=work) as server:
        model = ["--model", f"openai/{cfg.model}", "--base-url", server.openai_base_url]
        runs["server"] = [_one("server", n, inputs[n], work, model, server) for n in server_sizes]
    for judge, results in runs.items():
        _rows(judge, results, rows, allowed)
    for path in inputs.values():
        path.unlink(missing_ok=True)
    data["scale"] = {**info, **runs, "cpus": os.cpu_count()}
