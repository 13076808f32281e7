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
  fsynced per line; a rerun skips what is done (``retry_failed=True`` redoes failures);
* **response cache** (``cache=``): answers are stored before they are used, so a crash
  never makes you pay twice; a hit costs nothing and the record says ``cached``;
* **budget**: ``budget_usd`` stops the run before a call whose estimated cost (prompt
  tokens + maximum output tokens) would take the spending past it;
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

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from mast.bulk.batch import (
    BATCH_PRICE_FACTOR,
    BatchBackend,
    BatchEntry,
    BatchState,
    batch_backend,
    batch_state_path,
)
from mast.bulk.cache import ResponseCache, cache_key
from mast.bulk.progress import Progress, format_duration
from mast.bulk.ratelimit import RateLimiter
from mast.bulk.store import ResultsStore
from mast.errors import (
    AuthError,
    BudgetExceeded,
    ContextLengthError,
    MastError,
    MissingDependencyError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    RunStopped,
)
from mast.judge.annotation import Annotation
from mast.judge.judge import Judge, Send, _run_sync
from mast.judge.prompts import CHARS_PER_TOKEN, Prompt
from mast.judge.providers import Completion
from mast.judge.usage import Usage
from mast.traces.model import FailureVector, Trace

__all__ = [
    "AnnotationRun",
    "RetryPolicy",
    "RunSummary",
    "aannotate_many",
    "annotate_many",
    "config_hash",
]

log = logging.getLogger("mast.bulk.runner")

CacheLike = ResponseCache | str | Path | bool | None
OnStop = Literal["raise", "return"]

# Settings that do not change an answer: left out of the resume key.
_NOT_IN_CONFIG_HASH = ("mast_version", "base_url")


