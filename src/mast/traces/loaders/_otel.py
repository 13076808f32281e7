"""OpenTelemetry spans (GenAI semantic conventions and OpenInference) → one trace per trace id.

Accepted containers: OTLP JSON (``{"resourceSpans": [{"resource", "scopeSpans": [{"scope",
"spans": [...]}]}]}``, one document or one per line as the OTLP file exporter writes it,
camelCase or proto field names, hex or base64 ids) and flat span records (the SDK's
``span.to_json()`` / ``ConsoleSpanExporter`` shape, a JSON array of them, or one per line).

Accepted attribute spellings, newest first:

* GenAI messages as JSON attributes: ``gen_ai.system_instructions``,
  ``gen_ai.input.messages``, ``gen_ai.output.messages`` (``parts`` of type ``text``,
  ``tool_call``, ``tool_call_response``, ``reasoning``);
* GenAI events: ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``, and
  the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events;
* indexed attributes ``gen_ai.prompt.N.role/content`` and ``gen_ai.completion.N.…``;
* OpenInference: ``openinference.span.kind``, ``llm.input_messages.N.message.role/content``
  (and ``.contents.M.message_content.text``, ``.tool_calls.M.tool_call.…``),
  ``llm.output_messages…``, ``tool.name``, ``input.value`` / ``output.value``;
* tools: ``gen_ai.tool.name`` / ``gen_ai.tool.call.id`` / ``gen_ai.tool.call.arguments`` /
  ``gen_ai.tool.call.result`` on ``execute_tool`` spans, or OpenInference TOOL spans.

Every LLM span carries the whole conversation so far as its input; a message already shown
is not shown again (counted in ``metadata["repeated_inputs_skipped"]``). A span's inputs are
placed at its start time and its outputs at its end time, so the final answer of an agent
span comes after the work it summarises. Steps keep ``span_id`` and ``parent_span_id``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._otel_messages import (
    Span,
    _args_text,
    _maybe_json,
    _Msg,
    _operation,
    _span_messages,
    _text,
)
from mast.traces.loaders._phoenix import is_phoenix_span
from mast.traces.loaders._phoenix import normalize as phoenix_normalize
from mast.traces.loaders._session import Line, RawLine, is_span_record
from mast.traces.model import Step, StepKind, Trace

_EXPECTED = (
    "OTLP JSON ({'resourceSpans': [...]}, one document or one per line) or span records "
    "with trace and span ids"
)


# --- reading spans ----------------------------------------------------------------------------


def _get(d: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in d:
            return d[name]
    return None


def _int64(raw: Any) -> Any:
    try:
        return int(raw)  # int64 is a JSON string in OTLP JSON
    except (TypeError, ValueError):
        return raw


# OTLP ``AnyValue`` kinds in the order they are tried, each with its decoder; the key is
# ``<kind>Value`` (OTLP JSON) or ``<kind>_value`` (protobuf field names).
_ANY_VALUE_KINDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("string", lambda raw: raw),
    ("bool", bool),
    ("int", _int64),
    ("double", float),
    ("array", lambda raw: [_any_value(v) for v in (raw or {}).get("values", [])]),
    ("kvlist", lambda raw: _attributes((raw or {}).get("values", []))),
    ("bytes", lambda raw: raw),
)


def _any_value(value: object) -> Any:
    """Decode an OTLP ``AnyValue`` (``{"stringValue": …}`` etc.) into a Python value."""
    if not isinstance(value, Mapping):
        return value
    for kind, decode in _ANY_VALUE_KINDS:
        for key in (f"{kind}Value", f"{kind}_value"):
            if key in value:
                return decode(value[key])
    return None


def _attributes(raw: object) -> dict[str, Any]:
    """OTLP attribute lists ``[{key, value: AnyValue}]`` or plain dicts → a flat dict."""
    if isinstance(raw, Mapping):
        return dict(raw)
    out: dict[str, Any] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping) and "key" in item:
                out[str(item["key"])] = _any_value(item.get("value"))
    return out


_HEX = re.compile(r"^[0-9a-fA-F]+$")


def _id(value: object) -> str | None:
    """A trace/span id as lowercase hex. OTLP JSON uses hex; protobuf's ``json_format``
    writes bytes as base64 instead, and the SDK's ``to_json`` writes ``0x…``."""
    if value is None or value == "":
        return None
    text = str(value)
    if text.startswith("0x"):
        text = text[2:]
    if _HEX.match(text) and len(text) in (16, 32):
        return text.lower()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    if len(decoded) in (8, 16):
        return decoded.hex()
    return text


