"""OpenTelemetry span loading, on files the OpenTelemetry SDK itself writes.

Nothing here is hand-typed OTLP: spans are made with the SDK and written by its OTLP JSON
file exporter (JSON Lines, hex ids), by protobuf's ``json_format`` (one pretty document,
base64 ids) and by the ``ConsoleSpanExporter`` (concatenated span records).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Test extras (pyproject [test]): opentelemetry-sdk, opentelemetry-exporter-otlp-json-file,
# opentelemetry-exporter-otlp-proto-common, openinference-semantic-conventions.
from google.protobuf import json_format
from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as GA
from opentelemetry.trace import Status, StatusCode, Tracer

import mast
from mast.traces.model import StepKind

T0 = 1_768_496_400_000_000_000  # 2026-01-15T17:00:00Z in ns: fixed so step order is known
MS = 1_000_000


def at(ms: int) -> int:
    return T0 + ms * MS


SYSTEM = "You are an SRE triage agent. Find the root cause of the incident."
TASK = "Checkout errors spiked at 17:46. What is the root cause?"


def _messages(*items: dict[str, object]) -> str:
    return json.dumps(list(items))


def record_genai_run(tracer: Tracer) -> None:
    """A two-agent run in today's GenAI conventions (messages as JSON attributes)."""
    with tracer.start_as_current_span(
        "invoke_agent triage", start_time=at(0), end_on_exit=False
    ) as root:
        root.set_attribute(GA.GEN_AI_OPERATION_NAME, "invoke_agent")
        root.set_attribute(GA.GEN_AI_AGENT_NAME, "triage")
        with tracer.start_as_current_span(
            "chat gpt-4.1", start_time=at(10), end_on_exit=False
        ) as chat:
            chat.set_attribute(GA.GEN_AI_OPERATION_NAME, "chat")
            chat.set_attribute(GA.GEN_AI_REQUEST_MODEL, "gpt-4.1")
            chat.set_attribute(GA.GEN_AI_USAGE_INPUT_TOKENS, 120)
            chat.set_attribute(GA.GEN_AI_USAGE_OUTPUT_TOKENS, 30)
            chat.set_attribute(
                GA.GEN_AI_SYSTEM_INSTRUCTIONS, json.dumps([{"type": "text", "content": SYSTEM}])
            )
            chat.set_attribute(
                GA.GEN_AI_INPUT_MESSAGES,
                _messages({"role": "user", "parts": [{"type": "text", "content": TASK}]}),
            )
            chat.set_attribute(
                GA.GEN_AI_OUTPUT_MESSAGES,
                _messages(
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "text", "content": "Checking the alerts first."},
                            {
                                "type": "tool_call",
                                "id": "call_1",
                                "name": "get_alerts",
                                "arguments": {"since": "17:40"},
                            },
                        ],
                        "finish_reason": "tool_call",
                    }
                ),
            )
            chat.end(end_time=at(900))
        with tracer.start_as_current_span(
            "execute_tool get_alerts", start_time=at(910), end_on_exit=False
        ) as tool:
            tool.set_attribute(GA.GEN_AI_OPERATION_NAME, "execute_tool")
            tool.set_attribute(GA.GEN_AI_TOOL_NAME, "get_alerts")
            tool.set_attribute(GA.GEN_AI_TOOL_CALL_ID, "call_1")
            tool.set_attribute(GA.GEN_AI_TOOL_CALL_ARGUMENTS, '{"since": "17:40"}')
            tool.set_attribute(GA.GEN_AI_TOOL_CALL_RESULT, "RequestErrorRate firing on cart")
            tool.end(end_time=at(1000))
        with tracer.start_as_current_span(
            "invoke_agent diagnoser", start_time=at(1010), end_on_exit=False
        ) as sub:
            sub.set_attribute(GA.GEN_AI_OPERATION_NAME, "invoke_agent")
            sub.set_attribute(GA.GEN_AI_AGENT_NAME, "diagnoser")
            with tracer.start_as_current_span(
                "chat gpt-4.1", start_time=at(1020), end_on_exit=False
            ) as chat2:
                chat2.set_attribute(GA.GEN_AI_OPERATION_NAME, "chat")
                chat2.set_attribute(GA.GEN_AI_REQUEST_MODEL, "gpt-4.1")
                chat2.set_attribute(GA.GEN_AI_USAGE_INPUT_TOKENS, 300)
                chat2.set_attribute(GA.GEN_AI_USAGE_OUTPUT_TOKENS, 20)
                # The whole history again, as every chat span carries it.
                chat2.set_attribute(
                    GA.GEN_AI_SYSTEM_INSTRUCTIONS, json.dumps([{"type": "text", "content": SYSTEM}])
                )
                chat2.set_attribute(
                    GA.GEN_AI_INPUT_MESSAGES,
                    _messages(
                        {"role": "user", "parts": [{"type": "text", "content": TASK}]},
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "Checking the alerts first."},
                                {
                                    "type": "tool_call",
                                    "id": "call_1",
                                    "name": "get_alerts",
                                    "arguments": {"since": "17:40"},
                                },
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "id": "call_1",
                                    "response": "RequestErrorRate firing on cart",
                                }
                            ],
                        },
                    ),
                )
                chat2.set_attribute(
                    GA.GEN_AI_OUTPUT_MESSAGES,
                    _messages(
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "reasoning",
                                    "content": "Errors start with cart; look at its config.",
                                },
                                {
                                    "type": "text",
                                    "content": "Root cause: flagd-config enabled cartFailure.",
                                },
                            ],
                        }
                    ),
                )
                chat2.end(end_time=at(1800))
            sub.end(end_time=at(1810))
        root.end(end_time=at(1900))


