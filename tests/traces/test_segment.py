"""Segmenters for MAD framework logs, tested on one real trace per framework.

Fixtures: ``fixtures/mad_frameworks/<framework>/`` hold real MAD records; ``derived/`` holds
the same runs in the other shapes MAD and the frameworks use (see fixtures/README.md).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast.traces.model import Step, StepKind
from mast.traces.segment import (
    FRAMEWORKS,
    Segmentation,
    SegmentationWarning,
    _registry,
    canonical_framework,
    detect_framework,
    reassemble,
    segment,
    squash,
    unsegmented,
)

FW = Path(__file__).parents[1] / "fixtures" / "mad_frameworks"
DERIVED = FW / "derived"

RECORDS = {
    "AG2": "ag2/ag2_human_r1_gsmplus_monica.record.json",
    "AppWorld": "appworld/appworld_human_r2_b119b1f_2.record.json",
    "ChatDev": "chatdev/chatdev_madfull_ProgramDev_GPT4o_5.record.json",
    "HyperAgent": "hyperagent/hyperagent_human_r2_sklearn-25570.record.json",
    "Magentic-One": "magentic_one_gaia/magentic_human_gen_gaia.record.json",
    "MetaGPT": "metagpt/metagpt_human_gen_mmlu.record.json",
    "OpenManus": "openmanus/openmanus_human_gen_gaia.record.json",
}
# Every agent each run's log names (and only those).
AGENTS = {
    "AG2": {"mathproxyagent", "assistant"},
    "AppWorld": {"user", "Supervisor", "spotify"},
    "ChatDev": {
        "Chief Executive Officer",
        "Chief Product Officer",
        "Chief Technology Officer",
        "Programmer",
        "Code Reviewer",
        "Counselor",
    },
    "HyperAgent": {"Planner", "Navigator", "Editor", "Executor"},
    "Magentic-One": {"user", "MagenticOneOrchestrator", "WebSurfer"},
    "MetaGPT": {"Human", "SimpleCoder", "SimpleTester", "SimpleReviewer"},
    "OpenManus": {"Manus", "PlanningFlow"},
}
# A second real MetaGPT run, stored as {"run_id", "prompt", "content": <loguru log>, …}.
METAGPT_RUN_RECORD = "metagpt/metagpt_human_r1_programdev.record.json"
DERIVED_SHAPES = {
    "ag2_monica.yaml_dump.txt": "AG2",
    "ag2_trace2.dict_repr.txt": "AG2",
    "ag2_trace3.console.txt": "AG2",
    "hyperagent_sklearn.yaml_dump.txt": "HyperAgent",
    "hyperagent_sklearn.dict_repr.txt": "HyperAgent",
    "metagpt_mmlu.loguru.txt": "MetaGPT",
    "magentic_gaia.typed_console.txt": "Magentic-One",
}


def record(framework: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FW / RECORDS[framework]).read_text(encoding="utf-8"))
    return data


def trace_text(framework: str) -> str:
    trace = record(framework)["trace"]
    return str(trace["trajectory"] if isinstance(trace, dict) else trace)


def derived(name: str) -> str:
    return (DERIVED / name).read_text(encoding="utf-8")


def seg_of(framework: str) -> Segmentation:
    return segment(trace_text(framework), framework=record(framework)["mas_name"])


def agents(seg: Segmentation) -> set[str]:
    return {s.agent for s in seg.steps if s.agent is not None}


def by_call(steps: list[Step]) -> dict[str, dict[StepKind, list[Step]]]:
    """call id -> {kind: steps}, to check pairing."""
    out: dict[str, dict[StepKind, list[Step]]] = {}
    for s in steps:
        cid = s.metadata.get("call_id")
        if cid is not None:
            out.setdefault(cid, {}).setdefault(s.kind, []).append(s)
    return out


def assert_results_follow_calls(steps: list[Step]) -> None:
    """Every result names a call made earlier in the trace; call ids are unique."""
    seen: set[str] = set()
    for s in steps:
        cid = s.metadata.get("call_id")
        if s.kind is StepKind.TOOL_CALL:
            assert cid and cid not in seen, s
            seen.add(cid)
        elif cid is not None:
            assert s.kind is StepKind.TOOL_RESULT and cid in seen, s


# --- expected source text for the round trip, computed without the segmenters ----------------


def _joined(value: Any) -> str:
    return "\n".join(value) if isinstance(value, list) else str(value)


def source_of_wrapped(run: dict[str, Any]) -> str:
    """A serialized run's trajectory as text: what its steps must cover."""
    if "trajectory" not in run:
        return str(run["content"])  # MetaGPT's run record
    traj = run["trajectory"]
    if all(isinstance(x, str) for x in traj):
        return "\n".join(traj)
    return "\n".join(_joined(m["content"]) for m in traj)


