"""Claude Code session files (fixtures written by the mast developers, see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mast
from mast.traces.model import StepKind

SESSION = "5c1d3f7e-2a4b-4c6d-8e9f-0a1b2c3d4e5f.jsonl"


@pytest.fixture
def session_path(fixtures: Path) -> Path:
    return fixtures / "claude_code" / SESSION


def test_session_is_one_trace_with_task_model_and_ids(session_path: Path) -> None:
    trace = mast.load_trace(session_path)
    assert trace.format == "claude-code" and trace.system == "Claude Code"
    assert trace.id == "5c1d3f7e-2a4b-4c6d-8e9f-0a1b2c3d4e5f"
    assert trace.model == "claude-sonnet-4-20250514"
    assert trace.task.startswith("The checkout test fails since yesterday's refactor.")
    assert trace.metadata["summaries"] == ["Fix failing cart checkout test"]
    assert trace.metadata["models"] == ["claude-sonnet-4-20250514", "claude-haiku-4-5-20251001"]


def test_lines_sharing_a_message_id_are_one_message(session_path: Path) -> None:
    raw = [json.loads(line) for line in session_path.read_text().splitlines()]
    same = [r for r in raw if (r.get("message") or {}).get("id") == "msg_01AbCdEf"]
    assert len(same) == 3  # thinking, text, tool_use written as three lines
    trace = mast.load_trace(session_path)
    parts = [s for s in trace.steps if s.metadata.get("uuid") == same[0]["uuid"]]
    assert [p.kind for p in parts] == [StepKind.MESSAGE, StepKind.MESSAGE, StepKind.TOOL_CALL]
    assert parts[0].metadata["thinking"] is True
    assert [p.content for p in parts[:2]] == [
        "Run the test first to see the failure.",
        "Let me run the failing test first.",
    ]
    assert trace.metadata["merged_lines"] == 2
    # usage is counted once per message, not once per line
    assert trace.metadata["usage"]["input_tokens"] == 12 * 6


def test_tool_use_and_results_share_ids(session_path: Path) -> None:
    trace = mast.load_trace(session_path)
    calls = {s.metadata["call_id"]: s for s in trace.steps if s.kind is StepKind.TOOL_CALL}
    results = {s.metadata["call_id"]: s for s in trace.steps if s.kind is StepKind.TOOL_RESULT}
    assert (
        set(calls)
        == set(results)
        == {"toolu_01Run", "toolu_01Task", "toolu_01Grep", "toolu_01Edit"}
    )
    for call_id, result in results.items():
        assert result.tool_name == calls[call_id].tool_name
        assert result.index > calls[call_id].index
    assert calls["toolu_01Run"].tool_args == {
        "command": "pytest tests/test_checkout.py -q",
        "description": "Run checkout tests",
    }
    assert results["toolu_01Edit"].metadata["is_error"] is True
    assert results["toolu_01Grep"].content.startswith("shop/checkout.py:42:")  # list content joined


def test_sidechain_turns_are_marked_with_their_agent(session_path: Path) -> None:
    trace = mast.load_trace(session_path)
    side = [s for s in trace.steps if s.metadata.get("is_sidechain")]
    assert len(side) == 4
    assert {s.metadata["subagent"] for s in side} == {"Explore"}
    assert {s.metadata["agent_id"] for s in side} == {"a1b2c3d4"}
    # the prompt comes from the parent agent; the sub-agent's own turns carry its name
    assert side[0].agent == "claude" and side[0].role == "user"
    assert [s.agent for s in side[1:] if s.role == "assistant"] == ["Explore", "Explore"]
    assert trace.metadata["subagents"] == ["Explore"]
    main = [s for s in trace.steps if s.role == "assistant" and not s.metadata.get("is_sidechain")]
    assert {s.agent for s in main} == {"claude"}


def test_injected_user_text_is_system(session_path: Path) -> None:
    trace = mast.load_trace(session_path)
    caveat, command = trace.steps[0], trace.steps[1]
    assert caveat.content.startswith("Caveat:") and caveat.kind is StepKind.SYSTEM
    assert command.content.startswith("<command-name>/clear") and command.kind is StepKind.SYSTEM
    assert caveat.agent == command.agent == "claude-code"
    hook = trace.steps[-1]
    assert hook.kind is StepKind.LOG and hook.content == "Stop hook feedback: tests were not re-run"


def test_subagent_file_alone_and_old_sidechains_without_agent_id(
    tmp_path: Path, session_path: Path
) -> None:
    raw = [json.loads(line) for line in session_path.read_text().splitlines()]
    side = [r for r in raw if r.get("isSidechain")]
    sub = tmp_path / "agent-a1b2c3d4.jsonl"
    sub.write_text("\n".join(json.dumps(r) for r in side) + "\n")
    trace = mast.load_trace(sub)
    assert {s.agent for s in trace.steps if s.role == "assistant"} == {"subagent:a1b2c3d4"}
    # older files: sidechains inline with no agentId; the Task prompt still names them
    for r in raw:
        r.pop("agentId", None)
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(json.dumps(r) for r in raw) + "\n")
    trace = mast.load_trace(old)
    assert {s.metadata["subagent"] for s in trace.steps if s.metadata.get("is_sidechain")} == {
        "Explore"
    }


def test_a_broken_line_is_kept_as_a_log_step(tmp_path: Path, session_path: Path) -> None:
    lines = session_path.read_text().splitlines()
    lines.insert(6, '{"parentUuid": "x", "type": "user", "message": {"role": "us')
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    trace = mast.load_trace(path)
    assert trace.metadata["unparsed_lines"] == [7]
    kept = next(s for s in trace.steps if s.kind is StepKind.LOG and s.metadata.get("line") == 7)
    assert kept.content == lines[6]
    # in file order: after the message whose lines it interrupted (merged at its first line)
    assert trace.steps[kept.index - 1].metadata["call_id"] == "toolu_01Run"
    assert trace.steps[kept.index + 1].metadata["call_id"] == "toolu_01Run"  # the result


def test_only_summary_lines_is_an_error(fixtures: Path) -> None:
    path = fixtures / "claude_code" / "only_summaries.jsonl"
    with pytest.raises(
        mast.TraceFormatError, match="no Claude Code user/assistant entries"
    ) as info:
        mast.load_trace(path)
    assert str(info.value).startswith(str(path))
