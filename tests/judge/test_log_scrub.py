"""The log filter of mast.privacy.log_scrub: URL credentials and judges' secrets never reach a
log record of mast's, httpx's, httpcore's, openai's or anthropic's loggers."""

from __future__ import annotations

import ast
import doctest
import importlib
import logging
from pathlib import Path

import pytest

from mast.privacy import log_scrub
from mast.privacy.scrub import Scrubber

SRC = Path(__file__).resolve().parents[2] / "src" / "mast"


def test_docstring_example() -> None:
    result = doctest.testmod(log_scrub, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0


def _logger_names() -> list[tuple[str, str]]:
    """(module, logger name) of every logging.getLogger call in src/mast."""
    found = []
    for path in SRC.rglob("*.py"):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and node.args
            ):
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((module, arg.value))
                elif isinstance(arg, ast.Name) and arg.id == "__name__":
                    found.append((module, module))
    return found


def test_every_mast_logger_carries_the_filter() -> None:
    names = _logger_names()
    assert len(names) >= 4
    for module, name in names:
        if module.startswith("mast.bulk.ray") or module == "mast.bulk.distributed":
            pytest.importorskip("ray")
        importlib.import_module(module)
        filters = logging.getLogger(name).filters
        assert any(isinstance(f, log_scrub.CredentialFilter) for f in filters), (module, name)


@pytest.mark.parametrize(
    "name", ["httpx", "httpx2", "httpcore2.http11", "openai._base_client", "anthropic", "mast"]
)
def test_url_credentials_and_registered_secrets_are_scrubbed(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-test-log-scrub-0123456789abcdef"
    Scrubber([secret])  # what every judge with a key does
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger(name)
    log.info("HTTP Request: %s %s", "POST", "https://bot:hunter2-long-pw@proxy.example/v1/x")
    log.debug("headers: %s", {"authorization": f"Bearer {secret}"})
    log.info("GET https://api.example/v1?api-key=qwertyuiop123&model=m")
    try:
        raise RuntimeError("cannot reach https://bot:hunter2-long-pw@proxy.example/v1")
    except RuntimeError:
        log.exception("call failed")
    text = caplog.text
    for needle in ("hunter2-long-pw", secret, "qwertyuiop123"):
        assert needle not in text
    assert "https://[REDACTED:url_credentials]@proxy.example/v1/x" in text
    assert "model=m" in text and "call failed" in text and "RuntimeError" in text


def test_a_message_without_credentials_is_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    record_args = ("POST", "https://api.openai.com/v1/chat/completions", 200)
    logging.getLogger("httpx2").info("HTTP Request: %s %s %d", *record_args)
    [record] = [r for r in caplog.records if r.name == "httpx2"]
    assert record.args == record_args  # not rewritten: nothing to scrub