@pytest.fixture
def provider() -> Iterator[Callable[..., tuple[TracerProvider, Tracer]]]:
    made: list[TracerProvider] = []

    def make(*exporters: object) -> tuple[TracerProvider, Tracer]:
        tp = TracerProvider(resource=Resource.create({"service.name": "sre-agents"}))
        for exporter in exporters:
            tp.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[arg-type]
        made.append(tp)
        return tp, tp.get_tracer("mast-tests")

    yield make
    for tp in made:
        tp.shutdown()


def test_otlp_json_lines_genai_messages(tmp_path: Path, provider) -> None:
    path = tmp_path / "spans.jsonl"
    memory = InMemorySpanExporter()
    tp, tracer = provider(FileSpanExporter(path=str(path)), memory)
    record_genai_run(tracer)
    tp.force_flush()
    first = json.loads(path.read_text().splitlines()[0])
    assert "resourceSpans" in first  # the real OTLP file shape, one batch per line
    # the SDK exports children before their parents: the loader must re-order
    assert first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "chat gpt-4.1"

    trace = mast.load_trace(path)
    assert trace.format == "otel"
    sdk_trace_id = format(memory.get_finished_spans()[0].context.trace_id, "032x")
    assert trace.id == sdk_trace_id
    assert trace.system == "sre-agents" and trace.model == "gpt-4.1"
    assert trace.task == TASK
    got = [(s.kind, s.agent, s.content) for s in trace.steps]
    assert got == [
        (StepKind.SYSTEM, "system", SYSTEM),
        (StepKind.MESSAGE, "user", TASK),
        (StepKind.MESSAGE, "triage", "Checking the alerts first."),
        (StepKind.TOOL_CALL, "triage", '{"since": "17:40"}'),
        (StepKind.TOOL_RESULT, "tool", "RequestErrorRate firing on cart"),
        (StepKind.MESSAGE, "diagnoser", "Errors start with cart; look at its config."),
        (StepKind.MESSAGE, "diagnoser", "Root cause: flagd-config enabled cartFailure."),
    ]
    call, result = trace.steps[3], trace.steps[4]
    assert call.tool_name == result.tool_name == "get_alerts"
    assert call.metadata["call_id"] == result.metadata["call_id"] == "call_1"
    assert call.tool_args == {"since": "17:40"}
    assert trace.steps[5].metadata["reasoning"] is True
    # parent/child tree kept on every step
    spans = {s.name: s for s in memory.get_finished_spans()}
    final = trace.steps[-1]
    assert final.metadata["span_name"] == "chat gpt-4.1"
    assert final.metadata["parent_span_id"] == format(
        spans["invoke_agent diagnoser"].context.span_id, "016x"
    )
    assert trace.steps[4].metadata["parent_span_id"] == format(
        spans["invoke_agent triage"].context.span_id, "016x"
    )
    assert [s.timestamp for s in trace.steps] == sorted(s.timestamp for s in trace.steps)
    assert trace.steps[0].timestamp == "2026-01-15T17:00:00.010000Z"
    meta = trace.metadata
    assert meta["usage"] == {"input_tokens": 420, "output_tokens": 50}
    assert meta["repeated_inputs_skipped"] == 5  # system, task, assistant text, tool call, result
    assert meta["span_count"] == 5 and meta["root_span"] == "invoke_agent triage"
    assert "gen_ai.messages" in meta["conventions"]


