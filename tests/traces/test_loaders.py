from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mast
from mast.traces.loaders import TraceLoadWarning, formats
from mast.traces.model import Outcome, StepKind
from mast.traces.segment import SegmentationWarning

# --- AG2 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["AG2_trace1.json", "AG2_trace2.json", "AG2_trace3.json"])
def test_ag2_one_step_per_message_and_no_note_in_steps(fixtures: Path, name: str) -> None:
    path = fixtures / "ag2" / name
    raw = json.loads(path.read_text())
    trace = mast.load_trace(path)
    assert trace.format == "ag2"
    assert len(trace.steps) == len(raw["trajectory"])
    for step, message in zip(trace.steps, raw["trajectory"], strict=True):
        assert step.agent == message["name"] and step.role == message["role"]
        expected = message["content"]
        assert step.content == ("\n".join(expected) if isinstance(expected, list) else expected)
    note_text = " ".join(raw["note"]["text"])
    everything_a_judge_sees = trace.task or ""
    everything_a_judge_sees += "".join(s.content for s in trace.steps)
    assert note_text.strip() not in everything_a_judge_sees
    assert "note" not in trace.metadata  # the note is labels, not metadata a prompt could show
    assert [s.id for s in trace.steps] == [f"s{i}" for i in range(1, len(trace.steps) + 1)]


def test_ag2_note_becomes_labels(fixtures: Path) -> None:
    trace = mast.load_trace(fixtures / "ag2" / "AG2_trace1.json")
    note = trace.labels["note"]
    assert note["1.5"] is True  # "Unaware of stopping conditions": yes
    assert note["2.5"] is True  # "Ignoring good suggestions from other agent": yes
    assert note["1.3"] is False  # "Step repetition": no
    assert note["1.4"] is None  # the notes have no label for this mode: unknown, not "no"
    unmapped = trace.label_sources["note"].unmapped
    assert unmapped["Invented content"] is False
    assert trace.outcome is Outcome.SUCCESS  # other_data.correct is true


def test_ag2_odd_but_real_content_as_string(tmp_path: Path, fixtures: Path) -> None:
    raw = json.loads((fixtures / "ag2" / "AG2_trace2.json").read_text())
    for message in raw["trajectory"]:
        message["content"] = "\n".join(message["content"])
    del raw["note"]
    path = tmp_path / "ag2.json"
    path.write_text(json.dumps(raw))
    trace = mast.load_trace(path)
    assert trace.labels == {}
    assert trace.steps[0].content == raw["trajectory"][0]["content"]


def test_ag2_invalid(fixtures: Path) -> None:
    with pytest.raises(mast.TraceFormatError, match=r"'trajectory' is a .*, not a list") as info:
        mast.load_trace(fixtures / "bad" / "ag2_bad_trajectory.json")
    assert "ag2_bad_trajectory.json" in str(info.value)


# --- Who&When ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["algorithm-generated-102.json", "hand-crafted-12.json"])
def test_whoandwhen(fixtures: Path, name: str) -> None:
    path = fixtures / "whoandwhen" / name
    raw = json.loads(path.read_text())
    trace = mast.load_trace(path)
    assert trace.format == "whoandwhen"
    assert len(trace.steps) == len(raw["history"])
    assert [s.content for s in trace.steps] == [m["content"] for m in raw["history"]]
    assert trace.task == raw["question"]
    assert trace.metadata["mistake_agent"] == raw["mistake_agent"]
    assert trace.metadata["mistake_step"] == raw["mistake_step"]
    assert trace.metadata["mistake_step_id"] == f"s{int(raw['mistake_step']) + 1}"
    assert trace.outcome is Outcome.FAILURE
    # The question id is not unique per run (21 questions were run in both subsets).
    assert trace.metadata["question_id"] == raw["question_ID"]
    assert trace.id == "whoandwhen/" + "/".join(name.removesuffix(".json").rsplit("-", 1))


