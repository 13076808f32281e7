"""Fuzzing the loaders and the answer parser: hostile input gives a result or a MastError.

Every loader (``mast.load_trace`` on arbitrary bytes, on arbitrary JSON, and on real fixture
files of each format with parts replaced by odd values) and ``parse_response`` on arbitrary
text must return a ``Trace`` / ``Verdict`` or raise a :class:`~mast.errors.MastError` that
names the file, in bounded time, without memory blow-up; a loaded trace must also render
into a prompt and go through redaction. Huge single lines and deep nesting are tested
directly.

The default profile is fast (a few seconds). For a long run::

    MAST_FUZZ_PROFILE=long pytest tests/test_fuzz.py      # 20x the examples
    MAST_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz.py     # or name the count
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.errors import MastError, VerdictParseError
from mast.judge.prompt.render import render
from mast.judge.reply.parse import parse_response
from mast.judge.verdict import Verdict
from mast.privacy.redact import Redactor
from mast.traces.loaders import formats, load_trace
from mast.traces.model import Trace

FIXTURES = Path(__file__).parent / "fixtures"
_PROFILE = os.environ.get("MAST_FUZZ_PROFILE", "fast")
_SCALE = 20 if _PROFILE == "long" else 1
_OVERRIDE = os.environ.get("MAST_FUZZ_EXAMPLES")
# Seconds one input may take before it counts as a hang: a guard against catastrophic
# backtracking (minutes), not a performance claim (those live in bench/); generous because
# CI and shared machines are slow and loaded.
PER_INPUT_SECONDS = 30.0

T = TypeVar("T")


def fuzz(examples: int) -> Callable[[T], T]:
    """Hypothesis settings: ``examples`` in the fast profile, scaled for long runs."""
    count = int(_OVERRIDE) if _OVERRIDE else examples * _SCALE
    return settings(  # type: ignore[return-value]
        max_examples=count,
        deadline=None,  # timing is checked by `bounded`, which also stops real hangs
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=_PROFILE != "long",  # the default suite is reproducible
        database=None,
    )


class Hang(Exception):
    """One input took longer than PER_INPUT_SECONDS."""


@contextlib.contextmanager
def bounded(seconds: float = PER_INPUT_SECONDS) -> Iterator[None]:
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no result within {seconds}s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_TMP = Path(tempfile.mkdtemp(prefix="mast-fuzz-"))


def load_bytes(data: bytes, suffix: str = ".json", format: str = "auto") -> Trace | MastError:
    """Write ``data`` to a file and load it; a MastError is returned, anything else raises."""
    path = _TMP / f"input{suffix}"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loaders warn about odd input; that is allowed
        try:
            with bounded():
                trace = load_trace(path, format=format)
        except MastError as exc:
            assert str(path) in str(exc) or path.name in str(exc), f"no file named in: {exc}"
            return exc
    check_trace(trace)
    return trace


def check_trace(trace: Trace) -> None:
    """A loaded trace is usable downstream: it validates, renders and redacts."""
    assert isinstance(trace, Trace)
    assert [s.id for s in trace.steps] == [f"s{i + 1}" for i in range(len(trace.steps))]
    with bounded():
        Trace.model_validate(trace.model_dump())
        render(trace, system="static")
        Redactor().redact_trace(trace)


# --------------------------------------------------------------------------- strategies

KEYS = [
    # Keys the loaders look for, so random documents reach past the first check.
    "role", "content", "name", "type", "payload", "messages", "trajectory", "history", "steps",
    "id", "trace", "annotations", "mast_annotation", "tool_calls", "function", "arguments",
    "text", "parts", "attributes", "key", "value", "stringValue", "spans", "scopeSpans",
    "resourceSpans", "traceId", "spanId", "parentSpanId", "startTimeUnixNano", "uuid",
    "sessionId", "parentUuid", "message", "item", "call_id", "output", "note", "mistake_agent",
    "mistake_step", "question", "task", "labels", "index", "trace_id", "mas_name",
    "benchmark_name", "llm_name", "kind", "tool_name", "tool_args", "summary", "leafUuid",
]  # fmt: skip
WORDS = ["", "user", "assistant", "tool", "system", "function_call", "message",
         "response_item", "event_msg", "session_meta", "item.completed", "thread.started",
         "1.1", "yes", "no", "NaN", "s1", "{", "[", "\n", "\x00", "\ud7ff\ue000", "🙂" * 3,
         '{"role": "user"}', "[1, 2", "null"]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(WORDS),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


class RawLine(str):
    """A line of a JSONL fixture that is not JSON (stderr, a line cut short): kept as is."""


def _line(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return RawLine(text)


def dump_line(value: Any) -> str:
    return str(value) if isinstance(value, RawLine) else json.dumps(value)


def seeds() -> list[tuple[str, str, Any]]:
    """(name, layout, parsed document) of real fixture files of every format."""
    out: list[tuple[str, str, Any]] = []
    for path in [
        FIXTURES / "ag2" / "AG2_trace3.json",
        FIXTURES / "whoandwhen" / "algorithm-generated-102.json",
        FIXTURES / "mad" / "human_with_nan.json",
        FIXTURES / "mad_frameworks" / "metagpt" / "metagpt_human_r1_programdev.record.json",
        FIXTURES / "chat" / "messages_object.json",
        FIXTURES / "chat" / "messages_list.json",
        FIXTURES / "itbench" / "runs" / "Scenario-2" / "1" / "agent_output.json",
    ]:
        text = path.read_text(encoding="utf-8")
        out.append((path.name, "json", json.loads(text.replace("NaN", "null"))))
    for path in [
        FIXTURES / "chat" / "messages.jsonl",
        FIXTURES / "chat" / "traces.jsonl",
        FIXTURES / "codex" / "exec_stream.jsonl",
        FIXTURES / "codex" / "session_aborted.jsonl",
        next((FIXTURES / "codex").glob("rollout-*.jsonl")),
        FIXTURES / "claude_code" / "5c1d3f7e-2a4b-4c6d-8e9f-0a1b2c3d4e5f.jsonl",
    ]:
        lines = [_line(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        out.append((path.name, "jsonl", lines))
    out.append(("otlp.json", "json", OTLP))
    return out


# A small OTLP JSON document with GenAI attributes (the shape the exporters write).
OTLP: dict[str, Any] = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "agent"},
                    "spans": [
                        {
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "spanId": "eee19b7ec3c1b174",
                            "name": "chat gpt-4.1",
                            "kind": 3,
                            "startTimeUnixNano": "1768496400000000000",
                            "endTimeUnixNano": "1768496401000000000",
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                {
                                    "key": "gen_ai.input.messages",
                                    "value": {
                                        "stringValue": json.dumps(
                                            [{"role": "user", "parts": [{"type": "text",
                                                                         "content": "Why?"}]}]
                                        )
                                    },
                                },
                                {
                                    "key": "gen_ai.output.messages",
                                    "value": {
                                        "stringValue": json.dumps(
                                            [{"role": "assistant", "parts": [
                                                {"type": "text", "content": "Disk full."}]}]
                                        )
                                    },
                                },
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                            ],
                            "status": {"code": 1},
                        }
                    ],
                }
            ],
        }
    ]
}  # fmt: skip

SEEDS = seeds()


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths_of(v, (*prefix, i))
    return out


def mutate(doc: Any, path: tuple[Any, ...], action: str, new: Any) -> Any:
    """``doc`` with the value at ``path`` replaced, deleted, or wrapped in a list."""
    doc = copy.deepcopy(doc)
    if not path:
        return new if action != "wrap" else [doc]
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "wrap":
        parent[last] = [parent[last]]
    else:
        parent[last] = new
    return doc


# --------------------------------------------------------------------------- loaders


@fuzz(150)
@given(data=st.binary(max_size=3000), suffix=st.sampled_from([".json", ".jsonl", ".txt", ".log"]))
def test_arbitrary_bytes(data: bytes, suffix: str) -> None:
    load_bytes(data, suffix)


@fuzz(150)
@given(text=st.text(max_size=2000), suffix=st.sampled_from([".json", ".jsonl", ".txt"]))
def test_arbitrary_text(text: str, suffix: str) -> None:
    load_bytes(text.encode("utf-8", errors="surrogatepass"), suffix)


@fuzz(150)
@given(
    value=json_values,
    layout=st.sampled_from(["json", "jsonl", "array", "lines"]),
    format=st.sampled_from(["auto", *sorted(set(formats()) - {"itbench"})]),
)
def test_arbitrary_json_documents(value: Any, layout: str, format: str) -> None:
    if layout == "json":
        data = json.dumps(value)
    elif layout == "array":
        data = json.dumps([value, value])
    elif layout == "lines":
        items = value if isinstance(value, list) and value else [value]
        data = "\n".join(json.dumps(v) for v in items)
    else:
        data = json.dumps(value) + "\n" + json.dumps(value)
    load_bytes(data.encode("utf-8", errors="surrogatepass"), ".jsonl", format)


@fuzz(200)
@given(data=st.data())
def test_real_files_with_odd_parts(data: st.DataObject) -> None:
    """Each real format, with a few of its values replaced by odd ones, keys deleted, or
    values wrapped in lists: a trace or a TraceFormatError that names the file."""
    _name, layout, doc = data.draw(st.sampled_from(SEEDS), label="seed")
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        paths = paths_of(doc)
        path = data.draw(st.sampled_from(paths), label="path")
        action = data.draw(st.sampled_from(["replace", "delete", "wrap"]), label="action")
        if action == "delete" and not path:
            action = "replace"
        doc = mutate(doc, path, action, data.draw(json_values, label="new"))
    if layout == "jsonl" and isinstance(doc, list):
        text = "\n".join(dump_line(line) for line in doc)
    else:
        text = json.dumps(doc)
    suffix = ".jsonl" if layout == "jsonl" else ".json"
    load_bytes(text.encode("utf-8", errors="surrogatepass"), suffix)


DEEP: dict[str, Callable[[], str]] = {
    "deep array": lambda: "[" * 200_000,
    "deep closed array": lambda: "[" * 100_000 + "]" * 100_000,
    "deep object": lambda: '{"messages": ' + '{"a": ' * 100_000,
    "deep in a record": lambda: '[{"messages": [{"role": "user", "content": "hi"}], "x": '
    + "[" * 50_000 + "]" * 50_000 + "}]",
    "deep chat field": lambda: '{"messages": [{"role": "user", "content": ' + "[" * 5_000
    + "]" * 5_000 + "}]}",
    "deep jsonl line": lambda: '{"role": "user", "content": "a"}\n'
    + "[" * 100_000 + "]" * 100_000,
    "deep session line": lambda: '{"type": "thread.started", "thread_id": "t"}\n'
    '{"type": "item.completed", "item": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "deep tool arguments": lambda: json.dumps({"messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments":
         "[" * 50_000 + "]" * 50_000}}]}]}),
    "moderately deep content": lambda: json.dumps({"messages": [{"role": "user", "content":
        json.loads("[" * 900 + "]" * 900)}]}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_nesting_is_refused_promptly(name: str) -> None:
    text = DEEP[name]()
    start = time.perf_counter()
    for suffix in (".json", ".jsonl"):
        load_bytes(text.encode(), suffix)
    assert time.perf_counter() - start < 2 * PER_INPUT_SECONDS


@pytest.mark.parametrize(
    "text",
    [
        "[2025-03-02 10:14:03] user_proxy (to assistant):\nHello\n",
        "[INFO] starting\n[INFO] done\n",
        "[1/3] compiling\n",
    ],
)
def test_logs_starting_with_a_bracket_are_text(text: str) -> None:
    """Found by the injection corpus: such logs were read as JSON arrays and failed."""
    trace = load_bytes(text.encode(), ".log")
    assert isinstance(trace, Trace) and trace.format == "text"
    assert trace.steps[0].content.startswith(text.split("\n")[0])


HUGE = 20_000_000

_HUGE_SCRIPT = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from pathlib import Path
import mast
path, kind, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
makers = {
    "text": lambda: "A" * n,
    "chat": lambda: json.dumps({"messages": [{"role": "user", "content": "x" * n}]}),
    "unterminated": lambda: '{"role": "user", "content": "' + "x" * n,
    "braces": lambda: "{" * n,
    "numbers": lambda: "[" + "1," * (n // 2) + "1]",
}
path.write_text(makers[kind]())
del makers
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    trace = mast.load_trace(path)
    result = f"trace:{len(trace.steps)}"
except mast.MastError as exc:
    result = "error:" + type(exc).__name__
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"result": result, "seconds": time.perf_counter() - start, "grown_mb": grown}))
"""


