"""Annotate many traces: :func:`annotate_many` (and its async twin :func:`aannotate_many`).

The runner adds, once and for every provider, what a bulk run needs around the judge's
provider calls (through :data:`mast.judge.judge.CallHook`, so rendering, parsing and windowing
stay in the judge):

``response cache → budget check → rate limits (rpm/tpm) → per-call timeout → retries``

* **bounded concurrency**: ``concurrency`` workers pull traces from the input as they go
  (the input may be a lazy iterator such as :func:`mast.load_traces`);
* **rate limits**: at most ``rpm`` requests and ``tpm`` tokens per minute (sliding window,
  smoothed), and every worker pauses when the provider answers 429 with ``Retry-After``;
* **retries** of retryable failures (429, 5xx, timeouts, dropped connections) with
  exponential backoff and jitter, honouring ``Retry-After``; a trace whose calls still
  fail gets an error record with the reason, and the run goes on;
* **results store** (``out=``): append-only JSONL, one record per (trace, judge config),
  flushed per line and fsynced by a thread right after (the loop never waits for the
  disk); a rerun skips what is done, tries transport failures (dropped connections,
  timeouts, 429, 5xx) again, and keeps other failures until
  ``retry_failed=True`` redoes them; a results file that cannot be written stops the run
  (``"output"``) with the answer kept; two different traces with one id are an error;
* **response cache** (``cache=``): answers are stored before they are used, so a crash
  never makes you pay twice; a hit costs nothing and the record says ``cached``;
* **budget**: ``budget_usd`` stops the run before a call whose estimated cost (prompt
  tokens + maximum output tokens) would take the spending past it, waiting for calls in
  flight to settle first (see :mod:`mast.bulk.spending`); by default it is the budget of
  the results file across reruns (``budget_scope``);
* **authentication errors** stop the run at once; traces not attempted are reported,
  never written as errors;
* **batch mode** (``batch=True``): provider batch APIs at half price (see :mod:`mast.bulk.batch`).

>>> import mast
>>> from mast.traces.model import Step, Trace
>>> traces = [Trace(id=f"t{i}", steps=[Step.make(0, "hello", agent="a")]) for i in range(3)]
>>> run = mast.annotate_many(traces, mast.Judge("heuristic"), progress=False, cache=False)
>>> [a.trace_id for a in run], run.summary.done
(['t0', 't1', 't2'], 3)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence, Sized
from pathlib import Path
from typing import Any, Literal, TextIO

from mast.bulk.batch import (
    BatchState,
    batch_state_path,
)
from mast.bulk.cache import CacheLike, ResponseCache, open_cache
from mast.bulk.checks import check_unique
from mast.bulk.engine import (
    _Runner,
    log,
)
from mast.bulk.progress import Progress
from mast.bulk.ratelimit import Limiter, RateLimiter
from mast.bulk.rescue import rescue
from mast.bulk.spending import Budget, BudgetScope, check_budget_scope
from mast.bulk.store import ResultsStore
from mast.bulk.types import AnnotationRun, RetryPolicy, RunSummary, check_run_settings, config_hash
from mast.errors import (
    BudgetExceeded,
    RunStopped,
)
from mast.judge.helpers import run_sync as _run_sync
from mast.judge.judge import Judge
from mast.judge.offload.loop import use_process_pool
from mast.judge.offload.pool import ProcessPool, default_workers
from mast.traces.model import Trace

__all__ = [
    "AnnotationRun",
    "RetryPolicy",
    "RunSummary",
    "aannotate_many",
    "annotate_many",
    "config_hash",
]


OnStop = Literal["raise", "return"]


async def aannotate_many(
    traces: Iterable[Trace],
    judge: Judge,
    *,
    out: str | Path | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    resume: bool = True,
    retry_failed: bool = False,
    budget_usd: float | None = None,
    budget_scope: BudgetScope = "file",
    cache: CacheLike = True,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    batch: bool = False,
    progress: bool = True,
    progress_stream: TextIO | None = None,
    on_stop: OnStop = "raise",
    rate_window: float = 60.0,
    batch_poll_interval: float = 15.0,
    max_batch_rounds: int = 6,
    seed: int | None = None,
    limiter: Limiter | None = None,
    process_pool: bool | int | ProcessPool = True,
    keep: bool = True,
) -> AnnotationRun:
    """Async twin of :func:`annotate_many` (same arguments); use it inside an event loop.

    ``limiter`` replaces the run's own ``rpm`` / ``tpm`` limiter with one shared by several
    runs, which may also keep a shared budget (the Ray engine, :mod:`mast.bulk.distributed`).
    ``process_pool`` may also be a :class:`~mast.judge.offload.pool.ProcessPool` made in
    this event loop, to share its processes between runs (the caller closes it).
    """
    owned = not isinstance(process_pool, ProcessPool)
    pool = (
        process_pool
        if isinstance(process_pool, ProcessPool)
        else _process_pool(process_pool, concurrency)
    )
    try:
        # Tasks the run creates inherit the pool: long traces are prepared in its processes.
        with use_process_pool(pool):
            return await _annotate_samples(
                traces,
                judge,
                out=out,
                concurrency=concurrency,
                rpm=rpm,
                tpm=tpm,
                resume=resume,
                retry_failed=retry_failed,
                budget_usd=budget_usd,
                budget_scope=budget_scope,
                cache=cache,
                timeout=timeout,
                retry=retry,
                batch=batch,
                progress=progress,
                progress_stream=progress_stream,
                on_stop=on_stop,
                rate_window=rate_window,
                batch_poll_interval=batch_poll_interval,
                max_batch_rounds=max_batch_rounds,
                seed=seed,
                limiter=limiter,
                keep=keep,
            )
    finally:
        if pool is not None and owned:
            await pool.aclose()


def _process_pool(setting: bool | int | ProcessPool, concurrency: int) -> ProcessPool | None:
    """The run's pool for long traces: None when off, when no core is spare, or by default
    with one trace in flight (the loop has nothing to overlap; the inter-process round trip
    would only add to each trace's time)."""
    if isinstance(setting, bool):
        workers = default_workers() if setting and concurrency > 1 else 0
    elif isinstance(setting, int) and setting >= 0:
        workers = setting
    else:
        raise ValueError(f"process_pool must be True, False or a number >= 0, got {setting!r}")
    return ProcessPool(workers) if workers else None


async def _annotate_samples(
    traces: Iterable[Trace], judge: Judge, *, on_stop: OnStop, **kw: Any
) -> AnnotationRun:
    options: dict[str, Any] = dict(on_stop=on_stop, **kw)
    budget_usd = kw["budget_usd"]
    out = kw["out"]
    if judge.samples == 1:
        return await _annotate_once(traces, judge, **options)
    # K independent judgments: K passes over the traces, each with its own config hash
    # (records resume per sample) and its own cache entries (each sample is paid once).
    items = list(traces)
    runs: list[AnnotationRun] = []
    for index in range(judge.samples):
        runs.append(
            await _annotate_once(items, judge.for_sample(index), **{**options, "on_stop": "return"})
        )
        if budget_usd is not None and (out is None or kw["budget_scope"] == "run"):
            # One budget for all samples: what a sample spent is gone for the next (with
            # a results file and scope "file", the next pass counts the file's records).
            options["budget_usd"] = max(0.0, options["budget_usd"] - runs[-1].summary.cost_usd)
        if runs[-1].summary.stopped:
            break
    merged = _merge_runs(runs)
    if merged.summary.stopped is not None and on_stop == "raise":
        raise _stop_error(merged, out)
    return merged


def _merge_runs(runs: list[AnnotationRun]) -> AnnotationRun:
    """One run of several samples: records grouped by trace (samples in order)."""
    # Counts are of records (one per trace and sample), totals included.
    summary = RunSummary()
    for run in runs:
        s = run.summary
        for name in ("total", "done", "cached", "resumed", "calls", "retries", "rate_limited",
                     "batch_items", "cost_usd", "cost_unknown", "positives", "grounded_positives",
                     "elapsed_s"):  # fmt: skip
            setattr(summary, name, getattr(summary, name) + getattr(s, name))
        summary.failed.update(s.failed)
        summary.batches += s.batches
        summary.duplicates = s.duplicates
        summary.not_attempted += [t for t in s.not_attempted if t not in summary.not_attempted]
        if s.found_rpm is not None:
            summary.found_rpm = min(s.found_rpm, summary.found_rpm or s.found_rpm)
        if s.found_tpm is not None:
            summary.found_tpm = min(s.found_tpm, summary.found_tpm or s.found_tpm)
        summary.limits_stated = summary.limits_stated or s.limits_stated
        summary.stopped = summary.stopped or s.stopped
        summary.stop_message = summary.stop_message or s.stop_message
    order: dict[str, int] = {}
    for run in runs:
        for ann in run:
            order.setdefault(ann.trace_id, len(order))
    records = sorted((a for run in runs for a in run), key=lambda a: order[a.trace_id])
    return AnnotationRun(records, summary=summary)


def _stop_error(run: AnnotationRun, out: str | Path | None) -> RunStopped:
    summary = run.summary
    message = (
        f"the run stopped early: {summary.stop_message}. "
        f"{len(summary.not_attempted)} trace(s) were not attempted"
        + (f"; results so far are in {out} (rerun to resume)" if out is not None else "")
    )
    cls = BudgetExceeded if summary.stopped == "budget" else RunStopped
    return cls(message, reason=summary.stopped or "stopped", run=run)


async def _annotate_once(
    traces: Iterable[Trace],
    judge: Judge,
    *,
    out: str | Path | None,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    resume: bool,
    retry_failed: bool,
    budget_usd: float | None,
    budget_scope: BudgetScope,
    cache: CacheLike,
    timeout: float | None,
    retry: RetryPolicy | None,
    batch: bool,
    progress: bool,
    progress_stream: TextIO | None,
    on_stop: OnStop,
    rate_window: float,
    batch_poll_interval: float,
    max_batch_rounds: int,
    seed: int | None,
    limiter: Limiter | None,
    keep: bool,
) -> AnnotationRun:
    check_run_settings(judge, concurrency=concurrency, budget_usd=budget_usd, on_stop=on_stop)
    if not keep and out is None:
        raise ValueError("keep=False needs out=: the records are kept only in the results file")
    check_budget_scope(budget_scope)
    if judge.provider is None:
        batch = False  # the heuristic judge makes no calls
    if timeout is None and judge.call_config is not None:
        timeout = judge.call_config.timeout
    total = len(traces) if isinstance(traces, Sized) else None
    started = time.perf_counter()
    if judge.provider is not None:
        # Build the SDK client now, so that the first call the rate limiter lets go does
        # not lag behind its slot while the client is made (and bunch up with the next).
        judge.provider.client()
    if isinstance(traces, Sequence):
        check_unique(traces)  # before anything is paid for (a lazy input stops at it)
    # fsync in a thread: the event loop never waits for the disk (lines are flushed at once).
    store = ResultsStore(out, background_fsync=True) if out is not None else None
    opened_cache: ResponseCache | None = None
    try:
        response_cache, owned = open_cache(cache)
        opened_cache = response_cache if owned else None
        bar = Progress(total, enabled=progress, stream=progress_stream)
        # Adaptive: a 429 slows every worker down to what the provider accepts (below rpm,
        # if given), and a quiet spell probes upwards again.
        own_limiter: RateLimiter | None = None
        run_limiter: Limiter
        if limiter is None:
            own_limiter = RateLimiter(rpm=rpm, tpm=tpm, window=rate_window, adaptive=True)
            run_limiter = own_limiter
        else:
            run_limiter = limiter
        runner = _Runner(
            judge,
            store=store,
            cache=response_cache,
            limiter=run_limiter,
            retry=retry or RetryPolicy(),
            timeout=timeout,
            budget=_budget(budget_usd, budget_scope, store),
            concurrency=concurrency,
            resume=resume,
            retry_failed=retry_failed,
            progress=bar,
            batch_state=BatchState(batch_state_path(out)) if out is not None else None,
            batch_poll_interval=batch_poll_interval,
            max_batch_rounds=max_batch_rounds,
            seed=seed,
            keep=keep,
        )
        if store is not None and store.repaired:
            log.warning("%s: %s", store.path, store.repaired)
        try:
            await runner.run(traces, batch=batch)
        finally:
            bar.close()
    finally:
        if store is not None:
            store.close()
        if opened_cache is not None:
            opened_cache.close()
    summary = runner.summary
    if own_limiter is not None:
        summary.found_rpm = own_limiter.found_rpm
        summary.found_tpm = own_limiter.found_tpm
        summary.limits_stated = own_limiter.stated
    if store is not None and runner.unwritten:
        cached = response_cache is not None and response_cache.writable
        note = rescue(runner.unwritten, store.path, cached=cached)
        summary.stop_message = f"{summary.stop_message}; {note}"
    summary.elapsed_s = time.perf_counter() - started
    annotations = AnnotationRun(
        [runner.results[i] for i in sorted(runner.results)], summary=summary
    )
    if summary.stopped is not None and on_stop == "raise":
        raise _stop_error(annotations, out)
    return annotations


def _budget(limit: float | None, scope: BudgetScope, store: ResultsStore | None) -> Budget:
    """The run's budget; with scope "file", what the results file's records cost so far
    counts against it (the same choice for Python and ``mast annotate``)."""
    if limit is None or scope == "run" or store is None:
        return Budget(limit)
    return Budget(limit, prior=store.spent_usd, results=store.path)


def annotate_many(
    traces: Iterable[Trace],
    judge: Judge,
    *,
    out: str | Path | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    resume: bool = True,
    retry_failed: bool = False,
    budget_usd: float | None = None,
    budget_scope: BudgetScope = "file",
    cache: CacheLike = True,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    batch: bool = False,
    progress: bool = True,
    progress_stream: TextIO | None = None,
    on_stop: OnStop = "raise",
    rate_window: float = 60.0,
    batch_poll_interval: float = 15.0,
    max_batch_rounds: int = 6,
    seed: int | None = None,
    process_pool: bool | int = True,
    keep: bool = True,
) -> AnnotationRun:
    """Annotate ``traces`` with ``judge``: concurrent, rate-limited, retried, cached,
    resumable, within a budget. Works from plain code and inside a running event loop
    (Jupyter); :func:`aannotate_many` is the async twin.

    Parameters
    ----------
    traces:
        Traces (any iterable, also a lazy one such as :func:`mast.load_traces`).
    out:
        Results file (JSON Lines). Records already there for the same trace and judge
        settings are not redone (``resume``), except transport failures (no answer came);
        other failed ones are redone with ``retry_failed=True``.
    concurrency:
        Traces annotated at the same time (= provider calls in flight, at most).
    rpm, tpm:
        Requests / tokens per ``rate_window`` seconds (a minute). Token counts are
        estimated before a call (prompt + maximum output) and corrected after it.
    budget_usd:
        Stop before a call whose estimated cost (estimated prompt tokens + the most output
        tokens the call may ask for) would take the spending past this; a call that does
        not fit only because others are in flight waits for them to settle. Needs the
        model's price (``Judge(prices=…)`` for models not in the table).
    budget_scope:
        ``"file"`` (default, as ``mast annotate``): the budget is for the results file
        ``out``, so what its records cost in earlier runs (kept beside it in
        ``<out>.spent.json``) counts against it and a rerun gets no fresh budget;
        ``"run"``: for this run alone. Without ``out`` both mean this run.
    cache:
        Response cache: ``True`` (default directory, see
        :func:`mast.bulk.cache.default_cache_dir`), a directory, a
        :class:`~mast.bulk.cache.ResponseCache`, or ``False``/``None`` for none.
    timeout:
        Seconds per call attempt (default: the judge's ``timeout``).
    retry:
        A :class:`RetryPolicy` (default: 6 attempts, 1 s doubling to 60 s, with jitter).
    batch:
        Use the provider's batch API (half price, results within 24 h). Batch ids are kept
        in ``<out>.batches.json`` so a rerun collects them instead of submitting again;
        without a cache, the answers are kept in memory for the run. Every batch item used
        is charged (at batch prices) to its record and counts against ``budget_usd``.
    progress, progress_stream:
        Show a progress line (on a terminal; plain lines in a notebook) on the stream
        (default stderr).
    on_stop:
        After an authentication error or an exhausted budget: ``"raise"`` (default) a
        :class:`~mast.errors.RunStopped` (:class:`~mast.errors.BudgetExceeded`) whose
        ``run`` holds what was done, or ``"return"`` it with ``run.summary.stopped`` set.
    process_pool:
        Where the CPU work of very long traces (redaction, rendering, parsing; from
        :data:`~mast.judge.offload.loop.PROCESS_CHARS` characters on) runs: ``True`` (default)
        in up to one worker process per spare core, started when the first such trace
        arrives and stopped at the end of the run (by default not with ``concurrency=1``:
        one trace in flight leaves nothing to overlap); a number of processes; or ``False``
        for a thread of this process (see :mod:`mast.judge.offload.loop`). Results are the
        same either way; a job a process cannot do goes to the thread.
    keep:
        ``True`` (default): return every record. ``False`` (needs ``out``): a streaming run
        for inputs of any size, as ``mast annotate`` runs: memory holds no record (read them
        with :func:`mast.read_annotations`), traces are read as the workers take them (pass a
        lazy input such as :func:`mast.load_traces`), records of earlier runs are judged by
        the fields a rerun needs (status, ``error_kind``) without reading them whole, and the
        returned run is empty but for its ``.summary``.

    Returns
    -------
    AnnotationRun
        A list of annotations in input order (one per distinct trace id) with ``.summary``
        (none with ``keep=False``).
        With ``Judge(samples=K)`` every trace is judged K times (K passes, each resumable and
        cached on its own; ``judge["sample"]`` tells them apart): K records per trace, in
        trace order, and one summary (see :func:`mast.consensus`).
    """
    kwargs: dict[str, Any] = dict(
        out=out,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        resume=resume,
        retry_failed=retry_failed,
        budget_usd=budget_usd,
        budget_scope=budget_scope,
        cache=cache,
        timeout=timeout,
        retry=retry,
        batch=batch,
        progress=progress,
        progress_stream=progress_stream,
        on_stop=on_stop,
        rate_window=rate_window,
        batch_poll_interval=batch_poll_interval,
        max_batch_rounds=max_batch_rounds,
        seed=seed,
        process_pool=process_pool,
        keep=keep,
    )

    async def once() -> AnnotationRun:
        try:
            return await aannotate_many(traces, judge, **kwargs)
        finally:
            # This event loop ends with the run: close the client made in it.
            await judge.aclose()

    return _run_sync(once)
