"""Traces from tracing platforms and eval logs: Inspect AI, Langfuse, LangSmith, Phoenix.

The fixtures were written by the platforms' own code (see the ``make_fixtures.py`` beside
them): Inspect's log writer with its offline ``mockllm`` model, and the Langfuse, LangSmith
and Phoenix SDKs' models of their export shapes. Every test loads with ``format="auto"``
unless it is about naming the format.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

import mast
from mast.errors import TraceFormatError
from mast.traces.loaders import formats
from mast.traces.model import Outcome, StepKind, Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INSPECT = FIXTURES / "inspect"
PLATFORMS = FIXTURES / "platforms"

# The same agent run in every platform fixture: what a reader must make of it.
UNIT_STEPS = [
    ("system", StepKind.SYSTEM, None),
    ("user", StepKind.MESSAGE, None),
    ("assistant", StepKind.TOOL_CALL, "convert"),
    ("tool", StepKind.TOOL_RESULT, "convert"),
    ("assistant", StepKind.TOOL_CALL, "convert"),  # the repeated call stays: it is data
    ("tool", StepKind.TOOL_RESULT, "convert"),
    ("assistant", StepKind.MESSAGE, None),
]


def _shape(trace: Trace) -> list[tuple[str | None, StepKind, str | None]]:
    return [(s.role, s.kind, s.tool_name) for s in trace.steps]


# --- Inspect AI ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mast_fixture.eval", "mast_fixture.json"])
def test_inspect_log_one_trace_per_sample(name: str) -> None:
    traces = list(mast.load_traces(INSPECT / name))
    assert [t.id for t in traces] == ["mast_fixture/add-1", "mast_fixture/capital-1"]
    assert {t.format for t in traces} == {"inspect"}
    add, capital = traces
    # The score is the outcome: C(orrect) succeeds, I(ncorrect) fails.
    assert (add.outcome, capital.outcome) == (Outcome.SUCCESS, Outcome.FAILURE)
    assert add.metadata["inspect"]["score"] == {"scorer": "match", "value": "C"}
    assert add.task == "What is 17 + 25? Use the add tool." and add.model == "mockllm/model"
    assert [(s.role, s.kind) for s in add.steps] == [
        ("system", StepKind.SYSTEM),
        ("user", StepKind.MESSAGE),
        ("assistant", StepKind.MESSAGE),
        ("assistant", StepKind.TOOL_CALL),
        ("tool", StepKind.TOOL_RESULT),
        ("assistant", StepKind.MESSAGE),
    ]
    call, result = add.steps[3], add.steps[4]
    assert call.tool_name == "add" and call.tool_args == {"x": 17, "y": 25}
    assert result.content == "42" and result.metadata["call_id"] == call.metadata["call_id"]
    assert capital.steps[-1].content == "The capital of Australia is Sydney."
    assert add.source == f"{INSPECT / name}#sample add-1"


def test_both_inspect_formats_give_the_same_traces() -> None:
    zipped = list(mast.load_traces(INSPECT / "mast_fixture.eval"))
    plain = list(mast.load_traces(INSPECT / "mast_fixture.json"))
    for a, b in zip(zipped, plain, strict=True):
        assert [s.content for s in a.steps] == [s.content for s in b.steps]


def test_a_folder_picks_up_eval_archives(tmp_path: Path) -> None:
    shutil.copy(INSPECT / "mast_fixture.eval", tmp_path / "run.eval")
    assert len(list(mast.load_traces(tmp_path))) == 2


def _rezip(tmp_path: Path, replace: dict[str, bytes | None]) -> Path:
    """A copy of the .eval fixture with members replaced (stored uncompressed) or dropped."""
    from mast.traces.loaders._inspect import _member

    out = tmp_path / "edited.eval"
    source = INSPECT / "mast_fixture.eval"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = replace.get(name, _member(src, source, name))
            if data is not None:
                dst.writestr(name, data)
    return out


def test_one_broken_sample_never_loses_the_others(tmp_path: Path) -> None:
    path = _rezip(tmp_path, {"samples/add-1_epoch_1.json": b"{not json"})
    errors: list[TraceFormatError] = []
    traces = list(mast.load_traces(path, on_error="skip", errors=errors))
    assert [t.id for t in traces] == ["mast_fixture/capital-1"]
    (err,) = errors
    assert err.location == "samples/add-1_epoch_1.json" and str(path) in str(err)


def test_an_archive_without_header_says_what_it_expected(tmp_path: Path) -> None:
    path = _rezip(tmp_path, {"header.json": None, "_journal/start.json": None})
    with pytest.raises(TraceFormatError, match=r"without header\.json") as info:
        list(mast.load_traces(path))
    assert "Inspect" in str(info.value) and str(path) in str(info.value)


def test_a_truncated_archive_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.eval"
    path.write_bytes((INSPECT / "mast_fixture.eval").read_bytes()[:2000])
    with pytest.raises(TraceFormatError, match="not a readable zip archive"):
        mast.load_trace(path)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="zipfile reads zstd itself from 3.14")
def test_zstd_archive_without_zstandard_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    errors: list[TraceFormatError] = []
    assert (
        list(mast.load_traces(INSPECT / "mast_fixture.eval", on_error="skip", errors=errors)) == []
    )
    assert "mast-annotator[inspect]" in str(errors[0])


# --- Langfuse, LangSmith, Phoenix ------------------------------------------------------------


def _observations() -> list[dict[str, object]]:
    text = (PLATFORMS / "langfuse_observations.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("langfuse_trace.json", "langfuse"),
        ("langfuse_observations.jsonl", "langfuse"),
        ("langsmith_run.json", "langsmith"),
        ("langsmith_runs.jsonl", "langsmith"),
        ("phoenix_spans.json", "otel"),
    ],
)
def test_platform_exports_are_sniffed_and_read_as_one_run(name: str, fmt: str) -> None:
    trace = mast.load_trace(PLATFORMS / name)
    assert trace.format == fmt
    steps = _shape(trace)
    if fmt == "otel":  # Phoenix spans: the root agent span's input is placed first
        steps[0], steps[1] = steps[1], steps[0]
    assert steps == UNIT_STEPS
    assert trace.steps[-1].content == "26.2 miles is about 42.16 km."
    calls = [s for s in trace.steps if s.kind == StepKind.TOOL_CALL]
    results = [s for s in trace.steps if s.kind == StepKind.TOOL_RESULT]
    assert [c.tool_args for c in calls] == [
        {"value": 26.2, "from_unit": "mile", "to_unit": "km"}
    ] * 2
    assert [r.metadata["call_id"] for r in results] == [c.metadata["call_id"] for c in calls]
    assert trace.task == "How many kilometres is 26.2 miles?"


def test_history_repeated_in_every_model_call_is_shown_once() -> None:
    trace = mast.load_trace(PLATFORMS / "langfuse_trace.json")
    # Each generation logged the whole conversation so far: the 2nd repeats 4 messages
    # (system, user, first call, its result), the 3rd repeats 6.
    assert trace.metadata["repeated_inputs_skipped"] == 0 + 4 + 6
    assert trace.id == "7f3c2b1a9d8e4f6a8b7c6d5e4f3a2b1c" and trace.model == "gpt-4.1-mini"
    assert trace.metadata["scores"][0]["name"] == "correct"
    assert {s.agent for s in trace.steps} == {"unit-agent"}  # the enclosing AGENT observation
    assert trace.steps[2].metadata["observation_id"] == "obs-gen-1"


def test_langfuse_api_pages_and_arrays_group_by_trace(tmp_path: Path) -> None:
    rows = [
        json.loads(x) for x in (PLATFORMS / "langfuse_observations.jsonl").read_text().splitlines()
    ]
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"data": rows, "meta": {"page": 1, "totalItems": len(rows)}}))
    array = tmp_path / "array.json"
    array.write_text(json.dumps(rows, indent=1))
    # A second trace's observations interleaved: two traces, neither mixed into the other.
    other = [dict(r, traceId="0" * 31 + "1", id=r["id"] + "-b") for r in rows[:2]]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(json.dumps(r) for r in [*rows, *other]) + "\n")
    for path in (page, array):
        assert _shape(mast.load_trace(path)) == UNIT_STEPS
    traces = list(mast.load_traces(mixed))
    # The other trace: system, user, the first call, and its root AGENT's final output.
    assert sorted(len(t.steps) for t in traces) == [4, 7]


def test_langfuse_observation_without_trace_id_is_named(tmp_path: Path) -> None:
    rows = [
        json.loads(x) for x in (PLATFORMS / "langfuse_observations.jsonl").read_text().splitlines()
    ]
    del rows[2]["traceId"]
    path = tmp_path / "obs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(TraceFormatError, match="'obs-tool-1' has no 'traceId'") as info:
        list(mast.load_traces(path, format="langfuse"))
    assert str(path) in str(info.value)


def test_langsmith_flat_runs_need_their_root(tmp_path: Path) -> None:
    lines = (PLATFORMS / "langsmith_runs.jsonl").read_text().splitlines()
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines[1:]) + "\n")  # the root run left out of the export
    with pytest.raises(TraceFormatError, match="has 5 root runs") as info:
        list(mast.load_traces(path))
    assert "list_runs(trace_id=" in str(info.value)


def test_langsmith_errors_and_openai_style_messages(tmp_path: Path) -> None:
    root = {
        "id": "r1",
        "name": "graph",
        "run_type": "chain",
        "inputs": {"question": "q?"},
        "outputs": None,
        "error": "GraphRecursionError: limit 25 reached",
        "child_runs": [
            {
                "id": "r2",
                "name": "agent",
                "run_type": "chain",
                "inputs": {},
                "child_runs": [
                    {
                        "id": "r3",
                        "name": "llm",
                        "run_type": "llm",
                        "inputs": {"messages": [{"role": "user", "content": "q?"}]},
                        "outputs": {
                            "choices": [{"message": {"role": "assistant", "content": "a"}}]
                        },
                    },
                ],
            },
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(root))
    trace = mast.load_trace(path)
    assert [(s.agent, s.role, s.kind, s.content) for s in trace.steps] == [
        ("agent", "user", StepKind.MESSAGE, "q?"),
        ("agent", "assistant", StepKind.MESSAGE, "a"),
        ("graph", None, StepKind.LOG, "error in graph: GraphRecursionError: limit 25 reached"),
    ]


def test_phoenix_nested_attributes_read_like_flat_otlp(tmp_path: Path) -> None:
    from mast.traces.loaders._phoenix import flatten

    page = json.loads((PLATFORMS / "phoenix_spans.json").read_text())
    flat = [
        {**span, "attributes": flatten(span["attributes"]), "span_kind": None}
        for span in page["data"]
    ]
    for span in flat:
        del span["span_kind"]
    jsonl = tmp_path / "spans.jsonl"
    jsonl.write_text("\n".join(json.dumps(s) for s in flat) + "\n")
    nested = mast.load_trace(PLATFORMS / "phoenix_spans.json")
    plain = mast.load_trace(jsonl)
    assert [s.content for s in nested.steps] == [s.content for s in plain.steps]
    assert nested.metadata["root_span_id"] == "00f067aa0ba902b7"


def test_new_formats_are_listed_and_can_be_named() -> None:
    names = formats()
    for name in ("inspect", "langfuse", "langsmith"):
        assert name in names
    assert "Phoenix" in names["otel"]
    trace = mast.load_trace(PLATFORMS / "langsmith_run.json", format="langsmith")
    assert trace.format == "langsmith"
    with pytest.raises(TraceFormatError, match="not a LangSmith run"):
        mast.load_trace(PLATFORMS / "langfuse_trace.json", format="langsmith")


def test_docstring_examples_run() -> None:
    import doctest
    import importlib

    for name in ("_steps", "_langfuse", "_langsmith", "_phoenix"):
        module = importlib.import_module(f"mast.traces.loaders.{name}")
        result = doctest.testmod(module, raise_on_error=False)
        assert result.attempted > 0 and result.failed == 0, name
