"""Live calls to the real provider APIs: opt-in, they cost money.

Run with ``pytest -m live`` and ``OPENAI_API_KEY`` and/or ``ANTHROPIC_API_KEY`` set. Models
can be changed with ``MAST_LIVE_OPENAI_MODEL`` / ``MAST_LIVE_ANTHROPIC_MODEL``. Without
``-m live`` (or without the key) every test here is skipped, even when a key is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mast.judge.judge import Judge
from mast.traces.loaders import load_trace
from mast.traces.model import Trace

pytestmark = pytest.mark.live

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def _opt_in(request: pytest.FixtureRequest) -> None:
    if "live" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("live API test: run with -m live")


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(FIXTURES / "ag2" / "AG2_trace1.json")


def _check(judge: Judge, trace: Trace) -> None:
    ann = judge.annotate(trace)
    assert ann.status == "ok", ann.error
    assert len(ann.vector.unknown) <= 3, ann.vector
    assert ann.usage.input_tokens and ann.usage.output_tokens
    assert ann.cost_usd is not None and ann.cost_usd > 0
    # The canned "Continue" loop after an impossible question is the trace's clearest failure.
    assert ann.vector["1.5"] is True or ann.vector["1.3"] is True, ann.summary
    assert not ann.ungrounded, ann.problems


@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY not set")
def test_openai_live(trace: Trace) -> None:
    model = os.environ.get("MAST_LIVE_OPENAI_MODEL", "gpt-4.1-mini")
    _check(Judge(f"openai/{model}", fewshot=1), trace)


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY not set")
def test_anthropic_live(trace: Trace) -> None:
    model = os.environ.get("MAST_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5")
    _check(Judge(f"anthropic/{model}", fewshot=1), trace)
