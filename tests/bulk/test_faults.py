"""Faulty networks end to end: ``mast annotate`` against a server that misbehaves.

Each trace meets its own fault from the fake server: HTTP 429, 500/503, an HTML 502 page, a
timeout, a dropped connection, a body cut short, a slow drip (too slow, and merely slow), an
HTML page with status 200 and an empty 200 body. Some faults pass after one retry, some
never do. The command must leave exactly one record per trace, ``ok`` or ``error`` with a
reason that names the fault, make no more calls per trace than ``--max-attempts``
(``--max-rate-limited`` for 429s), and count them honestly in its summary. Run for both
providers' wire protocols.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.cli import main
from mast.taxonomy import load_taxonomy

CODES = load_taxonomy().codes
ANSWER = verdict_json(CODES, ("1.3",))
ATTEMPTS = 3
TIMEOUT = 1.0  # margin for "drip-fine" (~0.1 s of drip) on a loaded 2-core machine

# name -> (how the server answers each attempt, expected status, words in the error)
PLAN: dict[str, tuple[str, str, str | None]] = {
    "clean": ("ok", "ok", None),
    "429-once": ("429 ok", "ok", None),
    "503-once": ("503 ok", "ok", None),
    "html502-once": ("html502 ok", "ok", None),
    "reset-once": ("reset ok", "ok", None),
    "truncated-once": ("truncated ok", "ok", None),
    "timeout-once": ("slow ok", "ok", None),
    "drip-too-slow-once": ("drip-slow ok", "ok", None),
    "drip-fine": ("drip-fine", "ok", None),
    "html200-once": ("html200 ok", "ok", None),
    "empty200-once": ("empty200 ok", "ok", None),
    "429-always": ("429", "error", "rate limited"),
    "500-always": ("500", "error", "HTTP 500"),
    "reset-always": ("reset", "error", "failed before an HTTP answer"),
    "truncated-always": ("truncated", "error", "failed before an HTTP answer"),
    "timeout-always": ("slow", "error", "no answer within"),
    "html200-always": ("html200", "error", "not a"),
    "400-never-retried": ("400", "error", "HTTP 400"),
}


def fault(kind: str) -> Reply:
    if kind == "ok":
        return Reply.text(ANSWER)
    if kind == "429":
        return Reply.error(429, "slow down", retry_after=0)
    if kind in ("500", "503", "400"):
        return Reply.error(int(kind), f"scripted {kind}")
    if kind == "html502":
        return Reply.raw(502, b"<html><h1>502 Bad Gateway</h1></html>", content_type="text/html")
    if kind == "reset":
        return Reply.reset()
    if kind == "truncated":
        return Reply.text(ANSWER).truncated(0.4)
    if kind == "slow":
        return Reply.text(ANSWER, delay=TIMEOUT * 4)
    if kind == "drip-slow":  # every chunk arrives in time, the whole answer does not
        return Reply.text(ANSWER).dripping(0.25, chunk=64)
    if kind == "drip-fine":
        return Reply.text(ANSWER).dripping(0.01, chunk=512)
    if kind == "html200":
        return Reply.raw(200, b"<html>Sign in to the proxy</html>", content_type="text/html")
    if kind == "empty200":
        return Reply.raw(200, b"", content_type="application/json")
    raise ValueError(kind)


class Script:
    """Answers each trace's n-th attempt with the n-th fault of its plan (the last repeats)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        match = re.search(r"Case ([\w-]+):", json.dumps(request.body))
        assert match, "every request names its trace"
        name = match.group(1)
        with self.lock:
            self.calls[name] += 1
            attempt = self.calls[name]
        steps = PLAN[name][0].split()
        return fault(steps[min(attempt, len(steps)) - 1])


def write_traces(path: Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for name in PLAN:
            messages = [
                {"role": "user", "content": f"Case {name}: add 2 and 3."},
                {"role": "assistant", "content": "5"},
            ]
            handle.write(json.dumps({"id": name, "messages": messages}) + "\n")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_trace_ends_with_one_record_and_bounded_retries(
    provider: str,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    fake_llm.responder = script
    inputs, out = tmp_path / "traces.jsonl", tmp_path / "results.jsonl"
    write_traces(inputs)
    model, url = (
        ("openai/gpt-4o-mini", fake_llm.openai_base_url)
        if provider == "openai"
        else ("anthropic/claude-sonnet-5-5", fake_llm.anthropic_base_url)
    )
    command = [
        "annotate", str(inputs), "--model", model, "--base-url", url, "--out", str(out),
        "--fewshot", "0", "--concurrency", str(len(PLAN)), "--max-attempts", str(ATTEMPTS),
        "--max-rate-limited", str(ATTEMPTS), "--timeout", str(TIMEOUT), "--no-cache", "--quiet",
    ]  # fmt: skip
    assert main(command) == 0
    summary = capsys.readouterr().out

    records = [json.loads(line) for line in out.read_text().splitlines()]
    per_trace = Counter(r["trace_id"] for r in records)
    assert per_trace == dict.fromkeys(PLAN, 1), "exactly one record per trace"
    for record in records:
        name = record["trace_id"]
        _, status, words = PLAN[name]
        assert record["status"] == status, (name, record["error"])
        if status == "ok":
            assert record["error"] is None and record["vector"]["1.3"] is True
        else:
            assert record["error"] and words in record["error"], (name, record["error"])
            assert all(v is None for v in record["vector"].values()), "unknown, never 'no'"

    # Retries stay within --max-attempts: one call if clean, two after one fault, all of them
    # for lasting retryable faults, one for a rejection that retrying cannot fix.
    expected_calls = {
        name: 1
        if plan == "ok" or plan == "drip-fine" or name == "400-never-retried"
        else (2 if status == "ok" else ATTEMPTS)
        for name, (plan, status, _) in PLAN.items()
    }
    assert dict(script.calls) == expected_calls
    assert max(script.calls.values()) <= ATTEMPTS
    total = sum(expected_calls.values())
    failed = sum(1 for _, status, _ in PLAN.values() if status == "error")
    assert f"{len(PLAN)} trace(s): {len(PLAN) - failed} annotated, {failed} failed" in summary
    assert f"{total} provider call(s) ({total - len(PLAN)} retries)" in summary

    # The same command again: traces with an answer or a lasting failure are skipped; the
    # transport failures (no answer at all) are tried again, the others wait for
    # --retry-failed and the summary says so.
    transport = {
        *("429-always", "500-always", "reset-always", "truncated-always", "timeout-always"),
        "html200-always",  # a proxy page instead of JSON: retryable, like a dropped answer
    }
    calls_before = Counter(script.calls)
    assert main(command) == 0
    text = capsys.readouterr().out
    assert f"{len(PLAN) - len(transport)} already done" in text
    assert f"{len(transport)} transport failure(s) of earlier runs tried again" in text
    assert "1 failed earlier and were not redone (http_400 1)" in text and "--retry-failed" in text
    assert {name for name in PLAN if script.calls[name] != calls_before[name]} == transport
    # One line per trace after the rerun: the retried records replaced the failed ones.
    assert len(out.read_text().splitlines()) == len(PLAN)
