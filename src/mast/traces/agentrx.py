"""AgentRx's human-labelled failed runs: Magentic-One on GAIA and a τ-bench retail assistant.

AgentRx (Microsoft, arXiv 2602.02475, MIT) labels *every* failure of a failed run with its
step, the agent that made it, one of 10 categories (``taxonomy/agentrx.yaml``) and reasons,
and names one of them the root cause. Its data has two parts, each a folder:

* ``magentic_one/``: ``ground_truth.json`` (a list of labelled runs) and
  ``trajectories/<trajectory_id>.json`` (a list of ``{content, role}`` messages);
* ``tau_retail/``: ``ground_truth.json`` and ``runs.json`` (τ-bench results: ``task_id``,
  ``reward``, ``info`` with the task's expected actions, ``traj`` with the messages of the
  system prompt, the simulated user, the assistant and the retail tools).

Step numbers are 1-based in both parts, checked against the histories of the copy mast
bundles (microsoft/AgentRx @ f228165): in Magentic-One, 148 of the 178 labelled failures
name the agent of message ``step_number - 1`` (0-based) and only 31 the agent of message
``step_number``; three labels point at the last message (``step_number == len(history)``),
which a 0-based reading would put past the end. In τ-bench every message carries an
``index`` field (1, 2, …) and all 19 labels name the role of the message with that index.
So the label ``step_number`` N is step id ``s<N>`` here (Who&When's 0-based ``mistake_step``
N is ``s<N+1>``). The few Magentic-One labels that name the agent of the neighbouring
message (mostly one run whose repeated label points at the orchestrator's instruction to
the WebSurfer) are kept as labelled.

Each trace carries: ``labels["agentrx"]`` (a category is ``True`` when any labelled failure
has it, ``False`` otherwise: AgentRx labels every failure of the run), the root cause as
``metadata["mistake_agent"]`` / ``metadata["mistake_step_id"]`` (the names Who&When's
loader uses, so :func:`mast.agree.attribution_labels` reads them), and everything else in
``metadata["agentrx"]``: ``part``, ``failures`` (each with ``step_id``, ``agent``,
``category`` code and name, reasons), ``root_cause`` and ``failure_summary``. The τ-bench
task's expected actions, hidden user instruction, expected outputs and reward are kept in
``metadata["agentrx"]["task"]``; mast's prompts never show trace metadata to a judge.

>>> runs = load_agentrx()
>>> len(runs), sorted({t.metadata["agentrx"]["part"] for t in runs})
(37, ['magentic_one', 'tau_retail'])
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import FailureVector, LabelSource, Outcome, Step, StepKind, Trace

__all__ = [
    "AGENTRX_PARTS",
    "AgentRxLabelWarning",
    "AgentRxPart",
    "agentrx_part",
    "bundled_agentrx_path",
    "is_agentrx",
    "load_agentrx",
]

AgentRxPart = Literal["magentic_one", "tau_retail"]
AGENTRX_PARTS: tuple[AgentRxPart, ...] = ("magentic_one", "tau_retail")
ANNOTATOR = "agentrx"
_SYSTEMS = {"magentic_one": "Magentic-One", "tau_retail": "tau-bench retail assistant"}
_BENCHMARKS = {"magentic_one": "GAIA", "tau_retail": "tau-bench retail"}
_BUNDLED = Path(__file__).resolve().parent / "bundled" / "agentrx"


class AgentRxLabelWarning(UserWarning):
    """An AgentRx label could not be read fully (unknown category, missing root cause, …)."""


def bundled_agentrx_path() -> Path:
    """The copy of AgentRx's public labelled runs shipped with mast (MIT; see its LICENSE)."""
    return _BUNDLED


