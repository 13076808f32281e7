"""Build the trace of one ITBench trial folder: its session files, diagnosis and outcome.

The public entry points are :func:`mast.traces.itbench.load_run` and ``mast.load_trace(folder)``;
the matching rule and scores live in :mod:`mast.traces.itbench`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mast.errors import GroundTruthError, TraceFormatError
from mast.traces.itbench_layout import ground_truth_for_scenario, scenario_of_trial
from mast.traces.itbench_scoring import (
    GROUND_TRUTH_NAMES,
    DiagnosisScore,
    GroundTruth,
    SuccessRule,
    _success,
    diagnosis_file,
    find_ground_truth,
    find_runs,
    load_ground_truth,
    read_diagnosis,
    score_diagnosis,
)
from mast.traces.loaders._files import TraceLoadWarning, _read_file
from mast.traces.loaders._open import open_binary
from mast.traces.loaders._session import dedupe_instructions, sniff_session
from mast.traces.model import Outcome, Step, StepKind, Trace

SESSION_FORMATS = {"codex", "codex-exec", "claude-code"}


def scenario_id(name: str) -> str:
    """``"Scenario-2"``, ``"scenario_2"``, ``"incident-2"``, ``"2"`` → ``"2"``; else the name."""
    match = re.fullmatch(r"(?:[A-Za-z]+[-_]?)?(\d+)", name)
    return match.group(1) if match else name


def session_files(folder: Path) -> list[tuple[Path, str]]:
    """The session files below a trial folder and their formats, hidden folders skipped."""
    return _session_files(folder)[0]


def _session_files(folder: Path) -> tuple[list[tuple[Path, str]], list[str]]:
    """(session files and formats, why other JSON Lines files below the folder were skipped)."""
    out = []
    skipped = []
    candidates = [*folder.rglob("*.jsonl"), *folder.rglob("*.jsonl.gz")]
    for path in sorted(candidates):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        try:
            with open_binary(path) as handle:  # .jsonl.gz sessions too
                head = handle.read(64 * 1024)
        except (OSError, EOFError) as exc:
            skipped.append(f"{relative}: cannot be read ({exc}); skipped")
            continue
        kind = sniff_session(head, whole_file=len(head) < 64 * 1024)
        if kind in SESSION_FORMATS:
            out.append((path, kind))
        else:
            skipped.append(
                f"{relative}: not a Codex, codex exec or Claude Code session file; skipped"
            )
    return out, skipped


def build_trial(
    folder: Path,
    *,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path | None,
    success: Callable[[DiagnosisScore], bool],
    rule_name: str,
) -> list[Trace]:
    """Load one trial folder as one trace per task (see :func:`load_trial`)."""
    if not folder.is_dir():
        raise TraceFormatError("not a folder", path=folder, format="itbench")
    sessions: list[Trace] = []
    found, problems = _session_files(folder)
    for path, kind in found:
        for item in _read_file(path, kind):
            if isinstance(item, TraceFormatError):
                problems.append(str(item))
            else:
                item.metadata["session_file"] = str(path.relative_to(folder))
                sessions.append(item)
    sessions = _unique_sessions(sessions)
    sessions.sort(key=lambda t: (_first_time(t), t.metadata["session_file"]))
    for problem in problems:
        warnings.warn(f"{folder}: {problem}", TraceLoadWarning, stacklevel=3)

    groups = task_groups(sessions)
    outcome, reason, score, files = _outcome(folder, ground_truth, success)
    tied, why = _scored_group(groups, files.get("diagnosis_file") or DIAGNOSIS_NAME)
    incident = folder.parent.name
    # A trial folder straight under a folder named "itbench" must not read itbench/itbench/….
    parts = [p for p in (incident, folder.name) if p.lower() != "itbench"]
    base = "/".join(["itbench", *parts])
    traces = []
    for number, group in enumerate(groups or [[]], 1):
        models = list(dict.fromkeys(m for t in group for m in _models(t)))
        steps, dedupe = _merge(group)
        metadata: dict[str, Any] = {
            "scenario": incident,
            "scenario_id": scenario_of_trial(folder) or scenario_id(incident),
            "trial": folder.name,
            "model": ", ".join(models) or None,
            "models": models,
            "sessions": [
                {
                    "file": t.metadata["session_file"],
                    "id": t.id,
                    "format": t.format,
                    "steps": len(t.steps),
                    "model": ", ".join(_models(t)) or None,
                }
                for t in group
            ],
            "deduplicated_instructions": dedupe,
            "success_rule": rule_name,
            **files,
        }
        if len(groups) > 1:
            metadata["task_of_trial"] = f"{number} of {len(groups)}"
        if problems:
            metadata["session_problems"] = problems
        if not group:
            metadata["no_session"] = True
        mine = tied is None or tied == number - 1
        if mine and tied is not None:
            metadata["outcome_reason"] = reason
            metadata["scored_output"] = why
            metadata["outcome_field"] = "itbench_score" if score is not None else "diagnosis_file"
            if score is not None:
                metadata["itbench_score"] = score.model_dump()
        else:
            metadata["outcome_reason"] = why
        traces.append(
            Trace(
                id=base if len(groups) <= 1 else f"{base}/task-{number}",
                task=next((t.task for t in group if t.task), None),
                system=f"ITBench SRE agent ({group[0].system})" if group else "ITBench SRE agent",
                model=metadata["model"],
                benchmark="ITBench SRE",
                steps=steps,
                outcome=outcome if mine and tied is not None else Outcome.UNKNOWN,
                source=str(folder),
                format="itbench",
                metadata=metadata,
            )
        )
    return traces


DIAGNOSIS_NAME = "agent_output.json"


def task_groups(sessions: list[Trace]) -> list[list[Trace]]:
    """Sessions (in time order) grouped into tasks: a session continues the one before it
    when both have the same instructions and the same model(s) (a harness resuming the run);
    another task (a remediation plan after a diagnosis) or another model is another trace."""
    groups: list[list[Trace]] = []
    for trace in sessions:
        if groups and _task_key(groups[-1][-1]) == _task_key(trace):
            groups[-1].append(trace)
        else:
            groups.append([trace])
    return groups


def _task_key(trace: Trace) -> tuple[str, tuple[str, ...]]:
    instructions = next((s.content for s in trace.steps if s.kind is StepKind.SYSTEM), "")
    return " ".join(instructions.split()), tuple(_models(trace))


# NAME stands for the escaped file name.
_WRITE_SHELL = (
    r"(?:>{1,2}|\btee\s+(?:-a\s+)?|\b(?:cp|mv|install)\s+(?:-\S+\s+)*\S+\s+)"
    r"\s*['\"]?[^\s'\"|;&>]*NAME"
)
_WRITE_CODE = (
    r"open\(\s*['\"][^'\"]*NAME['\"]\s*,\s*['\"][wax]|NAME['\"]?\s*\)?\.write_(?:text|bytes)"
)
_PATCH = r"\*\*\* (?:Add|Update) File:\s*\S*NAME|^\+\+\+ \S*NAME"
_EDIT_TOOLS = {"write", "edit", "multiedit", "str_replace_based_edit_tool", "create"}


def writes_file(step: Step, name: str) -> bool:
    """Whether a tool call writes the file ``name`` (a patch adding or updating it, a shell
    redirection, copy or move onto it, Python opening it for writing, an editor tool on it)."""
    if step.kind is not StepKind.TOOL_CALL:
        return False
    escaped = re.escape(name)
    args = step.tool_args
    if (step.tool_name or "").lower() in _EDIT_TOOLS and isinstance(args, Mapping):
        target = str(args.get("file_path") or args.get("path") or "")
        if target.endswith(name):
            return True
    text = step.content
    if name not in text:
        return False
    return any(
        re.search(pattern.replace("NAME", escaped), text, re.M)
        for pattern in (_PATCH, _WRITE_SHELL, _WRITE_CODE)
    )


def _scored_group(groups: list[list[Trace]], diagnosis: str) -> tuple[int | None, str]:
    """Which task the scored output belongs to (its index), and why; ``None`` when it cannot
    be tied to one, with the reason every trace of the trial then carries."""
    if len(groups) <= 1:
        return 0, "the trial's only task"
    name = Path(diagnosis).name
    writers = [
        (k, next(s.id for s in g_steps if writes_file(s, name)))
        for k, g_steps in enumerate(_steps_of(groups))
        if any(writes_file(s, name) for s in g_steps)
    ]
    if len(writers) == 1:
        k, step = writers[0]
        return k, f"task {k + 1} of {len(groups)} writes {name} (session step {step})"
    if not writers:
        why = f"none of its {len(groups)} tasks writes {name}"
    else:
        shown = ", ".join(str(k + 1) for k, _ in writers)
        why = f"tasks {shown} of {len(groups)} all write {name}"
    return None, (
        f"not scored: the trial's {name} cannot be tied to one session ({why}), so no trace "
        "of this trial gets its score"
    )


def _steps_of(groups: list[list[Trace]]) -> list[list[Step]]:
    return [[s for t in group for s in t.steps] for group in groups]


def _outcome(
    folder: Path,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path | None,
    success: Callable[[DiagnosisScore], bool],
) -> tuple[Outcome, str, DiagnosisScore | None, dict[str, Any]]:
    files: dict[str, Any] = {}
    diag_path = diagnosis_file(folder)
    if diag_path is not None:
        files["diagnosis_file"] = str(diag_path.relative_to(folder))
    gt_source: GroundTruth | Mapping[str, Any] | str | Path | None = ground_truth
    missing = (
        "no ground truth found: none passed, none in the trial or incident folder, and no "
        "ground_truth/scenario_N beside the runs; pass ground_truth=… (CLI: --ground-truth "
        "PATH) to score the diagnosis"
    )
    if isinstance(gt_source, (str, Path)) and Path(gt_source).is_dir():
        # A folder of scenario folders (ITBench's ground_truth/ or a snapshot folder).
        root, number = Path(gt_source), scenario_of_trial(folder)
        direct = [root / n for n in GROUND_TRUTH_NAMES if (root / n).is_file()]
        gt_source = direct[0] if direct else None
        if gt_source is None and number is not None:
            gt_source = ground_truth_for_scenario(root, number, GROUND_TRUTH_NAMES)
        missing = (
            f"no ground truth for scenario {number or '?'} in {root} (looked for "
            f"scenario_{number or 'N'}/ or Scenario-{number or 'N'}/ holding groundtruth.yaml)"
        )
    elif gt_source is None:
        gt_source = find_ground_truth(folder)
    if isinstance(gt_source, (str, Path)):
        files["ground_truth_file"] = str(gt_source)
    if diag_path is None:
        return Outcome.FAILURE, "no diagnosis: agent_output.json not found", None, files
    diagnosis, problem = read_diagnosis(diag_path)
    if diagnosis is None:
        return Outcome.FAILURE, f"unusable diagnosis: {problem}", None, files
    if gt_source is None:
        return Outcome.UNKNOWN, missing, None, files
    try:
        truth = load_ground_truth(gt_source)
    except GroundTruthError as exc:
        raise TraceFormatError(str(exc), path=folder, format="itbench") from exc
    score = score_diagnosis(diagnosis, truth)
    ok = success(score)
    reason = (
        f"recall {score.recall:.2f}, precision "
        f"{'n/a' if score.precision is None else f'{score.precision:.2f}'}"
        + (f"; missed {', '.join(score.missed)}" if score.missed else "")
    )
    return (Outcome.SUCCESS if ok else Outcome.FAILURE), reason, score, files


def _models(trace: Trace) -> list[str]:
    """Every model a session used (a Codex session may switch models midway)."""
    listed = trace.metadata.get("models")
    if isinstance(listed, list) and listed:
        return [str(m) for m in listed]
    return [trace.model] if trace.model else []


def _first_time(trace: Trace) -> str:
    return next((s.timestamp for s in trace.steps if s.timestamp), "~")


def _unique_sessions(sessions: list[Trace]) -> list[Trace]:
    """One trace per session id: a copied ``session.jsonl`` next to its rollout keeps the
    longer of the two."""
    best: dict[str, Trace] = {}
    anonymous: list[Trace] = []
    for trace in sessions:
        if not trace.id or trace.id == Path(trace.metadata["session_file"]).stem:
            anonymous.append(trace)
        elif trace.id not in best or len(trace.steps) > len(best[trace.id].steps):
            best[trace.id] = trace
    return [*best.values(), *anonymous]


def _merge(sessions: list[Trace]) -> tuple[list[Step], dict[str, int]]:
    """All sessions' steps in order, with a boundary step between sessions and repeated
    instructions (across sessions too) replaced by references."""
    steps: list[Step] = []
    dropped = replaced = 0
    for number, trace in enumerate(sessions, 1):
        dedupe = trace.metadata.get("deduplicated_instructions")
        if isinstance(dedupe, Mapping):
            dropped += int(dedupe.get("turn_context_repeats_dropped", 0))
            replaced += int(dedupe.get("repeats_replaced", 0))
        if len(sessions) > 1:
            steps.append(
                Step.make(
                    len(steps),
                    f"[session {number} of {len(sessions)}: {trace.metadata['session_file']}]",
                    agent="itbench-harness",
                    kind=StepKind.LOG,
                    timestamp=_first_time(trace) if _first_time(trace) != "~" else None,
                    metadata={"session_file": trace.metadata["session_file"], "boundary": True},
                )
            )
        # Session-local ids become global ones; references to repeated text follow them.
        local_to_global: dict[str, str] = {}
        for step in trace.steps:
            global_id = f"s{len(steps) + 1}"
            local_to_global[step.id] = global_id
            update: dict[str, Any] = {
                "id": global_id,
                "index": len(steps),
                "metadata": {
                    **step.metadata,
                    "session_file": trace.metadata["session_file"],
                    "session_step": step.id,
                },
            }
            original = step.metadata.get("repeat_of")
            if isinstance(original, str) and original in local_to_global:
                update["metadata"]["repeat_of"] = local_to_global[original]
                update["content"] = (
                    f"[repeated instructions: same text as {local_to_global[original]}]"
                )
            steps.append(step.model_copy(update=update))
    merged, counts = dedupe_instructions(steps)
    chars = counts["chars_removed"] + sum(
        int(t.metadata.get("deduplicated_instructions", {}).get("chars_removed", 0))
        for t in sessions
    )
    return merged, {
        "repeats_replaced": replaced + counts["count"],
        "turn_context_repeats_dropped": dropped,
        "total": replaced + counts["count"] + dropped,
        "chars_removed": chars,
    }


def load_trial(
    folder: str | Path,
    *,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path | None = None,
    success: SuccessRule = "recall",
) -> list[Trace]:
    """Load one ITBench trial folder as one trace per task, each scored where the trial's
    files allow it.

    The session files in the folder (Codex rollouts, ``session.jsonl``, ``codex exec --json``
    captures, Claude Code sessions; ``.jsonl.gz`` too; any other JSON Lines file is skipped
    with a :class:`~mast.traces.loaders.TraceLoadWarning`) are put in time order.  A session
    continues the one before it when both have the same instructions and model (a harness
    resuming the run): their steps become one trace, with repeated instructions replaced by
    references.  Another task (a remediation plan after a diagnosis) or another model is a
    trace of its own (ids ``…/task-1``, ``…/task-2``), with its own task and model.

    The diagnosis (``agent_output.json``) is scored against the ground truth (found beside
    the run, see :func:`~mast.traces.itbench.find_ground_truth`, or ``ground_truth``; a
    folder of ``scenario_N`` folders picks the trial's scenario) and gives the outcome of the
    task that wrote it: the trial's only task, or the one task whose tool calls write the
    file.  When no single task can be tied to it (none or several write it), no trace is
    scored: every outcome is ``"unknown"``, and ``metadata["outcome_reason"]`` says why.  A
    missing or unreadable diagnosis makes the tied task's outcome ``"failure"``; missing
    ground truth leaves it ``"unknown"``.
    """
    rule, description = _success(success)
    return build_trial(Path(folder), ground_truth=ground_truth, success=rule, rule_name=description)


def load_run(
    folder: str | Path,
    *,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path | None = None,
    success: SuccessRule = "recall",
) -> Trace:
    """Load an ITBench trial folder that holds one task as one trace (see :func:`load_trial`;
    a trial of several tasks raises :class:`TraceFormatError`: read it with
    :func:`load_trial` or :func:`mast.load_traces`)."""
    traces = load_trial(folder, ground_truth=ground_truth, success=success)
    if len(traces) > 1:
        raise TraceFormatError(
            f"the trial holds {len(traces)} tasks ({', '.join(t.id for t in traces)})",
            path=Path(folder),
            format="itbench",
            expected="a trial folder of one task",
            hint="Read it with mast.load_traces(folder) or mast.traces.itbench.load_trial",
        )
    return traces[0]


def load_runs(
    root: str | Path,
    *,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path | None = None,
    success: SuccessRule = "recall",
) -> Iterator[Trace]:
    """Every trace of every trial folder under ``root`` (see :func:`load_trial`)."""
    for folder in find_runs(root):
        yield from load_trial(folder, ground_truth=ground_truth, success=success)
