"""Real latency (issue 37): judge calls that take seconds, no rate limit.

The server answers after a log-normal latency (median 4 s, p95 15 s for a MAD-size trace,
``× scale``; scale 1 in the full run), logging the latency it drew for every call. mast runs
``N`` traces at concurrency ``C``; the ideal wall time is the latency the server drew for
mast's calls, summed, over ``C`` (N·E[L]/C with the mean measured, not assumed), and the
target is a wall time within 1/0.95 of it. The official annotator runs a subset one trace
at a time under the same server (its ideal is the sum of its calls' latencies).

The ideal is a floor no scheduler reaches with this distribution: the run cannot end
before its longest call does, and the longest of 1,000 draws (p95 15 s, so σ ≈ 0.8) is
typically 40-70 s against N·E[L]/C ≈ 86 s; a call drawn that long late in the run ends
after everything else. So the row also reports the wall time of a perfect runner on the
same draws: C workers with no overhead at all, each taking the next call the moment it is
free, fed the calls in the order the server received them (``schedule_s``). mast's wall
time against it is what mast itself costs; against N·E[L]/C is the issue's target.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from typing import Any

import _corpus
from _common import Row, fmt_s, python_child
from _official import Official
from _server import ServerProcess

MEDIAN_S, P95_S = 4.0, 15.0
TARGET = 0.95

# (traces, concurrency, time scale, traces for the official side) per mode.
SIZES = {
    "full": (1000, 64, 1.0, 20),
    "quick": (300, 64, 0.25, 10),
    "smoke": (8, 4, 0.01, 2),
}


def mean_of_lognormal(median: float, p95: float) -> float:
    """E[L] of the log-normal with this median and 95th percentile."""
    sigma = math.log(p95 / median) / 1.6448536269514722
    return median * math.exp(sigma * sigma / 2)


def schedule_s(latencies: list[float], workers: int) -> float:
    """Wall time of ``workers`` overhead-free workers taking ``latencies`` in order, each
    the moment one is free (a work-conserving schedule of the same draws).

    >>> schedule_s([4.0, 1.0, 1.0, 1.0], 2)
    4.0
    """
    free = [0.0] * workers
    end = 0.0
    for latency in latencies:
        start = heapq.heappop(free)
        end = max(end, start + latency)
        heapq.heappush(free, start + latency)
    return end


def _drawn(usage: list[dict[str, Any]], side: str) -> list[float]:
    return [float(u.get("latency", 0.0)) for u in usage if u["side"] == side and not u["batch"]]


def latency(cfg: Any, official: Official, rows: list[Row], data: dict[str, Any]) -> None:
    n, conc, scale, n_official = SIZES.get(cfg.mode, SIZES["full"])
    work = cfg.work / "latency"
    work.mkdir(parents=True, exist_ok=True)
    mad = work / "mad.json"
    stats = _corpus.write_mad_sized(mad, n, big=0)  # no ~1 MB traces: their own row
    median, p95 = MEDIAN_S * scale, P95_S * scale
    load_before = os.getloadavg()
    with ServerProcess(latency=median, p95=p95, workdir=work) as server:
        ours = python_child(
            [
                *("many", "--data", str(mad), "--base-url", server.openai_base_url),
                *("--model", cfg.model, "--fewshot", str(cfg.fewshot)),
                *("--concurrency", str(conc), "--workdir", str(work / "ours")),
            ]
        ).result
        drawn = _drawn(server.usage(), "ours")
    load_after = os.getloadavg()
    for key in ("per_trace_s", "usage_by_trace"):
        ours.pop(key, None)
    result: dict[str, Any] = {
        "traces": n,
        "concurrency": conc,
        "scale": scale,
        "median_s": median,
        "p95_s": p95,
        "mean_of_distribution_s": mean_of_lognormal(median, p95),
        "calls": len(drawn),
        "mean_drawn_s": sum(drawn) / len(drawn) if drawn else None,
        "max_drawn_s": max(drawn) if drawn else None,
        "ideal_s": sum(drawn) / conc if drawn else None,
        "schedule_s": schedule_s(drawn, conc) if drawn else None,
        "corpus": stats,
        "ours": ours,
        "load_before": load_before,
        "load_after": load_after,
    }
    if n_official and official is not None:
        first = work / "first.json"
        records = json.loads(mad.read_text(encoding="utf-8"))[:n_official]
        first.write_text(json.dumps(records), encoding="utf-8")
        with ServerProcess(latency=median, p95=p95, workdir=work) as server:
            off = official.annotate(first, base_url=server.openai_base_url, model=cfg.model)
            off_drawn = _drawn(server.usage(), "official")
        off_result = off.result
        off_result.pop("per_trace_s", None)
        result["official"] = {
            "traces": len(records),
            "run": off_result,
            "calls": len(off_drawn),
            "ideal_s": sum(off_drawn),  # one at a time: the sum of its latencies
        }
    data["latency"] = result
    rows.append(_row(result))


def _of(reference: float | None, wall: float) -> str:
    return f"{reference / wall:.0%}" if reference and wall else "n/a"


def _row(r: dict[str, Any]) -> Row:
    ours, ideal, n, conc = r["ours"], r["ideal_s"], r["traces"], r["concurrency"]
    wall = ours["wall_s"]
    failed = sum(ours["failed"].values()) + (n - ours["traces"])
    share = ideal / wall if ideal and wall else None
    ok = None if share is None else share >= TARGET and failed == 0
    scale = r["scale"]
    scaled = "" if scale == 1 else f", time ×{scale:g}"
    load = ", ".join(f"{x:.1f}" for x in r["load_before"][:1] + r["load_after"][:1])
    ours_text = (
        f"{fmt_s(wall)} wall for {n} traces at C={conc}: "
        + (f"{share:.0%}" if share is not None else "n/a")
        + f" of the ideal Σ L / C = {fmt_s(ideal) if ideal else 'n/a'} "
        f"({r['calls']} calls, mean latency drawn {r['mean_drawn_s']:.2f} s, distribution "
        f"mean {r['mean_of_distribution_s']:.2f} s, longest {r['max_drawn_s']:.2f} s); "
        f"{_of(r.get('schedule_s'), wall)} of a perfect runner's "
        f"{fmt_s(r.get('schedule_s') or math.nan)} "
        "on the same draws (C overhead-free workers in arrival order); "
        f"{failed} failed; CPU {ours['cpu_s']:.1f} s (event loop {ours['loop_cpu_s']:.1f} s, "
        f"pool {ours['pool_cpu_s']:.1f} s); load {load} before/after"
    )
    off = r.get("official")
    if off:
        o = off["run"]
        off_text = (
            f"{off['traces']} traces one at a time: {fmt_s(o['wall_s'])}, "
            f"{off['ideal_s'] / o['wall_s']:.0%} of its Σ L = {fmt_s(off['ideal_s'])}; "
            f"{o['errors']} failed; at this rate {n} traces take "
            f"{fmt_s(n * o['wall_s'] / off['traces'])}"
        )
    else:
        off_text = "not run"
    note = ""
    if ok is False:
        reasons = []
        if share is not None and share < TARGET:
            reasons.append(
                f"{share:.0%} of N·E[L]/C: with these draws no runner gets there — C "
                f"overhead-free workers take {fmt_s(r.get('schedule_s') or math.nan)} "
                f"({_of(r['ideal_s'], r.get('schedule_s') or 0)} of N·E[L]/C; the longest "
                f"call alone is {r['max_drawn_s']:.0f} s); mast reaches "
                f"{_of(r.get('schedule_s'), wall)} of that schedule"
            )
        if failed:
            reasons.append(f"{failed} failed")
        note = "; ".join(reasons)
    return Row(
        "latency",
        f"Real latency: {n} MAD-size traces, log-normal latency (median 4 s, p95 15 s"
        f"{scaled}), no rate limit, C={conc} — wall time as a share of N·E[L]/C",
        ours_text,
        off_text,
        "n/a" if share is None else f"{share:.2f}",
        f"≥ {TARGET:.0%} of N·E[L]/C, 0 failures",
        ok,
        note,
    )


__all__ = ["latency", "mean_of_lognormal"]