def agentrx_part(folder: str | Path) -> AgentRxPart | None:
    """Which AgentRx part a folder holds (by its files and their content), or ``None``.

    >>> agentrx_part(bundled_agentrx_path() / "tau_retail")
    'tau_retail'
    """
    root = Path(folder)
    if not (root / "ground_truth.json").is_file():
        return None
    runs = root / "runs.json"
    if runs.is_file():
        head = runs.read_text(encoding="utf-8", errors="replace")[:4000]
        if '"traj"' in head and '"task_id"' in head:
            return "tau_retail"
    if (root / "trajectories").is_dir():
        return "magentic_one"
    return None


def _parts(path: Path) -> list[tuple[AgentRxPart, Path]]:
    if path.is_file() and path.name == "ground_truth.json":
        path = path.parent
    if not path.is_dir():
        return []
    own = agentrx_part(path)
    if own is not None:
        return [(own, path)]
    found: list[tuple[AgentRxPart, Path]] = []
    for child in sorted(p for p in path.iterdir() if p.is_dir()):
        part = agentrx_part(child)
        if part is not None:
            found.append((part, child))
    return found


def is_agentrx(path: str | Path) -> bool:
    """True when ``path`` is AgentRx data: the data folder, one part's folder, or its
    ``ground_truth.json``."""
    return bool(_parts(Path(path)))


def load_agentrx(
    path: str | Path | None = None, *, part: Literal["all", "magentic_one", "tau_retail"] = "all"
) -> list[Trace]:
    """Load AgentRx's labelled failed runs with every labelled failure and the root cause.

    ``path``: AgentRx's ``data`` folder (holding ``magentic_one/`` and ``tau_retail/``), one
    part's folder, or that part's ``ground_truth.json``; the part is recognised from the
    files. Without ``path`` the copy bundled with mast is read (22 Magentic-One and 15
    τ-bench runs, offline). ``part`` keeps one part. A run whose history cannot be read is
    skipped with an :class:`AgentRxLabelWarning` naming its file; the others still load.

    >>> runs = load_agentrx(part="tau_retail")
    >>> first = runs[0]
    >>> first.id, first.metadata["mistake_step_id"], first.steps[2].kind.value
    ('agentrx/tau_retail/2', 's7', 'tool_call')
    """
    if part not in ("all", *AGENTRX_PARTS):
        raise ValueError(f"part must be 'all', 'magentic_one' or 'tau_retail', got {part!r}")
    root = _BUNDLED if path is None else Path(path)
    parts = _parts(root)
    if not parts:
        raise TraceFormatError(
            "no AgentRx data here: expected a folder with ground_truth.json and either "
            "runs.json (τ-bench retail) or trajectories/ (Magentic-One), or a folder holding "
            "such folders (magentic_one/, tau_retail/)",
            path=str(root),
            format="agentrx",
        )
    taxonomy = load_taxonomy("agentrx")
    traces: list[Trace] = []
    for name, folder in parts:
        if part not in ("all", name):
            continue
        if name == "magentic_one":
            traces.extend(_magentic(folder, taxonomy))
        else:
            traces.extend(_tau(folder, taxonomy))
    return traces


# --- reading -----------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TraceFormatError(
            f"cannot read JSON ({exc})", path=str(path), format="agentrx"
        ) from exc


def _ground_truth(folder: Path) -> list[Mapping[str, Any]]:
    path = folder / "ground_truth.json"
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise TraceFormatError(
            "ground_truth.json is not a list of labelled runs",
            path=str(path),
            format="agentrx",
            expected='[{"trajectory_id": …, "failures": [...], "root_cause": {...}}, …]',
        )
    return data


def _warn(message: str) -> None:
    warnings.warn(message, AgentRxLabelWarning, stacklevel=4)


