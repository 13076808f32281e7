"""Pure converters: one parsed JSON record of a known shape -> one ``Trace``.

Each converter raises :class:`TraceFormatError` (without a path; the reader adds where) when
a record lacks what its shape needs. ``classify`` picks the shape from a record's keys.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mast.errors import TraceFormatError
from mast.taxonomy import LabelVersion, load_label_version, load_taxonomy, version_for_round
from mast.traces import outcomes
from mast.traces.model import FailureVector, LabelSource, Step, StepKind, Trace, to_bool
from mast.traces.segment import canonical_framework, segment


class LabelMappingWarning(UserWarning):
    """A dataset label could not be mapped to a final MAST code; it is kept as unmapped."""


def classify(record: object) -> str | None:
    """Name the shape of one parsed JSON value, or ``None`` when it is not a known shape."""
    if isinstance(record, list):
        return "chat" if record and all(_is_message(m) for m in record) else None
    if not isinstance(record, dict):
        return None
    keys = record.keys()
    from mast.traces.loaders import _langfuse, _langsmith

    if _langfuse.is_trace(record):
        return "langfuse"
    if _langsmith.is_run(record) and not record.get("parent_run_id"):
        return "langsmith"
    if "mast_annotation" in keys and "trace" in keys:
        return "mad-full"
    if "annotations" in keys and "trace" in keys:
        return "mad-human"
    if "trace" in keys and ("mas_name" in keys or "trace_id" in keys):
        return "mad-run"  # a MAD-shaped record without labels
    if isinstance(record.get("content"), str) and "prompt" in keys and "run_id" in keys:
        return "metagpt"
    if "steps" in keys and "id" in keys:
        return "mast"
    if "trajectory" in keys:
        return "ag2"
    if "history" in keys:
        return "whoandwhen"
    if "messages" in keys:
        return "chat"
    return None


def _is_message(value: object) -> bool:
    return isinstance(value, dict) and "role" in value


def _missing(record: Mapping[str, Any], fields: Sequence[str], shape: str) -> None:
    absent = [f for f in fields if f not in record]
    if absent:
        raise TraceFormatError(
            f"record has no {', '.join(repr(f) for f in absent)} field",
            format=shape,
            expected=f"a {shape} record with fields {list(fields)}",
        )


def _text(value: object) -> str:
    """Message content as text: strings as they are, line lists joined, parts concatenated."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return "\n".join(value)  # AG2 stores content as a list of lines
        parts = []
        for part in value:  # OpenAI content parts: [{"type": "text", "text": …}, …]
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _opt_str(value: object) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = _text(value).strip()
    return text or None


# --- MAD full dataset -------------------------------------------------------------------


def mad_full(record: Mapping[str, Any]) -> Trace:
    """A record of ``MAD_full_dataset.json``; its o1 judge labels become annotator ``"o1"``."""
    _missing(record, ["trace", "mast_annotation"], "mad-full")
    inner = record["trace"]
    if not isinstance(inner, dict) or "trajectory" not in inner:
        raise TraceFormatError(
            "field 'trace' is not an object with a 'trajectory'",
            format="mad-full",
            expected='"trace": {"key": …, "index": …, "trajectory": "<log text>"}',
        )
    system, benchmark, quirks = _mas_and_benchmark(record)
    key = inner.get("key") or f"{quirks.get('mas_name', system)}_{benchmark}"  # ids stay put
    trace_id = record.get("trace_id", inner.get("index"))
    raw_labels = record["mast_annotation"] or {}
    if not isinstance(raw_labels, dict):
        raise TraceFormatError(
            "field 'mast_annotation' is not an object",
            format="mad-full",
            expected='{"1.1": 0 | 1 | null, …}',
        )
    codes = load_taxonomy().codes
    known = {c: v for c, v in raw_labels.items() if c in codes}
    extra = {c: to_bool(v) for c, v in raw_labels.items() if c not in codes}
    trace = _from_log(
        _text(inner["trajectory"]),
        framework=system,
        id=f"mad/{key}/{trace_id}",
        system=system,
        model=_opt_str(record.get("llm_name")),
        benchmark=benchmark,
        metadata={"mad_key": key, "mad_trace_id": trace_id, **quirks},
    )
    trace.labels["o1"] = FailureVector.from_labels(known, codes=codes)
    trace.label_sources["o1"] = LabelSource(
        annotator="o1",
        kind="llm",
        taxonomy_version="final",
        origin="MAD full dataset",
        # The o1 judge worked from the official definitions file (3.2 Weak Verification,
        # 3.3 No or Incorrect Verification), and its codes are stored as given.
        verification="official",
        unmapped=extra,
    )
    return trace


