"""The one place where SDK exceptions become :class:`~mast.errors.ProviderError`\\ s.

Both official SDKs raise errors with the same anatomy (``status_code``, ``response.headers``,
a ``body`` with the server's error object, timeout and connection classes), so one
duck-typed translator serves them all and keeps every provider module free of error code.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mast.errors import (
    AuthError,
    ContextLengthError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)

# Wordings providers use when the prompt is too long (OpenAI, Anthropic, vLLM, Ollama, LiteLLM).
_CONTEXT_PATTERNS = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|input is too long"
    r"|too many tokens|reduce the length|exceeds? the (?:model'?s? )?max",
    re.IGNORECASE,
)
_MAX_DETAIL = 400


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


Secrets = str | Sequence[str] | None
"""The credentials to scrub from a message: one, several, or none."""


def _scrub(text: str, secret: Secrets) -> str:
    for value in [secret] if isinstance(secret, str) else secret or ():
        if value:
            text = text.replace(value, "***")
    return text


def _detail(exc: BaseException, secret: Secrets) -> str:
    text = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        # Prefer the server's own words over the SDK's "Error code: 429 - {…}" wrapper.
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str) and err["message"]:
            text = str(err["message"])
    text = _scrub(text, secret)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def _error_code(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            for key in ("code", "type"):
                if isinstance(err.get(key), str):
                    return str(err[key])
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else None


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Read ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date) as seconds.

    >>> retry_after_seconds({"retry-after": "7"}), retry_after_seconds({"retry-after-ms": "250"})
    (7.0, 0.25)
    """
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _header_seconds(raw: str) -> float | None:
    """``1s``, ``6m0s``, ``20ms`` (OpenAI resets) or an RFC 3339 time (Anthropic) as seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", raw)
    if parts and "".join(n + u for n, u in parts) == raw.strip():
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    try:
        when = datetime.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _first_number(low: Mapping[str, str], names: Sequence[str]) -> float | None:
    for name in names:
        try:
            return float(low[name])
        except (KeyError, ValueError):
            continue
    return None


# Token headers in the order they are taken: OpenAI's one token limit (prompt + max_tokens),
# Anthropic's input-token limit (the one long prompts meet), then its most restrictive one.
_TOKEN_LIMITS = (
    "x-ratelimit-limit-tokens",
    "anthropic-ratelimit-input-tokens-limit",
    "anthropic-ratelimit-tokens-limit",
)


def stated_limits(headers: Mapping[str, str] | None) -> tuple[float | None, float | None]:
    """(requests, tokens) the provider's rate-limit headers name as its limits, per its
    minute: OpenAI ``x-ratelimit-limit-requests`` / ``-tokens``, Anthropic
    ``anthropic-ratelimit-requests-limit`` and ``-input-tokens-limit`` (else
    ``-tokens-limit``). None where not sent (many OpenAI-compatible servers send none).

    >>> stated_limits({"x-ratelimit-limit-requests": "500", "x-ratelimit-limit-tokens": "30000"})
    (500.0, 30000.0)
    >>> stated_limits({"anthropic-ratelimit-input-tokens-limit": "50000"})
    (None, 50000.0)
    """
    if not headers:
        return None, None
    low = {k.lower(): v for k, v in headers.items()}
    requests = _first_number(
        low, ("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit")
    )
    tokens = _first_number(low, _TOKEN_LIMITS)
    # Azure sends -1 for a limit it does not apply: unknown, not a limit of -1.
    return (
        requests if requests is not None and requests > 0 else None,
        tokens if tokens is not None and tokens > 0 else None,
    )


def rate_limit_headers(headers: Mapping[str, str] | None) -> tuple[float | None, float | None]:
    """(request limit per minute, seconds until requests are taken again) from the
    providers' rate-limit headers: OpenAI ``x-ratelimit-limit-requests`` /
    ``-remaining-requests`` / ``-reset-requests`` (and the ``-tokens`` ones), Anthropic
    ``anthropic-ratelimit-requests-limit`` / ``-remaining`` / ``-reset``. The wait is given
    only when a remaining count is 0.

    >>> rate_limit_headers({"x-ratelimit-limit-requests": "500",
    ...                     "x-ratelimit-remaining-requests": "0",
    ...                     "x-ratelimit-reset-requests": "1m30s"})
    (500.0, 90.0)
    """
    if not headers:
        return None, None
    low = {k.lower(): v for k, v in headers.items()}
    waits = [wait for _, wait in _exhausted(low)]
    return stated_limits(headers)[0], (max(waits) if waits else None)


def _exhausted(low: Mapping[str, str]) -> list[tuple[str, float]]:
    """(kind, seconds to its reset) of every limit whose remaining count is 0."""
    found: list[tuple[str, float]] = []
    for kind in ("requests", "tokens", "input-tokens", "output-tokens"):
        for remaining, reset in (
            (f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}"),
            (f"anthropic-ratelimit-{kind}-remaining", f"anthropic-ratelimit-{kind}-reset"),
        ):
            try:
                empty = float(low[remaining]) <= 0
            except (KeyError, ValueError):
                continue
            seconds = _header_seconds(low.get(reset, ""))
            if empty and seconds is not None:
                found.append(("requests" if kind == "requests" else "tokens", seconds))
    return found


# OpenAI: "Rate limit reached for gpt-4.1 in organization org-… on tokens per min (TPM):
# Limit 30000, Used 29100, Requested 1500. …"; Anthropic: "This request would exceed the
# rate limit for your organization (…) of 50,000 input tokens per minute. …"
_KIND_IN_MESSAGE = re.compile(
    r"\b(requests|(?:input |output )?tokens) per min(?:ute)?\b", re.IGNORECASE
)


def limit_kind(
    message: str, error_type: str | None, headers: Mapping[str, str] | None
) -> str | None:
    """Which per-minute limit a 429 hit: "requests", "tokens", or None (unknown: the
    server did not say). Read from OpenAI's error ``type`` ("requests" / "tokens"), else
    the message's words ("on tokens per min (TPM)", "input tokens per minute"), else
    the one rate-limit header whose remaining count is 0.

    >>> limit_kind("Rate limit reached for gpt-4.1 in organization org-x on requests per "
    ...            "min (RPM): Limit 500, Used 500, Requested 1.", None, None)
    'requests'
    >>> limit_kind("rate limit reached", None, {"x-ratelimit-remaining-tokens": "0",
    ...                                         "x-ratelimit-reset-tokens": "2s"})
    'tokens'
    """
    if error_type in ("requests", "tokens"):
        return error_type
    match = _KIND_IN_MESSAGE.search(message)
    if match:
        return "requests" if match.group(1).lower() == "requests" else "tokens"
    if headers:
        kinds = {kind for kind, _ in _exhausted({k.lower(): v for k, v in headers.items()})}
        if len(kinds) == 1:
            return kinds.pop()
    return None


def unexpected_answer(
    answer: Any, *, provider: str, model: str, expected: str, secret: Secrets = None
) -> ProviderError:
    """The error for a successful HTTP answer that is not what the API returns (an HTML page
    from a proxy, plain text from a misconfigured server): retryable, since gateways and
    captive portals usually recover, and the runner's retries are bounded."""
    text = answer if isinstance(answer, str) else repr(answer)
    text = _scrub(text, secret)
    text = " ".join(text.split())
    snippet = text if len(text) <= 120 else text[:119] + "…"
    return ProviderError(
        f"{provider}/{model}: the server's answer is not {expected} "
        f"({type(answer).__name__}: {snippet!r}); check base_url, or retry later",
        provider=provider,
        retryable=True,
    )


