"""``mast annotate`` end to end, including a SIGKILL mid-run and a restart."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.cli import main
from mast.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
CODES = load_taxonomy().codes
ANSWER = verdict_json(CODES, ("1.3",))
REAL = [str(FIXTURES / "ag2"), str(FIXTURES / "whoandwhen")]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def write_chats(path: Path, n: int) -> list[str]:
    """``n`` small chat traces as JSON Lines (written by us for the tests)."""
    ids = [f"chat-{i:02d}" for i in range(n)]
    with open(path, "w", encoding="utf-8") as handle:
        for i, trace_id in enumerate(ids):
            messages = [
                {"role": "user", "content": f"Question {i}: what is {i} + {i}?"},
                {"role": "assistant", "content": f"It is {2 * i}."},
            ]
            handle.write(json.dumps({"id": trace_id, "messages": messages}) + "\n")
    return ids


def args(server: FakeLLMServer, out: Path, *extra: str) -> list[str]:
    return [
        "annotate",
        *extra,
        "--model",
        "openai/gpt-4o-mini",
        "--base-url",
        server.openai_base_url,
        "--out",
        str(out),
        "--fewshot",
        "0",
        "--quiet",
    ]


def lines_of(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_annotate_real_traces_prints_a_summary(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 5000, "output": 400})
    out = tmp_path / "results.jsonl"
    assert main([*args(fake_llm, out, *REAL), "--concurrency", "3"]) == 0
    text = capsys.readouterr().out
    assert "5 trace(s): 5 annotated, 0 failed, 0 already done, 0 not attempted" in text
    assert "5 provider call(s)" in text and "cost $0.00" in text and "time " in text
    records = lines_of(out)
    assert len(records) == 5 and {r["status"] for r in records} == {"ok"}
    assert all(r["schema_version"] == 1 for r in records)
    # Same command again: everything is already done, exit 0, no call.
    assert main(args(fake_llm, out, *REAL)) == 0
    assert "5 already done" in capsys.readouterr().out and len(fake_llm.completions) == 5


def test_failures_by_reason_and_retry_failed(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = write_chats(tmp_path / "chats.jsonl", 4)
    broken = {"Question 1:", "Question 2:"}

    def respond(request: Recorded) -> Reply:
        text = json.dumps(request.body)
        if any(b in text for b in broken):
            return Reply.error(503, "overloaded")
        return Reply.text(ANSWER)

    fake_llm.responder = respond
    out = tmp_path / "r.jsonl"
    base = args(fake_llm, out, str(tmp_path / "chats.jsonl"), "--max-attempts", "2", "--no-cache")
    assert main(base) == 0  # something was done
    text = capsys.readouterr().out
    assert "2 annotated, 2 failed" in text and "failed by reason: server_error 2" in text
    broken.clear()
    assert main([*base, "--retry-failed"]) == 0
    text = capsys.readouterr().out
    assert "2 annotated, 0 failed, 2 already done" in text
    latest = {}
    for record in lines_of(out):
        latest[record["trace_id"]] = record["status"]
    assert latest == dict.fromkeys(ids, "ok")


def test_nothing_could_be_done_exits_nonzero(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.error(401, "bad key")
    out = tmp_path / "r.jsonl"
    assert main(args(fake_llm, out, *REAL)) == 1
    captured = capsys.readouterr()
    assert "stopped early" in captured.err and "refused the credentials" in captured.err
    assert "5 trace(s) not attempted" in captured.err
    assert not out.exists() or out.read_text() == ""
    assert main(args(fake_llm, out, str(tmp_path / "missing-*.json"))) == 2  # usage error


def test_unreadable_inputs_are_reported_and_the_rest_done(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    bad = tmp_path / "bad.json"
    bad.write_text("{ this is not json")
    out = tmp_path / "r.jsonl"
    assert main(args(fake_llm, out, str(FIXTURES / "ag2"), str(bad))) == 0
    captured = capsys.readouterr()
    assert "skipped unreadable input" in captured.err and "bad.json" in captured.err
    assert "3 trace(s): 3 annotated" in captured.out


def test_batch_flag_with_anthropic(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    out = tmp_path / "r.jsonl"
    argv = [
        "annotate",
        *REAL,
        "--model",
        "anthropic/claude-sonnet-5-5",
        "--base-url",
        fake_llm.anthropic_base_url,
        "--out",
        str(out),
        "--fewshot",
        "0",
        "--batch",
        "--batch-poll",
        "0.01",
        "-q",
    ]
    assert main(argv) == 0
    assert "5 batch item(s)" in capsys.readouterr().out
    assert fake_llm.completions == [] and len(fake_llm.batch_requests) == 5


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["annotate", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--base-url",
        "--out",
        "--concurrency",
        "--rpm",
        "--tpm",
        "--budget",
        "--batch",
        "--fewshot",
        "--retry-failed",
        "--cache",
        "--no-cache",
    ):
        assert option in text


def prompt_id(request: Recorded) -> str:
    return hashlib.sha256(json.dumps(request.body, sort_keys=True).encode()).hexdigest()


def test_sigkill_mid_run_then_restart_loses_and_repeats_nothing(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    ids = write_chats(tmp_path / "chats.jsonl", 18)
    fake_llm.default = Reply.text(ANSWER, delay=0.3)
    out = tmp_path / "results.jsonl"
    argv = [
        sys.executable,
        "-m",
        "mast",
        *args(fake_llm, out, str(tmp_path / "chats.jsonl"), str(FIXTURES / "ag2")),
        "--concurrency",
        "3",
        "--cache",
        str(tmp_path / "cache"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "sk-kill-test"}
    all_ids = set(ids) | {"02da9c1f-7c36-5739-b723-33a7d4f8e7e7"}  # AG2_trace1.json (spot)
    with open(tmp_path / "killed.log", "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            finished = [r for r in fake_llm.completions if r.finished is not None]
            if len(finished) >= 7:
                break
            time.sleep(0.01)
        # Let the client take in the answers it already has, then kill it mid-flight.
        time.sleep(0.1)
        kill_time = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    first_run = list(fake_llm.completions)
    written = out.read_bytes().count(b"\n") if out.exists() else 0
    assert 0 < written < 21, "the kill should land mid-run"

    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "21 trace(s)" in done.stdout

    records = lines_of(out)  # every line parses: no torn line left behind
    per_trace = collections.Counter(str(r["trace_id"]) for r in records)
    assert len(per_trace) == 21 and set(per_trace.values()) == {1}  # none lost or duplicated
    assert all_ids <= set(per_trace) and {r["status"] for r in records} == {"ok"}

    # Paid calls were not repeated: a prompt sent twice must have been in flight at the kill.
    calls = fake_llm.completions
    by_prompt = collections.defaultdict(list)
    for request in calls:
        by_prompt[prompt_id(request)].append(request)
    assert len(by_prompt) == 21
    repeated = [reqs for reqs in by_prompt.values() if len(reqs) > 1]
    assert len(repeated) <= 3  # at most one per worker
    for reqs in repeated:
        first = reqs[0]
        assert first in first_run and len(reqs) == 2
        assert first.finished is None or first.finished > kill_time - 0.1
    print(
        f"kill test: {len(first_run)} calls before the kill, {written} records written, "
        f"{len(calls) - len(first_run)} calls after, {len(repeated)} repeated (in flight)"
    )

    # A third run has nothing left to do and makes no call.
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "21 already done" in again.stdout
    assert len(fake_llm.completions) == len(calls)
