"""No secret at rest: the judge's API key and the secrets in a trace are never written.

Every way of running the judge is exercised against the local fake server with a distinctive
API key, on traces that hold another secret (and the key itself, dumped in an environment
listing): ``Judge.annotate``, ``annotate_many`` with a results file and a response cache,
batch mode, and the ``mast annotate`` command. The server echoes the key in error messages,
as some proxies do. Then every file the run wrote (results, cache, batch state), every log
record (all loggers, DEBUG), everything printed, and every exception message and ``repr``
are searched for both secrets; and no request that left the machine carried the trace
secret (it was redacted) or the key in its body (the key travels in the auth header only).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.bulk.runner import RetryPolicy, annotate_many
from mast.cli import main
from mast.errors import AuthError, RunStopped
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
# Shaped like real keys so that a leak would also be caught by a secret scanner.
KEY = "sk-proj-AtRestJudgeKey9f3Xq2mLr8ZkP1vW7aN3bC6dE0gH5jK"
TRACE_SECRET = "ghp_" + "AtRest0TraceSecret7Xq2mLr8ZkP1vW7aN3b"
SECRETS = (KEY, TRACE_SECRET)
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def leaky_traces(n: int = 3) -> list[Trace]:
    """Traces whose steps dump credentials, the judge's own key among them."""
    return [
        Trace(
            id=f"leaky-{i}",
            task=f"Case {i}: deploy the service.",
            steps=[
                Step.make(0, f"Case {i}: deploy with GITHUB_TOKEN={TRACE_SECRET}", agent="user"),
                Step.make(1, f"$ env\nOPENAI_API_KEY={KEY}\nHOME=/root", agent="ops"),
                Step.make(2, f"git push https://bot:{TRACE_SECRET}@github.com/o/r", agent="ops"),
            ],
        )
        for i in range(n)
    ]


def answer(request: Recorded) -> Reply:
    """A model that quotes what it saw (so a leak into the prompt would reach the results)."""
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    quote = next(line for line in user.splitlines() if "GITHUB_TOKEN" in line)
    modes = json.loads(verdict_json(CODES, ("2.4",)))
    modes["modes"]["2.4"]["evidence"] = [{"step_id": "s1", "quote": quote.split(": ", 1)[-1]}]
    return Reply.text(json.dumps(modes))


def assert_clean(text: str | bytes, where: str) -> None:
    for secret in SECRETS:
        needle = secret.encode() if isinstance(text, bytes) else secret
        assert needle not in text, f"{secret[:12]}… found in {where}"