def _nanos(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000) * 1000


def _status(raw: object) -> tuple[str | None, str | None]:
    if not isinstance(raw, Mapping):
        return None, None
    code = _get(raw, "code", "status_code")
    message = _get(raw, "message", "description")
    names = {0: "UNSET", 1: "OK", 2: "ERROR"}
    if isinstance(code, int):
        text = names.get(code, str(code))
    elif code is None:
        text = None
    else:
        text = str(code).upper().replace("STATUS_CODE_", "").replace("STATUSCODE.", "")
    return text, message if isinstance(message, str) and message else None


def _otlp_spans(document: Mapping[str, Any], counter: Iterator[int]) -> Iterator[Span]:
    for resource_spans in _get(document, "resourceSpans", "resource_spans") or []:
        if not isinstance(resource_spans, Mapping):
            continue
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        scopes = _get(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")
        for scope_spans in scopes or []:
            scope = _get(scope_spans, "scope", "instrumentationLibrary") or {}
            scope_name = scope.get("name") if isinstance(scope, Mapping) else None
            for raw in scope_spans.get("spans") or []:
                yield _span(raw, resource, scope_name, next(counter))


def _span(raw: Mapping[str, Any], resource: dict[str, Any], scope: str | None, order: int) -> Span:
    if is_phoenix_span(raw):
        raw = phoenix_normalize(raw)  # nested attributes, top-level span_kind / status_code
    context = raw.get("context") if isinstance(raw.get("context"), Mapping) else {}
    assert isinstance(context, Mapping)
    trace_id = _id(_get(raw, "traceId", "trace_id") or context.get("trace_id"))
    span_id = _id(_get(raw, "spanId", "span_id") or context.get("span_id"))
    if not trace_id or not span_id:
        raise TraceFormatError(
            f"span {raw.get('name')!r} has no trace id or span id",
            format="otel",
            expected="traceId and spanId on every span",
        )
    events = []
    for event in raw.get("events") or []:
        if isinstance(event, Mapping):
            events.append(
                (
                    str(event.get("name", "")),
                    _nanos(_get(event, "timeUnixNano", "time_unix_nano", "timestamp")),
                    _attributes(event.get("attributes")),
                )
            )
    code, message = _status(raw.get("status"))
    if isinstance(raw.get("resource"), Mapping):  # flat records carry their own resource
        resource = _attributes(raw["resource"].get("attributes"))
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_id(_get(raw, "parentSpanId", "parent_span_id", "parent_id")),
        name=str(raw.get("name", "")),
        start=_nanos(_get(raw, "startTimeUnixNano", "start_time_unix_nano", "start_time")),
        end=_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano", "end_time")),
        attributes=_attributes(raw.get("attributes")),
        events=events,
        status_code=code,
        status_message=message,
        resource=resource,
        scope=scope,
        order=order,
    )