def test_whoandwhen_hand_crafted_has_no_names_so_roles_name_agents(fixtures: Path) -> None:
    trace = mast.load_trace(fixtures / "whoandwhen" / "hand-crafted-12.json")
    raw = json.loads((fixtures / "whoandwhen" / "hand-crafted-12.json").read_text())
    for step, message in zip(trace.steps, raw["history"], strict=True):
        assert step.agent == message.get("name", message["role"])


# --- chat messages -----------------------------------------------------------------------


def test_chat_list_with_tool_calls(fixtures: Path) -> None:
    trace = mast.load_trace(fixtures / "chat" / "messages_list.json")
    assert trace.format == "chat"
    kinds = [s.kind for s in trace.steps]
    assert kinds == [
        StepKind.SYSTEM,
        StepKind.MESSAGE,
        StepKind.MESSAGE,
        StepKind.TOOL_CALL,
        StepKind.TOOL_RESULT,
        StepKind.MESSAGE,
    ]
    call, result = trace.steps[3], trace.steps[4]
    assert call.tool_name == "search_flights"
    assert call.tool_args == {"from": "OSL", "to": "FCO", "date": "2025-05-03"}
    assert call.metadata["call_id"] == result.metadata["call_id"] == "call_1"
    assert trace.task == "Book me the cheapest flight from Oslo to Rome on 3 May."
    assert trace.id == "messages_list"


def test_chat_object_with_parts_and_parallel_calls(fixtures: Path) -> None:
    trace = mast.load_trace(fixtures / "chat" / "messages_object.json")
    assert trace.id == "support-42" and trace.task == "Reset the user's password"
    assert trace.metadata == {"env": "staging"}
    assert trace.steps[0].content == "I forgot my password."
    calls = [s for s in trace.steps if s.kind is StepKind.TOOL_CALL]
    assert [c.tool_name for c in calls] == ["reset_password", "send_email"]
    assert calls[1].tool_args == "not json"  # unparseable arguments are kept as text
    results = [s for s in trace.steps if s.kind is StepKind.TOOL_RESULT]
    assert [r.metadata["call_id"] for r in results] == ["c1", "c2"]


def test_chat_jsonl_is_one_trace(fixtures: Path) -> None:
    trace = mast.load_trace(fixtures / "chat" / "messages.jsonl")
    assert [s.content for s in trace.steps] == ["What is 2+2?", "4", "Thanks"]


def test_chat_missing_role(fixtures: Path) -> None:
    with pytest.raises(mast.TraceFormatError, match="message 1 has no 'role'"):
        mast.load_trace(fixtures / "bad" / "chat_missing_role.json")


# --- JSONL of traces -----------------------------------------------------------------------


def test_jsonl_of_mixed_traces(fixtures: Path) -> None:
    traces = list(mast.load_traces(fixtures / "chat" / "traces.jsonl"))
    assert [t.format for t in traces] == ["chat", "ag2", "whoandwhen"]
    assert traces[0].id == "conv-1"
    assert traces[1].source.endswith("#line 2")
    with pytest.raises(mast.TraceFormatError, match="more than one trace"):
        mast.load_trace(fixtures / "chat" / "traces.jsonl")


def test_one_bad_line_never_loses_the_others(fixtures: Path) -> None:
    path = fixtures / "bad" / "traces_one_bad_line.jsonl"
    errors: list[mast.TraceFormatError] = []
    traces = list(mast.load_traces(path, on_error="skip", errors=errors))
    assert [t.id for t in traces] == ["conv-1", "094b6ef4-9501-550d-b9f8-4d5330d07e34"]
    assert [e.location for e in errors] == ["line 2", "line 3"]
    assert "not valid JSON" in str(errors[0]) and "unknown trace shape" in str(errors[1])
    with pytest.raises(mast.TraceFormatError, match="line 2"):
        list(mast.load_traces(path))
    with pytest.warns(TraceLoadWarning) as record:
        assert len(list(mast.load_traces(path, on_error="warn"))) == 2
    assert ["(line 2)" in str(w.message) for w in record] == [True, False]