def test_one_file_many_trace_ids(tmp_path: Path, provider) -> None:
    path = tmp_path / "two.jsonl"
    tp, tracer = provider(FileSpanExporter(path=str(path)))
    record_genai_run(tracer)
    with tracer.start_as_current_span("chat", start_time=at(5000)) as span:
        span.set_attribute(GA.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(
            GA.GEN_AI_INPUT_MESSAGES,
            _messages({"role": "user", "parts": [{"type": "text", "content": "second run"}]}),
        )
    tp.force_flush()
    traces = list(mast.load_traces(path))
    assert len(traces) == 2 and traces[0].id != traces[1].id
    assert [t.task for t in traces] == [TASK, "second run"]
    assert traces[1].source == f"{path}#trace {traces[1].id}"
    with pytest.raises(mast.TraceFormatError, match="more than one trace"):
        mast.load_trace(path)


def test_protobuf_json_document_with_base64_ids(tmp_path: Path, provider) -> None:
    memory = InMemorySpanExporter()
    _, tracer = provider(memory)
    record_genai_run(tracer)
    spans = memory.get_finished_spans()
    request = encode_spans(spans)
    text = json_format.MessageToJson(request)  # indent=2, ids as base64 (protobuf's bytes rule)
    assert '"traceId": "' in text and format(spans[0].context.trace_id, "032x") not in text
    path = tmp_path / "export.json"
    path.write_text(text)
    trace = mast.load_trace(path)
    assert trace.format == "otel"
    assert trace.id == format(spans[0].context.trace_id, "032x")
    assert [s.content for s in trace.steps][-1] == "Root cause: flagd-config enabled cartFailure."
    # snake_case proto field names are OTLP JSON too
    snake = json_format.MessageToJson(request, preserving_proto_field_name=True)
    path.write_text(snake)
    assert mast.load_trace(path).steps == trace.steps


def test_console_exporter_output_and_span_records(tmp_path: Path, provider) -> None:
    out = io.StringIO()
    tp, tracer = provider(ConsoleSpanExporter(out=out))
    record_genai_run(tracer)
    tp.force_flush()
    path = tmp_path / "console.log"
    path.write_text(out.getvalue())  # several indented JSON objects, one after the other
    trace = mast.load_trace(path)
    assert trace.format == "otel" and len(trace.steps) == 7
    # the same records as a JSON array, and one per line
    records = [json.loads(ReadableSpan.to_json(s)) for s in _spans(tracer, provider)]
    (tmp_path / "array.json").write_text(json.dumps(records, indent=2))
    (tmp_path / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    for name in ("array.json", "records.jsonl"):
        again = mast.load_trace(tmp_path / name)
        assert [s.content for s in again.steps] == [s.content for s in trace.steps]


def _spans(tracer: Tracer, provider) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    _, tracer = provider(memory)
    record_genai_run(tracer)
    return list(memory.get_finished_spans())


def test_older_genai_spellings_events_and_indexed_attributes(tmp_path: Path, provider) -> None:
    path = tmp_path / "old.jsonl"
    tp, tracer = provider(FileSpanExporter(path=str(path)))
    with tracer.start_as_current_span("openai.chat", start_time=at(0), end_on_exit=False) as span:
        # OpenLLMetry style: indexed prompt/completion attributes
        span.set_attribute("gen_ai.system", "openai")
        span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        span.set_attribute("gen_ai.prompt.0.role", "system")
        span.set_attribute("gen_ai.prompt.0.content", SYSTEM)
        span.set_attribute("gen_ai.prompt.1.role", "user")
        span.set_attribute("gen_ai.prompt.1.content", TASK)
        span.set_attribute("gen_ai.completion.0.role", "assistant")
        span.set_attribute("gen_ai.completion.0.tool_calls.0.id", "c9")
        span.set_attribute("gen_ai.completion.0.tool_calls.0.name", "kubectl")
        span.set_attribute("gen_ai.completion.0.tool_calls.0.arguments", '{"args": "get pods"')
        span.end(end_time=at(100))
    with tracer.start_as_current_span("chat", start_time=at(200), end_on_exit=False) as span:
        # deprecated GenAI events on the span
        span.set_attribute("gen_ai.operation.name", "chat")
        span.add_event("gen_ai.system.message", {"content": SYSTEM}, timestamp=at(201))
        span.add_event(
            "gen_ai.tool.message", {"content": "pod cart-1 CrashLoopBackOff", "id": "c9"}
        )
        span.add_event(
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "stop",
                "message": json.dumps({"role": "assistant", "content": "cart is crash-looping"}),
            },
        )
        span.end(end_time=at(300))
    with tracer.start_as_current_span("completion", start_time=at(400), end_on_exit=False) as span:
        # the first GenAI spelling: content events carrying gen_ai.prompt / gen_ai.completion
        span.add_event(
            "gen_ai.content.prompt",
            {"gen_ai.prompt": json.dumps([{"role": "user", "content": "and now?"}])},
        )
        span.add_event(
            "gen_ai.content.completion",
            {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "restart cart"}])},
        )
        span.end(end_time=at(500))
    tp.force_flush()
    # separate root spans of separate traces: read them all
    contents = [[(s.kind, s.content) for s in t.steps] for t in mast.load_traces(path)]
    assert contents == [
        [
            (StepKind.SYSTEM, SYSTEM),
            (StepKind.MESSAGE, TASK),
            (StepKind.TOOL_CALL, '{"args": "get pods"'),
        ],
        [
            (StepKind.SYSTEM, SYSTEM),
            (StepKind.TOOL_RESULT, "pod cart-1 CrashLoopBackOff"),
            (StepKind.MESSAGE, "cart is crash-looping"),
        ],
        [(StepKind.MESSAGE, "and now?"), (StepKind.MESSAGE, "restart cart")],
    ]
    first = next(iter(mast.load_traces(path)))
    call = first.steps[2]
    assert call.tool_args == '{"args": "get pods"'  # invalid JSON arguments stay raw
    assert call.metadata["call_id"] == "c9" and call.tool_name == "kubectl"


