"""mast's side of each benchmark, run in a child process (fresh interpreter, own peak RSS).

``python bench/_ours.py TASK [options]`` prints one JSON line with the measurements.
Timings start after imports, the way the official side's are taken.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import pstats
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import mast
from mast.traces.segment import SegmentationWarning

T = TypeVar("T")

warnings.simplefilter("ignore", SegmentationWarning)


def judge(args: argparse.Namespace) -> mast.Judge:
    return mast.Judge(
        f"openai/{args.model}",
        base_url=args.base_url,
        api_key="dummy-key-for-localhost",
        fewshot=None if args.fewshot == "default" else int(args.fewshot),
        answer=args.answer,
    )


def _record_requests(records: list[dict[str, Any]]) -> None:
    """Record the parts of every request the OpenAI adapter sends and of the answer it
    reads (the cost benchmark's breakdown): the bodies are the adapter's own."""
    from _breakdown import request_parts

    from mast.judge.providers import openai as adapter

    send = adapter.OpenAIProvider.complete

    async def complete(self: Any, prompt: Any, config: Any) -> Any:
        body = self.request_body(prompt, config)
        completion = await send(self, prompt, config)
        records.append(request_parts(body, completion.text, completion.usage))
        return completion

    adapter.OpenAIProvider.complete = complete  # type: ignore[method-assign]


def marked(items: Iterable[T], marks: list[float], cpu: list[float] | None = None) -> Iterator[T]:
    """Yield ``items``, noting when each next item was asked for (and the final ask), and
    the process's CPU time then (all threads: the offloaded work of a trace included)."""
    it = iter(items)
    while True:
        marks.append(time.perf_counter())
        if cpu is not None:
            cpu.append(time.process_time())
        try:
            item = next(it)
        except StopIteration:
            return
        yield item


def run_many(args: argparse.Namespace, *, batch: bool = False) -> dict[str, Any]:
    workdir = Path(args.workdir)
    requests: list[dict[str, Any]] = []
    if getattr(args, "breakdown", False):
        _record_requests(requests)
    j = judge(args)
    marks: list[float] = []
    cpu_marks: list[float] = []
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        # Profile the steady state: first-use imports and client setup happen here.
        warm = list(itertools.islice(mast.load_traces(args.data), 3))
        mast.annotate_many(warm, j, cache=False, progress=False)
    started, cpu = time.perf_counter(), time.process_time()
    loop_cpu, children = time.thread_time(), _children_cpu()
    if profiler is not None:
        profiler.enable()
    run = mast.annotate_many(
        marked(mast.load_traces(args.data), marks, cpu_marks),
        j,
        out=workdir / "results.jsonl",
        cache=workdir / "cache",
        concurrency=args.concurrency,
        progress=False,
        batch=batch,
        batch_poll_interval=0.05,
        process_pool=not args.no_process_pool,
        rpm=args.rpm,
        tpm=args.tpm,
        rate_window=args.rate_window,
        on_stop="return",
    )
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    # The event loop runs in this (main) thread; the pool's workers are our children,
    # stopped (and so counted) by the end of the run.
    loop_cpu, children = time.thread_time() - loop_cpu, _children_cpu() - children
    statuses = Counter(a.status for a in run)
    usage = {"input": 0, "cached": 0, "output": 0}
    for a in run:
        usage["input"] += a.usage.input_tokens or 0
        usage["cached"] += a.usage.cached_input_tokens or 0
        usage["output"] += a.usage.output_tokens or 0
    per_trace = [b - a for a, b in itertools.pairwise(marks)]
    per_trace_cpu = [b - a for a, b in itertools.pairwise(cpu_marks)]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "loop_cpu_s": loop_cpu,
        "pool_cpu_s": children,
        "profile": _shares(profiler) if profiler is not None else None,
        "traces": len(run),
        "statuses": dict(statuses),
        "calls": run.summary.calls,
        "rate_limited": run.summary.rate_limited,
        "found_rpm": run.summary.found_rpm,
        "found_tpm": run.summary.found_tpm,
        "limits_stated": run.summary.limits_stated,
        "failed": dict(run.summary.failed),
        "batch_items": run.summary.batch_items,
        "cost_usd": run.summary.cost_usd,
        "cost_unknown": run.summary.cost_unknown,
        "usage": usage,
        "windows": sum(a.windows for a in run),
        # Per trace, so the cost benchmark can price a subset (e.g. without the ~1 MB traces).
        "usage_by_trace": {
            a.trace_id: [
                a.usage.input_tokens or 0,
                a.usage.cached_input_tokens or 0,
                a.usage.output_tokens or 0,
            ]
            for a in run
        },
        "per_trace_s": per_trace,
        "per_trace_cpu_s": per_trace_cpu,
        "fewshot": [ex.id for ex in j.examples],
        **({"breakdown": _summed(requests, len(run))} if requests else {}),
    }