@pytest.mark.parametrize("kind", ["text", "chat", "unterminated", "braces", "numbers"])
def test_a_huge_single_line_loads_or_fails_promptly(kind: str, tmp_path: Path) -> None:
    """20 MB without a newline, in a separate process with a hard memory cap (2 GB)."""
    script = tmp_path / "huge.py"
    script.write_text(_HUGE_SCRIPT)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", f"{limit}; exec(open({str(script)!r}).read())",
         str(tmp_path / "huge.json"), kind, str(HUGE)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["result"].startswith(("trace:", "error:")), report
    assert report["seconds"] < 30, report
    # The input is 20 MB; a few copies of it are fine, a blow-up is not.
    assert report["grown_mb"] < 800, report


# --------------------------------------------------------------------------- parse_response

ANSWER_BITS = [
    "1.1", "1.2 Disobey Role Specification:", "2.6", "3.3", "FM-2.5", "yes", "no", "Yes.",
    "**No**", "null", "true", "false", "unclear", "@@", "A.", "B.", "C.", "{", "}", "[", "]",
    '"modes":', '"present":', '"evidence":', '"step_id": "s3"', '"quote": "x"', ",", ":",
    '"1.1": {"present": true}', "```json", "```", "\n", " ", "'", '"', "\\", "…",
    "<<<BEGIN MAST-TRACE-0123456789ABCDEF>>>", "<<<END MAST-TRACE-0123456789ABCDEF>>>",
    '{"summary": "s", "modes": {', "task_completed",
]  # fmt: skip