def expected_source(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return source_of_wrapped(json.loads(text))
        except ValueError:
            pass
        blocks = [ast.literal_eval(b) for b in re.findall(r"\{'content'.*?'name': '\w+'\}", text)]
        if blocks:
            return "\n".join(_joined(b["content"]) for b in blocks)
        return source_of_wrapped(ast.literal_eval(text))
    if stripped.startswith("instance_id:"):
        # YAML-like dump: the trajectory section, up to the next top-level key.
        section = re.search(r"^trajectory:\n(.*?)(?=^note:|\Z)", text, re.M | re.S)
        assert section is not None
        return section.group(1)
    return text


ALL_SOURCES = (
    [pytest.param(fw, id=fw) for fw in RECORDS]
    + [pytest.param(METAGPT_RUN_RECORD, id="MetaGPT-run-record")]
    + [pytest.param(name, id=name) for name in DERIVED_SHAPES]
)


def load_any(key: str) -> tuple[str, str | None]:
    if key in RECORDS:
        return trace_text(key), record(key)["mas_name"]
    if key == METAGPT_RUN_RECORD:
        data = json.loads((FW / key).read_text(encoding="utf-8"))
        return data["trace"], data["mas_name"]
    return derived(key), None


# --- every sample ---------------------------------------------------------------------------


@pytest.mark.parametrize("framework", RECORDS)
def test_sample_segments_into_the_framework_agents(framework: str) -> None:
    seg = seg_of(framework)
    assert seg.segmented and seg.framework == framework
    assert agents(seg) == AGENTS[framework]
    assert [s.id for s in seg.steps] == [f"s{i}" for i in range(1, len(seg.steps) + 1)]
    assert all(s.content.strip() for s in seg.steps)
    # every agent turn is a message, call or result; system text and noise have no agent
    kinds_with_agents = {s.kind for s in seg.steps if s.agent is not None}
    assert StepKind.LOG not in kinds_with_agents
    assert len(seg.steps) >= 9


@pytest.mark.parametrize("key", ALL_SOURCES)
def test_round_trip_keeps_every_character(key: str) -> None:
    text, framework = load_any(key)
    seg = segment(text, framework=framework)
    assert seg.segmented
    assert squash(reassemble(seg.steps)) == squash(expected_source(text))


@pytest.mark.parametrize("key", ALL_SOURCES)
def test_step_ids_are_stable(key: str) -> None:
    text, framework = load_any(key)
    first, second = segment(text, framework=framework), segment(text, framework=framework)
    assert first.steps == second.steps
    assert [s.model_dump() for s in first.steps] == [s.model_dump() for s in second.steps]


@pytest.mark.parametrize("framework", RECORDS)
def test_detected_from_text_without_a_name(framework: str) -> None:
    text = trace_text(framework)
    assert detect_framework(text) == framework
    seg = segment(text)
    assert seg.framework == framework and seg.segmented and seg.reason is None
    assert seg.steps == seg_of(framework).steps


@pytest.mark.parametrize(("name", "framework"), DERIVED_SHAPES.items())
def test_other_shapes_are_detected(name: str, framework: str) -> None:
    text = derived(name)
    assert detect_framework(text) == framework
    seg = segment(text)
    assert seg.segmented and seg.framework == framework


def test_tasks_are_taken_from_the_trace_text() -> None:
    monica = json.loads(record("AG2")["trace"])["problem_statement"][0]
    assert seg_of("AG2").task == monica
    assert segment(derived("ag2_monica.yaml_dump.txt")).task == monica
    assert seg_of("AppWorld").task == (
        "Keep going to the next song on Spotify until you reach a song by Lily Moon."
    )
    assert seg_of("ChatDev").task == (
        "write a program that generates Fibonacci numbers up to a given number"
    )
    assert seg_of("HyperAgent").task.startswith(  # type: ignore[union-attr]
        "ColumnTransformer with pandas output can't handle transformers with no features"
    )
    assert "\r" not in seg_of("HyperAgent").task  # type: ignore[operator]
    assert seg_of("Magentic-One").task == (
        "How many at bats did the Yankee with the most walks in the 1977 regular season "
        "have that same season?"
    )
    assert seg_of("MetaGPT").task.startswith(  # type: ignore[union-attr]
        "The following are multiple choice questions (with answers) about "
        "high_school_computer_science."
    )
    assert seg_of("OpenManus").task is None  # its log never prints the prompt


# --- per framework --------------------------------------------------------------------------


def test_ag2_json_messages_and_no_note() -> None:
    run = json.loads(record("AG2")["trace"])
    seg = seg_of("AG2")
    assert [(s.agent, s.role) for s in seg.steps] == [
        (m["name"], m["role"]) for m in run["trajectory"]
    ]
    assert [s.content for s in seg.steps] == [
        "\n".join(m["content"]).strip() for m in run["trajectory"]
    ]
    assert seg.metadata["excluded"] == ["other_data", "note"]
    assert seg.metadata["instance_id"] == run["instance_id"]
    dumped = json.dumps([s.model_dump() for s in seg.steps])
    assert run["note"]["text"][0].strip()[:60] not in dumped
    assert "seed_solution" not in dumped and "<<144/12=12>>" not in dumped


@pytest.mark.parametrize(
    ("name", "note_words"),
    [
        ("ag2_monica.yaml_dump.txt", "keeps asking to continue even if it was clear"),
        ("hyperagent_sklearn.yaml_dump.txt", "The agents decides to substitute this"),
        ("hyperagent_sklearn.dict_repr.txt", "The agents decides to substitute this"),
    ],
)
def test_dumps_keep_note_and_other_data_out_of_steps(name: str, note_words: str) -> None:
    text = derived(name)
    assert note_words in text  # the fixture does carry the labels
    seg = segment(text)
    dumped = json.dumps([s.model_dump() for s in seg.steps])
    assert note_words not in dumped and "Unaware of stopping conditions" not in dumped
    assert "note" in seg.metadata["excluded"]
    assert "<<144/12=12>>" not in dumped  # AG2 other_data: the reference solution


def test_ag2_yaml_dump_matches_the_json_run() -> None:
    from_json, from_yaml = seg_of("AG2"), segment(derived("ag2_monica.yaml_dump.txt"))
    assert [(s.agent, s.role, s.content) for s in from_yaml.steps] == [
        (s.agent, s.role, s.content) for s in from_json.steps
    ]
    assert from_yaml.steps[0].metadata["header"] == "content:"
    assert from_yaml.steps[0].metadata["footer"] == "role: assistant\nname: mathproxyagent"


def test_ag2_code_is_a_tool_call_answered_by_the_proxy() -> None:
    for name in ("ag2_trace2.dict_repr.txt", "ag2_trace3.console.txt"):
        seg = segment(derived(name))
        assert_results_follow_calls(seg.steps)
        (call,) = [s for s in seg.steps if s.kind is StepKind.TOOL_CALL]
        (result,) = [s for s in seg.steps if s.kind is StepKind.TOOL_RESULT]
        assert call.agent == "assistant" and result.agent == "mathproxyagent"
        assert call.metadata["call_id"] == result.metadata["call_id"]
        assert "print(" in call.tool_args["code"]
    assert result.content == "Shark length: 120.000000000000 inches"
    dict_repr = segment(derived("ag2_trace2.dict_repr.txt"))
    assert [s.content for s in dict_repr.steps if s.kind is StepKind.TOOL_RESULT] == ["63"]


def test_chatdev_turns_prompts_and_noise() -> None:
    text = trace_text("ChatDev")
    seg = seg_of("ChatDev")
    messages = [s for s in seg.steps if s.kind is StepKind.MESSAGE]
    speakers = re.findall(
        r"^\[[^\]]+\] ([^:\n*]+): \*\*(?!\[(?:chatting|RolePlaying)\])", text, re.M
    )
    assert [s.agent for s in messages] == speakers  # one message per speaker entry
    coding = next(s for s in messages if s.metadata.get("phase") == "Coding")
    assert coding.agent == "Programmer" and coding.role == "assistant"
    assert coding.metadata["recipient"] == "Chief Technology Officer"
    assert coding.content.startswith("### Step 1: Planning the Architecture")
    # the counterpart's system prompt is its own step, just before the message
    prompt = seg.steps[coding.index - 1]
    assert prompt.kind is StepKind.SYSTEM and prompt.metadata["part"] == "system_prompt"
    assert prompt.content.startswith("ChatDev is a software company")
    assert coding.timestamp == "2025-31-03 20:42:44"
    assert coding.metadata["time_iso"] == "2025-03-31T20:42:44"
    logs = "\n".join(s.content for s in seg.steps if s.kind is StepKind.LOG)
    assert logs.count("HTTP Request: POST https://api.openai.com") == 13
    assert logs.count("flask app.py did not start for online log") == text.count(
        "flask app.py did not start for online log"
    )
    (report,) = [s for s in seg.steps if s.kind is StepKind.TOOL_RESULT]
    assert report.metadata["tag"] == "Test Reports"
    assert report.content == "The software run successfully without errors."
    assert seg.steps[-2].metadata["tag"] == "Post Info"


def test_metagpt_communication_log() -> None:
    seg = seg_of("MetaGPT")
    messages = [(s.agent, s.role) for s in seg.steps if s.kind is StepKind.MESSAGE]
    assert messages == [
        ("Human", "user"),
        ("SimpleCoder", "assistant"),
        ("SimpleTester", "assistant"),
        ("SimpleReviewer", "assistant"),
        ("SimpleTester", "assistant"),
        ("SimpleReviewer", "assistant"),
    ]
    human = next(s for s in seg.steps if s.agent == "Human")
    assert human.metadata["action"] == "metagpt.actions.add_requirement.UserRequirement"
    assert human.timestamp == "2025-03-27 01:21:03"
    coder = next(s for s in seg.steps if s.agent == "SimpleCoder")
    assert coder.content.startswith("def find_answer():")
    assert coder.metadata["footer"] == "-" * 80


def test_metagpt_loguru_shape() -> None:
    seg = segment(derived("metagpt_mmlu.loguru.txt"), framework="MetaGPT")
    messages = [s for s in seg.steps if s.kind is StepKind.MESSAGE]
    assert [s.agent for s in messages] == [
        "SimpleCoder",
        "SimpleTester",
        "SimpleReviewer",
        "SimpleTester",
        "SimpleReviewer",
    ]
    assert [s.metadata["name"] for s in messages[:3]] == ["Alice", "Bob", "Charlie"]
    assert 'return "The answer is (0)"' in messages[0].content  # the streamed answer
    costs = [s for s in seg.steps if s.kind is StepKind.LOG and "Total running cost" in s.content]
    assert len(costs) == 5 and costs[0].timestamp == "2025-03-27 01:21:11.601"


def test_metagpt_run_record_with_a_loguru_log() -> None:
    text, name = load_any(METAGPT_RUN_RECORD)
    seg = segment(text, framework=name)
    assert seg.segmented and seg.framework == "MetaGPT"
    assert seg.task == "develop a program that detects palindromes in a text file"
    assert seg.metadata["run_id"] == 21
    assert seg.metadata["excluded"] == ["timestamp", "cost", "log_file"]
    assert [(s.agent, s.metadata["name"]) for s in seg.steps] == [
        ("SimpleCoder", "Alice"),
        ("SimpleTester", "Bob"),
        ("SimpleReviewer", "Charlie"),
        ("SimpleTester", "Bob"),
        ("SimpleReviewer", "Charlie"),
    ]
    # Bob's lines come from the run script ("__main__:_act:85"), not from metagpt itself
    assert seg.steps[1].metadata["source"] == "__main__:_act:85"
    assert seg.steps[1].content.startswith("Bob(SimpleTester): to do SimpleWriteTest")
    assert "def test_empty_file():" in seg.steps[1].content


def test_hyperagent_delegations_pair_with_reports() -> None:
    seg = seg_of("HyperAgent")
    assert_results_follow_calls(seg.steps)
    delegations = [s for s in seg.steps if s.metadata.get("delegation")]
    assert [(s.agent, s.tool_name) for s in delegations] == [
        ("Planner", "Codebase Navigator"),
        ("Planner", "Codebase Editor"),
        ("Planner", "Executor"),
    ]
    calls = by_call(seg.steps)
    reports = [calls[d.metadata["call_id"]][StepKind.TOOL_RESULT][0] for d in delegations]
    assert [(r.agent, r.metadata["recipient"]) for r in reports] == [
        ("Navigator", "Planner"),
        ("Editor", "Planner"),
        ("Executor", "Planner"),
    ]
    actions = [
        s for s in seg.steps if s.kind is StepKind.TOOL_CALL and "delegation" not in s.metadata
    ]
    assert len(actions) == 9  # the log's nine "Action:" blocks
    assert [s.tool_name for s in actions[:3]] == ["code_search", "open_file", "open_file"]
    assert {s.agent for s in actions} == {"Navigator", "Editor", "Executor"}


def test_appworld_calls_outputs_and_loops() -> None:
    seg = seg_of("AppWorld")
    text = trace_text("AppWorld")
    assert_results_follow_calls(seg.steps)
    calls = [s for s in seg.steps if s.kind is StepKind.TOOL_CALL]
    assert len(calls) == len(re.findall(r"^ *Response from \w+ Agent$", text, re.M))
    pairs = by_call(seg.steps)
    for call in calls:
        if call.agent == "Supervisor":  # each supervisor call gets its output back
            assert pairs[call.metadata["call_id"]].get(StepKind.TOOL_RESULT), call
    first = calls[0]
    results = pairs[first.metadata["call_id"]][StepKind.TOOL_RESULT]
    assert [r.metadata["header"] for r in results] == [
        "Code Execution Output",
        "Response from send_message API",
        "Message to Supervisor Agent",
    ]
    request = next(s for s in seg.steps if s.metadata.get("recipient") == "spotify")
    assert (request.agent, request.kind, request.content) == (
        "Supervisor",
        StepKind.MESSAGE,
        "What song is currently playing?",
    )
    assert request.metadata["depth"] == 1
    assert seg.steps[-1].metadata["header"] == "Evaluation"
    assert seg.steps[-1].metadata["success"] is True
    assert seg.metadata["evaluation_success"] is True
    assert seg.steps[0].metadata["task_id"] == "b119b1f_2"


def test_appworld_header_words_inside_a_body_stay_in_it() -> None:
    log = (
        "Response from Supervisor Agent\n    print('Evaluation')\n    x = 1\n"
        "    Evaluation\nCode Execution Output\n\n    Evaluation\n"
    )
    seg = segment(log, framework="AppWorld")
    assert [s.metadata["header"] for s in seg.steps] == [
        "Response from Supervisor Agent",
        "Code Execution Output",
    ]
    assert seg.steps[0].content.endswith("Evaluation")


def test_magentic_turns_noise_and_final_answer() -> None:
    seg = seg_of("Magentic-One")
    assert seg.reason == "'GAIA' is not a known framework; detected Magentic-One markers"
    turns = [s for s in seg.steps if s.kind is StepKind.MESSAGE]
    assert [s.agent for s in turns[:4]] == [
        "user",
        "MagenticOneOrchestrator",
        "MagenticOneOrchestrator",
        "WebSurfer",
    ]
    assert turns[-1].content == "FINAL ANSWER: 525" and seg.metadata["final_answer"] == "525"
    install = seg.steps[0]
    assert install.kind is StepKind.LOG and "Installing build dependencies" in install.content
    assert [s.content for s in seg.steps if s.kind is StepKind.SYSTEM][:1] == [
        "SCENARIO.PY STARTING !#!#"
    ]


def test_magentic_typed_console_pairs_tool_events() -> None:
    seg = segment(derived("magentic_gaia.typed_console.txt"))
    assert_results_follow_calls(seg.steps)
    pair = by_call(seg.steps)["call_kq3"]
    (call,), (result,) = pair[StepKind.TOOL_CALL], pair[StepKind.TOOL_RESULT]
    assert (call.agent, call.tool_name, result.tool_name) == (
        "Assistant",
        "web_search",
        "web_search",
    )
    assert agents(seg) == {"user", "MagenticOneOrchestrator", "Assistant"}


def test_openmanus_tool_calls_pair_with_results() -> None:
    seg = seg_of("OpenManus")
    text = trace_text("OpenManus")
    assert_results_follow_calls(seg.steps)
    calls = [s for s in seg.steps if s.kind is StepKind.TOOL_CALL]
    assert len(calls) == text.count("completed its mission! Result:") == 18
    for cid, kinds in by_call(seg.steps).items():
        (call,), (result,) = kinds[StepKind.TOOL_CALL], kinds[StepKind.TOOL_RESULT]
        assert call.tool_name == result.tool_name, cid
    first = calls[0]
    assert first.agent == "Manus" and first.tool_name == "browser_use"
    assert first.tool_args == {"action": "web_search", "query": "Eliud Kipchoge marathon pace km/h"}
    assert first.timestamp == "2025-03-31 20:33:34.370"
    activated = Counter(re.findall(r"Activating tool: '(\w+)'", text))
    assert Counter(s.tool_name for s in calls) == activated
    assert activated == {"python_execute": 11, "browser_use": 3, "terminate": 4}
    turns = [s for s in seg.steps if "turn" in s.metadata]
    assert turns[0].content == "Executing step 1/20" and turns[0].metadata["max_turns"] == 20
    assert seg.steps[-1].agent == "PlanningFlow" and seg.steps[-1].metadata["plan_completed"]
    usage = [s for s in seg.steps if s.kind is StepKind.LOG and "Token usage" in s.content]
    assert usage  # noise is kept, as log steps


def test_openmanus_second_tool_without_argument_line_gets_its_own_call() -> None:
    def line(src: str, msg: str) -> str:
        return f"2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:{src} - {msg}\n"

    log = (
        line("think:81", "✨ Manus's thoughts: two tools")
        + line("think:86", "🧰 Tools being prepared: ['web_search', 'python_execute']")
        + line("think:89", '🔧 Tool arguments: {"query": "x"}')
        + line("execute_tool:180", "🔧 Activating tool: 'web_search'...")
        + line("act:150", "🎯 Tool 'web_search' completed its mission! Result: found")
        + line("execute_tool:180", "🔧 Activating tool: 'python_execute'...")
        + line("act:150", "🎯 Tool 'python_execute' completed its mission! Result: 42")
    )
    seg = segment(log)
    assert_results_follow_calls(seg.steps)
    pairs = by_call(seg.steps)
    assert sorted(
        (k[StepKind.TOOL_CALL][0].tool_name, k[StepKind.TOOL_RESULT][0].content)
        for k in pairs.values()
    ) == [("python_execute", "42"), ("web_search", "found")]


# --- names, detection, fallbacks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("AG2", "AG2"),
        ("ag2", "AG2"),
        ("ChatDev", "ChatDev"),
        ("chat dev", "ChatDev"),
        ("MetaGPT", "MetaGPT"),
        ("HyperAgent", "HyperAgent"),
        ("AppWorld", "AppWorld"),
        ("Magentic", "Magentic-One"),
        ("Magentic-One", "Magentic-One"),
        ("magentic_one", "Magentic-One"),
        ("OpenManus", "OpenManus"),
        ("GAIA", None),
        ("", None),
        (None, None),
    ],
)
def test_framework_names(name: str | None, expected: str | None) -> None:
    assert canonical_framework(name) == expected


