"""Codex CLI sessions: rollout files and the ``codex exec --json`` stream (fixtures written by
the mast developers from the field names of the Codex CLI, see fixtures/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mast
from mast.traces.model import StepKind

ROLLOUT = "rollout-2026-01-15T17-50-01-019bc26a-8a6c-7f43-8605-0aa1c35bd7f8.jsonl"


@pytest.fixture
def codex(fixtures: Path) -> Path:
    return fixtures / "codex"


def test_rollout_steps_pairs_and_metadata(codex: Path) -> None:
    trace = mast.load_trace(codex / ROLLOUT)
    assert trace.format == "codex"
    assert trace.id == "019bc26a-8a6c-7f43-8605-0aa1c35bd7f8"
    assert trace.model == "gpt-oss-120b" and trace.system == "Codex CLI"
    assert (
        trace.task
        == "Investigate the incident in the snapshot and write agent_output.json as instructed."
    )
    calls = [s for s in trace.steps if s.kind is StepKind.TOOL_CALL]
    results = [s for s in trace.steps if s.kind is StepKind.TOOL_RESULT]
    assert [c.metadata["call_id"] for c in calls] == [
        "call_A1",
        "call_A2",
        "call_A3",
        "call_A4",
        "call_A5",
    ]
    assert [r.metadata["call_id"] for r in results] == [c.metadata["call_id"] for c in calls]
    for call, result in zip(calls, results, strict=True):
        assert result.index == call.index + 1  # each output right after its call here
        assert result.tool_name == call.tool_name
    assert calls[0].tool_args == {
        "command": ["bash", "-lc", "ls /data/snapshots/Scenario-2 && cat alerts/summary.txt"],
        "workdir": "/runs/Scenario-2/1",
    }
    assert calls[3].tool_name == "apply_patch" and calls[3].content.startswith("*** Begin Patch")
    # the three output shapes Codex wrote: string, {content, success}, list of content items
    assert results[0].content.startswith('{"output": "alertname')
    assert results[1].metadata["success"] is False
    assert results[2].content.startswith("flagd-config  ConfigMap")
    meta = trace.metadata
    assert meta["usage"]["total_tokens"] == 18844  # the last token_count wins, not a sum
    assert meta["task_complete"] is True
    assert meta["session_cli_version"] == "0.80.0"
    assert [s.id for s in trace.steps] == [f"s{i}" for i in range(1, len(trace.steps) + 1)]


def test_invalid_json_tool_arguments_are_kept_raw(codex: Path) -> None:
    trace = mast.load_trace(codex / ROLLOUT)
    call = next(s for s in trace.steps if s.metadata.get("call_id") == "call_A2")
    raw = next(
        json.loads(line)["payload"]["arguments"]
        for line in (codex / ROLLOUT).read_text().splitlines()
        if '"call_A2"' in line and '"function_call"' in line
    )
    with pytest.raises(ValueError):
        json.loads(raw)
    assert call.tool_args == raw and call.content == raw
    assert call.metadata["arguments_not_json"] is True


def test_event_msg_copies_are_not_shown_twice(codex: Path) -> None:
    trace = mast.load_trace(codex / ROLLOUT)
    texts = [s.content for s in trace.steps]
    assert texts.count(trace.task) == 1
    final = "Diagnosis written to agent_output.json: root cause otel-demo/ConfigMap/flagd-config."
    assert texts.count(final) == 1
    assert texts.count("Start with the firing alerts, then look for recent config changes.") == 1
    assert trace.metadata["skipped"] == {
        "event_msg.agent_message (copy of a response_item)": 1,
        "event_msg.agent_reasoning (copy of a reasoning item)": 1,
        "event_msg.user_message (copy of a response_item)": 1,
    }


def test_repeated_instructions_are_deduplicated_and_counted(codex: Path) -> None:
    raw_lines = (codex / ROLLOUT).read_text().splitlines()
    instructions = json.loads(raw_lines[0])["payload"]["instructions"]
    repeats_in_file = sum(line.count("You are an SRE agent diagnosing") for line in raw_lines)
    assert repeats_in_file == 5  # session_meta, 3 turn contexts, one developer message
    trace = mast.load_trace(codex / ROLLOUT)
    full_copies = [s for s in trace.steps if s.content == instructions]
    assert len(full_copies) == 1 and full_copies[0].id == "s1"
    reference = next(s for s in trace.steps if s.role == "developer")
    assert reference.content == "[repeated instructions: same text as s1]"
    assert reference.metadata["repeat_of"] == "s1"
    assert trace.metadata["deduplicated_instructions"] == {
        "repeats_replaced": 1,
        "turn_context_repeats_dropped": 3,
        "total": 4,
        "chars_removed": len(instructions) - len(reference.content),
    }


def test_injected_context_is_system_not_the_user(codex: Path) -> None:
    trace = mast.load_trace(codex / ROLLOUT)
    env = trace.steps[1]
    assert env.content.startswith("<environment_context>")
    assert env.kind is StepKind.SYSTEM and env.metadata["injected"] is True
    assert env.role == "user"  # as written; the kind says who really wrote it


def test_aborted_run_without_assistant_text_cut_mid_line(codex: Path) -> None:
    trace = mast.load_trace(codex / "session_aborted.jsonl")
    meta = trace.metadata
    assert meta["no_assistant_text"] is True
    assert meta["turn_aborted"] == ["interrupted"]
    assert meta["truncated"] is True and meta["unparsed_lines"] == [13]
    assert meta["skipped"] == {"reasoning without readable text (encrypted)": 1}
    kinds = [s.kind for s in trace.steps]
    assert kinds[-1] is StepKind.LOG and trace.steps[-1].metadata["line"] == 13
    assert trace.steps[-1].content.startswith('{"timestamp": "2026-01-15T18:25:06.000Z"')
    aborted = next(s for s in trace.steps if s.content == "turn aborted: interrupted")
    assert aborted.kind is StepKind.LOG
    # an unanswered call stays a call with no result
    call = next(s for s in trace.steps if s.metadata.get("call_id") == "call_B2")
    assert not any(
        s.kind is StepKind.TOOL_RESULT and s.metadata.get("call_id") == "call_B2"
        for s in trace.steps
    )
    assert call.kind is StepKind.TOOL_CALL
    # the harness's "resume" nudge is a user message like any other
    nudge = trace.steps[aborted.index + 1]
    assert nudge.role == "user" and nudge.content.startswith("I don't see agent_output.json")


def test_session_meta_line_longer_than_the_sniff_window(tmp_path: Path, codex: Path) -> None:
    lines = (codex / ROLLOUT).read_text().splitlines()
    first = json.loads(lines[0])
    first["payload"]["instructions"] *= 120  # ~100 KB, as real harness prompts are
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert len(json.dumps(first)) > 64 * 1024
    trace = mast.load_trace(path)
    assert trace.format == "codex" and trace.steps[0].content == first["payload"]["instructions"]


def test_exec_stream_with_stderr_lines(codex: Path) -> None:
    trace = mast.load_trace(codex / "exec_stream.jsonl")
    assert trace.format == "codex-exec"
    assert trace.id == "019bc300-1111-7c0d-8e2f-3a4b5c6d7e8f"
    assert trace.metadata["non_json_lines"] == [1, 7]
    assert (
        trace.steps[0].kind is StepKind.LOG
        and trace.steps[0].content == "Reading prompt from stdin..."
    )
    assert trace.metadata["usage"] == {
        "input_tokens": 24113,
        "cached_input_tokens": 20480,
        "output_tokens": 733,
    }
    cmd_call, cmd_result = trace.steps[2], trace.steps[3]
    assert cmd_call.kind is StepKind.TOOL_CALL and cmd_result.kind is StepKind.TOOL_RESULT
    assert cmd_call.metadata["call_id"] == cmd_result.metadata["call_id"] == "item_1"
    assert cmd_result.metadata["exit_code"] == 0
    failed = next(s for s in trace.steps if s.metadata.get("exit_code") == 127)
    assert failed.metadata["status"] == "failed"
    mcp = next(s for s in trace.steps if s.tool_name == "sre.get_metrics")
    assert mcp.tool_args == {"service": "frontend-proxy", "metric": "http_5xx_rate"}
    last = trace.steps[-1]  # started, never completed: the capture ended while it ran
    assert last.metadata["incomplete"] is True and last.kind is StepKind.TOOL_CALL
    assert [
        s.content for s in trace.steps if s.role == "assistant" and s.kind is StepKind.MESSAGE
    ] == [
        "**Checking alerts first**",
        "The frontend-proxy is overloaded; accounting stopped receiving requests. "
        "Writing the diagnosis.",
    ]


def test_folder_of_sessions_is_one_trace_per_file(tmp_path: Path, codex: Path) -> None:
    shutil.copytree(codex, tmp_path / "codex")
    traces = list(mast.load_traces(tmp_path))
    assert sorted(t.format for t in traces) == ["codex", "codex", "codex-exec"]


# --- invalid ------------------------------------------------------------------------------------


def test_named_format_on_the_wrong_file(fixtures: Path) -> None:
    with pytest.raises(mast.TraceFormatError, match="no Codex session events") as info:
        mast.load_trace(fixtures / "chat" / "messages.jsonl", format="codex")
    assert "format 'codex'" in str(info.value)
    with pytest.raises(mast.TraceFormatError, match="no codex exec events"):
        mast.load_trace(fixtures / "codex" / ROLLOUT, format="codex-exec")


def test_payload_of_the_wrong_type_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "rollout-bad.jsonl"
    path.write_text(
        json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}})
        + "\n"
        + json.dumps({"timestamp": "t", "type": "response_item", "payload": "oops"})
        + "\n"
    )
    trace = mast.load_trace(path)
    assert trace.metadata["skipped"] == {"response_item without payload": 1}
    assert trace.steps == []
