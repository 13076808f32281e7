"""Token budgets of a judge call: the context window assumed per model and the output reserve."""

from __future__ import annotations

DEFAULT_CONTEXT_TOKENS = 128_000

DEFAULT_MAX_INPUT_TOKENS = 128_000
"""Most prompt tokens one request carries by default, whatever the model accepts: a 1.6 M
character trace should not go out as one ~425k-token request (cost, and models judge long
inputs worse); it is judged in windows instead."""


# Longest matching prefix wins. Input-side limits, conservative where providers offer larger
# windows only in beta or at a surcharge. Pass context_tokens= to override.
_CONTEXT_WINDOWS: dict[str, int] = {
    "openai/gpt-4o": 128_000,
    "openai/gpt-4.1": 1_000_000,
    "openai/o1": 200_000,
    "openai/o3": 200_000,
    "openai/o4": 200_000,
    "openai/gpt-5": 272_000,
    "anthropic/claude-3": 200_000,
    "anthropic/claude-haiku-4": 200_000,
    "anthropic/claude-sonnet-4": 200_000,
    "anthropic/claude-opus-4": 200_000,
    "anthropic/claude-sonnet-5": 1_000_000,
    "anthropic/claude-opus-5": 1_000_000,
    "anthropic/claude-haiku-5": 1_000_000,
}


# Output tokens to reserve (and to request) when max_tokens is not given.
_DEFAULT_OUTPUT = 8_192


_REASONING_OUTPUT = 32_768


# Compact answers (see answer_format): an absent mode is one token, a present one an object
# with evidence. bench/ANSWER_SIZE.md measured 477 tokens for 3 of 14 modes present (about
# 120 per present mode, about 120 for the rest); the cap allows twice that per mode with
# every mode present, so only a runaway answer is cut off.
_COMPACT_BASE_OUTPUT = 512
_COMPACT_PER_MODE_OUTPUT = 256


def answer_output_tokens(answer: str, modes: int) -> int | None:
    """The ``max_tokens`` a non-reasoning model is asked for by default in answer mode
    ``answer`` with ``modes`` failure modes (None: none is sent, 8,192 are reserved).

    >>> answer_output_tokens("compact", 14), answer_output_tokens("full", 14)
    (4096, None)
    """
    if answer != "compact":
        return None
    return _COMPACT_BASE_OUTPUT + _COMPACT_PER_MODE_OUTPUT * modes


def default_max_tokens(provider: str, *, reasoning: bool, answer: str, modes: int) -> int | None:
    """The ``max_tokens`` a judge sends when none is given (None: none is sent).

    Reasoning models and Anthropic's (adaptive thinking) spend output tokens before the
    answer, so they get room for that; OpenAI and Azure models that do not reason get a cap
    sized to a compact answer (:func:`answer_output_tokens`), which also bounds what a call
    reserves of a budget.

    >>> default_max_tokens("openai", reasoning=False, answer="compact", modes=14)
    4096
    """
    if reasoning:
        return _REASONING_OUTPUT
    if provider == "anthropic":
        from mast.judge.providers.anthropic import DEFAULT_MAX_TOKENS

        return DEFAULT_MAX_TOKENS
    if provider in ("openai", "azure"):
        return answer_output_tokens(answer, modes)
    return None


# The estimate is a heuristic: keep this share of the budget free as a margin.
_SAFETY = 0.9


# Bound on re-splitting after the provider says the prompt is too long.
_MAX_CONTEXT_RETRIES = 2


def context_window(model: str) -> int:
    """The context budget (tokens) assumed for ``"provider/model"``.

    >>> context_window("openai/gpt-4o-mini"), context_window("openai/some-local-model")
    (128000, 128000)
    """
    best = ""
    for prefix in _CONTEXT_WINDOWS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_TOKENS


def check_options(*, ungrounded: str, max_input_tokens: int | None, samples: int) -> None:
    """Validate the judge options of issue 16 (evidence policy, input cap, samples)."""
    policies = ("keep", "flag", "unknown")
    if ungrounded not in policies:
        raise ValueError(f"ungrounded must be one of {policies}, got {ungrounded!r}")
    if max_input_tokens is not None and max_input_tokens < 1024:
        raise ValueError(f"max_input_tokens must be at least 1024, got {max_input_tokens}")
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
