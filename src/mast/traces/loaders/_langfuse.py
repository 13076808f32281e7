"""Langfuse exports → traces.

Two shapes are read: a trace with its observations (``GET /api/public/traces/{id}``, the
UI's JSON export; a list of them, or one per line), and bare observations with a
``traceId`` (the observations API, ``{"data": [...]}`` or one per line), grouped into one
trace per trace id. Observations are ordered by start time. A ``GENERATION``'s input
messages are shown once (later calls repeat the history) and its output is the assistant's
answer; a ``TOOL`` observation is a tool call and its result; an ``EVENT`` is a log step;
an observation at level ``ERROR`` adds its status message. The agent of a step is the
nearest enclosing ``AGENT`` observation's name. Scores stay in metadata: Langfuse has no
standard success score, so the outcome is unknown.

>>> record = {"id": "t1", "observations": [{"id": "o1", "type": "GENERATION",
...     "startTime": "2026-01-01T00:00:00Z", "input": [{"role": "user", "content": "hi"}],
...     "output": {"role": "assistant", "content": "hello"}}]}
>>> [s.content for s in trace(record).steps]
['hi', 'hello']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._steps import StepList, text_of
from mast.traces.model import StepKind, Trace

FORMAT = "langfuse"
EXPECTED = (
    "a Langfuse trace with 'observations' (each with 'id', 'type', 'startTime'), or "
    "observations with 'traceId'"
)
TYPES = {
    "GENERATION",
    "SPAN",
    "EVENT",
    "TOOL",
    "AGENT",
    "CHAIN",
    "RETRIEVER",
    "EMBEDDING",
    "EVALUATOR",
    "GUARDRAIL",
}


def is_observation(record: object) -> bool:
    """A Langfuse observation (camelCase ``traceId``/``startTime`` and a known ``type``)."""
    return (
        isinstance(record, Mapping)
        and record.get("type") in TYPES
        and "startTime" in record
        and "id" in record
    )


def is_trace(record: object) -> bool:
    """A Langfuse trace record carrying its observations."""
    if not isinstance(record, Mapping) or "id" not in record:
        return False
    observations = record.get("observations")
    return isinstance(observations, list) and (
        not observations or any(is_observation(o) for o in observations)
    )


def is_listing(record: object) -> bool:
    """An API page ``{"data": [observations or traces], "meta": …}``."""
    if not isinstance(record, Mapping) or not isinstance(record.get("data"), list):
        return False
    items = record["data"]
    return bool(items) and all(is_observation(o) or is_trace(o) for o in items)


def trace(record: Mapping[str, Any]) -> Trace:
    """A trace record with its observations."""
    observations = record.get("observations")
    if not isinstance(observations, list):
        raise TraceFormatError("no 'observations' list", format=FORMAT, expected=EXPECTED)
    return _build(str(record["id"]), record, observations)


def traces_from(records: Iterable[Any]) -> list[Trace]:
    """Observations (or whole traces, or API pages of either), one trace per trace id."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    out: list[Trace] = []
    for record in records:
        if is_listing(record):
            out += traces_from(record["data"])
        elif is_trace(record):
            out.append(trace(record))
        elif is_observation(record):
            trace_id = record.get("traceId")
            if not trace_id:
                raise TraceFormatError(
                    f"observation {record.get('id')!r} has no 'traceId'",
                    format=FORMAT,
                    expected="'traceId' on every observation when they are not nested in a trace",
                )
            groups.setdefault(str(trace_id), []).append(record)
        else:
            keys = sorted(record)[:10] if isinstance(record, Mapping) else type(record).__name__
            raise TraceFormatError(
                f"not a Langfuse record (found {keys})", format=FORMAT, expected=EXPECTED
            )
    out += [_build(trace_id, {}, obs) for trace_id, obs in groups.items()]
    return out