# Records 17 and 18 of the human file have these two fields swapped; the known framework
# names let us notice and put them back (recorded in metadata, never silently).
_FRAMEWORKS = {
    "ag2",
    "chatdev",
    "metagpt",
    "hyperagent",
    "appworld",
    "magentic",
    "magentic-one",
    "magenticone",
    "openmanus",
    "manus",
}
_BENCHMARKS = {
    "gsm-plus",
    "gsmplus",
    "programdev",
    "mmlu",
    "gaia",
    "swe-bench",
    "swe-bench lite",
    "olympiadbench",
    "humaneval",
    "math",
}


def _mas_and_benchmark(record: Mapping[str, Any]) -> tuple[str | None, str | None, dict[str, Any]]:
    """System and benchmark of a MAD record; the system under its canonical name (MAD's
    "Magentic" is Who&When's "Magentic-One": one system, one name in every report), the
    name as written kept in ``metadata["mas_name"]``."""
    system = _opt_str(record.get("mas_name"))
    benchmark = _opt_str(record.get("benchmark_name"))
    extra: dict[str, Any] = {}
    if system and benchmark and system.lower() in _BENCHMARKS and benchmark.lower() in _FRAMEWORKS:
        system, benchmark = benchmark, system
        extra["quirks"] = ["mas_name and benchmark_name were swapped"]
    canonical = canonical_framework(system) if system else None
    if canonical and canonical != system:
        extra["mas_name"] = system
        system = canonical
    return system, benchmark, extra


def _from_log(text: str, *, framework: str | None, **fields: Any) -> Trace:
    seg = segment(text, framework=framework)
    metadata = dict(fields.pop("metadata", {}))
    if seg.reason:
        metadata["segmentation"] = seg.reason
    if seg.metadata:
        metadata["segmentation_info"] = seg.metadata
    # An AG2 record inside the text (other_data.correct), an AppWorld log's evaluation: read
    # by mast.traces.outcomes, as the ag2 and text loaders read them.
    outcome = seg.outcome.record(metadata)
    return Trace(
        steps=seg.steps,
        segmented=seg.segmented,
        task=seg.task,
        outcome=outcome,
        metadata=metadata,
        **fields,
    )


# --- MAD human-labelled dataset ----------------------------------------------------------

_VERSION_BY_SIZE = {18: "round1", 17: "rounds2-3", 14: "final"}
_VERSIONS: ContextVar[Mapping[str, LabelVersion] | None] = ContextVar(
    "mast_label_versions", default=None
)


@contextmanager
def label_versions(versions: Mapping[str, LabelVersion]) -> Iterator[None]:
    """Read MAD human records with these label versions (by version id, e.g. ``round1``)
    instead of the bundled ones, for every loader called inside (``mast agree
    --label-version FILE``)."""
    token = _VERSIONS.set(dict(versions))
    try:
        yield
    finally:
        _VERSIONS.reset(token)