def test_openinference_spans(tmp_path: Path, provider) -> None:
    path = tmp_path / "phoenix.jsonl"
    tp, tracer = provider(FileSpanExporter(path=str(path)))
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    msgs, out = SpanAttributes.LLM_INPUT_MESSAGES, SpanAttributes.LLM_OUTPUT_MESSAGES
    role, content = MessageAttributes.MESSAGE_ROLE, MessageAttributes.MESSAGE_CONTENT
    calls = MessageAttributes.MESSAGE_TOOL_CALLS
    with tracer.start_as_current_span("Investigator", start_time=at(0), end_on_exit=False) as agent:
        agent.set_attribute(kind, OpenInferenceSpanKindValues.AGENT.value)
        agent.set_attribute(SpanAttributes.INPUT_VALUE, json.dumps({"input": TASK}))
        agent.set_attribute(SpanAttributes.OUTPUT_VALUE, "The flagd-config ConfigMap.")
        with tracer.start_as_current_span(
            "ChatOpenAI", start_time=at(10), end_on_exit=False
        ) as llm:
            llm.set_attribute(kind, OpenInferenceSpanKindValues.LLM.value)
            llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, "gpt-4o")
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, 50)
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, 7)
            llm.set_attribute(f"{msgs}.0.{role}", "system")
            llm.set_attribute(f"{msgs}.0.{content}", SYSTEM)
            llm.set_attribute(f"{msgs}.1.{role}", "user")
            llm.set_attribute(f"{msgs}.1.{content}", TASK)
            llm.set_attribute(f"{out}.0.{role}", "assistant")
            llm.set_attribute(f"{out}.0.{calls}.0.{ToolCallAttributes.TOOL_CALL_ID}", "t1")
            llm.set_attribute(
                f"{out}.0.{calls}.0.{ToolCallAttributes.TOOL_CALL_FUNCTION_NAME}", "read_configmap"
            )
            llm.set_attribute(
                f"{out}.0.{calls}.0.{ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}",
                '{"name": "flagd-config"}',
            )
            llm.end(end_time=at(100))
        with tracer.start_as_current_span(
            "read_configmap", start_time=at(110), end_on_exit=False
        ) as tool:
            tool.set_attribute(kind, OpenInferenceSpanKindValues.TOOL.value)
            tool.set_attribute(
                SpanAttributes.TOOL_NAME, "read_configmap"
            )  # no call id: paired by name
            tool.set_attribute(SpanAttributes.INPUT_VALUE, '{"name": "flagd-config"}')
            tool.set_attribute(SpanAttributes.OUTPUT_VALUE, "cartFailure: on")
            tool.set_status(Status(StatusCode.ERROR, "slow response"))
            tool.end(end_time=at(150))
        with tracer.start_as_current_span("RunnableSequence", start_time=at(160)) as chain:
            chain.set_attribute(kind, OpenInferenceSpanKindValues.CHAIN.value)
            chain.set_attribute(SpanAttributes.INPUT_VALUE, '{"state": "internal plumbing"}')
        agent.end(end_time=at(200))
    tp.force_flush()
    trace = mast.load_trace(path)
    steps = [(s.kind, s.agent, s.content) for s in trace.steps]
    assert steps == [
        (StepKind.MESSAGE, "user", TASK),
        (StepKind.SYSTEM, "system", SYSTEM),
        (StepKind.TOOL_CALL, "Investigator", '{"name": "flagd-config"}'),
        (StepKind.TOOL_RESULT, "tool", "cartFailure: on"),
        (StepKind.LOG, "Investigator", "span 'read_configmap' ended with an error: slow response"),
        (StepKind.MESSAGE, "Investigator", "The flagd-config ConfigMap."),
    ]
    assert trace.steps[2].metadata["call_id"] == trace.steps[3].metadata["call_id"] == "t1"
    assert trace.model == "gpt-4o" and trace.metadata["usage"] == {
        "input_tokens": 50,
        "output_tokens": 7,
    }
    assert trace.metadata["conventions"] == ["openinference"]
    assert trace.metadata["spans_without_steps"] == 1  # the inner chain