def _build(trace_id: str, record: Mapping[str, Any], observations: list[Any]) -> Trace:
    obs = [o for o in observations if isinstance(o, Mapping)]
    for n, o in enumerate(obs):
        if "id" not in o or "type" not in o:
            raise TraceFormatError(
                f"observation {n} has no 'id' or 'type'", format=FORMAT, expected=EXPECTED
            )
    by_id = {str(o["id"]): o for o in obs}
    ordered = sorted(enumerate(obs), key=lambda p: (str(p[1].get("startTime") or ""), p[0]))
    roots = [o for o in obs if not o.get("parentObservationId")]
    root = roots[0] if len(roots) == 1 else None
    name = record.get("name") or (root.get("name") if root else None)
    steps = StepList()
    task = _task(record.get("input") if record else (root or {}).get("input"))
    models: list[str] = []
    for _, o in ordered:
        kind = o["type"]
        where = {
            "agent": _agent(o, by_id, name),
            "timestamp": o.get("startTime"),
            "metadata": {"observation_id": str(o["id"]), "observation_type": kind},
        }
        if kind == "GENERATION":
            if o.get("model") and o["model"] not in models:
                models.append(str(o["model"]))
            steps.history(_messages(o.get("input"), "user"), **where)
            steps.output(_messages(o.get("output"), "assistant"), **where)
        elif kind == "TOOL":
            steps.tool(
                str(o.get("name")) if o.get("name") else None,
                o.get("input"),
                o.get("output"),
                error=o.get("statusMessage"),
                **where,
            )
        elif kind == "EVENT":
            body = text_of(o.get("output") if o.get("output") is not None else o.get("input"))
            steps.add(
                f"{o.get('name') or 'event'}: {body}".rstrip(": "),
                kind=StepKind.LOG,
                **_where(where),
            )
        if o.get("level") == "ERROR" and kind != "TOOL":
            steps.add(
                f"error in {o.get('name') or kind}: {o.get('statusMessage') or ''}",
                kind=StepKind.LOG,
                **_where(where),
            )
    if task and not any(s.role == "user" for s in steps.steps):
        steps.steps.insert(0, _user(task))
        _renumber(steps)
    final = record.get("output") if record else (root or {}).get("output")
    final_text = text_of(_answer(final)) if final is not None else ""
    last = next((s for s in reversed(steps.steps) if s.role == "assistant"), None)
    if final_text and (last is None or last.content.strip() != final_text.strip()):
        steps.add(final_text, role="assistant", agent=name, metadata={"final_output": True})
    metadata = {
        key: record[key]
        for key in ("sessionId", "userId", "tags", "environment", "release", "version")
        if record.get(key)
    }
    if record.get("scores"):
        metadata["scores"] = record["scores"]
    if isinstance(record.get("metadata"), Mapping):
        metadata["langfuse_metadata"] = dict(record["metadata"])
    metadata["repeated_inputs_skipped"] = steps.repeated
    if root is not None:
        metadata["root_span_id"] = str(root["id"])  # an OTel span id in Langfuse v3 and later
    system = None
    if isinstance(record.get("metadata"), Mapping) and record["metadata"].get("system"):
        system = str(record["metadata"]["system"])
    return Trace(
        id=trace_id,
        task=task,
        system=system or (str(name) if name else None),
        model=", ".join(models) or None,
        steps=steps.steps,
        metadata=metadata,
    )


def _where(where: Mapping[str, Any]) -> dict[str, Any]:
    return {"agent": where["agent"], "timestamp": where["timestamp"], "metadata": where["metadata"]}


def _user(task: str) -> Any:
    from mast.traces.model import Step

    return Step.make(0, task, role="user", agent="user")


def _renumber(steps: StepList) -> None:
    steps.steps = [
        s.model_copy(update={"id": f"s{i + 1}", "index": i}) for i, s in enumerate(steps.steps)
    ]


def _agent(o: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]], default: Any) -> Any:
    seen: set[str] = set()
    current: Mapping[str, Any] | None = o
    while current is not None:
        if current.get("type") == "AGENT" and current.get("name"):
            return str(current["name"])
        parent = current.get("parentObservationId")
        if not parent or str(parent) in seen:
            break
        seen.add(str(parent))
        current = by_id.get(str(parent))
    return str(default) if default else None


def _messages(value: Any, role: str) -> list[Any]:
    """Messages from a generation's input or output, whatever the integration logged."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, list):
        if all(isinstance(m, Mapping) and "role" in m for m in value):
            return list(value)
        return [{"role": role, "content": text_of(value)}]
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            return _messages(value["messages"], role)
        if isinstance(value.get("choices"), list):  # a raw chat completion
            return [
                c["message"]
                for c in value["choices"]
                if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)
            ]
        if "role" in value:
            return [value]
        return [{"role": role, "content": text_of(_answer(value))}]
    return [{"role": role, "content": text_of(value)}]


def _task(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        for key in ("question", "input", "query", "task", "prompt"):
            if isinstance(value.get(key), str):
                return str(value[key])
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, Mapping) and m.get("role") == "user"]
        if users:
            return text_of(users[0].get("content"))
    text = text_of(value)
    return text or None


def _answer(value: Any) -> Any:
    if isinstance(value, Mapping):
        for key in ("answer", "output", "content", "text", "result"):
            if key in value and value[key] is not None:
                return value[key]
    return value
