"""What a run decides about its input and about records of earlier runs.

* **Unique ids.** Records are keyed by trace id, so two different traces with one id would
  silently share a record. Two traces with the same id from different files (or places in a
  file) are an error naming both; the same trace read twice (same file and place) is
  annotated once.
* **Failures of earlier runs.** A rerun skips traces that already have a record. A record
  of a transport failure (dropped connection, timeout, rate limit, server error) holds no
  answer, so a rerun tries it again by default; other failures (a refused request, an
  unreadable answer) are kept until ``retry_failed=True`` (``--retry-failed``) redoes them,
  and the summary says how many there are and why.

>>> from mast.traces.model import Trace
>>> ids = UniqueIds()
>>> ids.check(Trace(id="t1", source="a.json")), ids.check(Trace(id="t1", source="a.json"))
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from mast.bulk.types import TRANSIENT, RunSummary
from mast.errors import (
    ContextLengthError,
    DuplicateTraceError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from mast.judge.annotation import Annotation
from mast.traces.model import Trace

__all__ = [
    "TRANSIENT",
    "UniqueIds",
    "check_unique",
    "failure_reason",
    "kept_on_rerun",
    "redo_on_rerun",
    "write_problem",
]


class Prior(Protocol):
    """What deciding about an earlier record needs: an :class:`Annotation`, or the
    :class:`~mast.bulk.store_index.RecordBrief` the results store keeps of it."""

    @property
    def status(self) -> str: ...

    @property
    def error_kind(self) -> str | None: ...


P = TypeVar("P", bound=Prior)


def failure_reason(ann: Annotation, error: ProviderError | None) -> str:
    """A short failure category for the summary and the record's ``error_kind``."""
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


def redo_on_rerun(prior: Prior, *, retry_failed: bool) -> bool:
    """Whether a trace that already has the record ``prior`` is annotated again."""
    if prior.status == "ok":
        return False
    return retry_failed or prior.error_kind in TRANSIENT


def kept_on_rerun(prior: P, summary: RunSummary, *, retry_failed: bool) -> P | None:
    """``prior`` if the rerun keeps it, None if the trace is annotated again; failures of
    earlier runs are counted in ``summary`` (tried again, or kept) by reason."""
    if prior.status == "ok":
        return prior
    redo = redo_on_rerun(prior, retry_failed=retry_failed)
    earlier = summary.retried_earlier if redo else summary.failed_earlier
    earlier[prior.error_kind or prior.status] += 1
    return None if redo else prior


def write_problem(path: Path, exc: OSError, ann: Annotation) -> str:
    """Why a run stopped when its results file could not be written, and what to do (the
    run adds where the answers not written are kept: :func:`mast.bulk.rescue.rescue`)."""
    return (
        f"cannot write to the results file {path}: {exc.strerror or exc} (the record of "
        f"{ann.trace_id!r} is not in it); free space or choose a writable --out / out=, then "
        "run the same command again"
    )


def _where(trace: Trace, position: int) -> str:
    return trace.source or f"the in-memory trace at position {position}"


class UniqueIds:
    """Trace ids seen so far in one input, and where each came from."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str | None, int]] = {}
        self._position = -1

    def check(self, trace: Trace) -> bool:
        """True for a new id, False for the same trace read again (same file and place);
        raises :class:`~mast.errors.DuplicateTraceError` for another trace with a seen id."""
        self._position += 1
        first = self._seen.get(trace.id)
        if first is None:
            self._seen[trace.id] = (trace.source, self._position)
            return True
        source, position = first
        if source is not None and source == trace.source:
            return False
        raise DuplicateTraceError(
            f"trace id {trace.id!r} occurs twice in the input: in "
            f"{source or f'the in-memory trace at position {position}'} and in "
            f"{_where(trace, self._position)}; ids must be unique within one run (give one "
            "of them another id, or annotate them in separate runs with separate results files)"
        )


def check_unique(traces: Sequence[Trace]) -> None:
    """Raise :class:`~mast.errors.DuplicateTraceError` if two different traces share an id."""
    ids = UniqueIds()
    for trace in traces:
        ids.check(trace)