def test_every_framework_has_a_segmenter() -> None:
    assert set(FRAMEWORKS) == set(RECORDS) == set(_registry.SEGMENTERS)


def test_a_wrong_name_is_corrected_by_the_markers() -> None:
    seg = segment(trace_text("ChatDev"), framework="MetaGPT")
    assert seg.segmented and seg.framework == "ChatDev"
    assert seg.reason == "named 'MetaGPT' but the log has ChatDev markers"


def test_garbage_falls_back_with_a_warning() -> None:
    text = "Lorem ipsum dolor sit amet.\nNothing here looks like an agent log.\n"
    with pytest.warns(SegmentationWarning, match="no known log format markers"):
        seg = segment(text)
    assert not seg.segmented and seg.framework is None
    assert [s.content for s in seg.steps] == [text]
    assert seg.steps[0].kind is StepKind.LOG and seg.steps[0].metadata["unsegmented"]
    with pytest.warns(SegmentationWarning, match="unknown framework 'CrewAI'"):
        assert segment(text, framework="CrewAI").framework == "CrewAI"
    with pytest.warns(SegmentationWarning, match="no ChatDev log markers found"):
        assert segment(text, framework="ChatDev").reason == "no ChatDev log markers found"
    with pytest.warns(SegmentationWarning, match="empty trace"):
        assert segment("  \n").steps[0].content == "  \n"