def _magentic(folder: Path, taxonomy: Taxonomy) -> Iterable[Trace]:
    for record in _ground_truth(folder):
        run_id = str(record.get("trajectory_id", ""))
        file = folder / "trajectories" / f"{run_id}.json"
        try:
            history = _read_json(file)
            if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
                raise TraceFormatError(
                    "a Magentic-One history must be a list of {content, role} messages",
                    path=str(file),
                    format="agentrx",
                )
        except TraceFormatError as exc:
            _warn(f"AgentRx run {run_id!r} skipped: {exc}")
            continue
        steps = [
            Step.make(
                i,
                _text(m.get("content")),
                agent=_opt(m.get("role")),
                role=_opt(m.get("role")),
                metadata={"step_number": i + 1},
            )
            for i, m in enumerate(history)
        ]
        first = history[0] if history else {}
        task = _text(first.get("content")) if _opt(first.get("role")) == "human" else None
        yield _labelled(
            Trace(
                id=f"agentrx/magentic_one/{run_id}",
                task=task.strip() if task else None,
                system=_SYSTEMS["magentic_one"],
                benchmark=_BENCHMARKS["magentic_one"],
                steps=steps,
                outcome=Outcome.FAILURE,
                source=str(file),
                format="agentrx",
            ),
            record,
            "magentic_one",
            taxonomy,
            {},
        )


def _tau(folder: Path, taxonomy: Taxonomy) -> Iterable[Trace]:
    runs_file = folder / "runs.json"
    runs = _read_json(runs_file)
    if not isinstance(runs, list):
        raise TraceFormatError(
            "runs.json is not a list of τ-bench results", path=str(runs_file), format="agentrx"
        )
    by_id = {str(r.get("task_id")): r for r in runs if isinstance(r, dict)}
    for record in _ground_truth(folder):
        run_id = str(record.get("trajectory_id", ""))
        run = by_id.get(run_id)
        if run is None or not isinstance(run.get("traj"), list):
            _warn(
                f"AgentRx τ-bench run {run_id!r} skipped: {runs_file} has no result with "
                "that task_id and a 'traj' list"
            )
            continue
        steps = [_tau_step(i, m) for i, m in enumerate(run["traj"]) if isinstance(m, dict)]
        info: dict[str, Any] = run["info"] if isinstance(run.get("info"), dict) else {}
        task: dict[str, Any] = info["task"] if isinstance(info.get("task"), dict) else {}
        hidden = {
            # What the task expected and how the run scored: for scoring and reading only,
            # never part of a prompt (the judge must find the failure from the run itself).
            "expected_actions": task.get("actions"),
            "user_instruction": task.get("instruction"),
            "expected_outputs": task.get("outputs"),
            "user_id": task.get("user_id"),
            "reward": run.get("reward"),
            "reward_info": info.get("reward_info"),
            "trial": run.get("trial"),
        }
        reward = run.get("reward")
        failed = isinstance(reward, (int, float)) and reward < 1
        yield _labelled(
            Trace(
                id=f"agentrx/tau_retail/{run_id}",
                system=_SYSTEMS["tau_retail"],
                benchmark=_BENCHMARKS["tau_retail"],
                steps=steps,
                outcome=Outcome.FAILURE if failed or record.get("failures") else Outcome.UNKNOWN,
                source=f"{runs_file}#task_id={run_id}",
                format="agentrx",
            ),
            record,
            "tau_retail",
            taxonomy,
            {"task": hidden},
        )


def _tau_step(i: int, m: Mapping[str, Any]) -> Step:
    """One τ-bench message as one step, so that step ``s<N>`` is the message AgentRx labels N
    (an assistant message with a tool call and text stays one ``tool_call`` step)."""
    role = _opt(m.get("role"))
    meta: dict[str, Any] = {"step_number": m.get("index", i + 1)}
    content = _text(m.get("content"))
    if role == "system":
        return Step.make(i, content, agent="system", role=role, kind=StepKind.SYSTEM, metadata=meta)
    if role == "tool":
        meta["call_id"] = m.get("tool_call_id")
        return Step.make(
            i,
            content,
            agent="tool",
            role=role,
            kind=StepKind.TOOL_RESULT,
            tool_name=_opt(m.get("name")),
            metadata=meta,
        )
    agent = "User" if role == "user" else "Assistant" if role == "assistant" else role
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls:
        names, args, ids = [], [], []
        for call in calls:
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            names.append(_opt(fn.get("name")))
            args.append(_arguments(fn.get("arguments")))
            ids.append(call.get("id") if isinstance(call, dict) else None)
        meta["call_id"] = ids[0] if len(ids) == 1 else ids
        return Step.make(
            i,
            content,
            agent=agent,
            role=role,
            kind=StepKind.TOOL_CALL,
            tool_name=names[0] if len(names) == 1 else ", ".join(n or "?" for n in names),
            tool_args=args[0] if len(args) == 1 else args,
            metadata=meta,
        )
    return Step.make(i, content, agent=agent, role=role, metadata=meta)