def translate_error(
    exc: BaseException, *, provider: str, model: str, env_var: str, secret: Secrets = None
) -> ProviderError:
    """Map an SDK (or asyncio) exception to the ``ProviderError`` subclass that fits it.

    The caller raises the result ``from exc`` so the original stays in the traceback.
    ``secret`` (the API key) is scrubbed from the message in case a server echoes it.
    """
    where = f"{provider}/{model}"
    detail = _detail(exc, secret)
    names = _class_names(exc)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    code = _error_code(exc)

    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or any(
        "Timeout" in n for n in names if status is None
    ):
        return ProviderTimeout(
            f"{where}: no answer within the timeout ({detail}); raise timeout= or retry later",
            provider=provider,
        )
    if isinstance(exc, ValueError):
        return ProviderError(
            f"{where}: the server's answer was not valid JSON ({detail})",
            provider=provider,
            retryable=True,
        )
    if status is None:
        retryable = any("Connection" in n for n in names)
        return ProviderError(
            f"{where}: request failed before an HTTP answer ({type(exc).__name__}: {detail})",
            provider=provider,
            retryable=retryable,
        )
    if status in (401, 403):
        return AuthError(
            f"{where}: the provider refused the credentials (HTTP {status}: {detail}). "
            f"Check the {env_var} environment variable or the api_key argument",
            provider=provider,
            status_code=status,
        )
    if status == 429:
        if code == "insufficient_quota":
            return ProviderError(
                f"{where}: the account has no quota left (HTTP 429 insufficient_quota: "
                f"{detail}); add credit or use another key",
                provider=provider,
                status_code=status,
            )
        wait = retry_after_seconds(headers)
        _, reset = rate_limit_headers(headers)
        requests, tokens = stated_limits(headers)
        if wait is None:
            wait = reset
        body = getattr(exc, "body", None)
        err = body.get("error", body) if isinstance(body, Mapping) else None
        kind_field = err.get("type") if isinstance(err, Mapping) else None
        kind = limit_kind(detail, kind_field if isinstance(kind_field, str) else None, headers)
        hint = f"; the server asks to retry after {wait:g}s" if wait is not None else ""
        return RateLimitError(
            f"{where}: rate limited (HTTP 429: {detail}){hint}",
            provider=provider,
            status_code=status,
            retry_after=wait,
            limit_requests=requests,
            limit_tokens=tokens,
            limit_kind=kind,
        )
    if status in (400, 413, 422) and (
        code == "context_length_exceeded" or _CONTEXT_PATTERNS.search(detail)
    ):
        return ContextLengthError(
            f"{where}: the prompt does not fit the model's context window (HTTP {status}: "
            f"{detail}); pass a smaller context_tokens= to annotate in windows",
            provider=provider,
            status_code=status,
        )
    if status == 408 or status >= 500:
        return ProviderError(
            f"{where}: server error (HTTP {status}: {detail}); retrying later may help",
            provider=provider,
            status_code=status,
            retryable=True,
        )
    return ProviderError(
        f"{where}: the request was rejected (HTTP {status}: {detail})",
        provider=provider,
        status_code=status,
        retryable=status == 409,
    )
