"""Token usage of one or more model calls, as the providers report it.

All counts are normalized across providers: ``input_tokens`` is every prompt token the call
was billed for (OpenAI's ``prompt_tokens``; Anthropic's ``input_tokens`` plus its cache reads
and cache writes), and ``cached_input_tokens`` / ``cache_write_input_tokens`` are the parts of
it read from / written to the provider's prompt cache. ``None`` means the server did not
report the number (some OpenAI-compatible servers omit usage); it is never guessed as 0.

>>> a = Usage(input_tokens=1200, cached_input_tokens=1000, output_tokens=300)
>>> (a + a).input_tokens, (a + Usage()).input_tokens
(2400, None)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


def _add(a: int | None, b: int | None) -> int | None:
    # A sum over calls is only known when every call reported its part.
    return None if a is None or b is None else a + b


class Usage(BaseModel):
    """Tokens used by one or more model calls (``None`` = not reported)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int | None = Field(
        default=None, description="All prompt tokens, including cached reads and cache writes."
    )
    cached_input_tokens: int | None = Field(
        default=None, description="Prompt tokens read from the provider's prompt cache."
    )
    cache_write_input_tokens: int | None = Field(
        default=None,
        description="Prompt tokens written to the prompt cache (Anthropic bills them higher).",
    )
    output_tokens: int | None = Field(
        default=None, description="Generated tokens, including any hidden reasoning tokens."
    )

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens; None when the input count was not reported."""
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=_add(self.input_tokens, other.input_tokens),
            cached_input_tokens=_add(self.cached_input_tokens, other.cached_input_tokens),
            cache_write_input_tokens=_add(
                self.cache_write_input_tokens, other.cache_write_input_tokens
            ),
            output_tokens=_add(self.output_tokens, other.output_tokens),
        )

    @classmethod
    def zero(cls) -> Usage:
        """Usage of no call at all (e.g. the heuristic judge): every count is a known 0."""
        return cls(
            input_tokens=0, cached_input_tokens=0, cache_write_input_tokens=0, output_tokens=0
        )