def mad_human(
    record: Mapping[str, Any], *, versions: Mapping[str, LabelVersion] | None = None
) -> Trace:
    """A record of ``MAD_human_labelled_dataset.json`` with its annotators' labels mapped.

    Draft labels (Round 1, Rounds 2–3) are matched by name to their version's modes and
    mapped to final codes; draft modes with no final counterpart stay in
    ``label_sources[annotator].unmapped``. ``versions`` overrides the mapping per version id.
    """
    _missing(record, ["trace", "annotations"], "mad-human")
    annotations = record["annotations"]
    if not isinstance(annotations, list):
        raise TraceFormatError(
            "field 'annotations' is not a list",
            format="mad-human",
            expected='[{"failure mode": "<code> <name>…", "annotator_1": true, …}, …]',
        )
    round_name = _opt_str(record.get("round")) or ""
    version = _pick_version(round_name, len(annotations), versions or _VERSIONS.get() or {})
    system, benchmark, quirks = _mas_and_benchmark(record)
    trace_id = record.get("trace_id")
    trace = _from_log(
        _text(record["trace"]),
        framework=system,
        id=f"mad-human/{trace_id}",
        system=system,
        benchmark=benchmark,
        metadata={"mad_trace_id": trace_id, "round": round_name or None, **quirks},
    )
    codes = load_taxonomy().codes
    annotators = sorted(
        {k for a in annotations if isinstance(a, dict) for k in a if k.startswith("annotator")}
    )
    problems: list[str] = []
    for annotator in annotators:
        mapped: dict[str, bool | None] = {}
        unmapped: dict[str, bool | None] = {}
        for entry in annotations:
            if not isinstance(entry, dict) or "failure mode" not in entry:
                problems.append(f"annotation entry without 'failure mode': {entry!r:.80}")
                continue
            label = str(entry["failure mode"])
            value = to_bool(entry.get(annotator))
            mode = version.match(label)
            name = label.strip().splitlines()[0].strip() if label.strip() else label
            if mode is None:
                unmapped[name] = value
                if annotator == annotators[0]:
                    problems.append(f"label {name!r} matches no mode of {version.version}")
            elif mode.maps_to is None:
                unmapped[name] = value
            elif mode.maps_to in mapped and mapped[mode.maps_to] != value:
                mapped[mode.maps_to] = None  # two labels for one code disagree: unknown
                problems.append(f"conflicting labels for {mode.maps_to} from {annotator}")
            else:
                mapped[mode.maps_to] = value
        trace.labels[annotator] = FailureVector(mapped, codes=codes)
        trace.label_sources[annotator] = LabelSource(
            annotator=annotator,
            kind="human",
            taxonomy_version=version.version,
            origin=f"MAD human-labelled dataset, {round_name or 'unknown round'}",
            # Draft labels are mapped by their texts onto the paper's meanings of 3.2/3.3.
            verification="paper",
            unmapped=unmapped,
        )
    if problems:
        trace.metadata["label_problems"] = problems
        warnings.warn(
            f"trace {trace.id}: {len(problems)} label problem(s), first: {problems[0]}",
            LabelMappingWarning,
            stacklevel=2,
        )
    return trace


def _pick_version(
    round_name: str, n_labels: int, overrides: Mapping[str, LabelVersion]
) -> LabelVersion:
    bundled = version_for_round(round_name) if round_name else None
    version_id = bundled.version if bundled else _VERSION_BY_SIZE.get(n_labels)
    if version_id is None:
        raise TraceFormatError(
            f"unknown annotation round {round_name!r} with {n_labels} labels",
            format="mad-human",
            expected="round 'Round 1', 'Round 2', 'Round 3' or 'Generlazability' "
            "(or 18 / 17 / 14 labels)",
            hint="Pass versions={...} to map a new round",
        )
    return overrides.get(version_id) or load_label_version(version_id)


# --- AG2 ------------------------------------------------------------------------------


def ag2(record: Mapping[str, Any]) -> Trace:
    """An AG2 (AutoGen) run: ``trajectory[{content, role, name}]``.

    The ``note`` field holds the earliest human open-coding labels; it never becomes a step
    (a judge must not see it) and is kept as annotator ``"note"`` on the codes that map.  A
    MAD-shaped record whose ``trace`` string holds the AG2 run is read from that string.
    """
    if "trajectory" not in record and isinstance(record.get("trace"), str):
        return _ag2_in_trace(record)
    if "trajectory" not in record:
        raise TraceFormatError(
            f"record has no 'trajectory' field (its fields: {', '.join(map(str, record))})",
            format="ag2",
            expected='"trajectory": [{"content": …, "role": …, "name": …}, …]',
        )
    trajectory = record["trajectory"]
    if not isinstance(trajectory, list):
        raise TraceFormatError(
            f"field 'trajectory' is a {type(trajectory).__name__}, not a list of messages",
            format="ag2",
            expected='"trajectory": [{"content": …, "role": …, "name": …}, …]',
        )
    steps = []
    for i, message in enumerate(trajectory):
        if not isinstance(message, dict):
            raise TraceFormatError(
                f"trajectory[{i}] is not an object",
                format="ag2",
                expected="{content, role, name}",
            )
        steps.append(
            Step.make(
                i,
                _text(message.get("content")),
                agent=_opt_str(message.get("name")) or _opt_str(message.get("role")),
                role=_opt_str(message.get("role")),
            )
        )
    metadata = {
        k: v
        for k, v in record.items()
        if k not in {"trajectory", "note", "problem_statement", "instance_id"}
    }
    trace = Trace(
        id=str(record.get("instance_id") or record.get("id") or ""),
        task=_opt_str(record.get("problem_statement")),
        system="AG2",
        steps=steps,
        outcome=outcomes.ag2(record).record(metadata),
        metadata=metadata,
    )
    note = record.get("note")
    if isinstance(note, dict) and isinstance(note.get("options"), dict):
        _attach_note_labels(trace, note)
    return trace


