"""The Ray actors of :mod:`mast.bulk.distributed`: one for the shared limits, one handing out
work units, and one per worker, which holds a judge and runs :func:`mast.aannotate_many`
over the units it takes, into its own results shard.

Ray is imported only inside functions, so importing this module never needs it; the
classes become actors through :func:`actor_classes`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mast.bulk.ratelimit import LimitRefused
from mast.bulk.shared_limits import LimitsState
from mast.bulk.units import Unit, load_unit
from mast.errors import TraceFormatError
from mast.traces.model import Outcome, Trace

log = logging.getLogger("mast.distributed")

SHARD_PREFIX = "shard-"


def shard_name(index: int) -> str:
    """The results shard of worker ``index``: ``shard-0003.jsonl``."""
    return f"{SHARD_PREFIX}{index:04d}.jsonl"


class LimitsActor:
    """One :class:`~mast.bulk.shared_limits.LimitsState` for the whole cluster. An async
    actor: calls waiting for the rate limit wait inside it, first come first served."""

    def __init__(self, **kwargs: Any) -> None:
        self.state = LimitsState(**kwargs)

    async def admit(self, tokens: int, cost: float) -> tuple[int | None, tuple[str, str] | None]:
        return await self.state.admit(tokens, cost)

    async def settle(self, ticket: int, tokens: int | None, cost: float | None) -> None:
        self.state.settle(ticket, tokens, cost)

    async def pause(
        self,
        seconds: float,
        kind: str | None = None,
        stated_limit: float | None = None,
        stated_tokens: float | None = None,
    ) -> None:
        self.state.pause(seconds, kind=kind, stated_limit=stated_limit, stated_tokens=stated_tokens)

    async def adopt(self, requests: float | None, tokens: float | None) -> None:
        self.state.adopt(requests, tokens)

    async def stop(self, reason: str, message: str) -> None:
        self.state.stop(reason, message)

    async def snapshot(self) -> dict[str, Any]:
        return self.state.snapshot()


class CoordinatorActor:
    """Hands out units, remembers which worker holds which, and puts a dead worker's units
    back at the front of the queue."""

    def __init__(self) -> None:
        self.queue: deque[Unit] = deque()
        self.held: dict[int, list[Unit]] = {}
        self.closed = False
        self.started: dict[int, int] = {}
        self._changed: asyncio.Condition | None = None
        # Trace id -> (unit number, source) of the first unit that read it: a trace id is
        # annotated by one worker only, even when two units carry it.
        self.claims: dict[str, tuple[int, str | None]] = {}

    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def put(self, units: list[Unit]) -> int:
        async with self._cond():
            self.queue.extend(units)
            self._cond().notify_all()
        return len(self.queue)

    async def close(self) -> None:
        async with self._cond():
            self.closed = True
            self._cond().notify_all()

    async def start(self, worker: int) -> list[Unit]:
        """Units this worker held before it was restarted (to do first)."""
        return list(self.held.get(worker, []))

    async def next(self, worker: int, started: int) -> Unit | None:
        """The next unit (waits while the driver is still cutting), or None when done."""
        self.started[worker] = started
        async with self._cond():
            while not self.queue and not self.closed:
                await self._cond().wait()
            if not self.queue:
                return None
            unit = self.queue.popleft()
            self.held.setdefault(worker, []).append(unit)
            return unit

    async def claim(self, unit: int, traces: list[tuple[str, str | None]]) -> list[str | None]:
        """Claim the ``(trace id, source)`` pairs a worker read from ``unit``; per pair
        ``None`` (annotate it), ``"duplicate"`` (the same trace was read before, from the same
        file and place: annotated once) or a message (another trace has that id: an error,
        as in a local run).  A unit that is redone (its worker died or restarted) gets its own
        claims again; what it finished is skipped through the results it wrote."""
        verdicts: list[str | None] = []
        for trace_id, source in traces:
            first = self.claims.setdefault(trace_id, (unit, source))
            if first == (unit, source):
                verdicts.append(None)
            elif source is not None and first[1] == source:
                verdicts.append("duplicate")
            else:
                where = first[1] or "an earlier record"
                verdicts.append(
                    f"trace id {trace_id!r} occurs twice in the input: in {where} and in "
                    f"{source or 'another record'}; ids must be unique within one run (give "
                    "one of them another id, or annotate them in separate runs with separate "
                    "results folders)"
                )
        return verdicts

    async def finished(self, worker: int) -> None:
        self.held.pop(worker, None)

    async def release(self, worker: int, shard: str) -> int:
        """A worker died for good: its units go back, marked with its shard."""
        units = self.held.pop(worker, [])
        async with self._cond():
            for unit in reversed(units):
                unit.skip_shards.append(shard)
                self.queue.appendleft(unit)
            self._cond().notify_all()
        return len(units)

    async def status(self) -> dict[str, Any]:
        return {
            "queued": len(self.queue),
            "queued_records": sum(u.count for u in self.queue),
            "held": {w: len(u) for w, u in self.held.items()},
            "started": sum(self.started.values()),
        }


class _RemoteGrant:
    def __init__(self, actor: Any, ticket: int) -> None:
        self._actor = actor
        self._ticket: int | None = ticket

    def settle(self, actual_tokens: int | None, *, cost: float | None = None) -> None:
        if self._ticket is not None:  # once: the actor frees the reservation
            self._actor.settle.remote(self._ticket, actual_tokens, cost)
            self._ticket = None


class RemoteLimiter:
    """A worker's :class:`~mast.bulk.ratelimit.Limiter`: every call asks the limits actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._stated: tuple[float | None, float | None] = (None, None)

    @property
    def limited(self) -> bool:
        return True

    def pause(
        self,
        seconds: float,
        *,
        kind: str | None = None,
        stated_limit: float | None = None,
        stated_tokens: float | None = None,
    ) -> None:
        self._actor.pause.remote(seconds, kind, stated_limit, stated_tokens)

    def adopt(self, requests: float | None = None, tokens: float | None = None) -> None:
        # Every answer states them: tell the actor only when they change.
        if (requests, tokens) != self._stated:
            self._stated = (requests, tokens)
            self._actor.adopt.remote(requests, tokens)

    async def acquire(self, tokens: int = 0, *, cost: float = 0.0) -> _RemoteGrant:
        ticket, refused = await self._actor.admit.remote(tokens, cost)
        if refused is not None:
            raise LimitRefused(*refused)
        return _RemoteGrant(self._actor, ticket)


