"""The worker pool behind :func:`mast.annotate_many`: one :class:`_Runner` per run.

It owns what a bulk run adds around the judge's provider calls, in this order: response
cache, budget check, rate limits, per-call timeout, retries; plus the results store, batch
submission and progress. :mod:`mast.bulk.runner` is the public entry point.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from mast.bulk.batch import (
    BATCH_PRICE_FACTOR,
    BatchState,
    batch_backend,
)
from mast.bulk.batch_rounds import BatchRounds
from mast.bulk.cache import CachedResponse, ResponseCache, cache_key, cache_taxonomy
from mast.bulk.checks import UniqueIds, failure_reason, kept_on_rerun, write_problem
from mast.bulk.progress import Progress
from mast.bulk.ratelimit import Limiter, LimiterGrant, LimitRefused, counted_tokens
from mast.bulk.signals import Payers, _Calls, _Deferred, _Stop
from mast.bulk.spending import Budget, BudgetSpent
from mast.bulk.store import ResultsStore
from mast.bulk.tasks import gather_or_cancel
from mast.bulk.types import RetryPolicy, RunSummary, config_hash, setting_differences
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


class _Runner(BatchRounds):
    def __init__(
        self,
        judge: Judge,
        *,
        store: ResultsStore | None,
        cache: ResponseCache | None,
        limiter: Limiter,
        retry: RetryPolicy,
        timeout: float | None,
        budget: Budget,
        concurrency: int,
        resume: bool,
        retry_failed: bool,
        progress: Progress,
        batch_state: BatchState | None,
        batch_poll_interval: float,
        max_batch_rounds: int,
        seed: int | None,
        keep: bool = True,
    ) -> None:
        self.judge = judge
        self.keep = keep
        self.store = store
        self.cache = cache
        self.limiter = limiter
        # A limiter given to annotate_many(limiter=…) may predate what a 429 and the
        # headers can say (pause(seconds) only, no adopt): it gets what it takes.
        self._pause_says_kind = "kind" in inspect.signature(limiter.pause).parameters
        self._adopt = getattr(limiter, "adopt", None)
        self.retry = retry
        self.timeout = timeout
        self.money = budget
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
        """The run's records by input position (only with ``keep``: a streaming run's
        records are in the results file, and memory holds none of them)."""
        self.unwritten: list[Annotation] = []
        """Records the results file could not take (a full disk): paid for, kept here."""
        self.payers = Payers()  # who pays for each answer several traces share
        self.reask: set[str] = set()  # traces whose earlier answer could not be read
        # Trace id -> resume key of a record by another judge setting (read when first needed).
        self.judged_elsewhere: dict[str, str | None] | None = None
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
            if self.resume and self.store is not None and self._resumed(index, trace.id):
                self.summary.resumed += 1
                self.progress.advance(skipped=1)
            else:
                yield index, trace
            index += 1

    def _resumed(self, index: int, trace_id: str) -> bool:
        """Whether the results file's record of ``trace_id`` stands (and is kept, with
        ``keep``); False: there is none, or it is a failure to redo now."""
        assert self.store is not None
        # Kept records are read back whole; a streaming run decides by the brief the
        # store holds, and never reads the record (what made reruns slow at 10^5).
        found = self.store.get if self.keep else self.store.brief
        prior = found(trace_id, self.hash)
        if prior is None:
            self._note_other_judge(trace_id)
            return False
        if prior.status == "parse_error" and self.retry_failed:
            self.reask.add(trace_id)
        prior = kept_on_rerun(prior, self.summary, retry_failed=self.retry_failed)
        if prior is None:
            return False
        if isinstance(prior, Annotation):
            self.results[index] = prior
        return True

    def _note_other_judge(self, trace_id: str) -> None:
        """Count (and, the first time, say why) a trace the results file holds a record of by
        another judge setting: a changed model, server or prompt must not resume silently as
        if nothing were there, nor pay again without a word."""
        assert self.store is not None
        if self.judged_elsewhere is None:
            self.judged_elsewhere = self.store.judged_by_others(self.hash)
        other = self.judged_elsewhere.get(trace_id)
        if other is None:
            return
        self.summary.judged_otherwise += 1
        if self.summary.judged_otherwise > 1:
            return
        record = self.store.get(trace_id, other)
        differs = setting_differences(record.judge, self.judge) if record is not None else []
        log.warning(
            "%s holds a record of %r by another judge setting (%s): this run annotates it "
            "again for its own setting and keeps both records; to resume that record "
            "instead, run with its settings",
            self.store.path,
            trace_id,
            "; ".join(differs) or f"resume key {other}",
        )

    # ------------------------------------------------------------------ the call hook
    def key(self, prompt: Prompt) -> str:
        provider, config = self.judge.provider, self.judge.call_config
        assert provider is not None and config is not None
        return cache_key(
            provider=self.judge.provider_name,
            body=provider.request_body(prompt, config),
            taxonomy=cache_taxonomy(self.judge.taxonomy),
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

    async def hook(self, prompt: Prompt, send: Send, calls: _Calls, mode: str) -> Completion:
        calls.any_call = True
        key = self.key(prompt) if (self.cache is not None or self.batch_mode) else None
        if key is not None:
            waiting = self.inflight.get(key)
            if waiting is not None:
                # The same request is on its way for another trace: share its answer.
                completion = await asyncio.shield(waiting)
                self.payers.shared(key, calls)
                return completion
            hit = None if calls.fresh else self.batch_answers.get(key)
            if not calls.fresh and hit is None and self.cache is not None:
                hit = self.cache.get(key)
            if hit is not None:
                calls.cache_hits += 1
                if self.payers.shared(key, calls):
                    return hit.completion
                if not hit.charged:
                    # Paid (live before a crash, or by batch) but on no record yet.
                    calls.all_cached = False
                    cost = self.price(hit.completion.usage, batch=hit.batch)
                    calls.add_cost(cost)
                    self.money.charge(cost)
                    calls.charge_keys.append(key)
                    self.payers.pay(key, calls.trace_id)
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
        self.payers.pay(key, calls.trace_id)  # before the waiters wake: they share it
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
                replace=calls.fresh,  # the new answer replaces the unreadable one
            )
            calls.charge_keys.append(key)
        return completion

    async def live(self, prompt: Prompt, send: Send, calls: _Calls) -> Completion:
        """One call through budget, rate limits, timeout and retries."""
        tokens, estimate = self.estimate(prompt)
        why = f"about {tokens - self.judge.output_reserve} prompt tokens and at most "
        why += f"{self.judge.output_reserve} output tokens at {self.model_key}'s price"
        attempt = 0
        throttled = 0  # 429s this call got: counted apart, they do not use up attempts
        while True:
            if self.stopped is not None:
                raise self.stopped
            try:  # waits while calls in flight hold reservations
                await self.money.reserve(estimate, why=why)
            except BudgetSpent as exc:
                raise self.stop("budget", str(exc)) from None
            grant: LimiterGrant | None = None
            cost: float | None = None
            try:
                if self.limiter.limited:
                    grant = await self.limiter.acquire(tokens, cost=estimate)
                if self.stopped is not None:
                    raise self.stopped
                self.summary.calls += 1
                if attempt or throttled:
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
                cost = self.price(completion.usage)
            except (AuthError, LimitRefused) as exc:  # LimitRefused: a shared budget is spent
                raise self.stop(getattr(exc, "reason", "auth"), str(exc)) from exc
            except ProviderError as exc:
                calls.last_error = exc
                if grant is not None:  # refused: no tokens used (a timed-out call may have)
                    grant.settle(None if isinstance(exc, ProviderTimeout) else 0)
                retry_after = exc.retry_after if isinstance(exc, RateLimitError) else None
                if isinstance(exc, RateLimitError):
                    # Everyone waits and slows down, not only this worker: the limit is shared.
                    self.summary.rate_limited += 1
                    throttled += 1
                    self.pause(exc)
                else:
                    attempt += 1
                if (
                    not exc.retryable
                    or attempt >= self.retry.max_attempts
                    or throttled >= self.retry.max_rate_limited
                    or (retry_after or 0) > self.retry.max_retry_after
                ):
                    raise
                delay = self.retry.delay(
                    throttled - 1 if isinstance(exc, RateLimitError) else attempt - 1,
                    retry_after,
                    self.rng,
                )
                log.info("retrying in %.2fs after: %s", delay, exc)
                await asyncio.sleep(delay)
                continue
            finally:
                self.money.settle(estimate, cost)  # the reservation becomes what was spent
            break
        usage = completion.usage
        if grant is not None and completion.stated_limits is not None and self._adopt:
            # The answer's headers state the limits: no need to find them by 429s.
            self._adopt(*completion.stated_limits)
        if grant is not None:
            # What the provider counts against a tokens-per-minute limit (counted_tokens):
            # the reserve assumed for a call without max_tokens is not counted by anyone.
            config = self.judge.call_config
            sent = config.max_tokens if config is not None else None
            counted = counted_tokens(usage.input_tokens, usage.output_tokens, sent)
            grant.settle(counted, cost=cost)
        if usage.input_tokens:
            observed = prompt.text_length / usage.input_tokens
            if observed >= 1.5:  # refine the token estimate, only ever more conservative
                self.chars_per_token = min(self.chars_per_token, observed)
        calls.add_cost(cost)
        return completion

    def pause(self, exc: RateLimitError) -> None:
        """Tell the limiter a 429 came (with the provider's stated limit where it can)."""
        if not self._pause_says_kind:
            self.limiter.pause(exc.retry_after or 0.0)
            return
        self.limiter.pause(
            exc.retry_after or 0.0,
            kind=exc.limit_kind,
            stated_limit=exc.limit_requests,
            stated_tokens=exc.limit_tokens,
        )

    # ------------------------------------------------------------------ one trace
    async def process(self, index: int, trace: Trace, mode: str) -> str:
        """Annotate one trace; returns "done", "deferred" or "stopped"."""
        if self.stopped is not None:
            return "stopped"
        calls = _Calls(trace_id=trace.id)

        async def hook(prompt: Prompt, send: Send) -> Completion:
            return await self.hook(prompt, send, calls, mode)

        start = time.perf_counter()
        try:
            ann = await self.judge.aannotate(trace, call_hook=hook)
            if ann.status == "parse_error" and calls.cache_hits and trace.id in self.reask:
                # --retry-failed: the cached answer still cannot be read (a parser fix
                # would have read it, free): ask the provider again.
                calls.fresh = True
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
        if calls.shared_with:
            update["shared_with"] = calls.shared_with
        if calls.any_call:
            cached = calls.all_cached
            update["cached"] = cached
            update["cost_usd"] = 0.0 if cached else calls.cost
        ann = ann.model_copy(update=update)
        if self.store is not None:
            try:
                self.store.append(ann)
            except OSError as exc:
                # Disk full: stop; the answer stays in memory (the run keeps it for the
                # caller and rescues it at the end) and uncharged in the cache.
                if self.keep:
                    self.results[index] = ann
                self.unwritten.append(ann)
                self.summary.cost_usd += ann.cost_usd or 0.0  # paid, written or not
                if self.stopped is None:
                    self.stop("output", write_problem(self.store.path, exc, ann))
                return
        if self.cache is not None:
            # Only now that a record carries their cost: a crash before this line
            # leaves them uncharged, and the rerun's record charges them.
            self.cache.mark_charged(calls.charge_keys)
        if self.keep:
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
            # What no worker got to: report it (resumed ones are filled in, not reported);
            # by id, so the rest of a streamed input is read through, not held.
            ids = [(index, trace.id) for index, trace in left]
            ids += [(index, trace.id) for index, trace in items]
            ids.sort(key=lambda item: item[0])
            self.summary.not_attempted = [trace_id for _, trace_id in ids]
            self.summary.stopped = self.stopped.reason
            self.summary.stop_message = self.stopped.message
        self.settle_kept_batches(state)
