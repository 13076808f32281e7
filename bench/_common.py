"""Shared pieces of the benchmark: result rows, child processes with their peak RSS,
the machine description, and the environment every child gets (no real API keys)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass
class Row:
    """One table row: one benchmark target (or an informational measurement)."""

    bench: str
    what: str
    ours: str
    official: str
    ratio: str
    target: str
    passed: bool | None  # None: informational, no target
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "info" if self.passed is None else ("pass" if self.passed else "FAIL")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = self.verdict
        return out


@dataclass
class Child:
    """What a child process printed (its last line, as JSON) and its peak RSS."""

    result: Any
    max_rss_mb: float
    wall_s: float


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without provider keys or endpoints (children talk to localhost)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "AZURE_OPENAI", "MAST_"))
    }
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONHASHSEED"] = "0"
    env.update(extra)
    return env


def run_child(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 3600) -> Child:
    """Run ``cmd``; its last stdout line is JSON. Peak RSS is read by the parent, nothing
    the child reports about itself: on Linux the child's ``VmHWM`` (the high-water mark of
    its own memory since ``exec``) polled from ``/proc`` every 10 ms, else ``wait4``'s
    ru_maxrss. Not ru_maxrss on Linux: the kernel carries the parent's high-water mark into
    a child's ru_maxrss at ``exec``, so every child of a bench process that once held
    150 MB reports at least 150 MB."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or clean_env(), cwd=ROOT
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    hwm_kb = [0]
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_hwm, args=(proc.pid, hwm_kb, stop), daemon=True)
    watcher.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        stop.set()
        watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    wall = time.perf_counter() - started
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:3])} … failed ({proc.returncode}):\n{err.decode(errors='replace')}"
        )
    lines = [line for line in out.decode().splitlines() if line.strip()]
    result = json.loads(lines[-1]) if lines else None
    if hwm_kb[0]:
        return Child(result=result, max_rss_mb=hwm_kb[0] / 1024, wall_s=wall)
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    divisor = 1024 * 1024 if sys.platform == "darwin" else 1024
    return Child(result=result, max_rss_mb=usage.ru_maxrss / divisor, wall_s=wall)


def _watch_hwm(pid: int, out: list[int], stop: threading.Event) -> None:
    """Keep the last ``VmHWM`` (KiB) of process ``pid`` in ``out[0]`` until ``stop`` (it
    only grows, so the last reading misses at most the final 10 ms)."""
    path = f"/proc/{pid}/status"
    while not stop.is_set():
        try:
            with open(path, encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        out[0] = max(out[0], int(line.split()[1]))
                        break
        except (OSError, ValueError):
            return  # not Linux, or the process is gone
        stop.wait(0.01)


def python_child(args: list[str], **kw: Any) -> Child:
    """Run ``bench/_ours.py`` with this Python (the checkout's ``src`` first on the path)."""
    return run_child([sys.executable, str(BENCH / "_ours.py"), *args], **kw)


def machine() -> str:
    cpus = os.cpu_count() or 0
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpus} CPU{mem}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_s(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "n/a"
    if seconds < 0.1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(x: float) -> str:
    if x != x:
        return "n/a"
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"