def spans_from(values: Iterable[Any]) -> list[Span]:
    """All spans in parsed JSON values (documents, span records, or lists of them)."""
    counter = iter(range(1 << 62))
    spans: list[Span] = []

    def visit(value: object) -> None:
        if isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, Mapping):
            if "resourceSpans" in value or "resource_spans" in value:
                spans.extend(_otlp_spans(value, counter))
            elif is_span_record(value):
                spans.append(_span(value, {}, None, next(counter)))
            elif isinstance(value.get("data"), list):  # a Phoenix API page of spans
                visit(value["data"])
            elif "resourceMetrics" in value or "resourceLogs" in value:
                raise TraceFormatError(
                    "this is an OTLP metrics or logs export, not traces",
                    format="otel",
                    expected=_EXPECTED,
                    hint="Export spans (the traces signal) instead",
                )

    for value in values:
        visit(value)
    return spans


# --- spans -> steps -----------------------------------------------------------------------------


_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "llm", "completion"}
_TOOL_OPERATIONS = {"execute_tool", "tool"}
_AGENT_OPERATIONS = {"invoke_agent", "create_agent", "agent"}


@dataclass
class _Piece:
    """A step waiting for its place: sorted by (time, sequence)."""

    time: int
    seq: int
    fields: dict[str, Any]