# --- mast's own format, round trip ---------------------------------------------------------


def test_trace_json_round_trip(tmp_path: Path, fixtures: Path) -> None:
    for source in [
        fixtures / "ag2" / "AG2_trace1.json",
        fixtures / "mad" / "human_sample.json",
        fixtures / "chat" / "messages_list.json",
    ]:
        for trace in mast.load_traces(source):
            out = tmp_path / "t.json"
            out.write_text(trace.model_dump_json())
            again = mast.load_trace(out)
            assert again.format == "mast"
            again.format, again.source = trace.format, trace.source
            assert again == trace
            assert again.labels.keys() == trace.labels.keys()


# --- plain text ------------------------------------------------------------------------------


def test_plain_text_is_one_unsegmented_step(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("agent A: hello\nagent B: hi\n")
    with pytest.warns(SegmentationWarning, match="no known log format markers"):
        trace = mast.load_trace(path)
    assert trace.format == "text" and trace.id == "run"
    assert not trace.segmented and len(trace.steps) == 1
    assert trace.steps[0].content == path.read_text()
    assert trace.steps[0].kind is StepKind.LOG


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.json", "empty file"),
        ("blank.txt", "empty file"),
        ("binary.bin", "binary file"),
        ("latin1.txt", "not UTF-8"),
        ("truncated.json", "not valid JSON"),
        ("unknown_shape.json", r"unknown trace shape \(found \['bar', 'foo'\]\)"),
        ("mad_full_missing_trajectory.json", "'trace' is not an object"),
    ],
)
def test_bad_files_raise_errors_naming_the_file(fixtures: Path, name: str, message: str) -> None:
    with pytest.raises(mast.TraceFormatError, match=message) as info:
        mast.load_trace(fixtures / "bad" / name)
    assert str(info.value).startswith(str(fixtures / "bad" / name))


def test_a_folder_with_bad_files_keeps_the_good_ones(tmp_path: Path, fixtures: Path) -> None:
    shutil.copytree(fixtures / "bad", tmp_path / "bad")
    shutil.copy(fixtures / "ag2" / "AG2_trace1.json", tmp_path / "good.json")
    (tmp_path / ".hidden").mkdir()
    shutil.copy(fixtures / "ag2" / "AG2_trace2.json", tmp_path / ".hidden" / "x.json")
    errors: list[mast.TraceFormatError] = []
    traces = list(mast.load_traces(tmp_path, on_error="skip", errors=errors))
    assert [t.id for t in traces] == [
        "conv-1",
        "094b6ef4-9501-550d-b9f8-4d5330d07e34",  # from the good lines of the JSONL
        "02da9c1f-7c36-5739-b723-33a7d4f8e7e7",
    ]
    assert len(errors) == 10  # 8 bad files (binary.bin is not a trace suffix) + 2 bad lines


def test_explicit_format_mismatch_and_unknown_format(fixtures: Path) -> None:
    with pytest.raises(mast.TraceFormatError, match="format 'whoandwhen'"):
        mast.load_trace(fixtures / "ag2" / "AG2_trace1.json", format="whoandwhen")
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        mast.load_trace(fixtures / "ag2" / "AG2_trace1.json", format="csv")


def test_sources_glob_and_missing(fixtures: Path) -> None:
    traces = list(mast.load_traces(str(fixtures / "ag2" / "AG2_trace*.json")))
    assert len(traces) == 3
    with pytest.raises(FileNotFoundError, match="no trace file"):
        list(mast.load_traces(fixtures / "nope" / "*.json"))
    assert set(formats()) >= {
        "mad-full",
        "mad-human",
        "ag2",
        "whoandwhen",
        "chat",
        "jsonl",
        "mast",
        "text",
    }
