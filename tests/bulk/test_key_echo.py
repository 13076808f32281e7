"""A server that echoes the judge's key in a successful answer leaves no trace of it on disk.

Servers and proxies echo request headers. Here the local server answers HTTP 200 with the
judge's API key (and the password of the ``base_url``) inside the answer text (summary,
rationales, evidence quotes), the model name and the response id. Every file written by
``annotate_many`` (results, cache, batch state), a rerun from the cache, batch mode, the
``mast annotate`` command, the logs (DEBUG), the printed output and the annotations
themselves are searched for the key in every form a scrubber must handle.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.bulk.runner import annotate_many
from mast.cli import main
from mast.judge.judge import Judge
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes
KEY = "sk-proj-EchoedJudgeKey7Xq2mLr8ZkP1vW7aN3bC6dE0gH5jK"
URL_PASSWORD = "proxy-pw-9f3Xq2mLr8Zk"
NEEDLES = (KEY, URL_PASSWORD)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def traces(n: int = 3) -> list[Trace]:
    return [
        Trace(
            id=f"t{i}",
            task=f"Task {i}: deploy.",
            steps=[
                Step.make(0, f"Deploying service {i}.", agent="ops"),
                Step.make(1, "Done, no tests run.", agent="ops"),
            ],
        )
        for i in range(n)
    ]


def echoing_verdict() -> str:
    """A verdict whose text repeats the request's credentials, as a leaky proxy might."""
    modes: dict[str, Any] = {
        code: {"evidence": [], "rationale": "", "present": False, "confidence": 0.5}
        for code in CODES
    }
    modes["3.2"] = {
        "evidence": [{"step_id": "s2", "quote": f"Authorization: Bearer {KEY}"}],
        "rationale": f"request had api_key={KEY} via https://bot:{URL_PASSWORD}@proxy",
        "present": True,
        "confidence": 0.9,
    }
    summary = f"Echo: key {KEY}, escaped {json.dumps(KEY)}, proxy password {URL_PASSWORD}"
    return json.dumps({"summary": summary, "modes": modes, "task_completed": False})


def echo_reply(request: Recorded | None = None) -> Reply:
    reply = Reply.text(echoing_verdict())
    reply.model = f"gpt-4.1 (key {KEY})"
    reply.response_id = f"chatcmpl-{KEY}"
    return reply


def assert_clean(text: str | bytes, where: str, needles: tuple[str, ...] = NEEDLES) -> None:
    for needle in needles:
        forms = {needle, json.dumps(needle)[1:-1]}
        for form in forms:
            probe = form.encode() if isinstance(text, bytes) else form
            assert probe not in text, f"{needle[:10]}… found in {where}"


def assert_files_clean(root: Path) -> int:
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        assert_clean(path.read_bytes(), str(path))
    return len(files)


def judge(server: FakeLLMServer, provider: str = "openai") -> Judge:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    url = base.replace("http://", f"http://bot:{URL_PASSWORD}@")
    model = "openai/gpt-4.1" if provider == "openai" else "anthropic/claude-sonnet-5-5"
    with pytest.warns(UserWarning, match="carries a user name and password"):
        return Judge(model, base_url=url, api_key=KEY, fewshot=0)