def _summed(requests: list[dict[str, Any]], traces: int) -> dict[str, Any]:
    from _breakdown import per_trace

    return per_trace(requests, traces)


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the process pool's workers)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Where time goes, by the file a function lives in (first match wins). Built-in functions
# (regex searches, str methods, json's C encoder: no file of their own) count for the
# part that called them (see _shares).
_BUCKETS = [
    (
        "load + segment (mast.traces.loaders, mast.traces.segment, ijson)",
        ("mast/traces/loaders", "mast/traces/segment", "ijson"),
    ),
    ("redact (mast.privacy)", ("mast/privacy/",)),
    ("few-shot leak filter (mast.judge.prompt.leak, shots)", ("prompt/leak", "prompt/shots")),
    (
        "render (mast.judge.prompt: compact, render; jinja2)",
        ("mast/judge/prompt/", "jinja2", "templates/"),
    ),
    (
        "grounding (mast.judge.reply.grounding, quotes)",
        ("reply/grounding", "reply/attribution_g", "reply/quotes"),
    ),
    (
        "echo search + answer reading (mast.judge.reply: echo, parse, text readers)",
        ("mast/judge/reply/",),
    ),
    ("results store (mast.bulk.store, fsync)", ("mast/bulk/store", "fsync")),
    ("response cache (mast.bulk.cache, sqlite3)", ("mast/bulk/cache", "sqlite3")),
    (
        "OpenAI SDK + HTTP client (openai, httpx, anyio, socket; JSON of the request)",
        ("openai/", "httpx", "httpcore", "h11", "anyio", "sniffio", "ssl", "_socket", "/typing"),
    ),
    ("waiting for the server (epoll)", ("poll' of 'select",)),
    ("asyncio event loop", ("asyncio/", "selectors")),
    ("pydantic validation", ("pydantic",)),
    ("mast judge + runner", ("mast/",)),
]
_BUILTIN = ("~", "<frozen", "/json/", "/re/", "/copy.py", "/difflib.py")


def _is_helper(filename: str) -> bool:
    return filename.startswith(_BUILTIN) or any(k in filename for k in _BUILTIN[1:])


def _where(filename: str, func: str) -> str:
    return f"{filename}:{func}"


def _bucket(where: str) -> str:
    return next((name for name, keys in _BUCKETS if any(k in where for k in keys)), "other")


