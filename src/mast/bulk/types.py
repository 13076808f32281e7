"""Value types of a bulk run: the resume key (:func:`config_hash`), :class:`RetryPolicy`,
:class:`RunSummary` and the returned :class:`AnnotationRun`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from mast.bulk.progress import format_duration
from mast.errors import MastError, ProviderError, RateLimitError
from mast.judge.annotation import Annotation
from mast.judge.judge import Judge
from mast.judge.reply.grounding import grounded_share
from mast.judge.verdict import Finding

T = TypeVar("T")

TRANSIENT = frozenset({"connection", "timeout", "rate_limited", "server_error"})
"""Failure kinds that say nothing about the trace: a rerun tries them again."""

# Settings that do not change an answer: left out of the resume key ("base_url" is what
# the user typed; the server it names is in "endpoint").
_NOT_IN_CONFIG_HASH = ("mast_version", "base_url")


def config_hash(judge: Judge) -> str:
    """Hash of the judge settings that can change an answer (16 hex digits).

    Records are keyed by ``(trace_id, config_hash)``: the same command resumes, another
    model or prompt setup writes new records beside the old ones.

    >>> config_hash(Judge("heuristic")) == config_hash(Judge("heuristic"))
    True
    """
    text = json.dumps(
        _keyed_settings(judge.describe(), judge), sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def setting_differences(recorded: Mapping[str, object], judge: Judge) -> list[str]:
    """The resume-key settings in which a record's ``judge`` dict differs from ``judge``'s,
    each as ``name: recorded → now`` (what keeps the record from resuming).

    >>> setting_differences({"provider": "heuristic", "model": "rules"}, Judge("heuristic"))
    ['model: rules → heuristic', 'taxonomy: (not recorded) → MAST 1.0']
    """
    described = judge.describe()
    theirs = _keyed_settings(recorded, judge)
    ours = _keyed_settings(described, judge)
    # A record also holds what is its own (prompt_hash, response_ids, …): not settings.
    names = set(ours) | (set(theirs) & {*described, "endpoint", "verification"})
    return [
        f"{name}: {theirs.get(name, '(not recorded)')} → {ours.get(name, '(not recorded)')}"
        for name in sorted(names)
        if theirs.get(name) != ours.get(name)
    ]


def _keyed_settings(info: Mapping[str, object], judge: Judge) -> dict[str, object]:
    kept = {k: v for k, v in info.items() if k not in (*_NOT_IN_CONFIG_HASH, "config_hash")}
    if kept.get("verification") == "paper":
        # Records made before the convention was recorded were all in the paper convention:
        # leaving the default out of the key lets them resume instead of being paid again.
        del kept["verification"]
    # The provider's own server keys as before endpoints were recorded (old records
    # resume); any other server (base_url=, OPENAI_BASE_URL, …) keys apart.
    provider = judge.provider
    if provider and provider.default_endpoint and kept.get("endpoint") == provider.endpoint:
        del kept["endpoint"]
    return kept


def check_run_settings(
    judge: Judge, *, concurrency: int, budget_usd: float | None, on_stop: str
) -> None:
    """Refuse settings a run (local or Ray) cannot honour, before anything is read or paid."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if budget_usd is not None and budget_usd < 0:
        raise ValueError(f"budget_usd must not be negative, got {budget_usd}")
    if on_stop not in ("raise", "return"):
        raise ValueError(f"on_stop must be 'raise' or 'return', got {on_stop!r}")
    model_key = f"{judge.provider_name}/{judge.model_name}"
    if budget_usd is not None and judge.provider is not None and model_key not in judge.prices:
        raise MastError(
            f"budget_usd needs a price for {model_key}, and the price table has none: pass "
            "prices={...} (USD per million tokens) to Judge, or run without a budget"
        )


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried: up to ``max_attempts`` calls in all, waiting
    ``base_delay · 2^n`` (capped at ``max_delay``) with jitter in between, or what the
    provider's ``Retry-After`` asks (up to ``max_retry_after``; longer waits fail).
    Answers 429 (rate limited) are counted apart, up to ``max_rate_limited``.

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
    max_rate_limited: int = 100
    """429 answers one call may get before its trace fails (``rate_limited``). They do not
    use up ``max_attempts``: a rate limit is a reason to wait, not a fault, and the shared
    limiter slows every worker down after each (at up to ``max_delay`` apart, 100 of them
    are well over an hour of waiting)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.max_rate_limited < 1:
            raise ValueError("max_attempts and max_rate_limited must be at least 1")
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

    async def call(self, make: Callable[[], Awaitable[T]], rng: random.Random) -> T:
        """``await make()``, tried again after a retryable :class:`~mast.errors.ProviderError`
        as this policy says (other errors, and the last attempt's, are raised)."""
        attempt = 0
        while True:
            try:
                return await make()
            except ProviderError as exc:
                attempt += 1
                if not exc.retryable or attempt >= self.max_attempts:
                    raise
                retry_after = exc.retry_after if isinstance(exc, RateLimitError) else None
                await asyncio.sleep(self.delay(attempt - 1, retry_after, rng))


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
    judged_otherwise: int = 0
    """Of the traces annotated in this run, those the results file held a record of by
    another judge setting (model, server, prompt, convention, …): not resumed, since that
    record answers for its own setting; both stay in the file."""
    not_attempted: list[str] = field(default_factory=list)
    """Ids of traces left when the run stopped early (not written as errors)."""
    duplicates: list[str] = field(default_factory=list)
    """Ids of traces read twice from the same file and place (annotated once). Two
    different traces with one id are an error (:class:`~mast.errors.DuplicateTraceError`)."""
    failed_earlier: Counter[str] = field(default_factory=Counter)
    """Of the ``resumed``, records of failures kept from earlier runs, by reason
    (``retry_failed=True`` redoes them)."""
    retried_earlier: Counter[str] = field(default_factory=Counter)
    """Failures of earlier runs tried again in this one, by reason: transport failures
    (always), others with ``retry_failed=True`` (an unreadable answer, ``parse_error``, is
    asked for again from the provider unless the cached one now reads)."""
    calls: int = 0
    """Provider calls made (retries included; cache hits and batch items excluded)."""
    retries: int = 0
    """Of those, calls that were retries."""
    rate_limited: int = 0
    """Calls the provider answered 429 (rate limited); each was retried or failed its trace."""
    found_rpm: float | None = None
    """The request rate (per minute) the run held at the end, found from 429s or stated by
    the provider's rate-limit headers (None: neither set one)."""
    found_tpm: float | None = None
    """The token rate (per minute) likewise (None: neither set one)."""
    limits_stated: bool = False
    """Whether the provider's rate-limit headers named the limits (else they were found
    from its 429s)."""
    batch_items: int = 0
    """Requests answered through provider batch jobs."""
    batches: list[str] = field(default_factory=list)
    """Ids of the batch jobs used."""
    cost_usd: float = 0.0
    """Cost charged to this run's records (cache hits are free)."""
    cost_unknown: int = 0
    """Records whose cost could not be computed (no price or no usage reported)."""
    positives: int = 0
    """Positive answers in this run's records (as the judge gave them)."""
    grounded_positives: int = 0
    """Of those, answers with grounded evidence (see :func:`mast.grounded_share`)."""
    elapsed_s: float = 0.0
    batch_unused: int = 0
    """Batch answers paid for that no record used (the run stopped early, no cache held
    them); :attr:`batch_unused_usd` is their price, not in :attr:`cost_usd`."""
    batch_unused_usd: float = 0.0
    batch_unused_kept: bool = False
    """Whether their batches stay listed beside the results file for the next run."""
    stopped: str | None = None
    """Why the run stopped early: ``"auth"``, ``"budget"``, ``"output"`` (the results file
    could not be written), ``"duplicate"`` (two traces with one id in a lazy input) or None."""
    stop_message: str | None = None

    def count_grounding(self, findings: Mapping[str, Finding]) -> None:
        """Add one record's positive answers to :attr:`positives` / :attr:`grounded_positives`."""
        for share in grounded_share([findings]).values():
            self.positives += share.positives
            self.grounded_positives += share.grounded

    def found_limits(self) -> str:
        """The rates found or stated, as words ("" when none), e.g. "60 requests/min and
        150,000 tokens/min"."""
        parts = [] if self.found_rpm is None else [f"{self.found_rpm:,.0f} requests/min"]
        parts += [] if self.found_tpm is None else [f"{self.found_tpm:,.0f} tokens/min"]
        return " and ".join(parts)

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
            lines.append(f"failed by reason: {_reasons(self.failed)}")
        if self.judged_otherwise:
            lines.append(
                f"{self.judged_otherwise} of them had a record by another judge setting in "
                "the results file and were annotated again for this one (both records kept; "
                "the warning at the start names the setting that differs)"
            )
        if self.failed_earlier:
            lines.append(
                f"{sum(self.failed_earlier.values())} failed earlier and were not redone "
                f"({_reasons(self.failed_earlier)}): run again with --retry-failed "
                "(retry_failed=True) to redo them"
            )
        transport = Counter({k: v for k, v in self.retried_earlier.items() if k in TRANSIENT})
        if transport:
            lines.append(
                f"{sum(transport.values())} transport failure(s) of earlier runs "
                f"tried again ({_reasons(transport)})"
            )
        redone = self.retried_earlier - transport
        if redone:
            parse = redone.pop("parse_error", 0)
            words = [f"{parse} parse failure(s) (unreadable answers, asked again)"] * bool(parse)
            words += [_reasons(redone)] * bool(redone)
            lines.append(
                f"{parse + sum(redone.values())} failure(s) of earlier runs redone "
                f"(retry_failed): {', '.join(words)}"
            )
        extra = f" ({self.retries} retries)" if self.retries else ""
        lines.append(
            f"{self.calls} provider call(s){extra}, {self.cached} record(s) from cache"
            + (f", {self.batch_items} batch item(s)" if self.batch_items else "")
        )
        found = self.found_limits()
        if self.rate_limited or found:
            lines.append(
                f"{self.rate_limited} call(s) answered 429 (rate limited)"
                + (
                    f"; the run held every worker to {found}, "
                    + (
                        "the limits the provider's headers state"
                        if self.limits_stated
                        else "the limits it found (pass --rpm / --tpm, rpm= / tpm=, to start there)"
                    )
                    if found
                    else ""
                )
            )
        cost = f"cost ${self.cost_usd:.4f}"
        if self.cost_unknown:
            cost += f" (+ {self.cost_unknown} record(s) of unknown cost)"
        lines.append(f"{cost}, time {format_duration(self.elapsed_s)}")
        if self.positives:
            share = self.grounded_positives / self.positives
            lines.append(
                f"grounded positive answers: {self.grounded_positives}/{self.positives} "
                f"({share:.0%}); per mode: mast.grounded_share or the report"
            )
        if self.duplicates:
            shown = ", ".join(self.duplicates[:5]) + (" …" if len(self.duplicates) > 5 else "")
            lines.append(f"{len(self.duplicates)} trace(s) read twice, annotated once: {shown}")
        if self.batch_unused:
            lines.append(
                f"{self.batch_unused} batch answer(s) paid (${self.batch_unused_usd:.4f}) but "
                "on no record: "
                + (
                    "the next run collects them from the provider instead of paying again"
                    if self.batch_unused_kept
                    else "without a cache or results file nothing keeps them"
                )
            )
        if self.stopped:
            lines.append(f"stopped early ({self.stopped}): {self.stop_message}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _reasons(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.most_common())


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
