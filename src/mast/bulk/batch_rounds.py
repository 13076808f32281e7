"""Batch mode of the bulk runner: rounds of provider batch jobs, fitted to the budget,
submitted, collected into the cache (or kept in memory) and settled at the end of the run.

:class:`BatchRounds` is the batch half of :class:`mast.bulk.engine._Runner`, which inherits
it; the attributes and methods it uses from the runner are declared below.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from mast.bulk.batch import BatchBackend, BatchEntry, BatchState, batch_backend
from mast.bulk.cache import CachedResponse, ResponseCache
from mast.bulk.progress import Progress
from mast.bulk.signals import _Stop
from mast.bulk.spending import Budget
from mast.bulk.types import RetryPolicy, RunSummary
from mast.errors import AuthError
from mast.judge.judge import Judge
from mast.judge.providers import Completion
from mast.judge.providers.usage import Usage
from mast.traces.model import Trace

log = logging.getLogger("mast.bulk.runner")


class BatchRounds:
    """Batch-mode methods of the runner (see the module docstring)."""

    judge: Judge
    cache: ResponseCache | None
    retry: RetryPolicy
    rng: random.Random
    money: Budget
    progress: Progress
    summary: RunSummary
    stopped: _Stop | None
    batch_state: BatchState | None
    batch_poll_interval: float
    max_batch_rounds: int
    deferred: dict[str, tuple[dict[str, Any], float]]
    live_keys: set[str]
    batch_answers: dict[str, CachedResponse]
    kept_batches: list[str]
    batch_mode: bool
    batch_pending: list[tuple[int, Trace]]

    if TYPE_CHECKING:  # the runner's own methods, which these use

        async def work(
            self, items: Iterator[tuple[int, Trace]], mode: str
        ) -> tuple[list[tuple[int, Trace]], list[tuple[int, Trace]]]: ...
        def stop(self, reason: str, message: str) -> _Stop: ...
        def price(self, usage: Usage, *, batch: bool = False) -> float | None: ...

    def settle_kept_batches(self, state: BatchState | None) -> None:
        """Unlist batches kept for their answers, or after an early stop count those unused."""
        unused = [a for a in self.batch_answers.values() if not a.charged]
        if self.stopped is not None and unused:
            self.summary.batch_unused = len(unused)
            costs = [self.price(a.completion.usage, batch=True) for a in unused]
            self.summary.batch_unused_usd = sum(c or 0.0 for c in costs)
            self.summary.batch_unused_kept = state is not None and state.path is not None
        elif state is not None:
            for batch_id in self.kept_batches:
                state.remove(batch_id)

    # ------------------------------------------------------------------ batch mode
    async def run_batch(self, items: Iterator[tuple[int, Trace]]) -> list[tuple[int, Trace]]:
        assert self.judge.provider is not None
        self.batch_mode = True
        backend = batch_backend(self.judge.provider, self.judge.model_name)
        state = self.batch_state or BatchState(None)
        left: list[tuple[int, Trace]] = []
        # One provider batch's worth of traces at a time, not the whole input in memory.
        while self.stopped is None and (pending := list(islice(items, backend.max_requests))):
            try:
                left += await self._batch_rounds(backend, state, pending)
            except _Stop:
                # An authentication error from the batch API itself: what is left stays left.
                left += self.batch_pending
        return sorted(left, key=lambda item: item[0])

    async def _batch_rounds(
        self, backend: BatchBackend, state: BatchState, pending: list[tuple[int, Trace]]
    ) -> list[tuple[int, Trace]]:
        self.batch_pending = pending
        for entry in list(state.entries):
            # Submitted by an earlier run that did not live to collect it.
            if entry.provider == self.judge.provider_name:
                await self.collect(backend, state, entry)
        exhausted: str | None = None
        for _round in range(self.max_batch_rounds):
            self.deferred = {}
            pending, stopped = await self.work(iter(pending), "collect")
            self.batch_pending = pending
            if stopped or self.stopped is not None:
                return sorted(pending + stopped, key=lambda item: item[0])
            if not pending:
                break
            if exhausted is not None:
                # The last batch was cut to the budget; what still needs a call stops here.
                self.stop("budget", exhausted)
                return pending
            requests, exhausted = self.fit_budget(self.deferred)
            if not requests:
                self.stop("budget", exhausted or "no request fits the budget")
                return pending
            # Within the provider's limits: several batches, each in the state file when sent.
            for entry in [await self.submit(backend, state, p) for p in backend.split(requests)]:
                await self.collect(backend, state, entry)
        if pending and self.stopped is None:
            # Rounds used up (long chains of windows or repairs): finish with live calls.
            self.live_keys.update(self.deferred)
            deferred, stopped = await self.work(iter(pending), "live")
            pending = deferred + stopped
        return sorted(pending, key=lambda item: item[0])

    def fit_budget(
        self, deferred: dict[str, tuple[dict[str, Any], float]]
    ) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """The deferred requests that fit the budget at batch prices, and why the others
        do not (None when all fit)."""
        requests: list[tuple[str, dict[str, Any]]] = []
        planned = 0.0
        for key, (body, estimate) in deferred.items():
            if not self.money.fits(estimate, planned):
                return requests, (
                    self.money.message(estimate, "at batch prices")
                    + f"; ${planned:.4f} planned for the last batch, "
                    f"{len(deferred) - len(requests)} request(s) were not submitted"
                )
            planned += estimate
            requests.append((key, body))
        return requests, None

    async def submit(
        self,
        backend: BatchBackend,
        state: BatchState,
        requests: list[tuple[str, dict[str, Any]]],
    ) -> BatchEntry:
        self.progress.set_note(f"submitting a batch of {len(requests)} request(s)")
        batch_id = await self.retrying(lambda: backend.submit(requests))
        entry = BatchEntry(
            id=batch_id,
            provider=self.judge.provider_name,
            model=self.judge.model_name,
            keys=[key for key, _ in requests],
        )
        state.add(entry)
        self.summary.batches.append(batch_id)
        log.info("submitted batch %s with %d request(s)", batch_id, len(requests))
        return entry

    async def collect(self, backend: BatchBackend, state: BatchState, entry: BatchEntry) -> None:
        """Wait for a batch, store its answers in the cache, mark failed items for live calls."""
        interval = self.batch_poll_interval
        while True:
            status = await self.retrying(lambda: backend.status(entry.id))
            counts = f" {status.done}/{status.total}" if status.total else ""
            self.progress.set_note(f"batch {entry.id}: {status.state}{counts}")
            if status.ended:
                break
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, max(self.batch_poll_interval, 120.0))
        results = await self.retrying(lambda: backend.results(entry.id))
        failed = 0
        for key in entry.keys:
            result = results.get(key)
            if isinstance(result, Completion):
                result = self.judge.scrubber.completion(result)  # a server may echo the key
                self.summary.batch_items += 1
                if self.cache is not None:
                    self.cache.put(
                        key,
                        result,
                        provider=self.judge.provider_name,
                        model=self.judge.model_name,
                        batch=True,
                    )
                if self.cache is None or self.cache.get(key) is None:
                    self.batch_answers[key] = CachedResponse(result, charged=False, batch=True)
            else:
                # Missing or failed: this request goes live, with the usual retries.
                failed += 1
                self.live_keys.add(key)
                if result is not None:
                    log.info("batch %s item %s failed: %s", entry.id, key[:12], result)
        if failed:
            log.warning("batch %s: %d item(s) failed; retrying them one by one", entry.id, failed)
        if any(key in self.batch_answers for key in entry.keys):
            # Paid answers no cache holds: a run that stops before using them all leaves
            # the batch listed, so the next run collects it instead of paying again.
            self.kept_batches.append(entry.id)
        else:
            state.remove(entry.id)
        self.progress.set_note("")

    async def retrying(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """A batch-API request with the run's retry policy; auth errors stop the run."""
        try:
            return await self.retry.call(make, self.rng)
        except AuthError as exc:
            raise self.stop("auth", str(exc)) from exc
