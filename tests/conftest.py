from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    """The folder of test fixtures (see fixtures/README.md for sources and licences)."""
    return FIXTURES


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A local fake OpenAI/Anthropic HTTP server (see tests/fake_llm_server.py), per test."""
    with FakeLLMServer() as server:
        yield server