def _ag2_in_trace(record: Mapping[str, Any]) -> Trace:
    """The AG2 run serialized in a MAD-shaped record's ``trace`` string; errors name it."""
    where = "field 'trace' (a string)"
    try:
        inner = json.loads(record["trace"])
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(
            f"{where} is not JSON ({exc}), so it holds no AG2 run",
            format="ag2",
            expected="'trace': a JSON string of {instance_id, trajectory: [...], …}",
            hint="Read the record with format 'auto' or 'mad-run' to segment its log text",
        ) from None
    if not isinstance(inner, dict) or not isinstance(inner.get("trajectory"), list):
        if not isinstance(inner, dict):
            found = f"a JSON {type(inner).__name__}, not a run record"
        elif "trajectory" in inner:
            found = f"a run whose 'trajectory' is a {type(inner['trajectory']).__name__}"
        else:
            found = "a run record without a 'trajectory' field"
        raise TraceFormatError(
            f"{where} holds {found}; an AG2 run needs a 'trajectory' list of messages",
            format="ag2",
            expected="'trace': a JSON string of {instance_id, trajectory: [...], …}",
        )
    trace = ag2(inner)
    trace.metadata["mad_trace_id"] = record.get("trace_id")
    if not trace.id and record.get("trace_id") is not None:
        trace.id = f"mad-run/{record['trace_id']}"
    return trace


def _attach_note_labels(trace: Trace, note: Mapping[str, Any]) -> None:
    version = load_label_version("ag2-open-coding")
    mapped: dict[str, bool | None] = {}
    unmapped: dict[str, bool | None] = {}
    for label, answer in note["options"].items():
        mode = version.match(str(label))
        value = to_bool(answer)
        if mode is None or mode.maps_to is None:
            unmapped[str(label)] = value
        else:
            mapped[mode.maps_to] = value
    trace.labels["note"] = FailureVector(mapped, codes=load_taxonomy().codes)
    trace.label_sources["note"] = LabelSource(
        annotator="note",
        kind="human",
        taxonomy_version=version.version,
        origin="AG2 trace note (open coding)",
        verification="paper",  # its labels are mapped by text, like the MAD human file's
        unmapped=unmapped,
    )
    if note.get("text"):
        trace.metadata["note_text"] = _text(note["text"])


# --- Who&When -------------------------------------------------------------------------


def whoandwhen(record: Mapping[str, Any]) -> Trace:
    """A Who&When failure-attribution run: ``history[{content, role, name?}]``.

    ``mistake_agent`` / ``mistake_step`` stay metadata (``mistake_step`` is a 0-based index
    into ``history``, so its step id is ``s<mistake_step+1>``, stored as ``mistake_step_id``).
    """
    history = record.get("history")
    if not isinstance(history, list):
        raise TraceFormatError(
            "field 'history' is not a list of messages",
            format="whoandwhen",
            expected='"history": [{"content": …, "role": …, "name": …}, …]',
        )
    steps = [
        Step.make(
            i,
            _text(m.get("content")) if isinstance(m, dict) else _text(m),
            agent=(_opt_str(m.get("name")) or _opt_str(m.get("role")))
            if isinstance(m, dict)
            else None,
            role=_opt_str(m.get("role")) if isinstance(m, dict) else None,
        )
        for i, m in enumerate(history)
    ]
    metadata = {k: v for k, v in record.items() if k not in {"history", "question"}}
    step_no = str(record.get("mistake_step", "")).strip()
    if step_no.isdigit():
        metadata["mistake_step_id"] = f"s{int(step_no) + 1}"
    return Trace(
        id=str(record.get("question_ID") or record.get("id") or ""),
        task=_opt_str(record.get("question")),
        steps=steps,
        outcome=outcomes.whoandwhen(record).record(metadata),
        metadata=metadata,
    )