def _shares(profiler: cProfile.Profile) -> dict[str, float]:
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    totals: Counter[str] = Counter()

    def spread(func: tuple[str, int, str], amount: float, depth: int) -> None:
        # A helper's time, passed on to its callers in proportion to the time each spent
        # in it, up to a few helpers up.
        callers = stats[func][4] if func in stats else {}
        whole = sum(c[3] for c in callers.values())
        if not callers or not whole or depth > 4:
            totals["other"] += amount
            return
        for caller, c in callers.items():
            part = amount * c[3] / whole
            if _is_helper(caller[0]):
                spread(caller, part, depth + 1)
            else:
                totals[_bucket(_where(caller[0], caller[2]))] += part

    for key, (_cc, _nc, tottime, _ct, callers) in stats.items():
        filename, _line, func = key
        own = _bucket(_where(filename, func))  # epoll, socket, sqlite3, fsync: by method
        if own == "other" and _is_helper(filename):
            # A built-in or standard-library helper (a regex search, a str method, the json
            # encoder): its own time counts for the part that called it.
            for caller, c in callers.items():
                if _is_helper(caller[0]):
                    spread(caller, c[2], 1)
                else:
                    totals[_bucket(_where(caller[0], caller[2]))] += c[2]
            continue
        totals[own] += tottime
    whole = sum(totals.values()) or 1.0
    return {k: v / whole for k, v in totals.most_common()}


def memory(args: argparse.Namespace) -> dict[str, Any]:
    started, cpu = time.perf_counter(), time.process_time()
    records = steps = chars = 0
    if args.mode == "load_traces":
        for trace in mast.load_traces(args.data):
            records += 1
            steps += len(trace.steps)
            chars += sum(len(s.content) for s in trace.steps)
    elif args.mode == "json":
        with open(args.data, encoding="utf-8") as fh:
            data = json.load(fh)
        for record in data:
            records += 1
            chars += len(record["trace"]["trajectory"])
    else:  # json + the same conversion to Trace objects that load_traces does
        from mast.traces.loaders._records import mad_full

        with open(args.data, encoding="utf-8") as fh:
            data = json.load(fh)
        traces = [mad_full(record) for record in data]
        for trace in traces:
            records += 1
            steps += len(trace.steps)
            chars += sum(len(s.content) for s in trace.steps)
    return {
        "seconds": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
        "records": records,
        "steps": steps,
        "chars": chars,
    }


def agreement(args: argparse.Namespace) -> dict[str, Any]:
    import random

    rng = random.Random(7)
    codes = mast.load_taxonomy().codes
    reference: dict[str, dict[str, bool | None]] = {}
    candidate: dict[str, dict[str, bool | None]] = {}
    for i in range(args.n):
        ref = {c: rng.random() < 0.2 for c in codes}
        # A judge that agrees most of the time, with a few unknown cells.
        cand: dict[str, bool | None] = {
            c: (None if rng.random() < 0.01 else (v if rng.random() < 0.85 else not v))
            for c, v in ref.items()
        }
        reference[f"t{i}"] = dict(ref)
        candidate[f"t{i}"] = cand
    mast.agreement(reference, candidate, bootstrap=10)  # warm-up: lazy imports
    started = time.perf_counter()
    report = mast.agreement(reference, candidate, bootstrap=args.boot)
    ours = time.perf_counter() - started
    result: dict[str, Any] = {
        "seconds": ours,
        "pooled_kappa": float(report.pooled.kappa),
        "traces": args.n,
        "modes": len(codes),
        "bootstrap": args.boot,
    }
    if args.baseline:
        result["baseline"] = _sklearn_bootstrap(
            reference, candidate, codes, min(args.baseline, args.boot), args.boot
        )
    return result


