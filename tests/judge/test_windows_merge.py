"""Window merging on a long real trace (a ChatDev run from MAD, 191 steps, ~167k characters):
end-of-run modes come from the last window, a lone ungrounded window positive is dropped,
modes that span windows get a final pass, and max_input_tokens caps every request."""

from __future__ import annotations

import json
from pathlib import Path

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.judge.judge import Judge
from mast.judge.prompt.types import CHARS_PER_TOKEN, WindowInfo
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.judge.windows import WindowResult, merge, mode_kinds
from mast.taxonomy import load_taxonomy
from mast.traces.loaders import load_trace
from mast.traces.model import Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CODES = load_taxonomy().codes
KEY = "sk-windows-test-key-000000000000000ZZZZ"


def chatdev() -> Trace:
    return load_trace(
        FIXTURES / "mad_frameworks" / "chatdev" / "chatdev_madfull_ProgramDev_GPT4o_5.record.json"
    )


def answer(modes: dict[str, tuple[bool, list[dict[str, str]]]]) -> str:
    body = {
        code: {
            "evidence": modes.get(code, (False, []))[1],
            "rationale": f"about {code}",
            "present": modes.get(code, (False, []))[0],
            "confidence": 0.8,
        }
        for code in CODES
    }
    return json.dumps({"summary": "a part", "modes": body, "task_completed": True})


def quote_of(trace: Trace, step_id: str) -> dict[str, str]:
    content = next(s.content for s in trace.steps if s.id == step_id)
    return {"step_id": step_id, "quote": " ".join(content.split())[:60]}


def test_merge_rules_on_a_long_real_trace(fake_llm: FakeLLMServer) -> None:
    trace = chatdev()
    first, last = trace.steps[0].id, trace.steps[-1].id
    windows: list[list[str]] = []

    def respond(request: Recorded) -> Reply:
        user = request.body["messages"][-1]["content"]
        ids = [s.id for s in trace.steps if f"[{s.id}]" in user]
        if "Final review of a trace annotated in" in user:
            # the final pass sees the cited steps and confirms the repetition across parts
            return Reply.text(answer({"1.3": (True, [quote_of(trace, ids[0])])}))
        windows.append(ids)
        modes: dict[str, tuple[bool, list[dict[str, str]]]] = {}
        if first in ids:
            modes["3.2"] = (True, [quote_of(trace, first)])  # end-of-run mode, early window
            modes["2.1"] = (True, [])  # a lone positive with no evidence at all
            modes["1.3"] = (True, [quote_of(trace, first)])
        if last in ids:
            modes["1.5"] = (True, [quote_of(trace, last)])
        return Reply.text(answer(modes))

    fake_llm.responder = respond
    judge = Judge(
        "openai/gpt-4.1",  # a 1M-token context: only max_input_tokens makes windows
        base_url=fake_llm.openai_base_url,
        api_key=KEY,
        fewshot=0,
        max_tokens=1000,
        max_input_tokens=16_000,
    )
    ann = judge.annotate(trace)

    assert ann.status == "ok" and ann.windows == len(windows) >= 3
    assert [s for w in windows for s in w] == [s.id for s in trace.steps]
    assert len(fake_llm.requests) == ann.windows + 1  # plus the final pass
    for request in fake_llm.requests:
        chars = sum(len(m["content"]) for m in request.body["messages"])
        assert chars / CHARS_PER_TOKEN <= 16_000  # no request above max_input_tokens
    assert ann.judge["max_input_tokens"] == 16_000
    assert len(ann.judge["window_spans"]) == ann.windows
    # end-of-run modes: the last window decides (it said 3.2 absent, 1.5 present)
    assert ann.vector["3.2"] is False
    assert ann.vector["1.5"] is True
    assert any("3.2 needs the end of the run" in p for p in ann.problems)
    # a lone ungrounded window positive is dropped: unknown, not present
    assert ann.vector["2.1"] is None
    assert any("2.1 judged present" in p and "without grounded evidence" in p for p in ann.problems)
    # the final pass decides the modes that span windows, with grounded evidence
    assert ann.vector["1.3"] is True
    assert (ann.findings["1.3"].rationale or "").startswith("[final pass]")
    assert ann.findings["1.3"].grounded is True
    assert ann.vector["1.1"] is False


def _window(index: int, count: int, findings: dict[str, Finding]) -> WindowResult:
    info = WindowInfo(index=index, count=count, first=f"s{index}", last=f"s{index}", total=count)
    verdict = Verdict.from_findings(findings.values(), codes=CODES, format="json")
    return WindowResult(info=info, status="ok", verdict=verdict)


def _f(code: str, present: bool | None, grounded: bool | None = None) -> Finding:
    evidence = [] if grounded is None else [Evidence(step_id="s1", grounded=grounded)]
    return Finding(code=code, present=present, evidence=evidence)


def test_merge_rules_by_hand() -> None:
    kinds = mode_kinds(CODES)
    everything_absent = {c: _f(c, False) for c in CODES}
    first = _window(1, 3, {**everything_absent, "1.1": _f("1.1", True, grounded=False),
                           "1.2": _f("1.2", True, grounded=True),
                           "3.1": _f("3.1", True, grounded=True)})  # fmt: skip
    middle = _window(2, 3, dict(everything_absent))
    last = _window(3, 3, {**everything_absent, "3.3": _f("3.3", None)})
    merged = merge([first, middle, last], CODES, kinds=kinds)
    assert merged.vector["1.1"] is None  # ungrounded positive: dropped, unknown
    assert merged.vector["1.2"] is True  # grounded positive in any window
    assert merged.vector["3.1"] is False  # end of run: the last window said absent
    assert merged.vector["3.3"] is None  # the last window did not answer
    assert merged.vector["2.2"] is False
    # with the old rule ("present if any window says so") 1.1 and 3.1 would be True
    plain = merge([first, middle, last], CODES)
    assert plain.vector["3.1"] is True and plain.vector["1.1"] is None


def test_other_taxonomies_merge_every_mode_locally() -> None:
    assert set(mode_kinds(["1.5", "3.2"], "SRE").values()) == {"local"}


def test_windows_do_not_depend_on_earlier_answers(fake_llm: FakeLLMServer) -> None:
    """A trace's requests are the same whatever the judge saw before: a server reporting
    twice the estimated tokens for one trace does not make the next trace windowed (a
    rerun in another order would otherwise send other prompts and miss the cache)."""
    trace = chatdev()
    short = trace.model_copy(update={"id": "short", "steps": trace.steps[:6]})

    def respond(request: Recorded) -> Reply:
        chars = sum(len(m["content"]) for m in request.body["messages"])
        tokens = int(chars / CHARS_PER_TOKEN * 2)  # a tokenizer far less dense than assumed
        return Reply.text(answer({}), usage={"input": tokens, "output": 50})

    fake_llm.responder = respond

    def requests_for(first: Trace | None) -> list[str]:
        judge = Judge(
            "openai/gpt-4.1",
            base_url=fake_llm.openai_base_url,
            api_key=KEY,
            fewshot=0,
            max_tokens=1000,
            max_input_tokens=16_000,
        )
        if first is not None:
            judge.annotate(first)
        fake_llm.requests.clear()
        judge.annotate(trace.model_copy(update={"steps": trace.steps[:40]}))
        return [json.dumps(r.body["messages"]) for r in fake_llm.requests]

    assert requests_for(short) == requests_for(None)