class WorkerActor:
    """Holds one judge and writes one shard; :meth:`run` works until no unit is left."""

    def __init__(
        self,
        index: int,
        judge: Any,
        out: str,
        limits: Any,
        coordinator: Any,
        options: dict[str, Any],
    ) -> None:
        self.index = index
        self.judge = judge
        self.shard = Path(out) / shard_name(index)
        self.limits = limits
        self.coordinator = coordinator
        self.options = options

    def ready(self) -> int:
        return os.getpid()

    def _load(self, unit: Unit, report: dict[str, Any]) -> list[Trace]:
        """The traces of ``unit``; unreadable records are counted in ``report``."""
        import ray

        records = ray.get(unit.records) if unit.records is not None else None
        traces: list[Trace] = []
        fmt = self.options.get("format", "auto")
        ground_truth = self.options.get("ground_truth")
        for item in load_unit(unit, records, format=fmt, ground_truth=ground_truth):
            if isinstance(item, TraceFormatError):
                report["unreadable"] += 1
                if len(report["unreadable_examples"]) < 5:
                    report["unreadable_examples"].append(str(item))
                continue
            traces.append(item)
            if (
                item.format == "itbench"
                and item.outcome is Outcome.UNKNOWN
                and "ground_truth_file" not in item.metadata
            ):
                report["no_ground_truth"].append(item.id)  # said in the summary, as locally
        return traces

    def run(self, skip: frozenset[str]) -> dict[str, Any]:
        import ray

        from mast.bulk.runner import aannotate_many
        from mast.bulk.store import read_annotations

        done = set(skip)
        report: dict[str, Any] = {
            "started_at": time.time(),  # after start-up and imports: for throughput figures
            "worker": self.index,
            "pid": os.getpid(),
            "shard": str(self.shard),
            "units": 0,
            "skipped": 0,
            "unreadable": 0,
            "unreadable_examples": [],
            "duplicates": [],
            "no_ground_truth": [],
        }
        retry_failed = bool(self.options.get("retry_failed", False))

        def traces() -> Iterator[Trace]:
            redo = ray.get(self.coordinator.start.remote(self.index))
            started = 0
            while True:
                unit = redo.pop(0) if redo else None
                if unit is None:
                    unit = ray.get(self.coordinator.next.remote(self.index, started))
                if unit is None:
                    return
                report["units"] += 1
                for shard in unit.skip_shards:
                    # Written by a worker that died holding this unit: those are done.
                    if Path(shard).is_file():
                        for ann in read_annotations(shard):
                            if ann.status == "ok" or not retry_failed:
                                done.add(ann.trace_id)
                loaded = self._load(unit, report)
                claims = [(t.id, t.source) for t in loaded]
                verdicts = ray.get(self.coordinator.claim.remote(unit.number, claims))
                for item, verdict in zip(loaded, verdicts, strict=True):
                    if verdict == "duplicate":
                        report["duplicates"].append(item.id)
                        continue
                    if verdict is not None:
                        # Two different traces with one id: the run stops, as a local one.
                        ray.get(self.limits.stop.remote("duplicate", verdict))
                        return
                    if item.id in done:
                        report["skipped"] += 1
                        continue
                    started += 1
                    yield item

        async def main() -> Any:
            try:
                return await aannotate_many(
                    traces(),
                    self.judge,
                    out=self.shard,
                    concurrency=self.options.get("concurrency", 8),
                    cache=self.options.get("cache", False),
                    timeout=self.options.get("timeout"),
                    retry=self.options.get("retry"),
                    retry_failed=retry_failed,
                    progress=False,
                    on_stop="return",
                    limiter=RemoteLimiter(self.limits),
                    # Ray gives each actor a core already: a process pool per actor would
                    # ask for more cores than there are.
                    process_pool=False,
                )
            finally:
                await self.judge.aclose()

        run = asyncio.run(main())
        ray.get(self.coordinator.finished.remote(self.index))
        summary = asdict(run.summary)
        summary["failed"] = dict(run.summary.failed)
        report["summary"] = summary
        report["ended_at"] = time.time()
        return report


def actor_classes(max_restarts: int) -> tuple[Any, Any, Any]:
    """(limits, coordinator, worker) as Ray actor classes."""
    import ray

    limits = ray.remote(num_cpus=0)(LimitsActor)
    coordinator = ray.remote(num_cpus=0)(CoordinatorActor)
    worker = ray.remote(max_restarts=max_restarts, max_task_retries=max_restarts)(WorkerActor)
    return limits, coordinator, worker