class _Builder:
    def __init__(self, spans: list[Span]) -> None:
        self.spans = spans
        self.by_id = {s.span_id: s for s in spans}
        self.pieces: list[_Piece] = []
        self.seen: set[tuple[str, str, str | None]] = set()
        self.calls_emitted: dict[str, str | None] = {}  # call id -> tool name
        self.results_emitted: set[str] = set()
        self.open_calls: list[tuple[str, str | None]] = []  # (call id, tool name) awaiting result
        self.repeated = 0
        self.silent_spans = 0
        self.conventions: set[str] = set()
        self.usage: dict[str, int] = {}
        self.models: list[str] = []

    def agent_of(self, span: Span) -> str | None:
        current: Span | None = span
        for _ in range(len(self.spans) + 1):
            if current is None:
                return None
            a = current.attributes
            for key in ("gen_ai.agent.name", "agent.name"):
                if isinstance(a.get(key), str) and a[key]:
                    return str(a[key])
            if str(a.get("openinference.span.kind", "")).upper() == "AGENT":
                return current.name
            current = self.by_id.get(current.parent_id or "")
        return None

    def put(self, time: int | None, span: Span, content: str, **fields: Any) -> None:
        metadata = {
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "parent_span_id": span.parent_id,
            "span_name": span.name,
            **fields.pop("metadata", {}),
        }
        operation = _operation(span)
        if operation:
            metadata["operation"] = operation
        stamp = time if time is not None else span.start or 0
        fields["timestamp"] = _iso(stamp) if stamp else None
        self.pieces.append(
            _Piece(stamp, len(self.pieces), {"content": content, "metadata": metadata, **fields})
        )

    def message(self, time: int | None, span: Span, msg: _Msg, agent: str | None) -> None:
        key = (msg.role, msg.content, msg.tool_call_id)
        if msg.role == "tool":
            call_id = msg.tool_call_id
            if call_id and call_id in self.results_emitted:
                self.repeated += 1
                return
            if key in self.seen:
                self.repeated += 1
                return
            self.seen.add(key)
            if call_id:
                self.results_emitted.add(call_id)
                self._close(call_id)
            name = self.calls_emitted.get(call_id or "") or msg.name
            self.put_result(time, span, msg.content, call_id, name)
            return
        if msg.content and key not in self.seen:
            self.seen.add(key)
            speaker = (agent or msg.name or "assistant") if msg.role == "assistant" else msg.role
            self.put(
                time,
                span,
                msg.content,
                agent=msg.name if msg.role != "assistant" and msg.name else speaker,
                role=msg.role,
                kind=StepKind.SYSTEM if msg.role in {"system", "developer"} else StepKind.MESSAGE,
                metadata={"reasoning": True} if msg.reasoning else {},
            )
        elif msg.content:
            self.repeated += 1
        for call_id, name, arguments in msg.tool_calls:
            if call_id and call_id in self.calls_emitted:
                self.repeated += 1
                continue
            if call_id:
                self.calls_emitted[call_id] = name
                self.open_calls.append((call_id, name))
            self.put_call(time, span, _args_text(arguments), agent, call_id, name, arguments)

    def put_call(
        self,
        time: int | None,
        span: Span,
        content: str,
        agent: str | None,
        call_id: str | None,
        name: str | None,
        arguments: object,
    ) -> None:
        """The agent's call of tool ``name`` (from a message's tool calls or a tool span)."""
        self.put(
            time,
            span,
            content,
            agent=agent or "assistant",
            role="assistant",
            kind=StepKind.TOOL_CALL,
            tool_name=name,
            tool_args=_maybe_json(arguments),
            metadata={"call_id": call_id},
        )

    def put_result(
        self, time: int | None, span: Span, content: str, call_id: str | None, name: str | None
    ) -> None:
        """What tool ``name`` returned for call ``call_id``."""
        self.put(
            time,
            span,
            content,
            agent="tool",
            role="tool",
            kind=StepKind.TOOL_RESULT,
            tool_name=name,
            metadata={"call_id": call_id},
        )

    def _close(self, call_id: str) -> None:
        self.open_calls = [c for c in self.open_calls if c[0] != call_id]

    def tool_span(self, span: Span) -> None:
        a = span.attributes
        name = a.get("gen_ai.tool.name") or a.get("tool.name") or span.name
        call_id = a.get("gen_ai.tool.call.id") or a.get("tool_call.id")
        arguments = a.get("gen_ai.tool.call.arguments", a.get("input.value"))
        result = a.get("gen_ai.tool.call.result", a.get("output.value"))
        if not call_id:
            # No id on the tool span: pair it with the oldest open call of the same tool.
            match = next((c for c in self.open_calls if c[1] == name), None)
            call_id = match[0] if match else span.span_id
        agent = self.agent_of(span)
        if call_id not in self.calls_emitted:
            self.calls_emitted[call_id] = name
            content = _args_text(arguments) if arguments is not None else ""
            self.put_call(span.start, span, content, agent, call_id, name, arguments)
        if call_id not in self.results_emitted and (result is not None or span.end is not None):
            self.results_emitted.add(call_id)
            self._close(call_id)
            self.put_result(span.end, span, _text(result), call_id, name)

    def span(self, span: Span) -> None:
        a = span.attributes
        operation = _operation(span)
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            self._count(key.rsplit(".", 1)[-1], a.get(key))
        self._count("input_tokens", a.get("llm.token_count.prompt"))
        self._count("output_tokens", a.get("llm.token_count.completion"))
        for key in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name"):
            model = a.get(key)
            if isinstance(model, str) and model:
                if model not in self.models:
                    self.models.append(model)
                break
        agent = self.agent_of(span)
        produced = len(self.pieces)
        if operation in _TOOL_OPERATIONS:
            self.conventions.add("openinference" if operation == "tool" else "gen_ai.tools")
            self.tool_span(span)
        else:
            inputs, outputs, used = _span_messages(span)
            self.conventions |= used
            if not inputs and not outputs and "input.value" in a:
                # OpenInference AGENT/CHAIN spans: input.value is the request, output.value
                # the answer. Only the root and agent spans speak; inner chains are plumbing.
                is_root = span.parent_id is None or span.parent_id not in self.by_id
                if is_root or operation in _AGENT_OPERATIONS:
                    self.conventions.add("openinference")
                    inputs = [_Msg("user", _text(_maybe_json_text(a.get("input.value"))))]
                    if a.get("output.value") is not None:
                        outputs = [
                            _Msg("assistant", _text(_maybe_json_text(a.get("output.value"))))
                        ]
            for msg in inputs:
                self.message(span.start, span, msg, agent)
            for msg in outputs:
                self.message(span.end, span, msg, agent if msg.role == "assistant" else None)
        for name, time, attrs in span.events:
            if name == "exception":
                kind = attrs.get("exception.type", "exception")
                text = f"{kind}: {attrs.get('exception.message', '')}"
                self.put(time, span, text, agent=agent, kind=StepKind.LOG)
        if span.status_code == "ERROR":
            text = f"span {span.name!r} ended with an error"
            if span.status_message:
                text += f": {span.status_message}"
            self.put(span.end, span, text, agent=agent, kind=StepKind.LOG)
        if len(self.pieces) == produced:
            self.silent_spans += 1

    def _count(self, key: str, value: object) -> None:
        if isinstance(value, int) and not isinstance(value, bool):
            self.usage[key] = self.usage.get(key, 0) + value

    def build(self) -> Trace:
        spans = sorted(self.spans, key=lambda s: (s.start or 0, s.order))
        for span in spans:
            self.span(span)
        ordered = sorted(self.pieces, key=lambda p: (p.time, p.seq))
        steps = [Step.make(i, **p.fields) for i, p in enumerate(ordered)]
        roots = [s for s in spans if not s.parent_id or s.parent_id not in self.by_id]
        root = roots[0] if roots else spans[0]
        services = sorted(
            {str(s.resource["service.name"]) for s in spans if s.resource.get("service.name")}
        )
        metadata: dict[str, Any] = {
            "trace_id": root.trace_id,
            "root_span": root.name,
            "root_span_id": root.span_id,
            "span_count": len(spans),
            "conventions": sorted(self.conventions),
            "repeated_inputs_skipped": self.repeated,
            "spans_without_steps": self.silent_spans,
        }
        if services:
            metadata["services"] = services
        if self.usage:
            metadata["usage"] = self.usage
        if len(self.models) > 1:
            metadata["models"] = self.models
        start = min((s.start for s in spans if s.start), default=None)
        end = max((s.end for s in spans if s.end), default=None)
        if start and end:
            metadata["duration_s"] = round((end - start) / 1e9, 6)
        task = next((s.content for s in steps if s.role == "user" and s.content.strip()), None)
        system = root.resource.get("service.name") or root.attributes.get("gen_ai.system")
        return Trace(
            id=root.trace_id,
            task=task,
            system=str(system) if system else None,
            model=self.models[0] if self.models else None,
            steps=steps,
            metadata=metadata,
        )


