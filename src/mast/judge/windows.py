"""Long traces: split into windows of whole steps, and merge the windows' verdicts.

Nothing is truncated. A trace whose prompt would not fit the context budget is cut between
steps into consecutive windows; a single step larger than a window gets a window of its own
(and a problem note), it is never cut. Each window after the first carries a short note on
what the earlier windows found.

Merge rules, per mode: present (True) if any window shows it (its evidence is kept);
otherwise unknown (None) if any window failed or left the mode unanswered; absent (False)
only when every window said False.

>>> plan_windows([3, 3, 3, 9, 1], capacity=6)
[(0, 2), (2, 3), (3, 4), (4, 5)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mast.judge.annotation import Status
from mast.judge.prompts import WindowInfo
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import FailureVector

CARRY_OVER_MAX_CHARS = 700
"""Upper bound on the carry-over note, so windows stay predictable in size."""

_STATUS_RANK: dict[Status, int] = {"ok": 0, "parse_error": 1, "error": 2}


def plan_windows(step_costs: Sequence[int], capacity: int) -> list[tuple[int, int]]:
    """Greedy split of steps (by estimated token cost) into ``[start, end)`` index ranges.

    Consecutive steps are packed while their summed cost stays within ``capacity``; a step
    that alone exceeds it forms its own window.
    """
    windows: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, cost in enumerate(step_costs):
        if i > start and used + cost > capacity:
            windows.append((start, i))
            start, used = i, 0
        used += cost
    if start < len(step_costs):
        windows.append((start, len(step_costs)))
    return windows


@dataclass(frozen=True)
class WindowResult:
    """What one window produced: a verdict when its answer was read, else the failure."""

    info: WindowInfo
    status: Status
    verdict: Verdict | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        return f"part {self.info.index}/{self.info.count} ({self.info.first}–{self.info.last})"


def carry_over(done: Sequence[WindowResult]) -> str | None:
    """The note shown to the next window: which modes earlier parts found, and their summary."""
    if not done:
        return None
    first, last = done[0].info.first, done[-1].info.last
    found: dict[str, list[str]] = {}
    failed = []
    for result in done:
        if result.verdict is None:
            failed.append(str(result.info.index))
            continue
        for code, finding in result.verdict.findings.items():
            if finding.present is True:
                steps = found.setdefault(code, [])
                steps += [e.step_id for e in finding.evidence if e.step_id not in steps]
    parts = [f"Steps {first} to {last} were annotated in earlier parts."]
    if found:
        listed = "; ".join(
            f"{code} ({', '.join(steps[:4])})" if steps else code for code, steps in found.items()
        )
        parts.append(f"Modes found there: {listed}.")
    else:
        parts.append("No failure mode was found there.")
    if failed:
        parts.append(f"Part(s) {', '.join(failed)} could not be annotated.")
    summary = done[-1].verdict.summary if done[-1].verdict is not None else None
    if summary:
        parts.append(f"Summary of part {done[-1].info.index}: {' '.join(summary.split())}")
    note = " ".join(parts)
    if len(note) > CARRY_OVER_MAX_CHARS:
        note = note[: CARRY_OVER_MAX_CHARS - 1] + "…"
    return note


@dataclass(frozen=True)
class Merged:
    """The merged outcome of all windows."""

    vector: FailureVector
    findings: dict[str, Finding]
    task_completed: bool | None
    summary: str | None
    status: Status
    error: str | None
    problems: list[str]


def merge(results: Sequence[WindowResult], codes: Sequence[str]) -> Merged:
    """Merge window results by the rules in the module docstring."""
    read = [r for r in results if r.verdict is not None]
    failed = [r for r in results if r.verdict is None]
    problems: list[str] = []
    findings: dict[str, Finding] = {}
    for code in codes:
        answers = [
            (r, r.verdict.findings.get(code) or Finding(code=code, present=None))
            for r in read
            if r.verdict is not None
        ]
        positive = [(r, f) for r, f in answers if f.present is True]
        if positive:
            evidence: list[Evidence] = []
            dropped: list[Evidence] = []
            for _, f in positive:
                evidence += f.evidence
                dropped += f.dropped
            rationale = " ".join(f"[{r.label}] {f.rationale}" for r, f in positive if f.rationale)
            confidences = [f.confidence for _, f in positive if f.confidence is not None]
            findings[code] = Finding(
                code=code,
                present=True,
                evidence=evidence,
                dropped=dropped,
                rationale=rationale or None,
                confidence=max(confidences) if confidences else None,
            )
            continue
        unanswered = [r for r, f in answers if f.present is None]
        if failed or unanswered or not answers:
            why = [f"{r.label} failed" for r in failed] + [
                f"{r.label} left it unanswered" for r in unanswered
            ]
            findings[code] = Finding(
                code=code, present=None, rationale="unknown: " + "; ".join(why) if why else None
            )
            continue
        last = answers[-1][1]
        confidences = [f.confidence for _, f in answers if f.confidence is not None]
        findings[code] = Finding(
            code=code,
            present=False,
            rationale=last.rationale,
            confidence=min(confidences) if confidences else None,
        )
    vector = FailureVector({c: f.present for c, f in findings.items()}, codes=codes)
    # Only the last window sees how the run ended.
    last_result = results[-1] if results else None
    task_completed = (
        last_result.verdict.task_completed
        if last_result is not None and last_result.verdict is not None
        else None
    )
    summaries = [
        f"[{r.label}] {r.verdict.summary}" for r in read if r.verdict and r.verdict.summary
    ]
    for r in read:
        if r.verdict is not None:
            problems += [f"{r.label}: {p}" for p in r.verdict.problems]
    status: Status = max((r.status for r in results), key=lambda s: _STATUS_RANK[s], default="ok")
    errors = [f"{r.label}: {r.error}" for r in failed if r.error]
    return Merged(
        vector=vector,
        findings=findings,
        task_completed=task_completed,
        summary=" ".join(summaries) or None,
        status=status,
        error="; ".join(errors) or None,
        problems=problems,
    )
