"""The worker pool behind :func:`mast.annotate_many`: one :class:`_Runner` per run.

It owns what a bulk run adds around the judge's provider calls, in this order: response
cache, budget check, rate limits, per-call timeout, retries; plus the results store, batch
submission and progress. :mod:`mast.bulk.runner` is the public entry point.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from mast.bulk.batch import (
    BATCH_PRICE_FACTOR,
    BatchBackend,
    BatchEntry,
    BatchState,
    batch_backend,
)
from mast.bulk.cache import CachedResponse, ResponseCache, cache_key
from mast.bulk.checks import UniqueIds, failure_reason, kept_on_rerun, write_problem
from mast.bulk.progress import Progress
from mast.bulk.ratelimit import Limiter, LimiterGrant, LimitRefused
from mast.bulk.store import ResultsStore
from mast.bulk.tasks import gather_or_cancel
from mast.bulk.types import RetryPolicy, RunSummary, config_hash
from mast.errors import (
    AuthError,
    DuplicateTraceError,
    MissingDependencyError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from mast.judge.annotation import Annotation
from mast.judge.judge import Judge, Send
from mast.judge.prompt.types import CHARS_PER_TOKEN, Prompt
from mast.judge.providers import Completion
from mast.judge.providers.usage import Usage
from mast.traces.model import FailureVector, Trace

log = logging.getLogger("mast.bulk.runner")


class _Deferred(Exception):
    """Batch mode: this call's answer will come from a batch job (not an error)."""