def _arguments(raw: object) -> object:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


# --- labels ------------------------------------------------------------------------------


def _labelled(
    trace: Trace,
    record: Mapping[str, Any],
    part: AgentRxPart,
    taxonomy: Taxonomy,
    extra: Mapping[str, Any],
) -> Trace:
    by_number = {s.metadata.get("step_number"): s.id for s in trace.steps}
    failures: list[dict[str, Any]] = []
    unreadable = False
    raw_failures = record.get("failures")
    for failure in raw_failures if isinstance(raw_failures, list) else []:
        if not isinstance(failure, dict):
            continue
        number = _int(failure.get("step_number"))
        label = _opt(failure.get("failure_category"))
        code = taxonomy.code_for_name(label) if label else None
        if code is None:
            unreadable = True
            _warn(
                f"{trace.id}: failure {failure.get('failure_id')!r} has category {label!r}, "
                f"which is none of AgentRx's 10 categories; its category is unknown"
            )
        step_id = by_number.get(number, f"s{number}") if number is not None else None
        failures.append(
            {
                "failure_id": failure.get("failure_id"),
                "step_number": number,
                "step_id": step_id,
                "past_end": step_id is not None and step_id not in trace_ids(trace),
                "agent": _opt(failure.get("failed_agent")),
                "category": code,
                "category_label": label,
                "step_reason": failure.get("step_reason"),
                "category_reason": failure.get("category_reason"),
            }
        )
    root = _root_cause(trace.id, record.get("root_cause"), failures)
    present = {f["category"] for f in failures if f["category"]}
    # Every failure of the run is labelled, so an absent category is "no" - unless some
    # failure's category could not be read: then it may be any absent one (unknown).
    vector = FailureVector(
        {c: True if c in present else (None if unreadable else False) for c in taxonomy.codes},
        codes=taxonomy.codes,
    )
    trace.labels[ANNOTATOR] = vector
    trace.label_sources[ANNOTATOR] = LabelSource(
        annotator=ANNOTATOR,
        kind="human",
        taxonomy_version="agentrx",
        origin=f"AgentRx {part}/ground_truth.json",
    )
    trace.metadata["agentrx"] = {
        "part": part,
        "failures": failures,
        "root_cause": root,
        "failure_summary": record.get("failure_summary"),
        **extra,
    }
    trace.metadata["dataset"] = {"name": "agentrx", "subset": part, "source": "local"}
    if root is not None:
        trace.metadata["mistake_agent"] = root["agent"]
        trace.metadata["mistake_step_id"] = root["step_id"]
    return trace


def trace_ids(trace: Trace) -> set[str]:
    return {s.id for s in trace.steps}


def _root_cause(
    trace_id: str, raw: object, failures: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    wanted = _int(raw.get("failure_id")) if isinstance(raw, dict) else None
    hits = [f for f in failures if _int(f["failure_id"]) == wanted] if wanted is not None else []
    if not hits:
        if failures:
            _warn(f"{trace_id}: the root cause names failure {wanted!r}, which is not labelled")
        return None
    hit = hits[0]
    return {
        "failure_id": hit["failure_id"],
        "step_id": hit["step_id"],
        "agent": hit["agent"],
        "category": hit["category"],
        "reason": raw.get("reason_for_root_cause") if isinstance(raw, dict) else None,
    }


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _opt(value: object) -> str | None:
    return str(value) if value is not None and str(value).strip() else None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
