"""The exception tree: every error mast raises on purpose is a :class:`MastError`.

Messages follow one rule: say what was received, what was expected, and how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


def validation_problems(exc: ValidationError) -> str:
    """A pydantic error as one line: ``where: what`` per problem, for messages that name
    the file and the fix around it."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}" for err in exc.errors()
    )


class MastError(Exception):
    """Base class of every error raised by mast."""


class ConfigError(MastError, ValueError):
    """A setting that cannot work (a model name without its provider, …); the message
    gives the corrected value."""


class DuplicateTraceError(MastError, ValueError):
    """Two different traces in one input set share a trace id; the message names where
    each came from."""


class TaxonomyError(MastError):
    """A taxonomy file (or a draft-version mapping) is missing, malformed or inconsistent."""


class TraceFormatError(MastError):
    """A trace file or record could not be read as the format that was tried.

    The message names the file, the place in it (record index or line), the format tried,
    what was expected and what was found, so the user can fix the input without a debugger.

    >>> err = TraceFormatError("empty file", path="run.json", format="auto",
    ...                        expected="JSON or text")
    >>> print(err)
    run.json: empty file (format 'auto'; expected JSON or text)
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        location: str | None = None,
        format: str | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.location = location
        self.format = format
        self.expected = expected
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "<input>"
        if self.location:
            where += f" ({self.location})"
        details = []
        if self.format:
            details.append(f"format {self.format!r}")
        if self.expected:
            details.append(f"expected {self.expected}")
        text = f"{where}: {self.problem}"
        if details:
            text += f" ({'; '.join(details)})"
        if self.hint:
            text += f". {self.hint}"
        return text

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor: teach pickle (multiprocessing, caches) how to rebuild it.
        return (_rebuild_trace_format_error, (self.problem, self.__dict__.copy()))


def _rebuild_trace_format_error(problem: str, state: dict[str, object]) -> TraceFormatError:
    err = TraceFormatError.__new__(TraceFormatError)
    err.__dict__.update(state)
    Exception.__init__(err, err._render())
    return err


class LabelMappingError(MastError):
    """A human label could not be matched to any mode of its taxonomy version."""


class GroundTruthError(MastError):
    """An ITBench ground-truth file is missing, unreadable or has no root cause to score."""


class MissingDependencyError(MastError, ImportError):
    """An optional package mast needs for this feature is not installed.

    The message ends with the exact ``pip install`` line that fixes it.
    """


class StatsInputError(MastError, ValueError):
    """Input to a statistic or an agreement report is malformed (shape, labels, options).

    A :class:`ValueError` too, so ``except ValueError`` keeps working. Data on which a
    statistic is merely undefined (a mode nobody flagged) is not an error: that gives an
    ``UndefinedMetricWarning`` and NaN.

    >>> from mast import stats
    >>> try:
    ...     stats.cohen_kappa([1, 0], [1])
    ... except StatsInputError as exc:
    ...     print(exc)
    y1 and y2 must have the same length; got 2 and 1 labels
    """


class NoOverlapError(StatsInputError):
    """Two label sources share no trace id, so nothing can be compared.

    Almost always two id schemes (``mad-human/16`` against ``16``, file names against
    record ids); the message shows a few ids from each side.
    """


class DuplicateLabelsWarning(UserWarning):
    """Different traces carry identical label blocks (every annotator, every mode).

    Copied labels are not independent evidence: agreement reports then bootstrap over the
    distinct blocks (see :func:`mast.agree.blocks.duplicate_blocks`).
    """


class VerificationConventionWarning(UserWarning):
    """Two label sources use different conventions for MAST codes 3.2 and 3.3.

    ``paper`` (mast's): 3.2 No or Incomplete Verification, 3.3 Incorrect Verification;
    ``official`` (the official definitions file, MAST-Data's o1 labels): 3.2 Weak
    Verification, 3.3 No or Incorrect Verification. Per-mode agreement on 3.2 and 3.3 then
    compares different meanings; the merged 3.2-or-3.3 row does not depend on the choice.
    """


class ProviderError(MastError):
    """A call to a model provider failed (HTTP error, connection, malformed reply).

    ``provider`` names the provider (``"openai"``, ``"anthropic"``), ``status_code`` is the
    HTTP status when there was one, and ``retryable`` says whether trying again later can
    help (rate limits, timeouts, 5xx) so a runner can decide without parsing messages.

    >>> err = RateLimitError("openai: HTTP 429", provider="openai", status_code=429,
    ...                      retry_after=2.0)
    >>> isinstance(err, ProviderError), err.retryable, err.retry_after
    (True, True, 2.0)
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.retryable = retryable

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only attributes: keep them through pickling (multiprocessing, caches).
        return (_rebuild_provider_error, (type(self), self.args, self.__dict__.copy()))


def _rebuild_provider_error(
    cls: type[ProviderError], args: tuple[object, ...], state: dict[str, object]
) -> ProviderError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class AuthError(ProviderError):
    """The provider rejected the credentials (HTTP 401/403): retrying cannot help."""


class RateLimitError(ProviderError):
    """The provider asked us to slow down (HTTP 429); ``retry_after`` is its hint in seconds."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = 429,
        retry_after: float | None = None,
        limit_requests: float | None = None,
        limit_tokens: float | None = None,
        limit_kind: str | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code, retryable=True)
        self.retry_after = retry_after
        self.limit_requests = limit_requests
        """Requests per minute the provider's headers name as the limit (None: not sent)."""
        self.limit_tokens = limit_tokens
        """Tokens per minute the provider's headers name as the limit (None: not sent)."""
        self.limit_kind = limit_kind
        """Which limit the 429 hit, "requests" or "tokens", as the provider's error type,
        message or headers say (None: it did not say)."""


class ContextLengthError(ProviderError):
    """The prompt (plus the requested output) does not fit the model's context window."""


class ProviderTimeout(ProviderError):
    """The provider did not answer within the configured timeout."""

    def __init__(
        self, message: str, *, provider: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code, retryable=True)


class VerdictParseError(MastError):
    """Nothing usable could be read from a judge's answer (neither JSON nor the text format).

    ``raw`` keeps the answer exactly as received, ``problems`` lists what the parser noticed,
    so a judge can send a short repair request and a user can see what the model wrote.

    >>> err = VerdictParseError("no verdict found", raw="I cannot help with that.")
    >>> err.raw, isinstance(err, MastError)
    ('I cannot help with that.', True)
    """

    def __init__(self, message: str, *, raw: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.raw = raw
        self.problems = list(problems or [])

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor: keep raw/problems through pickling (worker processes).
        return (_rebuild_verdict_parse_error, (self.args, self.__dict__.copy()))


def _rebuild_verdict_parse_error(
    args: tuple[object, ...], state: dict[str, object]
) -> VerdictParseError:
    err = VerdictParseError.__new__(VerdictParseError)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class FewShotError(MastError):
    """A few-shot example file is unreadable, malformed, or inconsistent with the taxonomy."""


class DatasetError(MastError):
    """A public dataset could not be fetched, or the file fetched is not the one expected.

    The attributes name what was tried: ``dataset`` (mast's name for it), ``repo_id``,
    ``revision``, ``filename`` (path in the repository) and ``url``.
    """

    def __init__(
        self,
        message: str,
        *,
        dataset: str | None = None,
        repo_id: str | None = None,
        revision: str | None = None,
        filename: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message)
        self.dataset = dataset
        self.repo_id = repo_id
        self.revision = revision
        self.filename = filename
        self.url = url

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only attributes: keep them through pickling (worker processes).
        return (_rebuild_dataset_error, (type(self), self.args, self.__dict__.copy()))


def _rebuild_dataset_error(
    cls: type[DatasetError], args: tuple[object, ...], state: dict[str, object]
) -> DatasetError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class DatasetUnavailableError(DatasetError):
    """A dataset file could not be had: offline and not cached, Hub unreachable, or not there."""


class DatasetAccessError(DatasetUnavailableError):
    """The Hub refused access (HTTP 401/403): a gated or private dataset, or a bad token."""


class DatasetChecksumError(DatasetError):
    """A dataset file's SHA-256 differs from the checksum recorded for its revision.

    ``expected`` and ``actual`` are hex SHA-256 digests. The bad file has already been removed
    from the cache when this is raised, so it is never read or reused.
    """

    expected: str = ""
    actual: str = ""


class RunStopped(MastError):
    """A bulk run (``annotate_many``) stopped before every trace was attempted.

    ``reason`` is ``"auth"`` (the provider refused the credentials) or ``"budget"`` (the
    next call would have exceeded ``budget_usd``). ``run`` is the
    :class:`~mast.bulk.runner.AnnotationRun` of what was done (also in the results file); its
    ``summary.not_attempted`` lists the traces left, which were not written as errors.
    Rerunning the same command resumes.
    """

    def __init__(self, message: str, *, reason: str, run: object = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.run = run

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_run_stopped, (type(self), self.args, self.__dict__.copy()))


def _rebuild_run_stopped(
    cls: type[RunStopped], args: tuple[object, ...], state: dict[str, object]
) -> RunStopped:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class BudgetExceeded(RunStopped):
    """The next call would have taken a bulk run's spending past ``budget_usd``."""

    exit_code = 3
    """Exit status of ``mast annotate`` (and ``--engine ray``) when the budget stopped the
    run with traces not attempted."""
