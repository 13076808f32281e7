"""Price table: lookups, overrides, and unknown is None (never 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mast.errors import MastError
from mast.judge.providers.pricing import DEFAULT_PRICES, PriceTable, price_table
from mast.judge.providers.usage import Usage


def test_snapshots_and_aliases_cost_what_their_base_model_costs() -> None:
    table = PriceTable()
    assert table.lookup("openai/gpt-4.1-2025-04-14") == DEFAULT_PRICES["openai/gpt-4.1"]
    assert table.lookup("anthropic/claude-sonnet-4-5-20250929") is not None
    assert table.lookup("openai/gpt-4.1-mini") == DEFAULT_PRICES["openai/gpt-4.1-mini"]
    assert table.lookup("openai/unknown-model") is None


def test_cost_splits_fresh_cached_and_written_tokens() -> None:
    table = PriceTable()
    usage = Usage(
        input_tokens=10_000,
        cached_input_tokens=6_000,
        cache_write_input_tokens=1_000,
        output_tokens=2_000,
    )
    # claude-haiku-4-5: $1 input, $0.10 cache read, $1.25 cache write, $5 output per 1M.
    expected = (3_000 * 1.0 + 6_000 * 0.10 + 1_000 * 1.25 + 2_000 * 5.0) / 1e6
    assert table.cost("anthropic/claude-haiku-4-5", usage) == pytest.approx(expected)


def test_unknown_model_or_usage_gives_none() -> None:
    table = PriceTable()
    assert table.cost("openai/local", Usage(input_tokens=1, output_tokens=1)) is None
    assert table.cost("openai/gpt-4.1", Usage(input_tokens=None, output_tokens=5)) is None
    assert table.cost("openai/gpt-4.1", Usage.zero()) == 0.0


def test_overrides_from_a_mapping_and_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        '"openai/gpt-4.1": {input: 1.0, output: 1.0}\n"openai/mine": {input: 0, output: 2}\n'
    )
    table = price_table(path)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost("openai/gpt-4.1", usage) == 2.0
    assert table.cost("openai/mine", usage) == 2.0
    assert table.cost("openai/gpt-4o", usage) is not None  # defaults kept
    only = PriceTable({"openai/mine": {"input": 1, "output": 1}}, include_defaults=False)
    assert "openai/gpt-4o" not in only and "openai/mine" in only


def test_invalid_prices_are_rejected_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(MastError, match="'input' and 'output'"):
        PriceTable({"openai/x": {"input": 1.0}})
    with pytest.raises(MastError, match="invalid price"):
        PriceTable({"openai/x": {"input": -1, "output": 1}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just a list\n")
    with pytest.raises(MastError, match="expected a mapping"):
        PriceTable.from_yaml(bad)


def test_usage_sums_stay_unknown_when_a_part_is_unknown() -> None:
    a = Usage(input_tokens=10, cached_input_tokens=0, cache_write_input_tokens=0, output_tokens=1)
    assert (a + a).input_tokens == 20
    assert (a + Usage()).input_tokens is None
