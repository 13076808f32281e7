"""Check an excerpt against the run it was cut from: every shown step is the source text.

An excerpt step is the source message with parts left out, each left-out part marked
:data:`CUT` (``[…]``); nothing else is changed. Runs of whitespace count as one space (YAML
folds long lines). :func:`check_excerpt` reports every place where that does not hold, and
every reading whose cited span hides a step: a message between the first and last step the
reading cites (its ``step`` and the ``[s<n>]`` it names in ``why``) that is not shown but
mentions the reading's ``entity`` (default: its quote).

:func:`run_messages` reads the messages of a run from a local copy of the datasets (one folder
per dataset, laid out as in ``fewshot/README.md``, "Addressing").

>>> from mast.judge.prompt.excerpts import load_pool
>>> ex = load_pool()[0]
>>> texts = {i: s.content for i, s in zip(ex.source.history, ex.steps)}
>>> check_excerpt(ex, texts)
[]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mast.judge.prompt.excerpts import Excerpt, Source

__all__ = ["CUT", "FOLDERS", "check_excerpt", "run_messages"]

CUT = "[…]"

# Dataset name -> its folder under the datasets root.
FOLDERS = {"whoandwhen": "whoandwhen", "ag2": "ag2", "mad-full": "mad", "agentrx": "agentrx"}

_REF = re.compile(r"\[s(\d+)\]")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _text(content: Any) -> str:
    # AG2 MathChat keeps a message as a list of lines.
    if isinstance(content, list):
        return "\n".join(str(x) for x in content)
    return "" if content is None else str(content)


def run_messages(source: Source, root: str | Path) -> list[str]:
    """The text of every message of the run ``source`` names, in order.

    Who&When: ``history[i].content``; AG2: ``trajectory[i].content`` (a list of lines, joined
    with newlines); AgentRx τ-bench (``tau_retail/runs.json``, ``run`` = ``task_id``):
    ``traj[i].content``, then one ``name(arguments)`` line per tool call; AgentRx Magentic-One
    (``magentic_one/trajectories/<id>.json``): ``[i].content``; MAST-Data full records
    (``run`` = ``trace_id``): the steps mast's own loader makes of the record's trajectory.
    """
    file = Path(root) / FOLDERS[source.dataset] / source.path
    if source.dataset == "mad-full":
        from mast.traces.loaders import load_traces

        traces = [t for t in load_traces(file) if source.run is None or _trace_id(t) == source.run]
        if len(traces) != 1:
            raise ValueError(f"{file}: {len(traces)} records match run {source.run}")
        return [s.content for s in traces[0].steps]
    data = json.loads(file.read_text(encoding="utf-8"))
    if source.dataset == "whoandwhen":
        return [_text(m.get("content")) for m in data["history"]]
    if source.dataset == "ag2":
        return [_text(m.get("content")) for m in data["trajectory"]]
    if source.path.startswith("magentic_one/"):
        # AgentRx's Magentic-One GAIA runs: a list of {content, role}, as Who&When's history.
        return [_text(m.get("content")) for m in data]
    runs = [r for r in data if r.get("task_id") == source.run]
    if len(runs) != 1:
        raise ValueError(f"{file}: {len(runs)} runs have task_id {source.run}")
    return [_tau_text(m) for m in runs[0]["traj"]]


def _tau_text(message: Mapping[str, Any]) -> str:
    # A τ-bench assistant turn is text or tool calls; a call shows as `name(arguments)`.
    calls = [
        f"{c['function']['name']}({c['function']['arguments']})"
        for c in message.get("tool_calls") or []
    ]
    return "\n".join([t for t in [_text(message.get("content")), *calls] if t])


def _trace_id(trace: Any) -> int | None:
    raw = trace.metadata.get("mad_trace_id")
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def _step_problems(step_id: str, shown: str, source: str) -> list[str]:
    src = _norm(source)
    pieces = [_norm(p) for p in shown.split(CUT)]
    problems: list[str] = []
    at = 0
    for n, piece in enumerate(pieces):
        if not piece:
            continue
        found = src.find(piece, at)
        if found < 0:
            where = "not in the source" if piece not in src else "out of order"
            problems.append(
                f"{step_id}: text {piece[:60]!r} is {where}: an unmarked cut or change "
                f"(mark every left-out part with {CUT})"
            )
            continue
        # Source text skipped before a piece is fine after a CUT; before the first piece the
        # message's start was left out, which needs a CUT at the start.
        if n == 0 and src[at:found].strip():
            problems.append(f"{step_id}: the start of the message is left out without {CUT}")
        at = found + len(piece)
    if src[at:].strip() and pieces and pieces[-1]:
        problems.append(f"{step_id}: the end of the message is left out without {CUT}")
    if not any(pieces):
        problems.append(f"{step_id}: shows no text of the message")
    return problems


def check_excerpt(excerpt: Excerpt, messages: Mapping[int, str] | list[str]) -> list[str]:
    """Problems of ``excerpt`` against its run's ``messages`` (index -> text); [] if none."""
    texts = dict(enumerate(messages)) if isinstance(messages, list) else dict(messages)
    problems: list[str] = []
    for index, step in zip(excerpt.source.history, excerpt.steps, strict=True):
        if index not in texts:
            problems.append(f"{step.id}: the run has no message {index}")
            continue
        problems += _step_problems(step.id, step.content, texts[index])
    shown = set(excerpt.source.history)
    for reading in excerpt.readings:
        cited = {int(reading.step[1:]) - 1} | {int(n) - 1 for n in _REF.findall(reading.why)}
        cited &= shown
        entity = _norm(reading.entity or reading.quote).lower()
        for index in range(min(cited), max(cited) + 1):
            if index in shown or index not in texts:
                continue
            if entity in _norm(texts[index]).lower():
                problems.append(
                    f"reading for {reading.mode}: message {index} (s{index + 1}) lies between "
                    f"the cited steps and mentions {entity[:50]!r}, but is left out"
                )
    return problems