def _sklearn_bootstrap(
    reference: dict[str, dict[str, bool | None]],
    candidate: dict[str, dict[str, bool | None]],
    codes: list[str],
    timed: int,
    boot: int,
) -> dict[str, Any]:
    """What a notebook does: scikit-learn's kappa per mode and pooled, in a resampling loop.
    Timed on ``timed`` resamples and scaled to ``boot`` (each resample costs the same)."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    ids = sorted(reference)
    ref = np.array([[reference[i][c] for c in codes] for i in ids], dtype=object)
    cand = np.array([[candidate[i][c] for c in codes] for i in ids], dtype=object)
    known = (ref != None) & (cand != None)  # noqa: E711 (element-wise comparison)
    rng = np.random.default_rng(0)
    started = time.perf_counter()

    def kappas(rows: np.ndarray) -> list[float]:
        out = []
        r, c, k = ref[rows], cand[rows], known[rows]
        out.append(cohen_kappa_score(r[k].astype(bool), c[k].astype(bool)))
        for j in range(len(codes)):
            m = k[:, j]
            out.append(cohen_kappa_score(r[m, j].astype(bool), c[m, j].astype(bool)))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = time.perf_counter()
        kappas(np.arange(len(ids)))
        point = time.perf_counter() - point
        loop = time.perf_counter()
        draws = [kappas(rng.integers(0, len(ids), len(ids))) for _ in range(timed)]
        loop = time.perf_counter() - loop
    return {
        "seconds": point + loop * boot / max(1, len(draws)),
        "resamples": len(draws),
        "measured_s": time.perf_counter() - started,
    }


def parse(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in args.files:
        text = Path(name).read_text(encoding="utf-8")
        verdict = mast.parse_response(text)
        out[Path(name).name] = {
            "modes": {c: verdict.vector[c] for c in verdict.vector},
            "task_completed": verdict.task_completed,
        }
    return out


def ray_run(args: argparse.Namespace) -> dict[str, Any]:
    """The Ray engine on a fresh local Ray instance with this machine's cores."""
    import os

    import ray

    import mast.distributed

    t0 = time.perf_counter()
    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
    init_s = time.perf_counter() - t0
    try:
        started = time.perf_counter()
        run = mast.distributed.annotate(
            [args.data],
            judge(args),
            out=Path(args.workdir) / "results",
            workers=args.workers,
            concurrency=args.concurrency,
            cache=False,
            progress=False,
        )
        wall = time.perf_counter() - started
    finally:
        ray.shutdown()
    return {
        "wall_s": wall,
        "ray_init_s": init_s,
        "workers": args.workers,
        "done": run.summary.done,
        "failed": run.summary.failed_total,
        "calls": run.summary.calls,
        # From the first worker ready to the last one done: the run without Ray's
        # process start-up and imports.
        "working_s": max(w["ended_at"] for w in run.workers)
        - min(w["started_at"] for w in run.workers),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="task", required=True)
    r = sub.add_parser("ray")
    r.add_argument("--data", required=True)
    r.add_argument("--base-url", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--fewshot", default="2", help="a count, or 'default'")
    r.add_argument("--answer", choices=["full", "compact"], default="compact")
    r.add_argument("--concurrency", type=int, default=8)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--workdir", required=True)
    for name in ("many", "batch"):
        p = sub.add_parser(name)
        p.add_argument("--data", required=True)
        p.add_argument("--base-url", required=True)
        p.add_argument("--model", required=True)
        p.add_argument("--fewshot", default="2", help="a count, or 'default'")
        p.add_argument("--answer", choices=["full", "compact"], default="compact")
        p.add_argument("--concurrency", type=int, default=32)
        p.add_argument("--breakdown", action="store_true", help="record request parts")
        p.add_argument("--workdir", required=True)
        p.add_argument("--profile", action="store_true")
        p.add_argument("--no-process-pool", action="store_true", help="long traces in a thread")
        p.add_argument("--rpm", type=float, help="requests per --rate-window")
        p.add_argument("--tpm", type=float, help="tokens per --rate-window")
        p.add_argument("--rate-window", type=float, default=60.0, help="seconds")
    m = sub.add_parser("memory")
    m.add_argument("--mode", choices=["load_traces", "json", "json_convert"], required=True)
    m.add_argument("--data", required=True)
    a = sub.add_parser("agreement")
    a.add_argument("--n", type=int, default=1642)
    a.add_argument("--boot", type=int, default=2000)
    a.add_argument("--baseline", type=int, default=0, help="time the sklearn loop on N")
    p = sub.add_parser("parse")
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.task == "ray":
        result = ray_run(args)
    elif args.task in ("many", "batch"):
        result = run_many(args, batch=args.task == "batch")
    elif args.task == "memory":
        result = memory(args)
    elif args.task == "agreement":
        result = agreement(args)
    else:
        result = parse(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