def test_one_trace(fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.responder = echo_reply
    ann = judge(fake_llm).annotate(traces(1)[0])
    assert ann.ok and ann.vector["3.2"] is True
    assert ann.judge["response_ids"] and ann.judge["response_model"]
    assert "[REDACTED:api_key]" in (ann.summary or "")
    assert_clean(ann.model_dump_json(), "the annotation")
    assert_clean(repr(ann), "repr(annotation)")
    # The user:password never reaches the HTTP client (it is taken out of the URL), so the
    # request URL it logs at INFO has none; the key went as the Bearer credential.
    assert "HTTP Request: POST http://127.0.0.1" in caplog.text
    assert fake_llm.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert_clean(caplog.text, "the logs")


def test_credentials_in_the_base_url_are_never_sent_nor_kept(fake_llm: FakeLLMServer) -> None:
    # before: httpx sent "Authorization: Basic base64(user:pw)" instead of the Bearer key
    # (a 401 blamed on OPENAI_API_KEY), and a server echoing that header put the base64 of
    # user:pw in the results, the cache and the error text
    basic = base64.b64encode(f"bot:{URL_PASSWORD}".encode()).decode()

    def echo_headers(request: Recorded | None = None) -> Reply:
        assert request is not None
        seen = request.headers.get("authorization", "")
        verdict = json.loads(echoing_verdict())
        verdict["summary"] = f"headers: {seen}; as if basic: Basic {basic}"
        return Reply.text(json.dumps(verdict))

    fake_llm.responder = echo_headers
    ann = judge(fake_llm).annotate(traces(1)[0])
    assert ann.ok
    assert fake_llm.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert_clean(ann.model_dump_json(), "the annotation", (*NEEDLES, basic))
    assert URL_PASSWORD not in repr(judge(fake_llm))


def test_annotate_many_results_cache_and_rerun(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.responder = echo_reply
    out, cache = tmp_path / "run" / "results.jsonl", tmp_path / "run" / "cache"
    stream = io.StringIO()
    run = annotate_many(
        traces(), judge(fake_llm), out=out, cache=cache, progress=True, progress_stream=stream
    )
    assert [a.status for a in run] == ["ok"] * 3
    again = annotate_many(traces(), judge(fake_llm), out=out, cache=cache, progress=False)
    assert again.summary.resumed == 3
    fresh = tmp_path / "run" / "from-cache.jsonl"
    annotate_many(traces(), judge(fake_llm), out=fresh, cache=cache, progress=False)
    assert [a.summary for a in mast.read_annotations(fresh)] == [a.summary for a in run]
    assert assert_files_clean(tmp_path / "run") >= 3
    assert_clean(stream.getvalue() + str(run.summary), "the progress output and summary")
    assert_clean(caplog.text, "the logs")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_mode(fake_llm: FakeLLMServer, tmp_path: Path, provider: str) -> None:
    fake_llm.responder = echo_reply
    run = annotate_many(
        traces(),
        judge(fake_llm, provider),
        out=tmp_path / "b" / "results.jsonl",
        cache=tmp_path / "b" / "cache",
        batch=True,
        batch_poll_interval=0.01,
        progress=False,
    )
    assert [a.status for a in run] == ["ok"] * 3
    assert fake_llm.batch_requests, "the answers came through the batch API"
    assert assert_files_clean(tmp_path / "b") >= 2


def test_mast_annotate_command(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    inputs = tmp_path / "in" / "traces.jsonl"
    inputs.parent.mkdir()
    inputs.write_text("\n".join(t.model_dump_json() for t in traces()) + "\n")
    fake_llm.responder = echo_reply
    out = tmp_path / "out" / "results.jsonl"
    url = fake_llm.openai_base_url.replace("http://", f"http://bot:{URL_PASSWORD}@")
    cache = str(tmp_path / "out" / "cache")
    with warnings.catch_warnings():  # printed by the command as one line, not an error here
        warnings.filterwarnings("default", "the openai server URL carries", UserWarning)
        code = main(
            ["annotate", str(inputs), "--model", "openai/gpt-4o-mini", "--base-url", url,
             "--out", str(out), "--cache", cache, "--fewshot", "0"]
        )  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    assert "carries a user name and password" in captured.err
    assert_clean(captured.out + captured.err, "the command's output")
    assert_clean(caplog.text, "the logs")
    assert assert_files_clean(tmp_path / "out") >= 2


def test_an_old_cache_entry_with_the_key_is_scrubbed_when_read(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """A cache written before scrubbing existed still never puts the key in results."""
    from mast.bulk.cache import CACHE_FILE, ResponseCache
    from mast.judge.providers import Completion
    from mast.judge.providers.usage import Usage

    fake_llm.responder = echo_reply
    cache_dir = tmp_path / "cache"
    annotate_many(traces(1), judge(fake_llm), out=tmp_path / "a.jsonl", cache=cache_dir)
    with sqlite3.connect(cache_dir / CACHE_FILE) as db:
        keys = [row[0] for row in db.execute("SELECT key FROM responses")]
    assert len(keys) == 1
    with ResponseCache(cache_dir) as store:  # the unscrubbed answer, as an old version kept it
        old = Completion(echoing_verdict(), Usage(), f"m-{KEY}", f"id-{KEY}", 0.1)
        store.put(keys[0], old, provider="openai", model="gpt-4.1", replace=True)
    assert KEY.encode() in (cache_dir / CACHE_FILE).read_bytes() or _in_wal(cache_dir)
    out = tmp_path / "b.jsonl"
    run = annotate_many(traces(1), judge(fake_llm), out=out, cache=cache_dir, progress=False)
    assert run.summary.resumed == 0 and [a.status for a in run] == ["ok"]
    assert len(fake_llm.requests) == 1, "the answer came from the cache"
    assert_clean(out.read_bytes(), "results read from an old cache")


def _in_wal(folder: Path) -> bool:
    return any(KEY.encode() in p.read_bytes() for p in folder.glob("*-wal"))


def test_platform_credentials_are_scrubbed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bedrock signs with the AWS secret key and sends the session token as a header: an
    echo of either is scrubbed like the key (and errors lose them too)."""
    from mast.judge.providers import Completion
    from mast.judge.providers.usage import Usage

    secret, session = "wJalrXUtnFI/K7MDENG/bPxRfiCYz3Xq2mLr8ZkP1", "IQoJb3JpZ2luX2VjEXq3vB7nK2mR9tY"
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAZ3K9QX2M7V4R8T1W")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", session)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    bedrock = Judge("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", fewshot=0)
    echoed = Completion(f"signed with {secret}, token {session}", Usage(), session, secret, 0.1)
    clean = bedrock.scrubber.completion(echoed)
    for value in (clean.text, clean.model, clean.response_id or ""):
        assert secret not in value and session not in value
    assert "platform-credentials" not in bedrock.scrubber.literals, "the marker is no secret"
    assert bedrock.provider is not None
    error = bedrock.provider._translate_error(RuntimeError(f"denied for {secret}"), "m")
    assert secret not in str(error)