def config_hash(judge: Judge) -> str:
    """Hash of the judge settings that can change an answer (16 hex digits).

    Records are keyed by ``(trace_id, config_hash)``: the same command resumes, another
    model or prompt setup writes new records beside the old ones.

    >>> config_hash(Judge("heuristic")) == config_hash(Judge("heuristic"))
    True
    """
    info = {k: v for k, v in judge.describe().items() if k not in _NOT_IN_CONFIG_HASH}
    text = json.dumps(info, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried: up to ``max_attempts`` calls in all, waiting
    ``base_delay · 2^n`` (capped at ``max_delay``) with jitter in between, or what the
    provider's ``Retry-After`` asks (up to ``max_retry_after``; longer waits fail).

    >>> policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    >>> 2.0 <= policy.delay(2, None, random.Random(0)) <= 4.0
    True
    >>> policy.delay(0, 30.0, random.Random(0)) >= 30.0
    True
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must not be negative")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        backoff = min(self.max_delay, self.base_delay * (2**attempt))
        # "Equal jitter": at least half the backoff, so retries really back off, and a
        # random other half, so workers that failed together do not retry together.
        jittered = backoff / 2 + rng.uniform(0, backoff / 2)
        if retry_after is not None:
            # The server knows best; a little jitter on top keeps workers apart.
            return float(retry_after + rng.uniform(0, min(1.0, 0.1 * retry_after + 0.05)))
        return float(jittered)


@dataclass
class RunSummary:
    """What a run did. ``str(summary)`` (or :meth:`format`) is the CLI's final summary."""

    total: int = 0
    """Distinct traces in the input (duplicates of an id are counted once)."""
    done: int = 0
    """Traces annotated in this run with status ``"ok"``."""
    failed: Counter[str] = field(default_factory=Counter)
    """Traces recorded with an error or parse error in this run, by reason."""
    cached: int = 0
    """Records of this run made entirely from cached answers (cost 0)."""
    resumed: int = 0
    """Traces skipped because the results file already had them."""
    not_attempted: list[str] = field(default_factory=list)
    """Ids of traces left when the run stopped early (not written as errors)."""
    duplicates: list[str] = field(default_factory=list)
    """Trace ids seen more than once in the input (annotated once)."""
    calls: int = 0
    """Provider calls made (retries included; cache hits and batch items excluded)."""
    retries: int = 0
    """Of those, calls that were retries."""
    batch_items: int = 0
    """Requests answered through provider batch jobs."""
    batches: list[str] = field(default_factory=list)
    """Ids of the batch jobs used."""
    cost_usd: float = 0.0
    """Cost charged to this run's records (cache hits are free)."""
    cost_unknown: int = 0
    """Records whose cost could not be computed (no price or no usage reported)."""
    elapsed_s: float = 0.0
    stopped: str | None = None
    """Why the run stopped early: ``"auth"``, ``"budget"`` or None."""
    stop_message: str | None = None

    @property
    def failed_total(self) -> int:
        """Traces recorded as failed in this run."""
        return sum(self.failed.values())

    def format(self) -> str:
        """A short multi-line summary for people."""
        lines = [
            f"{self.total} trace(s): {self.done} annotated, {self.failed_total} failed, "
            f"{self.resumed} already done, {len(self.not_attempted)} not attempted"
        ]
        if self.failed:
            reasons = ", ".join(f"{k} {v}" for k, v in self.failed.most_common())
            lines.append(f"failed by reason: {reasons}")
        extra = f" ({self.retries} retries)" if self.retries else ""
        lines.append(
            f"{self.calls} provider call(s){extra}, {self.cached} record(s) from cache"
            + (f", {self.batch_items} batch item(s)" if self.batch_items else "")
        )
        cost = f"cost ${self.cost_usd:.4f}"
        if self.cost_unknown:
            cost += f" (+ {self.cost_unknown} record(s) of unknown cost)"
        lines.append(f"{cost}, time {format_duration(self.elapsed_s)}")
        if self.duplicates:
            shown = ", ".join(self.duplicates[:5]) + (" …" if len(self.duplicates) > 5 else "")
            lines.append(f"{len(self.duplicates)} duplicate trace id(s) skipped: {shown}")
        if self.stopped:
            lines.append(f"stopped early ({self.stopped}): {self.stop_message}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


class AnnotationRun(list[Annotation]):
    """The annotations of a run, in input order, with its :class:`RunSummary`.

    Holds one annotation per distinct input trace that has a record (made now or resumed
    from the results file); traces not attempted after an early stop are listed in
    ``summary.not_attempted`` instead.
    """

    def __init__(self, items: Iterable[Annotation] = (), *, summary: RunSummary | None = None):
        super().__init__(items)
        self.summary = summary or RunSummary()

    @property
    def stopped(self) -> str | None:
        """Why the run stopped early (None if it did not)."""
        return self.summary.stopped


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


def _reason(ann: Annotation, error: ProviderError | None) -> str:
    """A short failure category for the summary."""
    if ann.status == "parse_error":
        return "parse_error"
    if error is None:
        return "error"
    if isinstance(error, RateLimitError):
        return "rate_limited"
    if isinstance(error, ProviderTimeout):
        return "timeout"
    if isinstance(error, ContextLengthError):
        return "context_length"
    if error.status_code is None:
        return "connection" if error.retryable else "bad_response"
    if error.status_code >= 500:
        return "server_error"
    return f"http_{error.status_code}"


class _Runner:
    def __init__(
        self,
        judge: Judge,
        *,
        store: ResultsStore | None,
        cache: ResponseCache | None,
        limiter: RateLimiter,
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
        self.batch_mode = False
        self.batch_pending: list[tuple[int, Trace]] = []

    # ------------------------------------------------------------------ input
    def pending(self, traces: Iterable[Trace]) -> Iterator[tuple[int, Trace]]:
        """Input traces still to annotate, numbered; resumed ones are filled in directly."""
        seen: set[str] = set()
        index = 0
        for trace in traces:
            if trace.id in seen:
                self.summary.duplicates.append(trace.id)
                continue
            seen.add(trace.id)
            self.summary.total += 1
            prior = self.store.get(trace.id, self.hash) if self.store is not None else None
            if (
                prior is not None
                and self.resume
                and (prior.status == "ok" or not self.retry_failed)
            ):
                self.results[index] = prior
                self.summary.resumed += 1
                self.progress.advance(skipped=1)
            else:
                yield index, trace
            index += 1

    # ------------------------------------------------------------------ the call hook
    def key(self, prompt: Prompt) -> str:
        provider = self.judge.provider
        config = self.judge.call_config
        assert provider is not None and config is not None
        return cache_key(
            provider=self.judge.provider_name,
            body=provider.request_body(prompt, config),
            taxonomy=self.judge.taxonomy.label,
            prompt_hash=prompt.prompt_hash,
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
            if self.cache is not None:
                hit = self.cache.get(key)
                if hit is not None:
                    if not hit.charged:
                        # Paid (live before a crash, or by batch) but on no record yet.
                        calls.all_cached = False
                        cost = self.price(hit.completion.usage, batch=hit.batch)
                        calls.add_cost(cost)
                        self.spent += cost or 0.0
                        calls.charge_keys.append(key)
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
            grant = None
            try:
                grant = await self.limiter.acquire(tokens) if self.limiter.limited else None
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
            except AuthError as exc:
                raise self.stop("auth", str(exc)) from exc
            except ProviderError as exc:
                calls.last_error = exc
                if grant is not None and not isinstance(exc, ProviderTimeout):
                    grant.settle(0)  # refused: no tokens used (a timed-out call may have)
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
        usage = completion.usage
        if grant is not None and usage.input_tokens is not None:
            grant.settle(usage.input_tokens + (usage.output_tokens or 0))
        if usage.input_tokens:
            observed = prompt.text_length / usage.input_tokens
            if observed >= 1.5:  # refine the token estimate, only ever more conservative
                self.chars_per_token = min(self.chars_per_token, observed)
        cost = self.price(usage)
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
        update: dict[str, Any] = {"judge": judge}
        if calls.any_call:
            cached = calls.all_cached
            update["cached"] = cached
            update["cost_usd"] = 0.0 if cached else calls.cost
        ann = ann.model_copy(update=update)
        if self.store is not None:
            self.store.append(ann)
        if self.cache is not None:
            # Only now that a record carries their cost: a crash before this line
            # leaves them uncharged, and the rerun's record charges them.
            self.cache.mark_charged(calls.charge_keys)
        self.results[index] = ann
        s = self.summary
        if ann.status == "ok":
            s.done += 1
        else:
            s.failed[_reason(ann, calls.last_error)] += 1
        if ann.cached:
            s.cached += 1
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

        await _gather_or_cancel([worker() for _ in range(self.concurrency)])
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

    # ------------------------------------------------------------------ batch mode
    async def run_batch(self, items: Iterator[tuple[int, Trace]]) -> list[tuple[int, Trace]]:
        assert self.judge.provider is not None
        self.batch_mode = True
        backend = batch_backend(self.judge.provider, self.judge.model_name)
        state = self.batch_state or BatchState(None)
        pending = list(items)
        try:
            return await self._batch_rounds(backend, state, pending)
        except _Stop:
            # An authentication error from the batch API itself: what is left stays left.
            return sorted(self.batch_pending, key=lambda item: item[0])

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
            entry = await self.submit(backend, state, requests)
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
                self.summary.batch_items += 1
                if self.cache is not None:
                    self.cache.put(
                        key,
                        result,
                        provider=self.judge.provider_name,
                        model=self.judge.model_name,
                        batch=True,
                    )
            else:
                # Missing or failed: this request goes live, with the usual retries.
                failed += 1
                self.live_keys.add(key)
                if result is not None:
                    log.info("batch %s item %s failed: %s", entry.id, key[:12], result)
        if failed:
            log.warning("batch %s: %d item(s) failed; retrying them one by one", entry.id, failed)
        state.remove(entry.id)
        self.progress.set_note("")

    async def retrying(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """A batch-API request with the run's retry policy; auth errors stop the run."""
        attempt = 0
        while True:
            try:
                return await make()
            except AuthError as exc:
                raise self.stop("auth", str(exc)) from exc
            except ProviderError as exc:
                attempt += 1
                if not exc.retryable or attempt >= self.retry.max_attempts:
                    raise
                retry_after = exc.retry_after if isinstance(exc, RateLimitError) else None
                await asyncio.sleep(self.retry.delay(attempt - 1, retry_after, self.rng))


async def _gather_or_cancel(coros: list[Awaitable[None]]) -> None:
    """Run coroutines together; the first exception cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _open_cache(cache: CacheLike) -> tuple[ResponseCache | None, bool]:
    """(cache, whether we opened it and must close it)."""
    if cache is None or cache is False:
        return None, False
    if isinstance(cache, ResponseCache):
        return cache, False
    if cache is True:
        return ResponseCache(), True
    return ResponseCache(cache), True


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
) -> AnnotationRun:
    """Async twin of :func:`annotate_many` (same arguments); use it inside an event loop."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if budget_usd is not None and budget_usd < 0:
        raise ValueError(f"budget_usd must not be negative, got {budget_usd}")
    if on_stop not in ("raise", "return"):
        raise ValueError(f"on_stop must be 'raise' or 'return', got {on_stop!r}")
    if judge.provider is None:
        batch = False  # the heuristic judge makes no calls
    model_key = f"{judge.provider_name}/{judge.model_name}"
    if budget_usd is not None and judge.provider is not None and model_key not in judge.prices:
        raise MastError(
            f"budget_usd needs a price for {model_key}, and the price table has none: pass "
            "prices={...} (USD per million tokens) to Judge, or run without a budget"
        )
    if timeout is None and judge.call_config is not None:
        timeout = judge.call_config.timeout
    total = len(traces) if isinstance(traces, Sized) else None
    started = time.perf_counter()
    if judge.provider is not None:
        # Build the SDK client now, so that the first call the rate limiter lets go does
        # not lag behind its slot while the client is made (and bunch up with the next).
        judge.provider.client()
    store = ResultsStore(out) if out is not None else None
    opened_cache: ResponseCache | None = None
    try:
        response_cache, owned = _open_cache(cache)
        opened_cache = response_cache if owned else None
        bar = Progress(total, enabled=progress, stream=progress_stream)
        runner = _Runner(
            judge,
            store=store,
            cache=response_cache,
            limiter=RateLimiter(rpm=rpm, tpm=tpm, window=rate_window),
            retry=retry or RetryPolicy(),
            timeout=timeout,
            budget_usd=budget_usd,
            concurrency=concurrency,
            resume=resume,
            retry_failed=retry_failed,
            progress=bar,
            batch_state=BatchState(batch_state_path(out)) if out is not None else None,
            batch_poll_interval=batch_poll_interval,
            max_batch_rounds=max_batch_rounds,
            seed=seed,
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
    summary.elapsed_s = time.perf_counter() - started
    annotations = AnnotationRun(
        [runner.results[i] for i in sorted(runner.results)], summary=summary
    )
    if summary.stopped is not None and on_stop == "raise":
        message = (
            f"the run stopped early: {summary.stop_message}. "
            f"{len(summary.not_attempted)} trace(s) were not attempted"
            + (f"; results so far are in {out} (rerun to resume)" if out is not None else "")
        )
        cls = BudgetExceeded if summary.stopped == "budget" else RunStopped
        raise cls(message, reason=summary.stopped, run=annotations)
    return annotations


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
        settings are not redone (``resume``); failed ones are with ``retry_failed=True``.
    concurrency:
        Traces annotated at the same time (= provider calls in flight, at most).
    rpm, tpm:
        Requests / tokens per ``rate_window`` seconds (a minute). Token counts are
        estimated before a call (prompt + maximum output) and corrected after it.
    budget_usd:
        Stop before a call whose estimated cost would take the run's spending past this.
        Needs the model's price (``Judge(prices=…)`` for models not in the table).
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
        in ``<out>.batches.json`` so a rerun collects them instead of submitting again.
    progress, progress_stream:
        Show a progress line (on a terminal; plain lines in a notebook) on the stream
        (default stderr).
    on_stop:
        After an authentication error or an exhausted budget: ``"raise"`` (default) a
        :class:`~mast.errors.RunStopped` (:class:`~mast.errors.BudgetExceeded`) whose
        ``run`` holds what was done, or ``"return"`` it with ``run.summary.stopped`` set.

    Returns
    -------
    AnnotationRun
        A list of annotations in input order (one per distinct trace id) with ``.summary``.
    """
    kwargs: dict[str, Any] = dict(
        out=out,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        resume=resume,
        retry_failed=retry_failed,
        budget_usd=budget_usd,
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
    )

    async def once() -> AnnotationRun:
        try:
            return await aannotate_many(traces, judge, **kwargs)
        finally:
            # This event loop ends with the run: close the client made in it.
            await judge.aclose()

    return _run_sync(once)
