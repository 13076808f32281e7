"""Token counting: tiktoken when its encoding is on disk, a calibrated estimate otherwise."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mast.judge import tokens
from mast.judge.tokens import count_tokens, encoding_for, estimate_tokens

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_encodings_by_model() -> None:
    assert encoding_for("openai/gpt-4.1") == "o200k_base"
    assert encoding_for("openai/gpt-4o-mini") == "o200k_base"
    assert encoding_for("openai/o3-mini") == "o200k_base"
    assert encoding_for("openai/gpt-4-turbo") == "cl100k_base"
    assert encoding_for("openai/gpt-3.5-turbo") == "cl100k_base"
    # Anthropic's tokenizer is not public: counted with o200k as a stated approximation.
    assert encoding_for("anthropic/claude-sonnet-5-5") == "o200k_base"
    assert encoding_for(None) == "o200k_base"


def test_no_download_without_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    tokens._tiktoken_encoding.cache_clear()
    try:
        count = count_tokens("Hello there, judge.", model="openai/gpt-4.1")
    finally:
        tokens._tiktoken_encoding.cache_clear()
    assert count.method == "estimate" and count.encoding == "o200k_base"
    assert count.tokens == estimate_tokens("Hello there, judge.")


def test_heuristic_model_always_estimates() -> None:
    assert count_tokens("x y z", model="heuristic").method == "estimate"


def test_estimate_is_close_on_prose_code_and_logs() -> None:
    recorded = json.loads((FIXTURES / "tokens" / "fewshot_counts.json").read_text())
    assert len(recorded) >= 20  # the per-block check lives in test_fewshot_pool.py
    assert estimate_tokens("") == 0
    # Long rare words cost more than common short ones.
    assert estimate_tokens("antidisestablishmentarianism") > estimate_tokens("the cat")


@pytest.mark.skipif(importlib.util.find_spec("tiktoken") is None, reason="tiktoken not installed")
def test_real_counts_when_the_encoding_is_available() -> None:
    tokens._tiktoken_encoding.cache_clear()
    count = count_tokens("Hello world, this is a test of the tokenizer.", model="openai/gpt-4.1")
    if count.method != "tiktoken":
        pytest.skip("tiktoken's o200k_base encoding is not cached on this machine")
    assert count.tokens == 11