# --- OpenAI-style chat messages ----------------------------------------------------------


def chat(record: Mapping[str, Any] | list[Any]) -> Trace:
    """OpenAI-style chat messages: a list, or ``{"messages": [...], "id"?, "metadata"?}``.

    One step per message; an assistant message's ``tool_calls`` become ``tool_call`` steps
    (after a ``message`` step for any text it carries) and ``tool`` messages become
    ``tool_result`` steps; both keep the call id in ``metadata["call_id"]``.
    """
    messages = record if isinstance(record, list) else record.get("messages")
    if not isinstance(messages, list):
        raise TraceFormatError(
            "field 'messages' is not a list",
            format="chat",
            expected='[{"role": …, "content": …}, …]',
        )
    steps: list[Step] = []
    for i, message in enumerate(messages):
        if not _is_message(message):
            raise TraceFormatError(
                f"message {i} has no 'role'",
                format="chat",
                expected='{"role": "user" | "assistant" | "system" | "tool", "content": …}',
            )
        steps.extend(_chat_steps(message, len(steps), i))
    meta = {} if isinstance(record, list) else dict(record.get("metadata") or {})
    trace_id = "" if isinstance(record, list) else str(record.get("id") or "")
    task = None
    if not isinstance(record, list):
        task = _opt_str(record.get("task"))
    if task is None:
        task = next((s.content for s in steps if s.role == "user" and s.content), None)
    return Trace(id=trace_id, task=task, steps=steps, metadata=meta)


def _chat_steps(message: Mapping[str, Any], start: int, position: int) -> list[Step]:
    role = str(message["role"])
    agent = _opt_str(message.get("name")) or role
    base_meta = {"message_index": position}
    text = _text(message.get("content"))
    if role == "tool":
        return [
            Step.make(
                start,
                text,
                agent=agent,
                role=role,
                kind=StepKind.TOOL_RESULT,
                tool_name=_opt_str(message.get("name")),
                metadata={**base_meta, "call_id": message.get("tool_call_id")},
            )
        ]
    kind = StepKind.SYSTEM if role in {"system", "developer"} else StepKind.MESSAGE
    calls = message.get("tool_calls") or []
    steps = []
    if text or not calls:
        steps.append(Step.make(start, text, agent=agent, role=role, kind=kind, metadata=base_meta))
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        steps.append(
            Step.make(
                start + len(steps),
                arguments if isinstance(arguments, str) else _text(arguments),
                agent=agent,
                role=role,
                kind=StepKind.TOOL_CALL,
                tool_name=_opt_str(function.get("name")),
                tool_args=json_or_text(arguments),
                metadata={
                    **base_meta,
                    "call_id": call.get("id") if isinstance(call, dict) else None,
                },
            )
        )
    return steps


def json_or_text(value: object) -> object:
    """Tool arguments as JSON where they are JSON; otherwise the value, unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            return value
    return value


# --- mast's own format ---------------------------------------------------------------


def native(record: Mapping[str, Any]) -> Trace:
    """A trace written by mast itself (``Trace.model_dump_json()``)."""
    return Trace.model_validate(record)


def _langfuse_trace(record: Any) -> Trace:
    from mast.traces.loaders._langfuse import trace

    return trace(record)


def _langsmith_run(record: Any) -> Trace:
    from mast.traces.loaders._langsmith import run_trace

    return run_trace(record)


# The shapes of mast.traces.loaders._mad_run are added by mast.traces.loaders._files.
CONVERTERS: dict[str, Callable[[Any], Trace]] = {
    "langfuse": _langfuse_trace,
    "langsmith": _langsmith_run,
    "mad-full": mad_full,
    "mad-human": mad_human,
    "ag2": ag2,
    "whoandwhen": whoandwhen,
    "chat": chat,
    "mast": native,
}
