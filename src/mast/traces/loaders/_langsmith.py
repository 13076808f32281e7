"""LangSmith run exports → traces.

Read: a root run with nested ``child_runs`` (``Client.read_run(id, load_child_runs=True)``,
a list of them, or one per line), and flat runs (``Client.list_runs`` written out, one per
line or a JSON array) grouped by ``trace_id``. Runs are ordered by ``dotted_order`` (start
time where it is missing). An ``llm`` run's input messages are shown once and its
generations are the assistant's answers (OpenAI-style and serialized LangChain messages
both read); a ``tool`` run is a tool call and its output; a run with an ``error`` adds it
as a log step. The agent of a step is the name of the nearest enclosing ``chain`` run below
the root (a LangGraph node), else the root's name. The root's inputs give the task; LangSmith
has no standard success field, so the outcome is unknown (``feedback_stats`` stay in metadata).

>>> root = {"id": "r1", "name": "agent", "run_type": "chain", "inputs": {"input": "2+2?"},
...         "outputs": {"output": "4"}, "child_runs": [{"id": "r2", "name": "llm",
...         "run_type": "llm", "inputs": {"messages": [{"role": "user", "content": "2+2?"}]},
...         "outputs": {"generations": [[{"text": "4"}]]}}]}
>>> [(s.role, s.content) for s in run_trace(root).steps]
[('user', '2+2?'), ('assistant', '4')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._steps import StepList, text_of
from mast.traces.model import Step, StepKind, Trace

FORMAT = "langsmith"
EXPECTED = (
    "LangSmith runs: a root run with 'run_type' and nested 'child_runs', or runs with "
    "'trace_id' and 'parent_run_id'"
)
RUN_TYPES = {"llm", "chain", "tool", "retriever", "prompt", "parser", "embedding"}


def is_run(record: object) -> bool:
    """A LangSmith run record."""
    return (
        isinstance(record, Mapping)
        and record.get("run_type") in RUN_TYPES
        and "id" in record
        and ("inputs" in record or "child_runs" in record or "trace_id" in record)
    )


def is_flat_run(record: object) -> bool:
    """A run that is not nested: it names its trace (and parent) instead."""
    return (
        is_run(record)
        and isinstance(record, Mapping)
        and "trace_id" in record
        and not record.get("child_runs")
    )


def run_trace(root: Mapping[str, Any]) -> Trace:
    """A root run with its nested child runs."""
    runs: list[tuple[Mapping[str, Any], list[str]]] = []

    def walk(run: Mapping[str, Any], chain: list[str], depth: int) -> None:
        if depth > 200:
            raise TraceFormatError("child runs nested deeper than 200 levels", format=FORMAT)
        runs.append((run, chain))
        below = (
            [*chain, str(run.get("name"))] if run.get("run_type") == "chain" and depth else chain
        )
        for child in run.get("child_runs") or []:
            if isinstance(child, Mapping):
                walk(child, below, depth + 1)

    walk(root, [], 0)
    return _build(root, runs)


def traces_from(records: Iterable[Any]) -> list[Trace]:
    """Nested roots, or flat runs grouped by ``trace_id`` and re-nested by parent."""
    out: list[Trace] = []
    flat: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        if not is_run(record):
            keys = sorted(record)[:10] if isinstance(record, Mapping) else type(record).__name__
            raise TraceFormatError(
                f"not a LangSmith run (found {keys})", format=FORMAT, expected=EXPECTED
            )
        if record.get("child_runs") or not record.get("trace_id"):
            out.append(run_trace(record))
        else:
            flat.setdefault(str(record["trace_id"]), []).append(record)
    for trace_id, group in flat.items():
        by_id = {str(r["id"]): dict(r, child_runs=[]) for r in group}
        roots = []
        for run in by_id.values():
            parent = by_id.get(str(run.get("parent_run_id")))
            if parent is not None:
                parent["child_runs"].append(run)
            else:
                roots.append(run)
        if len(roots) != 1:
            raise TraceFormatError(
                f"trace {trace_id} has {len(roots)} root runs",
                format=FORMAT,
                expected="exactly one run per trace without a parent in the file",
                hint="Export every run of the trace (list_runs(trace_id=…))",
            )
        for run in by_id.values():
            run["child_runs"].sort(key=_order)
        out.append(run_trace(roots[0]))
    return out


def _order(run: Mapping[str, Any]) -> str:
    return str(run.get("dotted_order") or run.get("start_time") or "")


def _build(root: Mapping[str, Any], runs: list[tuple[Mapping[str, Any], list[str]]]) -> Trace:
    root_name = str(root.get("name") or "run")
    steps = StepList()
    task = _task(root.get("inputs"))
    models: list[str] = []
    ordered = sorted(enumerate(runs), key=lambda p: (_order(p[1][0]), p[0]))
    closing: list[tuple[str, tuple[str, dict[str, Any]]]] = []
    for _, (run, chain) in ordered:
        kind = run.get("run_type")
        where: dict[str, Any] = {
            "agent": chain[-1] if chain else root_name,
            "timestamp": run.get("start_time"),
            "metadata": {"run_id": str(run.get("id")), "run_type": kind},
        }
        if kind == "llm":
            model = _model(run)
            if model and model not in models:
                models.append(model)
            steps.history(_input_messages(run.get("inputs")), **where)
            steps.output(_output_messages(run.get("outputs")), **where)
        elif kind == "tool":
            inputs = run.get("inputs") or {}
            args = inputs.get("input", inputs) if isinstance(inputs, Mapping) else inputs
            outputs = run.get("outputs")
            result = outputs.get("output", outputs) if isinstance(outputs, Mapping) else outputs
            steps.tool(
                str(run.get("name")) if run.get("name") else None,
                args,
                result,
                error=run.get("error"),
                **where,
            )
            continue
        if run.get("error"):
            error = (f"error in {run.get('name') or kind}: {run['error']}", where)
            if kind == "llm":
                steps.add(error[0], kind=StepKind.LOG, **where)
            else:
                # A chain's error ends it, after the work of its child runs.
                closing.append((str(run.get("end_time") or ""), error))
    for _, (text, where) in sorted(closing, key=lambda c: c[0], reverse=False):
        steps.add(text, kind=StepKind.LOG, **where)
    if task and not any(s.role == "user" for s in steps.steps):
        steps.steps = [Step.make(0, task, role="user", agent="user")] + [
            s.model_copy(update={"id": f"s{i + 2}", "index": i + 1})
            for i, s in enumerate(steps.steps)
        ]
    final = _task(root.get("outputs"))
    last = next((s for s in reversed(steps.steps) if s.role == "assistant"), None)
    if final and (last is None or last.content.strip() != final.strip()):
        steps.add(final, role="assistant", agent=root_name, metadata={"final_output": True})
    extra: Mapping[str, Any] = root["extra"] if isinstance(root.get("extra"), Mapping) else {}
    meta: Mapping[str, Any] = (
        extra["metadata"] if isinstance(extra.get("metadata"), Mapping) else {}
    )
    metadata: dict[str, Any] = {"repeated_inputs_skipped": steps.repeated}
    for key in ("tags", "session_id", "feedback_stats", "reference_example_id"):
        if root.get(key):
            metadata[key] = root[key]
    if meta:
        metadata["langsmith_metadata"] = dict(meta)
    return Trace(
        id=str(root.get("trace_id") or root["id"]),
        task=task,
        system=str(meta.get("system") or root_name),
        model=", ".join(models) or None,
        steps=steps.steps,
        metadata=metadata,
    )


def _model(run: Mapping[str, Any]) -> str | None:
    extra: Mapping[str, Any] = run["extra"] if isinstance(run.get("extra"), Mapping) else {}
    for source in (extra.get("metadata") or {}, extra.get("invocation_params") or {}):
        for key in ("ls_model_name", "model", "model_name"):
            if isinstance(source, Mapping) and source.get(key):
                return str(source[key])
    return None


def _input_messages(inputs: Any) -> list[Any]:
    if not isinstance(inputs, Mapping):
        return [{"role": "user", "content": text_of(inputs)}] if inputs else []
    messages = inputs.get("messages")
    if isinstance(messages, list):
        # Chat models log a batch: a list of conversations; we take each in turn.
        if messages and all(isinstance(m, list) for m in messages):
            return [m for conversation in messages for m in conversation]
        return list(messages)
    prompts = inputs.get("prompts")
    if isinstance(prompts, list):
        return [{"role": "user", "content": text_of(p)} for p in prompts]
    return [{"role": "user", "content": text_of(inputs)}]


def _output_messages(outputs: Any) -> list[Any]:
    if not isinstance(outputs, Mapping):
        return [{"role": "assistant", "content": text_of(outputs)}] if outputs else []
    generations = outputs.get("generations")
    if isinstance(generations, list):
        out = []
        for batch in generations:
            for gen in batch if isinstance(batch, list) else [batch]:
                if not isinstance(gen, Mapping):
                    continue
                message = gen.get("message")
                if isinstance(message, Mapping):
                    out.append(message)
                else:
                    out.append({"role": "assistant", "content": text_of(gen.get("text"))})
        return out
    if isinstance(outputs.get("choices"), list):
        return [
            c["message"]
            for c in outputs["choices"]
            if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)
        ]
    if isinstance(outputs.get("output"), Mapping):
        return [outputs["output"]]
    if "role" in outputs:
        return [outputs]
    return [{"role": "assistant", "content": text_of(outputs.get("output", outputs))}]


def _task(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        for key in ("input", "question", "query", "output", "answer", "task"):
            if isinstance(value.get(key), str):
                return str(value[key])
        messages = value.get("messages")
        if isinstance(messages, list) and messages:
            last = messages[-1]
            if isinstance(last, Mapping):
                return text_of(last.get("content")) or None
    text = text_of(value)
    return text or None
