"""The benchmark's targets (issues 21 and 37), each read from the rows of this run.

``bench/run.py`` prints this table after the benchmark rows and writes it into
``RESULTS.md``, so the pass/fail of every target comes from the run itself: a target whose
benchmark was not run (``--only``) says so, and a row that carries a target not listed here
is listed after them. The 0.5 s-latency throughput rows are information, not targets (issue
37): with a server that answers in 0.5 s and no rate limit they measure how much CPU each
trace takes on the machine, which the overhead row measures directly.
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


def _any_target(bench: str) -> Callable[[Row], bool]:
    # Every row of the benchmark that states a target (one not measurable in a small run
    # has passed=None and says why).
    return lambda row: row.bench == bench and row.target != "reported"


TARGETS = [
    Target(
        "issue 37: cost ≤ 0.75× the official with prompt caching, on real traces (each "
        "provider's prices, default few-shot and 2-shot)",
        "cost",
        _target_is("cost", "≤ 0.75×"),
    ),
    Target(
        "issue 37: cost ≤ 0.4× the official with the batch API, on real traces",
        "cost",
        _target_is("cost", "≤ 0.4×"),
    ),
    Target(
        "issue 37: CPU overhead per trace ≤ 4× the official annotator's, same run",
        "overhead",
        _target_is("overhead", "≤ 4× the official (median)"),
    ),
    Target(
        "issue 37: rate limits: ≥ 95% of the binding limit after the first window, ≤ 1% "
        "429'd, 0 failures, with and without --rpm/--tpm",
        "ratelimit",
        _any_target("ratelimit"),
    ),
    Target(
        "issue 37: real latency: ≥ 95% of the ideal N·E[L]/C (C=64, 1,000 traces)",
        "latency",
        _any_target("latency"),
    ),
    Target(
        "issue 21: streaming load + segmentation ≤ 1.15× the CPU of json.load + the same "
        "conversion",
        "memory",
        _target_is("memory", "≤ 1.15× (CPU)"),
    ),
]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _line(target: str, row: Row) -> str:
    verdict = row.verdict if row.passed is not None else "not measurable in this run"
    verdict = verdict if not row.note else f"{verdict}: {row.note}"
    measured = f"{row.what}: {row.ours}"
    return f"| {_cell(target)} | {_cell(measured)} | {_cell(row.ratio)} | {_cell(verdict)} |"


def target_lines(rows: list[Row], ran: set[str], known: set[str] | None = None) -> list[str]:
    """The markdown table: one line per (target, row measuring it). ``known``: the
    benchmarks this checkout has (a target of another is "not in this checkout")."""
    lines = [
        "| target | measured (this run) | ratio | pass/fail and reason |",
        "|---|---|---|---|",
    ]
    listed: set[int] = set()
    for target in TARGETS:
        found = [row for row in rows if target.matches(row)]
        if not found:
            if known is not None and target.bench not in known:
                why = f"no '{target.bench}' benchmark in this checkout"
            elif target.bench not in ran:
                why = "not run (--only)"
            else:
                why = "no row measured it"
            lines.append(f"| {_cell(target.text)} | not measured | n/a | {why} |")
            continue
        for row in found:
            listed.add(id(row))
            lines.append(_line(target.text, row))
    for row in rows:
        if row.passed is not None and id(row) not in listed:
            lines.append(_line(f"{row.bench}: {row.target}", row))
    return lines
