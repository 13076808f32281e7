from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def _cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mast-cache")


@pytest.fixture(autouse=True)
def _own_response_cache(
    _cache_root: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's default response cache is its own folder (made only if used), never the
    user's ~/.cache/mast: annotate_many, mast validate and doctests open the default cache,
    and subprocesses (wheel check, notebook kernels) inherit the variable. Tests that check
    the default location set or delete MAST_CACHE_DIR themselves."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.nodeid)[-120:]
    monkeypatch.setenv("MAST_CACHE_DIR", str(_cache_root / name))


# Loggers whose level a library may change on import or setup: inspect_ai's logging setup
# sets the root logger and httpx/httpx2 to its own levels, which hid the request lines the
# log-scrubbing tests read for every test after it.
_WATCHED_LOGGERS = ("", "httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic", "mast")


@pytest.fixture(autouse=True)
def _logger_levels_restored() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in _WATCHED_LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture
def fixtures() -> Path:
    """The folder of test fixtures (see fixtures/README.md for sources and licences)."""
    return FIXTURES


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A local fake OpenAI/Anthropic HTTP server (see tests/fake_llm_server.py), per test."""
    with FakeLLMServer() as server:
        yield server
