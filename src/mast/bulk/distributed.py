"""Annotate on a Ray cluster: many worker processes, one rate limit, one result set.

:func:`annotate` is :func:`mast.annotate_many` spread over ``workers`` Ray actors. The
driver cuts the inputs into small units as it streams them (a MAD file is split by
record; see :mod:`mast.bulk.units`); each worker actor holds one judge with its own
concurrency, loads, segments, redacts and annotates the units it takes, and appends its
records to its own shard, ``DIR/shard-NNNN.jsonl`` (same record format and keys as a
results file). One actor keeps the rate limits (``rpm`` / ``tpm``) and the budget for the
whole cluster: every provider call of every worker asks it first, and a ``Retry-After``
from the provider pauses everyone. ``mast.read_annotations(DIR)`` reads the shards as one
result set; ``mast merge DIR -o results.jsonl`` writes them as one file.

A trace id is annotated by one worker only: each worker claims the ids it reads at the
coordinator, so a trace that two units carry (a file given twice) is paid for once.
Rerunning skips every trace that has a record in any shard, so a killed job resumes like a
local run. A worker that dies is restarted by Ray (``max_restarts``) and picks up its own
units again; one that stays dead hands its units back to the others.

Needs ``pip install 'mast-annotator[ray]'``. Nothing else in mast imports Ray.

>>> import mast.distributed  # doctest: +SKIP
>>> run = mast.distributed.annotate(["traces/"], mast.Judge("openai/gpt-4.1-mini"),
...                                 out="results/", workers=4, rpm=500)  # doctest: +SKIP
>>> run.summary.done, len(mast.read_annotations("results/"))  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from mast.bulk.ray_actors import actor_classes, shard_name
from mast.bulk.spending import BudgetScope, check_budget_scope
from mast.bulk.store import read_annotations, shard_paths
from mast.bulk.store_compact import spent_so_far
from mast.bulk.types import RetryPolicy, RunSummary, check_run_settings, config_hash
from mast.bulk.units import Unit, plan_units
from mast.errors import BudgetExceeded, MastError, MissingDependencyError, RunStopped
from mast.judge.judge import Judge

__all__ = ["DistributedRun", "annotate", "worker_name"]

log = logging.getLogger("mast.distributed")

INSTALL = "pip install 'mast-annotator[ray]'"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError(
            "the Ray engine needs the 'ray' package, which is not installed. "
            f"Install it with: {INSTALL}"
        ) from exc
    return ray


def worker_name(out: str | Path, index: int) -> str:
    """The Ray actor name of worker ``index`` of the run writing to ``out`` (find it with
    ``ray.get_actor(name)``, e.g. to watch or stop one worker)."""
    digest = hashlib.sha256(str(Path(out).resolve()).encode("utf-8")).hexdigest()[:12]
    return f"mast-worker-{digest}-{index}"


@dataclass
class DistributedRun:
    """What a distributed run did: the merged :class:`~mast.runner.RunSummary`, the
    results folder, and one report per worker (units taken, traces skipped, its summary).
    Read the records with ``mast.read_annotations(run.out)``."""

    summary: RunSummary
    out: Path
    workers: list[dict[str, Any]] = field(default_factory=list)
    dead_workers: list[int] = field(default_factory=list)
    """Workers that died for good (their units went to the others, or are left)."""
    units_left: int = 0
    """Units no live worker took (rerun to finish them)."""
    unreadable: int = 0
    """Input records or files that could not be read as traces."""
    unreadable_examples: list[str] = field(default_factory=list)
    """The first few of those errors (file, place, what is wrong)."""
    no_ground_truth: list[str] = field(default_factory=list)
    """ITBench trials read without ground truth (outcome unknown; pass ``ground_truth=``)."""

    @property
    def stopped(self) -> str | None:
        return self.summary.stopped

    def annotations(self) -> list[Any]:
        """The records in the results folder (latest per key)."""
        return read_annotations(self.out)


def annotate(
    inputs: str | Path | Iterable[str | Path] | Any,
    judge: Judge,
    *,
    out: str | Path,
    workers: int = 2,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    budget_usd: float | None = None,
    budget_scope: BudgetScope = "file",
    retry_failed: bool = False,
    cache: str | Path | bool = True,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    format: str = "auto",
    ground_truth: Any = None,
    address: str | None = None,
    unit_size: int = 16,
    max_restarts: int = 1,
    worker_options: dict[str, Any] | None = None,
    rate_window: float = 60.0,
    progress: bool = True,
    progress_stream: TextIO | None = None,
    on_stop: Literal["raise", "return"] = "raise",
) -> DistributedRun:
    """Annotate ``inputs`` with ``judge`` on ``workers`` Ray actors into the folder ``out``.

    ``inputs`` are trace files, folders or globs (what :func:`mast.load_traces` takes), or a
    ``ray.data.Dataset`` whose rows are trace records (any JSON record shape mast reads).
    Uses the running Ray instance, else connects to ``address`` (``"auto"``, or
    ``"ray://host:10001"``), else starts a local one. ``concurrency`` is per worker;
    ``rpm``, ``tpm`` and ``budget_usd`` hold for all of them together. ``cache``: ``True``
    keeps one response cache in ``out/.cache`` shared by the workers (SQLite; put ``out`` on
    a local disk or pass ``False``), or a directory, or ``False``. ``ground_truth`` is
    :func:`mast.load_traces`'s (ITBench scoring), applied where the workers read traces.
    ``Judge(samples=K)`` runs K passes over the inputs, as a local run does (each sample
    its own records; one budget and one rate limit for all passes; ``budget_scope="file"``,
    the default, counts what the folder's records cost in earlier runs). Other arguments are
    those of :func:`mast.annotate_many`; ``unit_size`` is the number of traces a worker
    takes at a time, ``max_restarts`` how often Ray restarts a worker that died, and
    ``worker_options`` are Ray actor options (e.g. ``{"num_cpus": 2}``).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if unit_size < 1:
        raise ValueError(f"unit_size must be at least 1, got {unit_size}")
    check_run_settings(judge, concurrency=concurrency, budget_usd=budget_usd, on_stop=on_stop)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise MastError(
            f"{out} is a file; the Ray engine writes a folder of result shards. Pass a "
            "folder (it is created), or merge shards into a file with `mast merge`"
        )
    ray = _import_ray()
    started = time.perf_counter()
    stream = progress_stream if progress_stream is not None else sys.stderr
    out.mkdir(parents=True, exist_ok=True)
    we_started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
        we_started = True
    try:
        return _run_passes(
            ray,
            inputs,
            judge,
            out=out,
            workers=workers,
            options={
                "concurrency": concurrency,
                "cache": _cache_setting(cache, out),
                "timeout": timeout,
                "retry": retry,
                "retry_failed": retry_failed,
                "format": format,
                "ground_truth": None if ground_truth is None else _portable(ground_truth),
            },
            limits={
                "rpm": rpm,
                "tpm": tpm,
                "window": rate_window,
                "budget_usd": budget_usd,
                # Scope "file": what the folder's records cost in earlier runs counts.
                **(
                    {"spent_usd": spent_so_far(out), "results": str(out)}
                    if budget_usd is not None and check_budget_scope(budget_scope) == "file"
                    else {}
                ),
            },
            unit_size=unit_size,
            max_restarts=max_restarts,
            worker_options=worker_options or {},
            progress=progress,
            stream=stream,
            on_stop=on_stop,
            started=started,
        )
    finally:
        if we_started:
            ray.shutdown()


def _portable(ground_truth: Any) -> Any:
    """A ground-truth path as an absolute one (workers may not share the driver's cwd)."""
    return (
        str(Path(ground_truth).resolve()) if isinstance(ground_truth, (str, Path)) else ground_truth
    )


def _run_passes(
    ray: Any, inputs: Any, judge: Judge, *, on_stop: str, **kwargs: Any
) -> DistributedRun:
    """One pass over the inputs per sample of ``judge`` (one for ``samples=1``), sharing one
    limits actor (rate, budget); merged into one run, raising on an early stop if asked."""
    limits_cls, _, _ = actor_classes(kwargs["max_restarts"])
    limits_actor = limits_cls.remote(**kwargs.pop("limits"))
    passes: list[DistributedRun] = []
    try:
        for index in range(judge.samples):
            one = judge
            if judge.samples > 1:
                # A pass is one judgment per trace: the sample's judge, with its own key.
                one = judge.for_sample(index)
                one.samples = 1
            passes.append(_drive(ray, inputs, one, limits_actor=limits_actor, **kwargs))
            if passes[-1].summary.stopped is not None:
                break
    finally:
        ray.kill(limits_actor)
    run = passes[0] if len(passes) == 1 else _merge_passes(passes)
    if run.summary.stopped is not None and on_stop == "raise":
        message = (
            f"the run stopped early: {run.summary.stop_message}; results so far are in "
            f"{run.out} (rerun to resume)"
        )
        cls = BudgetExceeded if run.summary.stopped == "budget" else RunStopped
        raise cls(message, reason=run.summary.stopped, run=None)
    return run


def _merge_passes(passes: list[DistributedRun]) -> DistributedRun:
    """The passes of several samples as one run (counts are of records, one per trace and
    sample; unreadable inputs are counted once, as every pass reads the same inputs)."""
    total = RunSummary()
    for run in passes:
        _add_summary(total, run.summary)
        total.elapsed_s = max(total.elapsed_s, run.summary.elapsed_s)
    first = passes[0]
    return DistributedRun(
        summary=total,
        out=first.out,
        workers=[w for run in passes for w in run.workers],
        dead_workers=[i for run in passes for i in run.dead_workers],
        units_left=sum(run.units_left for run in passes),
        unreadable=first.unreadable,
        unreadable_examples=first.unreadable_examples,
        no_ground_truth=first.no_ground_truth,
    )


def _add_summary(total: RunSummary, s: RunSummary) -> None:
    for name in ("total", "done", "cached", "resumed", "calls", "retries", "cost_usd",
                 "cost_unknown", "positives", "grounded_positives"):  # fmt: skip
        setattr(total, name, getattr(total, name) + getattr(s, name))
    for counter in ("failed", "failed_earlier", "retried_earlier"):
        getattr(total, counter).update(getattr(s, counter))
    total.not_attempted += s.not_attempted
    total.duplicates += [t for t in s.duplicates if t not in total.duplicates]
    if s.stopped and total.stopped is None:
        total.stopped, total.stop_message = s.stopped, s.stop_message


def _cache_setting(cache: str | Path | bool, out: Path) -> str | bool:
    if cache is True:
        return str(out / ".cache")
    if cache is False or cache is None:
        return False
    return str(cache)


def _done_ids(out: Path, judge: Judge, retry_failed: bool) -> frozenset[str]:
    """Trace ids with a record for this judge in any shard (only ok ones with
    ``retry_failed``)."""
    if not shard_paths(out):
        return frozenset()
    wanted = config_hash(judge)
    return frozenset(
        ann.trace_id
        for ann in read_annotations(out)
        if ann.judge.get("config_hash") == wanted and (ann.status == "ok" or not retry_failed)
    )


def _dataset_units(dataset: Any, size: int, put: Any) -> Iterable[Unit]:
    chunk: list[tuple[str, Any]] = []
    number = 0
    for index, row in enumerate(dataset.iter_rows()):
        chunk.append((f"row {index}", dict(row)))
        if len(chunk) >= size:
            yield Unit(number, "ray.data.Dataset", put(chunk), count=len(chunk))
            number, chunk = number + 1, []
    if chunk:
        yield Unit(number, "ray.data.Dataset", put(chunk), count=len(chunk))


def _drive(
    ray: Any,
    inputs: Any,
    judge: Judge,
    *,
    out: Path,
    workers: int,
    options: dict[str, Any],
    limits_actor: Any,
    unit_size: int,
    max_restarts: int,
    worker_options: dict[str, Any],
    progress: bool,
    stream: TextIO,
    started: float,
) -> DistributedRun:
    from ray.exceptions import RayActorError

    _, coordinator_cls, worker_cls = actor_classes(max_restarts)
    coordinator = coordinator_cls.remote()
    skip = ray.put(_done_ids(out, judge, options["retry_failed"]))
    if hasattr(inputs, "iter_rows") and not isinstance(inputs, (str, Path)):
        units = iter(_dataset_units(inputs, unit_size, ray.put))
    else:
        units = plan_units(inputs, format=options["format"], size=unit_size, store=ray.put)

    def start(i: int) -> Any:
        return worker_cls.options(name=worker_name(out, i), **worker_options).remote(
            i, judge, str(out), limits_actor, coordinator, options
        )

    actors = {i: start(i) for i in range(workers)}
    running = {actors[i].run.remote(skip): i for i in actors}
    reports: dict[int, dict[str, Any]] = {}
    dead: list[int] = []
    # Keep a few units per worker queued: enough to never starve, few enough that a huge
    # input is not held in memory (records wait in the object store until taken).
    backlog = 4 * workers
    feeding = True
    replacements = 0
    last_note = 0.0
    while running:
        if feeding:
            status = ray.get(coordinator.status.remote())
            batch: list[Unit] = []
            while status["queued"] + len(batch) < backlog:
                unit = next(units, None)
                if unit is None:
                    feeding = False
                    break
                batch.append(unit)
            if batch:
                ray.get(coordinator.put.remote(batch))
            if not feeding:
                ray.get(coordinator.close.remote())
        ready, _ = ray.wait(list(running), num_returns=1, timeout=0.2 if feeding else 1.0)
        for ref in ready:
            index = running.pop(ref)
            try:
                reports[index] = ray.get(ref)
            except RayActorError as exc:
                dead.append(index)
                given_back = ray.get(
                    coordinator.release.remote(index, str(out / shard_name(index)))
                )
                log.warning(
                    "worker %d died (%s); %d unit(s) it held go back to the queue",
                    index,
                    str(exc).splitlines()[0],
                    given_back,
                )
                if (given_back or feeding) and replacements < workers:
                    # Keep the worker count; a new index means a new shard.
                    replacements += 1
                    new = max(actors) + 1
                    actors[new] = start(new)
                    running[actors[new].run.remote(skip)] = new
        if progress and time.perf_counter() - last_note > 5.0:
            last_note = time.perf_counter()
            status = ray.get(coordinator.status.remote())
            print(
                f"mast: {len(running)} worker(s) running, {status['started']} trace(s) started, "
                f"{status['queued']} unit(s) queued",
                file=stream,
                flush=True,
            )
    if feeding:
        # Every worker is gone: what is still to cut is left for a rerun.
        ray.get(coordinator.close.remote())
    status = ray.get(coordinator.status.remote())
    shared = ray.get(limits_actor.snapshot.remote())
    run = _merge_reports(reports, dead, status, shared, out, started)
    _stop_actors(ray, [worker_name(out, i) for i in actors], [*actors.values(), coordinator])
    return run


def _merge_reports(
    reports: dict[int, dict[str, Any]],
    dead: list[int],
    status: dict[str, Any],
    shared: dict[str, Any],
    out: Path,
    started: float,
) -> DistributedRun:
    total = RunSummary()
    unreadable = 0
    examples: list[str] = []
    no_truth: list[str] = []
    for index in sorted(reports):
        report = reports[index]
        s = report["summary"]
        unreadable += report["unreadable"]
        no_truth += report["no_ground_truth"]
        examples += report["unreadable_examples"][: max(0, 10 - len(examples))]
        total.total += s["total"] + report["skipped"]
        total.done += s["done"]
        total.failed.update(Counter(s["failed"]))
        total.cached += s["cached"]
        total.resumed += s["resumed"] + report["skipped"]
        total.not_attempted += s["not_attempted"]
        total.duplicates += s["duplicates"] + report["duplicates"]
        total.calls += s["calls"]
        total.retries += s["retries"]
        total.cost_usd += s["cost_usd"]
        total.cost_unknown += s["cost_unknown"]
        if s["stopped"] and total.stopped is None:
            total.stopped, total.stop_message = s["stopped"], s["stop_message"]
    if shared.get("stopped") and total.stopped is None:
        total.stopped, total.stop_message = shared["stopped"]
    total.elapsed_s = time.perf_counter() - started
    return DistributedRun(
        summary=total,
        out=out,
        workers=[reports[i] for i in sorted(reports)],
        dead_workers=dead,
        units_left=status["queued"] + sum(status["held"].values()),
        unreadable=unreadable,
        unreadable_examples=examples,
        no_ground_truth=no_truth,
    )


def _stop_actors(ray: Any, names: list[str], actors: list[Any]) -> None:
    """Kill the run's actors and wait until their names are free (a rerun reuses them)."""
    for actor in actors:
        ray.kill(actor)
    deadline = time.monotonic() + 10.0
    for name in names:
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name)
            except ValueError:
                break
            time.sleep(0.05)
