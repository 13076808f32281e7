"""Issue 21's targets, each read from the row of this run that measures it.

``bench/run.py`` prints this table after the benchmark rows and writes it into
``RESULTS.md``, so the pass/fail of every target comes from the run itself (a target whose
benchmark was not run, e.g. with ``--only``, says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from _common import Row


@dataclass(frozen=True)
class Target:
    text: str
    bench: str
    matches: Callable[[Row], bool]


def _target_is(bench: str, text: str) -> Callable[[Row], bool]:
    return lambda row: row.bench == bench and row.target == text


def _share_at(concurrency: int) -> Callable[[Row], bool]:
    # The latency in the target text is the mode's (--smoke uses a shorter one).
    prefix = f"≥ 85% of N·L/C (C={concurrency},"
    return lambda row: row.bench == "throughput" and row.target.startswith(prefix)


ISSUE_21 = [
    Target(
        "cost ≤ 0.75× the official with prompt caching (same model, 2 examples each)",
        "cost",
        _target_is("cost", "≤ 0.75×"),
    ),
    Target("cost ≤ 0.4× the official with batch", "cost", _target_is("cost", "≤ 0.4×")),
    Target(
        "throughput ≥ 85% of the ideal N·L/C, 200 MAD-size traces, C=32, L=0.5 s",
        "throughput",
        _share_at(32),
    ),
    Target(
        "the same at C=128, L=2 s",
        "throughput",
        _share_at(128),
    ),
    Target(
        "overhead per 10k-char trace ≤ 10 ms median",
        "overhead",
        _target_is("overhead", "≤ 10 ms median (ours)"),
    ),
    Target(
        "streaming load + segmentation ≤ 1.15× the CPU of json.load + the same conversion",
        "memory",
        _target_is("memory", "≤ 1.15× (CPU)"),
    ),
]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def target_lines(rows: list[Row], ran: set[str]) -> list[str]:
    """The markdown table: one line per (target, row measuring it)."""
    lines = [
        "| issue 21 target | measured (this run) | ratio | pass/fail and reason |",
        "|---|---|---|---|",
    ]
    for target in ISSUE_21:
        found = [row for row in rows if target.matches(row)]
        if not found:
            why = "not run (--only)" if target.bench not in ran else "no row measured it"
            lines.append(f"| {_cell(target.text)} | not measured | n/a | {why} |")
            continue
        for row in found:
            verdict = row.verdict if not row.note else f"{row.verdict}: {row.note}"
            measured = f"{row.what}: {row.ours}"
            lines.append(
                f"| {_cell(target.text)} | {_cell(measured)} | {_cell(row.ratio)} "
                f"| {_cell(verdict)} |"
            )
    return lines