def assert_files_clean(root: Path) -> int:
    """Search every file under ``root``; returns how many there were."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        assert_clean(path.read_bytes(), str(path))
    return len(files)


def assert_requests_clean(server: FakeLLMServer) -> None:
    assert server.requests, "the fake server saw no request"
    for request in server.requests:
        assert_clean(request.raw, f"the body of a request to {request.path}")
    auth = [r.headers.get("authorization", "") for r in server.completions]
    assert all(KEY in a for a in auth), "the key travels in the Authorization header only"


# --------------------------------------------------------------------------- one trace


def test_judge_annotate(fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.responder = answer
    judge = Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    ann = judge.annotate(leaky_traces(1)[0])
    assert ann.ok and ann.findings["2.4"].evidence[0].grounded
    assert ann.redactions == {"github_token": 2, "api_key": 1}
    assert_clean(ann.model_dump_json(), "the annotation")
    assert_clean(repr(ann), "repr(annotation)")
    assert_clean(repr(judge) + repr(judge.provider) + json.dumps(judge.describe()), "the judge")
    assert_clean(caplog.text, "the logs")
    assert_requests_clean(fake_llm)


def test_redaction_off_still_keeps_the_key_out(fake_llm: FakeLLMServer) -> None:
    fake_llm.responder = answer
    judge = Judge(
        "openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0, redact=False
    )
    ann = judge.annotate(leaky_traces(1)[0])
    assert ann.ok
    # The trace secret is sent and quoted back, as asked; the judge's own key never is.
    assert TRACE_SECRET in ann.model_dump_json()
    assert KEY not in ann.model_dump_json()
    assert all(KEY.encode() not in r.raw for r in fake_llm.requests)


def test_errors_and_exceptions_never_carry_the_key(fake_llm: FakeLLMServer) -> None:
    url = fake_llm.openai_base_url.replace("http://", f"http://bot:{TRACE_SECRET}@")
    with pytest.warns(UserWarning, match="carries a user name and password"):
        judge = Judge("openai/gpt-4.1", base_url=url, api_key=KEY, fewshot=0)
    assert_clean(repr(judge) + json.dumps(judge.describe()), "a judge with credentials in its URL")
    trace = leaky_traces(1)[0]
    for status in (500, 400, 429, 404):
        fake_llm.enqueue(Reply.error(status, f"invalid key {KEY} for {TRACE_SECRET}"))
        ann = judge.annotate(trace)
        assert ann.status == "error" and ann.error
        assert_clean(ann.model_dump_json(), f"an HTTP {status} error record")
    fake_llm.enqueue(Reply.raw(200, f"<html>key={KEY}</html>".encode(), content_type="text/html"))
    ann = judge.annotate(trace)
    assert ann.status == "error"
    assert_clean(ann.model_dump_json(), "an HTML answer's error record")
    fake_llm.enqueue(Reply.error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(AuthError) as caught:
        judge.annotate(trace)
    assert_clean(str(caught.value) + repr(caught.value), "the AuthError")
    # Nor does a missing key: the message names the variable, not a value.
    with pytest.raises(AuthError) as missing:
        Judge("anthropic/claude-sonnet-5-5")
    assert "ANTHROPIC_API_KEY" in str(missing.value)


# --------------------------------------------------------------------------- bulk runs


def test_annotate_many_with_results_cache_and_logs(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.enqueue(Reply.error(503, f"upstream said: bad key {KEY}"))
    fake_llm.responder = answer
    judge = Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    out, cache = tmp_path / "run" / "results.jsonl", tmp_path / "run" / "cache"
    stream = io.StringIO()
    run = annotate_many(
        leaky_traces(),
        judge,
        out=out,
        cache=cache,
        retry=FAST,
        progress=True,
        progress_stream=stream,
    )
    assert [a.status for a in run] == ["ok"] * 3 and run.summary.retries == 1
    # Rerun from the cache: the cached answers are read back, nothing new is sent.
    again = annotate_many(leaky_traces(), judge, out=out, cache=cache, progress=False)
    assert again.summary.resumed == 3
    assert assert_files_clean(tmp_path / "run") >= 2
    assert_clean(stream.getvalue(), "the progress output")
    assert_clean(caplog.text, "the logs")
    assert_clean(repr(run) + str(run.summary), "the run summary")
    assert_requests_clean(fake_llm)
    assert [a.redactions for a in mast.read_annotations(out)] == [
        {"github_token": 2, "api_key": 1}
    ] * 3


def test_a_stopped_run_keeps_the_key_out_of_its_exception(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.default = Reply.error(401, f"Incorrect API key provided: {KEY}")
    judge = Judge("openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0)
    with pytest.raises(RunStopped) as caught:
        annotate_many(leaky_traces(), judge, out=tmp_path / "r.jsonl", progress=False)
    assert_clean(str(caught.value) + repr(caught.value), "RunStopped")
    assert_clean(str(caught.value.run.summary), "the stopped run's summary")  # type: ignore[attr-defined]
    assert_files_clean(tmp_path)


def test_batch_mode(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.responder = answer
    judge = Judge(
        "anthropic/claude-sonnet-5-5",
        base_url=fake_llm.anthropic_base_url,
        api_key=KEY,
        fewshot=0,
    )
    out = tmp_path / "b" / "results.jsonl"

    def respond(request: Recorded) -> Reply:
        user = request.body["messages"][0]["content"]
        assert TRACE_SECRET not in user and KEY not in user
        return Reply.text(verdict_json(CODES, ("2.4",)))

    fake_llm.responder = respond
    run = annotate_many(
        leaky_traces(),
        judge,
        out=out,
        cache=tmp_path / "b" / "cache",
        batch=True,
        batch_poll_interval=0.01,
        progress=False,
    )
    assert [a.status for a in run] == ["ok"] * 3
    assert_files_clean(tmp_path / "b")
    for request in fake_llm.requests:
        assert_clean(request.raw, f"a batch request to {request.path}")


def test_mast_annotate_command(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the CLI reads the key from the environment
    inputs = tmp_path / "in" / "traces.jsonl"
    inputs.parent.mkdir()
    inputs.write_text("\n".join(t.model_dump_json() for t in leaky_traces()) + "\n")
    fake_llm.enqueue(Reply.error(500, f"echo {KEY}"), Reply.reset())
    fake_llm.responder = answer
    out = tmp_path / "out" / "results.jsonl"
    code = main(
        [
            "annotate", str(inputs), "--model", "openai/gpt-4o-mini",
            "--base-url", fake_llm.openai_base_url, "--out", str(out),
            "--cache", str(tmp_path / "out" / "cache"), "--fewshot", "0",
        ]
    )  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    assert "3 annotated" in captured.out
    assert_clean(captured.out + captured.err, "the command's output")
    assert_clean(caplog.text, "the logs")
    assert assert_files_clean(tmp_path / "out") >= 2
    assert_requests_clean(fake_llm)


def test_async_judge_in_a_running_loop(fake_llm: FakeLLMServer) -> None:
    fake_llm.responder = answer

    async def go() -> Any:
        async with Judge(
            "openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0
        ) as judge:
            return await asyncio.gather(*(judge.aannotate(t) for t in leaky_traces()))

    for ann in asyncio.run(go()):
        assert_clean(ann.model_dump_json(), "an async annotation")