def test_a_truncated_ag2_record_is_kept_whole() -> None:
    broken = record("AG2")["trace"][:3000]  # JSON cut off mid-message
    with pytest.warns(SegmentationWarning, match="no AG2 log markers found"):
        seg = segment(broken, framework="AG2")
    assert not seg.segmented and seg.framework == "AG2"
    assert seg.steps[0].content == broken and seg.reason == "no AG2 log markers found"


def test_a_segmenter_crash_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(text: str) -> None:
        raise RuntimeError("boom")

    monkeypatch.setitem(_registry.SEGMENTERS, "ChatDev", crash)
    text = trace_text("ChatDev")
    with pytest.warns(
        SegmentationWarning, match=r"ChatDev segmenter failed \(RuntimeError: boom\)"
    ):
        seg = segment(text, framework="ChatDev")
    assert not seg.segmented and seg.steps[0].content == text


def test_a_crash_on_a_wrapped_trace_never_shows_the_note(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(text: str) -> None:
        raise ValueError("bad entry")

    monkeypatch.setitem(_registry.SEGMENTERS, "HyperAgent", crash)
    with pytest.warns(SegmentationWarning, match="HyperAgent segmenter failed"):
        seg = segment(trace_text("HyperAgent"), framework="HyperAgent")
    assert not seg.segmented and seg.task is not None
    assert "The agents decides to substitute" not in seg.steps[0].content
    assert seg.steps[0].content.startswith("HyperAgent_scikit-learn__scikit-learn-25570 - INFO")


def test_the_warning_escapes_when_warnings_are_errors() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SegmentationWarning, match="trace kept unsegmented: no known"):
            segment("nothing to see")