def _maybe_json_text(value: object) -> object:
    """OpenInference ``input.value`` is often JSON of ``{"messages": …}`` or ``{"input": …}``:
    show its text when it has one obvious text field, else the value as written."""
    parsed = _maybe_json(value)
    if isinstance(parsed, Mapping) and len(parsed) == 1:
        (only,) = parsed.values()
        if isinstance(only, str):
            return only
    return value


def _iso(nanos: int) -> str:
    moment = datetime.fromtimestamp(nanos / 1e9, tz=timezone.utc)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def convert(lines: Sequence[Line]) -> list[Trace]:
    """Convert parsed OTLP/span JSON values (one per line or document) into traces."""
    values = [v for _, v in lines if not isinstance(v, RawLine)]
    bad = [n for n, v in lines if isinstance(v, RawLine)]
    spans = spans_from(values)
    if not spans:
        raise TraceFormatError(
            "no spans found" + (f" ({len(bad)} line(s) are not JSON)" if bad else ""),
            format="otel",
            expected=_EXPECTED,
        )
    groups: dict[str, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.trace_id, []).append(span)
    # Deduplicate spans written twice (an exporter retried, or files concatenated).
    traces = []
    for trace_id in sorted(groups, key=lambda t: min((s.start or 0, s.order) for s in groups[t])):
        unique: dict[str, Span] = {}
        for span in groups[trace_id]:
            unique.setdefault(span.span_id, span)
        trace = _Builder(list(unique.values())).build()
        if bad:
            trace.metadata["unparsed_lines"] = bad
        duplicates = len(groups[trace_id]) - len(unique)
        if duplicates:
            trace.metadata["duplicate_spans_dropped"] = duplicates
        traces.append(trace)
    return traces
