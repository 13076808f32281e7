"""What model calls cost: a small price table in USD per million tokens, user-overridable.

Prices change; the bundled table is a convenience dated by :data:`PRICES_AS_OF`, not an
invoice. Pass your own prices to :class:`~mast.judge.judge.Judge` (``prices=``) as a mapping or a
YAML file of the same shape. A model with no price gets ``cost_usd = None`` (unknown), never 0.

>>> table = PriceTable({"openai/my-model": {"input": 1.0, "output": 2.0}})
>>> table.cost("openai/my-model", Usage(input_tokens=1_000_000, output_tokens=500_000))
2.0
>>> table.cost("openai/unheard-of", Usage(input_tokens=10, output_tokens=10)) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mast.errors import MastError
from mast.judge.providers.usage import Usage

PRICES_AS_OF = "2026-11"
"""When the bundled prices were read from the providers' public price pages."""


class Price(BaseModel):
    """USD per one million tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="Uncached prompt tokens.")
    output: float = Field(ge=0, description="Generated tokens (reasoning tokens included).")
    cached_input: float | None = Field(
        default=None, ge=0, description="Prompt tokens read from cache; default: the input price."
    )
    cache_write: float | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens written to cache (Anthropic, 5-minute TTL); default: input.",
    )


def _p(input: float, cached_input: float, output: float, cache_write: float | None = None) -> Price:
    return Price(input=input, cached_input=cached_input, output=output, cache_write=cache_write)


# Standard (non-batch) tier. Anthropic long-context (>200k prompt) surcharges and
# prompt-length price bands are not modelled: override the entry if you run such prompts.
DEFAULT_PRICES: dict[str, Price] = {
    "openai/gpt-4o": _p(2.50, 1.25, 10.00),
    "openai/gpt-4o-mini": _p(0.15, 0.075, 0.60),
    "openai/gpt-4.1": _p(2.00, 0.50, 8.00),
    "openai/gpt-4.1-mini": _p(0.40, 0.10, 1.60),
    "openai/gpt-4.1-nano": _p(0.10, 0.025, 0.40),
    "openai/o1": _p(15.00, 7.50, 60.00),
    "openai/o3": _p(2.00, 0.50, 8.00),
    "openai/o4-mini": _p(1.10, 0.275, 4.40),
    "openai/gpt-5": _p(1.25, 0.125, 10.00),
    "openai/gpt-5-mini": _p(0.25, 0.025, 2.00),
    "openai/gpt-5-nano": _p(0.05, 0.005, 0.40),
    "openai/gpt-5.4": _p(2.50, 0.25, 15.00),
    "openai/gpt-5.4-mini": _p(0.75, 0.075, 4.50),
    # Anthropic: platform.claude.com/docs/en/about-claude/pricing (base input, cache hits
    # = 0.1x input, 5-minute cache writes = 1.25x input, output); Sonnet 4.x tier $3 / $0.30
    # / $3.75 / $15; Sonnet 5 and 5.5 $2 / $0.20 / $2.50 / $10 (the models' overview pages).
    "anthropic/claude-haiku-4-5": _p(1.00, 0.10, 5.00, 1.25),
    "anthropic/claude-sonnet-4-5": _p(3.00, 0.30, 15.00, 3.75),
    "anthropic/claude-sonnet-5": _p(2.00, 0.20, 10.00, 2.50),
    "anthropic/claude-sonnet-5-5": _p(2.00, 0.20, 10.00, 2.50),
    "anthropic/claude-opus-4-1": _p(15.00, 1.50, 75.00, 18.75),
    "anthropic/claude-opus-4-5": _p(5.00, 0.50, 25.00, 6.25),
    "anthropic/claude-opus-4-6": _p(5.00, 0.50, 25.00, 6.25),
    "anthropic/claude-opus-4-7": _p(5.00, 0.50, 25.00, 6.25),
    "anthropic/claude-opus-5": _p(5.00, 0.50, 25.00, 6.25),
}

# Dated snapshots ("gpt-4.1-2025-04-14", "claude-sonnet-4-5-20250929") and "-latest" aliases
# cost what their base model costs.
_SNAPSHOT_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


class PriceTable:
    """Prices by ``"provider/model"``: the bundled defaults, overridden by yours.

    ``overrides`` maps model names to :class:`Price` objects or plain dicts with the same
    keys (``input``, ``output``, optional ``cached_input``, ``cache_write``).
    """

    def __init__(
        self,
        overrides: Mapping[str, Price | Mapping[str, Any]] | None = None,
        *,
        include_defaults: bool = True,
    ) -> None:
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES) if include_defaults else {}
        for name, price in (overrides or {}).items():
            self._prices[name] = _as_price(name, price)

    @classmethod
    def from_yaml(cls, path: str | Path, *, include_defaults: bool = True) -> PriceTable:
        """Read overrides from a YAML mapping ``{"openai/gpt-4.1": {input: 2.0, …}, …}``."""
        path = Path(path)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise MastError(f"cannot read price file {path}: {exc}") from exc
        if not isinstance(raw, Mapping):
            raise MastError(
                f"{path}: expected a mapping of 'provider/model' to prices, "
                f"got {type(raw).__name__}"
            )
        return cls(raw, include_defaults=include_defaults)

    def lookup(self, model: str) -> Price | None:
        """The price of ``model`` ("provider/model"), trying its base name for snapshots."""
        if model in self._prices:
            return self._prices[model]
        base = _SNAPSHOT_SUFFIX.sub("", model)
        return self._prices.get(base)

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` on ``model``; ``None`` when the price or a count is unknown."""
        price = self.lookup(model)
        if price is None or usage.input_tokens is None or usage.output_tokens is None:
            return None
        cached = usage.cached_input_tokens or 0
        written = usage.cache_write_input_tokens or 0
        fresh = max(usage.input_tokens - cached - written, 0)
        cached_price = price.input if price.cached_input is None else price.cached_input
        write_price = price.input if price.cache_write is None else price.cache_write
        total = (
            fresh * price.input
            + cached * cached_price
            + written * write_price
            + usage.output_tokens * price.output
        )
        return round(total / 1_000_000, 8)

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.lookup(model) is not None

    def __repr__(self) -> str:
        return f"PriceTable({len(self._prices)} models, defaults as of {PRICES_AS_OF})"


def _as_price(name: str, price: Price | Mapping[str, Any]) -> Price:
    if isinstance(price, Price):
        return price
    try:
        return Price.model_validate(price)
    except ValidationError as exc:
        raise MastError(
            f"invalid price for {name!r}: {exc.errors()[0]['msg']}; expected a mapping with "
            "'input' and 'output' (USD per 1M tokens) and optional 'cached_input', 'cache_write'"
        ) from exc


PricesLike = PriceTable | Mapping[str, Price | Mapping[str, Any]] | str | Path | None


def price_table(prices: PricesLike = None) -> PriceTable:
    """Build a :class:`PriceTable` from whatever a user passed (None = bundled defaults)."""
    if prices is None:
        return PriceTable()
    if isinstance(prices, PriceTable):
        return prices
    if isinstance(prices, (str, Path)):
        return PriceTable.from_yaml(prices)
    return PriceTable(prices)