def parse_checked(text: str, **kwargs: Any) -> Verdict | VerdictParseError:
    try:
        with bounded():
            verdict = parse_response(text, **kwargs)
    except VerdictParseError as exc:
        assert exc.raw == text
        return exc
    assert isinstance(verdict, Verdict)
    assert set(verdict.vector) == set(verdict.findings)
    Verdict.model_validate(verdict.model_dump())
    return verdict


@fuzz(200)
@given(text=st.text(max_size=3000))
def test_parse_arbitrary_text(text: str) -> None:
    parse_checked(text)


@fuzz(200)
@given(
    bits=st.lists(st.sampled_from(ANSWER_BITS) | st.text(max_size=12), max_size=80),
    boundary=st.sampled_from([None, "MAST-TRACE-0123456789ABCDEF"]),
)
def test_parse_answer_like_text(bits: list[str], boundary: str | None) -> None:
    text = " ".join(bits)
    parse_checked(text, boundary=boundary, prompt_text="prompt\n1.1 Disobey Task Specification: no")


@fuzz(100)
@given(value=json_values)
def test_parse_json_values(value: Any) -> None:
    for text in (json.dumps(value), json.dumps({"modes": value}), json.dumps(value)[:-1]):
        parse_checked(text)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 1_000_000,
        "[" * 1_000_000,
        "[{" * 500_000,
        '{"modes": ' * 100_000,
        '{"a": [' * 100_000 + "]}" * 100_000,
        "1.1 yes " * 150_000,
        "<<<BEGIN MAST-TRACE-0123456789ABCDEF>>>\n" * 30_000,
        '{"modes": {"1.1": {"present": true, "evidence": [' + '{"step_id": 1},' * 60_000,
        "x" * 2_000_000,
    ],
    ids=lambda t: f"{t[:12]!r}x{len(t)}",
)
def test_parse_huge_answers_promptly(text: str) -> None:
    """Answers of 1–2 MB (a model's answer is capped by max_tokens, well below that)."""
    start = time.perf_counter()
    parse_checked(text)
    assert time.perf_counter() - start < PER_INPUT_SECONDS