class _Stop(Exception):
    """Stop the whole run (budget); raised through the judge, which lets it pass."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _Calls:
    """The provider calls made for one trace."""

    charge_keys: list[str] = field(default_factory=list)
    cost: float | None = 0.0
    any_call: bool = False
    all_cached: bool = True
    last_error: ProviderError | None = None

    def add_cost(self, cost: float | None) -> None:
        self.cost = None if cost is None or self.cost is None else self.cost + cost


class _Runner:
    def __init__(
        self,
        judge: Judge,
        *,
        store: ResultsStore | None,
        cache: ResponseCache | None,
        limiter: Limiter,
        retry: RetryPolicy,
        timeout: float | None,
        budget_usd: float | None,
        concurrency: int,
        resume: bool,
        retry_failed: bool,
        progress: Progress,
        batch_state: BatchState | None,
        batch_poll_interval: float,
        max_batch_rounds: int,
        seed: int | None,
    ) -> None:
        self.judge = judge
        self.store = store
        self.cache = cache
        self.limiter = limiter
        self.retry = retry
        self.timeout = timeout
        self.budget = budget_usd
        self.concurrency = concurrency
        self.resume = resume
        self.retry_failed = retry_failed
        self.progress = progress
        self.batch_state = batch_state
        self.batch_poll_interval = batch_poll_interval
        self.max_batch_rounds = max_batch_rounds
        self.rng = random.Random(seed)
        self.hash = config_hash(judge)
        self.model_key = f"{judge.provider_name}/{judge.model_name}"
        self.summary = RunSummary()
        self.results: dict[int, Annotation] = {}
        self.spent = 0.0
        self.reserved = 0.0
        self.stopped: _Stop | None = None
        self.chars_per_token = CHARS_PER_TOKEN
        self.inflight: dict[str, asyncio.Future[Completion]] = {}
        # Batch mode: answers to fetch by batch (key -> request body and its cost estimate
        # at batch prices), and keys to call live instead (their batch item failed).
        self.deferred: dict[str, tuple[dict[str, Any], float]] = {}
        self.live_keys: set[str] = set()
        # Batch answers the cache does not hold (no cache, or it could not store them).
        self.batch_answers: dict[str, CachedResponse] = {}
        self.kept_batches: list[str] = []  # collected, but listed until the run ends well
        self.batch_mode = False
        self.batch_pending: list[tuple[int, Trace]] = []

    # ------------------------------------------------------------------ input
    def pending(self, traces: Iterable[Trace]) -> Iterator[tuple[int, Trace]]:
        """Input traces still to annotate, numbered; resumed ones are filled in directly."""
        ids = UniqueIds()
        index = 0
        for trace in traces:
            try:
                if not ids.check(trace):
                    self.summary.duplicates.append(trace.id)  # the same trace read twice
                    continue
            except DuplicateTraceError as exc:  # a lazy input: found only now
                self.stop("duplicate", str(exc))
                return
            self.summary.total += 1
            prior = self.store.get(trace.id, self.hash) if self.store is not None else None
            if prior is not None and self.resume:  # None: a failure to redo now
                prior = kept_on_rerun(prior, self.summary, retry_failed=self.retry_failed)
            if prior is not None and self.resume:
                self.results[index] = prior
                self.summary.resumed += 1
                self.progress.advance(skipped=1)
            else:
                yield index, trace
            index += 1

    # ------------------------------------------------------------------ the call hook
    def key(self, prompt: Prompt) -> str:
        provider, config = self.judge.provider, self.judge.call_config
        assert provider is not None and config is not None
        return cache_key(
            provider=self.judge.provider_name,
            body=provider.request_body(prompt, config),
            taxonomy=self.judge.taxonomy.label,
            prompt_hash=prompt.prompt_hash,
            sample=self.judge.sample,
            endpoint=None if provider.default_endpoint else provider.endpoint,
        )

    def price(self, usage: Usage, *, batch: bool = False) -> float | None:
        cost = self.judge.prices.cost(self.model_key, usage)
        return None if cost is None else cost * (BATCH_PRICE_FACTOR if batch else 1.0)

    def estimate(self, prompt: Prompt, *, batch: bool = False) -> tuple[int, float]:
        """(tokens, USD) a call may use: estimated prompt tokens + maximum output tokens."""
        prompt_tokens = prompt.estimated_tokens(chars_per_token=self.chars_per_token)
        output = self.judge.output_reserve
        cost = self.price(Usage(input_tokens=prompt_tokens, output_tokens=output), batch=batch)
        return prompt_tokens + output, cost or 0.0

    def stop(self, reason: str, message: str) -> _Stop:
        if self.stopped is None:
            self.stopped = _Stop(reason, message)
            log.warning("stopping the run: %s", message)
        return self.stopped

    def check_budget(self, estimate: float) -> None:
        if self.stopped is not None:
            raise self.stopped
        if self.budget is None:
            return
        if self.spent + self.reserved + estimate > self.budget + 1e-12:
            raise self.stop(
                "budget",
                f"budget of ${self.budget:.4f} reached: ${self.spent:.4f} spent"
                + (f", ${self.reserved:.4f} in flight" if self.reserved else "")
                + f", and the next call may cost up to ${estimate:.4f} "
                f"(estimated prompt tokens + max output tokens {self.judge.output_reserve})",
            )

    async def hook(self, prompt: Prompt, send: Send, calls: _Calls, mode: str) -> Completion:
        calls.any_call = True
        key = self.key(prompt) if (self.cache is not None or self.batch_mode) else None
        if key is not None:
            waiting = self.inflight.get(key)
            if waiting is not None:
                # The same request is on its way for another trace: share its answer.
                return await asyncio.shield(waiting)
            hit = self.batch_answers.get(key)
            hit = hit or (self.cache.get(key) if self.cache is not None else None)
            if hit is not None:
                if not hit.charged:
                    # Paid (live before a crash, or by batch) but on no record yet.
                    calls.all_cached = False
                    cost = self.price(hit.completion.usage, batch=hit.batch)
                    calls.add_cost(cost)
                    self.spent += cost or 0.0
                    calls.charge_keys.append(key)
                    if key in self.batch_answers:
                        self.batch_answers[key] = replace(hit, charged=True)
                return hit.completion
            if mode == "collect" and key not in self.live_keys:
                assert self.judge.provider is not None and self.judge.call_config is not None
                body = self.judge.provider.request_body(prompt, self.judge.call_config)
                self.deferred[key] = (body, self.estimate(prompt, batch=True)[1])
                raise _Deferred(key)
        calls.all_cached = False
        if key is None:
            return await self.live(prompt, send, calls)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self.inflight[key] = future
        try:
            completion = await self.live(prompt, send, calls)
        except BaseException as exc:
            if not future.done():
                if isinstance(exc, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(exc)
                    future.exception()  # retrieved: no "never retrieved" warning if unshared
            raise
        finally:
            self.inflight.pop(key, None)
        future.set_result(completion)
        if self.cache is not None:
            # Stored before the judge even parses it: from here on, a crash cannot make
            # this answer be paid for again.
            self.cache.put(
                key,
                completion,
                provider=self.judge.provider_name,
                model=self.judge.model_name,
                prompt_hash=prompt.prompt_hash,
            )
            calls.charge_keys.append(key)
        return completion

    async def live(self, prompt: Prompt, send: Send, calls: _Calls) -> Completion:
        """One call through budget, rate limits, timeout and retries."""
        tokens, estimate = self.estimate(prompt)
        attempt = 0
        while True:
            self.check_budget(estimate)
            self.reserved += estimate
            grant: LimiterGrant | None = None
            try:
                if self.limiter.limited:
                    grant = await self.limiter.acquire(tokens, cost=estimate)
                if self.stopped is not None:
                    raise self.stopped
                self.summary.calls += 1
                if attempt:
                    self.summary.retries += 1
                try:
                    if self.timeout is None:
                        completion = await send(prompt)
                    else:
                        completion = await asyncio.wait_for(send(prompt), self.timeout)
                except asyncio.TimeoutError as exc:
                    raise ProviderTimeout(
                        f"{self.model_key}: no answer within {self.timeout:g}s "
                        "(the runner's per-call timeout); raise timeout= or retry later",
                        provider=self.judge.provider_name,
                    ) from exc
            except (AuthError, LimitRefused) as exc:  # LimitRefused: a shared budget is spent
                raise self.stop(getattr(exc, "reason", "auth"), str(exc)) from exc
            except ProviderError as exc:
                calls.last_error = exc
                if grant is not None:  # refused: no tokens used (a timed-out call may have)
                    grant.settle(None if isinstance(exc, ProviderTimeout) else 0)
                retry_after = exc.retry_after if isinstance(exc, RateLimitError) else None
                if retry_after is not None:
                    # Everyone waits, not only this worker: the limit is shared.
                    self.limiter.pause(retry_after)
                attempt += 1
                if (
                    not exc.retryable
                    or attempt >= self.retry.max_attempts
                    or (retry_after or 0) > self.retry.max_retry_after
                ):
                    raise
                delay = self.retry.delay(attempt - 1, retry_after, self.rng)
                log.info("retrying in %.2fs after: %s", delay, exc)
                await asyncio.sleep(delay)
                continue
            finally:
                self.reserved -= estimate
            break
        usage, cost = completion.usage, self.price(completion.usage)
        if grant is not None:
            grant.settle(usage.total_tokens, cost=cost)
        if usage.input_tokens:
            observed = prompt.text_length / usage.input_tokens
            if observed >= 1.5:  # refine the token estimate, only ever more conservative
                self.chars_per_token = min(self.chars_per_token, observed)
        calls.add_cost(cost)
        self.spent += cost or 0.0
        return completion

    # ------------------------------------------------------------------ one trace
    async def process(self, index: int, trace: Trace, mode: str) -> str:
        """Annotate one trace; returns "done", "deferred" or "stopped"."""
        if self.stopped is not None:
            return "stopped"
        calls = _Calls()

        async def hook(prompt: Prompt, send: Send) -> Completion:
            return await self.hook(prompt, send, calls, mode)

        start = time.perf_counter()
        try:
            ann = await self.judge.aannotate(trace, call_hook=hook)
        except _Deferred:
            return "deferred"
        except _Stop:
            return "stopped"
        except AuthError as exc:  # raised by the judge itself, e.g. no key
            self.stop("auth", str(exc))
            return "stopped"
        except MissingDependencyError:
            raise
        except Exception as exc:
            # A bug or an input the judge cannot handle: one error record, the run goes on.
            log.exception("annotating trace %s failed", trace.id)
            ann = Annotation(
                trace_id=trace.id,
                status="error",
                error=f"internal error while annotating: {type(exc).__name__}: {exc}",
                taxonomy=self.judge.taxonomy.label,
                vector=FailureVector(codes=self.judge.taxonomy.codes),
                judge=self.judge.describe(),
                usage=Usage.zero(),
                latency_s=time.perf_counter() - start,
                windows=0,
            )
            calls.last_error = None
        self.record(index, ann, calls)
        return "done"

    def record(self, index: int, ann: Annotation, calls: _Calls) -> None:
        judge = {**ann.judge, "config_hash": self.hash}
        reason = None if ann.status == "ok" else failure_reason(ann, calls.last_error)
        update: dict[str, Any] = {"judge": judge, "error_kind": reason}
        if calls.any_call:
            cached = calls.all_cached
            update["cached"] = cached
            update["cost_usd"] = 0.0 if cached else calls.cost
        ann = ann.model_copy(update=update)
        if self.store is not None:
            try:
                self.store.append(ann)
            except OSError as exc:
                # Disk full: stop; the answer stays in memory and uncharged in the cache.
                self.results[index] = ann
                self.stop(
                    "output", write_problem(self.store.path, exc, ann, self.cache is not None)
                )
                return
        if self.cache is not None:
            # Only now that a record carries their cost: a crash before this line
            # leaves them uncharged, and the rerun's record charges them.
            self.cache.mark_charged(calls.charge_keys)
        self.results[index] = ann
        s = self.summary
        if reason is None:
            s.done += 1
        else:
            s.failed[reason] += 1
        if ann.cached:
            s.cached += 1
        s.count_grounding(ann.findings)
        if ann.cost_usd is None:
            s.cost_unknown += 1
        else:
            s.cost_usd += ann.cost_usd
        self.progress.advance(
            ok=int(ann.status == "ok"),
            failed=int(ann.status != "ok"),
            cached=int(ann.cached),
            cost=ann.cost_usd or 0.0,
        )

    # ------------------------------------------------------------------ scheduling
    async def work(
        self, items: Iterator[tuple[int, Trace]], mode: str
    ) -> tuple[list[tuple[int, Trace]], list[tuple[int, Trace]]]:
        """Run ``concurrency`` workers over ``items``; returns (deferred, stopped) traces."""
        deferred: list[tuple[int, Trace]] = []
        stopped: list[tuple[int, Trace]] = []

        async def worker() -> None:
            while self.stopped is None:
                item = next(items, None)
                if item is None:
                    return
                outcome = await self.process(*item, mode)
                if outcome == "deferred":
                    deferred.append(item)
                elif outcome == "stopped":
                    stopped.append(item)

        await gather_or_cancel([worker() for _ in range(self.concurrency)])
        return deferred, stopped

    async def run(self, traces: Iterable[Trace], *, batch: bool) -> None:
        items = self.pending(traces)
        left: list[tuple[int, Trace]] = []
        state = self.batch_state
        if not batch and state is not None and state.entries and self.judge.provider:
            # An earlier batch run left paid-for batches: collect them before going live.
            backend = batch_backend(self.judge.provider, self.judge.model_name)
            with contextlib.suppress(_Stop):  # self.stopped is set: no worker will start
                for entry in list(state.entries):
                    if entry.provider == self.judge.provider_name:
                        await self.collect(backend, state, entry)
        if batch:
            left = await self.run_batch(items)
        else:
            _, left = await self.work(items, "live")
        if self.stopped is not None:
            # What no worker got to: report it (resumed ones are filled in, not reported).
            left += list(items)
            left.sort(key=lambda item: item[0])
            self.summary.not_attempted = [trace.id for _, trace in left]
            self.summary.stopped = self.stopped.reason
            self.summary.stop_message = self.stopped.message
        self.settle_kept_batches(state)

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
            if self.budget is not None:
                if self.spent + planned + estimate > self.budget + 1e-12:
                    return requests, (
                        f"budget of ${self.budget:.4f} reached: ${self.spent:.4f} spent and "
                        f"${planned:.4f} planned for the last batch; "
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