def test_exception_events_become_log_steps(tmp_path: Path, provider) -> None:
    path = tmp_path / "err.jsonl"
    tp, tracer = provider(FileSpanExporter(path=str(path)))
    with tracer.start_as_current_span(
        "execute_tool kubectl", start_time=at(0), end_on_exit=False
    ) as span:
        span.set_attribute(GA.GEN_AI_OPERATION_NAME, "execute_tool")
        span.set_attribute(GA.GEN_AI_TOOL_NAME, "kubectl")
        span.record_exception(TimeoutError("kubectl timed out"), timestamp=at(50))
        span.end(end_time=at(60))
    tp.force_flush()
    trace = mast.load_trace(path)
    assert [s.kind for s in trace.steps] == [StepKind.TOOL_CALL, StepKind.LOG, StepKind.TOOL_RESULT]
    assert trace.steps[1].content == "TimeoutError: kubectl timed out"


# --- invalid input ------------------------------------------------------------------------------


def test_metrics_export_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(
        json.dumps({"resourceSpans": []}) + "\n" + json.dumps({"resourceMetrics": []}) + "\n"
    )
    with pytest.raises(mast.TraceFormatError, match="metrics or logs export, not traces"):
        mast.load_trace(path)


def test_no_spans_and_missing_ids(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(
        json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": []}]}]})
    )
    with pytest.raises(mast.TraceFormatError, match="no spans found") as info:
        mast.load_trace(path)
    assert str(info.value).startswith(str(path))
    path.write_text(
        json.dumps(
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "spanId": "ab" * 8}]}]}]}
        )
    )
    with pytest.raises(mast.TraceFormatError, match="span 'x' has no trace id"):
        mast.load_trace(path, format="otel")


def test_broken_line_in_span_jsonl_keeps_the_rest(tmp_path: Path, provider) -> None:
    path = tmp_path / "cut.jsonl"
    tp, tracer = provider(FileSpanExporter(path=str(path)))
    record_genai_run(tracer)
    tp.force_flush()
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40] + "\n")  # root span cut off
    trace = mast.load_trace(path)
    assert trace.metadata["unparsed_lines"] == [len(lines)]
    # without its root span the run still reads; the first agent's name went with the root
    assert trace.metadata["span_count"] == 4 and trace.metadata["root_span"] == "chat gpt-4.1"
    assert [s.agent for s in trace.steps[2:4]] == ["assistant", "assistant"]
    assert trace.steps[1].content == TASK
    assert trace.steps[-1].content == "Root cause: flagd-config enabled cartFailure."
