"""A long trace is prepared off the event loop (here in a thread: the path without a process
pool): while a 1 MB trace is redacted, rendered and parsed, a small trace annotated at the
same time reaches the server and is done.

Checked by the order of events, not by timing: the long trace's redaction waits until the
server has received the small trace's request. If that wait happened on the event loop,
the small trace could never be sent and the wait would run out."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import mast
from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json
from mast.judge.offload.loop import OFF_LOOP_CHARS, off_loop
from mast.privacy.redact import Redactor
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

CODES = load_taxonomy().codes


class WaitingRedactor(Redactor):
    """Redacts the trace named "long" only once the small trace's request was received."""

    def __init__(self, small_sent: threading.Event) -> None:
        super().__init__()
        self.small_sent = small_sent
        self.waited_on: list[str] = []

    def redact_trace(self, trace: Trace) -> tuple[Trace, dict[str, int]]:
        if trace.id == "long":
            self.waited_on.append(threading.current_thread().name)
            if not self.small_sent.wait(timeout=15):
                raise AssertionError("the small trace was never sent: the event loop was blocked")
        return super().redact_trace(trace)


def test_a_long_trace_does_not_hold_up_a_small_one(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no key literal: our redactor stays
    small_sent = threading.Event()
    order: list[str] = []

    def answer(request: Recorded) -> Reply:
        name = "long" if "LONG-TRACE" in json.dumps(request.body) else "small"
        order.append(name)
        if name == "small":
            small_sent.set()
        return Reply.text(verdict_json(CODES, ("1.3",)))

    fake_llm.responder = answer
    line = "LONG-TRACE tool output: " + "x" * 200
    long = Trace(
        id="long", steps=[Step.make(i, line, agent=f"a{i % 2}") for i in range(4700)]
    )  # about 1 MB
    small = Trace(id="small", steps=[Step.make(0, "Add 2 and 2. The sum is 4.", agent="a")])
    assert long.text_length >= 1_000_000 > OFF_LOOP_CHARS > small.text_length
    redactor = WaitingRedactor(small_sent)
    judge = mast.Judge(
        "openai/gpt-4.1", base_url=fake_llm.openai_base_url, fewshot=0, redact=redactor
    )
    # The long trace comes first and starts first (concurrency 2).
    run = mast.annotate_many(
        [long, small], judge, concurrency=2, cache=False, progress=False, process_pool=False
    )
    assert [a.status for a in run] == ["ok", "ok"]
    assert order[0] == "small" and "long" in order
    assert redactor.waited_on and redactor.waited_on[0] != "MainThread"


def test_short_work_stays_inline() -> None:
    import asyncio

    threads: list[str] = []

    def where(_: str) -> str:
        threads.append(threading.current_thread().name)
        return "done"

    asyncio.run(off_loop(10, where, "x"))
    asyncio.run(off_loop(OFF_LOOP_CHARS, where, "x"))
    assert threads[0] == "MainThread" and threads[1] != "MainThread"