def test_a_corrupt_message_in_a_dict_dump_is_kept_as_text() -> None:
    text = derived("ag2_trace2.dict_repr.txt")
    second = text.index("{'content'", 1)
    broken = (
        text[:second]
        + "{'content': [oops], 'role': 'user', 'name': 'assistant'}"
        + text[text.index("{'content'", second + 1) :]
    )
    seg = segment(broken)
    assert seg.segmented
    (raw,) = [s for s in seg.steps if s.metadata.get("unparsed")]
    assert raw.kind is StepKind.LOG and "[oops]" in raw.content
    assert len(seg.steps) == 8


def test_unsegmented_keeps_its_signature() -> None:
    seg = unsegmented("x", "why", "AG2")
    assert (seg.segmented, seg.reason, seg.framework, seg.task) == (False, "why", "AG2", None)


# --- size (speed is measured in bench/, never asserted in tests: machines are noisy) ---------


@pytest.mark.parametrize("framework", RECORDS)
def test_two_million_character_logs_segment_whole(framework: str) -> None:
    text = trace_text(framework)
    if text.lstrip().startswith("{"):
        run = json.loads(text)
        size = len(source_of_wrapped(run))
        run["trajectory"] = run["trajectory"] * (2_000_000 // size + 1)
        big = json.dumps(run, indent=1)
    else:
        big = (text.rstrip("\n") + "\n") * (2_000_000 // len(text) + 1)
    assert len(big) >= 2_000_000
    seg = segment(big, framework=record(framework)["mas_name"])
    assert seg.segmented and len(seg.steps) > 100
    assert squash(reassemble(seg.steps)) == squash(big) or text.lstrip().startswith("{")


def test_a_two_million_character_dict_dump_segments_whole() -> None:
    text = derived("ag2_trace2.dict_repr.txt")
    big = text * (2_000_000 // len(text) + 1)
    seg = segment(big)
    assert seg.segmented and len(seg.steps) == 8 * (2_000_000 // len(text) + 1)


# --- nothing is ever lost, whatever the mix -------------------------------------------------

_POOLS = [trace_text(fw).splitlines() for fw in RECORDS if not trace_text(fw).startswith("{")]
_POOLS += [derived(n).splitlines() for n in DERIVED_SHAPES if "console" in n or "loguru" in n]
_POOLS += [source_of_wrapped(json.loads(trace_text("HyperAgent"))).splitlines()]


@st.composite
def spliced_logs(draw: st.DrawFn) -> str:
    """Runs of consecutive lines cut from different real logs, glued together."""
    pieces = draw(
        st.lists(
            st.tuples(st.integers(0, len(_POOLS) - 1), st.integers(0, 10**6), st.integers(1, 40)),
            max_size=8,
        )
    )
    lines: list[str] = []
    for pool, start, length in pieces:
        source = _POOLS[pool]
        begin = start % len(source)
        lines += source[begin : begin + length]
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(text=spliced_logs(), name=st.sampled_from([None, "GAIA", *FRAMEWORKS]))
def test_spliced_logs_never_raise_and_never_lose_text(text: str, name: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SegmentationWarning)
        seg = segment(text, framework=name)
    assert [s.id for s in seg.steps] == [f"s{i}" for i in range(1, len(seg.steps) + 1)]
    if not seg.segmented:
        assert [s.content for s in seg.steps] == [text]
    elif "container" not in seg.metadata:
        assert squash(reassemble(seg.steps)) == squash(text)


@pytest.mark.parametrize(
    "text", ["", " ", "\n\nx ", "  \n  y", "x\n", "\r\nz", "\t\n", "a", " a\n\n"]
)
def test_trim_skips_the_blank_line_regex_only_where_it_cannot_match(text: str) -> None:
    from mast.traces.segment._common import _LEADING_BLANK_LINES, trim

    assert trim(text) == _LEADING_BLANK_LINES.sub("", text).rstrip()
