"""Long traces: split into windows of whole steps, and merge the windows' verdicts.

Nothing is truncated. A trace whose prompt would not fit the context budget is cut between
steps into consecutive windows; a single step larger than a window gets a window of its own
(and a problem note), it is never cut. Each window after the first carries a short note on
what the earlier windows found.

Merge rules depend on the mode's kind (:func:`mode_kinds`; MAST codes only, other
taxonomies treat every mode as local):

- **end of run** (1.5, 3.1, 3.2, 3.3 — stopping, verification): only the last window sees
  how the run ended, so the last window decides (it gets a note on the earlier windows);
  earlier windows' answers are ignored, and noted when they said present;
- **local** modes: present if some window shows it *with grounded evidence*; a window's
  positive without grounded evidence is dropped (the mode becomes unknown, noted), so false
  positives do not grow with the number of windows; absent only when every window said
  absent, else unknown;
- **cross-window** modes (1.3, 1.4, 2.4, 2.5 — repetition, forgotten context, withheld or
  ignored information) can span a boundary: after the windows, one **final pass** shows
  the judge the steps the windows cited and every window's summary and findings
  (:func:`final_pass_note`), and its grounded answer decides; without a final pass they
  merge like local modes.

>>> plan_windows([3, 3, 3, 9, 1], capacity=6)
[(0, 2), (2, 3), (3, 4), (4, 5)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mast.judge.annotation import Status
from mast.judge.prompt.types import WindowInfo
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import FailureVector

CARRY_OVER_MAX_CHARS = 700
"""Upper bound on the carry-over note, so windows stay predictable in size."""

FINAL_NOTE_MAX_CHARS = 4000
"""Upper bound on the note of the final pass over all windows."""

END_OF_RUN = frozenset({"1.5", "3.1", "3.2", "3.3"})
"""MAST modes that need the end of the run: decided by the last window."""

CROSS_WINDOW = frozenset({"1.3", "1.4", "2.4", "2.5"})
"""MAST modes that can span windows: decided by a final pass over the windows' findings."""

ModeKind = Literal["local", "end", "cross"]


def mode_kinds(codes: Sequence[str], taxonomy_name: str = "MAST") -> dict[str, ModeKind]:
    """The merge kind of every code (the MAST kinds apply to the MAST taxonomy only).

    >>> kinds = mode_kinds(["1.1", "1.3", "3.2"])
    >>> kinds["1.1"], kinds["1.3"], kinds["3.2"]
    ('local', 'cross', 'end')
    """
    if taxonomy_name != "MAST":
        return {c: "local" for c in codes}
    return {
        c: "end" if c in END_OF_RUN else "cross" if c in CROSS_WINDOW else "local" for c in codes
    }


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


def merge(
    results: Sequence[WindowResult],
    codes: Sequence[str],
    *,
    kinds: Mapping[str, ModeKind] | None = None,
    final: Verdict | None = None,
) -> Merged:
    """Merge window results by the rules in the module docstring. ``final`` is the verdict
    of the final pass (its answers count for cross-window modes only)."""
    read = [r for r in results if r.verdict is not None]
    failed = [r for r in results if r.verdict is None]
    kinds = kinds or {}
    problems: list[str] = []
    findings: dict[str, Finding] = {}
    for code in codes:
        kind = kinds.get(code, "local")
        if kind == "end" and results:
            findings[code] = _merge_end(code, results, problems)
            continue
        decided = _final_answer(code, final, problems) if kind == "cross" else None
        findings[code] = decided or _merge_any(code, read, failed, problems)
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


def _merge_any(
    code: str, read: Sequence[WindowResult], failed: Sequence[WindowResult], problems: list[str]
) -> Finding:
    """Present if a window shows it with grounded evidence; absent if all say absent."""
    answers = [
        (r, r.verdict.findings.get(code) or Finding(code=code, present=None))
        for r in read
        if r.verdict is not None
    ]
    positive = [(r, f) for r, f in answers if f.present is True]
    grounded = [(r, f) for r, f in positive if f.grounded is True]
    if grounded:
        return _positive(code, grounded)
    if positive:
        # More windows must not mean more false positives: a window's claim needs evidence.
        where = ", ".join(r.label for r, _ in positive)
        problems.append(
            f"windows: {code} judged present in {where} without grounded evidence; "
            "dropped from the merge (unknown)"
        )
        return Finding(
            code=code, present=None, rationale=f"unknown: ungrounded positive in {where}"
        )
    unanswered = [r for r, f in answers if f.present is None]
    if failed or unanswered or not answers:
        why = [f"{r.label} failed" for r in failed] + [
            f"{r.label} left it unanswered" for r in unanswered
        ]
        return Finding(
            code=code, present=None, rationale="unknown: " + "; ".join(why) if why else None
        )
    confidences = [f.confidence for _, f in answers if f.confidence is not None]
    return Finding(
        code=code,
        present=False,
        rationale=answers[-1][1].rationale,
        confidence=min(confidences) if confidences else None,
    )


def _merge_end(code: str, results: Sequence[WindowResult], problems: list[str]) -> Finding:
    """End-of-run modes: the window that holds the end decides."""
    last = results[-1]
    earlier = [
        r.label
        for r in results[:-1]
        if r.verdict is not None and (f := r.verdict.findings.get(code)) and f.present is True
    ]
    if earlier:
        problems.append(
            f"windows: {code} needs the end of the run; decided by {last.label}, not by "
            f"{', '.join(earlier)} (which said present)"
        )
    if last.verdict is None:
        return Finding(code=code, present=None, rationale=f"unknown: {last.label} failed")
    return _merge_any(code, [last], [], problems)


def _final_answer(code: str, final: Verdict | None, problems: list[str]) -> Finding | None:
    """The final pass's answer for a cross-window mode, if it gave a usable one."""
    finding = final.findings.get(code) if final is not None else None
    if finding is None or finding.present is None:
        return None
    if finding.present is True and finding.grounded is not True:
        problems.append(
            f"windows: the final pass judged {code} present without grounded evidence; "
            "the windows' answers decide"
        )
        return None
    rationale = f"[final pass] {finding.rationale}" if finding.rationale else "[final pass]"
    return finding.model_copy(update={"rationale": rationale})


def _positive(code: str, positive: Sequence[tuple[WindowResult, Finding]]) -> Finding:
    evidence: list[Evidence] = []
    dropped: list[Evidence] = []
    for _, f in positive:
        evidence += f.evidence
        dropped += f.dropped
    rationale = " ".join(f"[{r.label}] {f.rationale}" for r, f in positive if f.rationale)
    confidences = [f.confidence for _, f in positive if f.confidence is not None]
    return Finding(
        code=code,
        present=True,
        evidence=evidence,
        dropped=dropped,
        rationale=rationale or None,
        confidence=max(confidences) if confidences else None,
    )


def cited_steps(results: Sequence[WindowResult], codes: Sequence[str]) -> list[str]:
    """Step ids the windows cited as grounded evidence, the given codes' first."""
    first: list[str] = []
    rest: list[str] = []
    for result in results:
        if result.verdict is None:
            continue
        for code, finding in result.verdict.findings.items():
            target = first if code in codes else rest
            for item in finding.evidence:
                if item.grounded is True:
                    target += [s for s in _step_range(item.step_id) if s not in target]
    return first + [s for s in rest if s not in first]


def _step_range(step_id: str) -> list[str]:
    if "-" not in step_id:
        return [step_id]
    lo, _, hi = step_id.partition("-")
    try:
        a, b = sorted((int(lo.lstrip("s")), int(hi.lstrip("s"))))
    except ValueError:
        return [step_id]
    return [f"s{n}" for n in range(a, b + 1)][:20]


def final_pass_note(results: Sequence[WindowResult], codes: Sequence[str]) -> str:
    """The note of the final pass: what it is for, and every window's summary and findings."""
    parts = [
        f"Final review of a trace annotated in {len(results)} parts. The steps below are the "
        "ones the parts cited as evidence. Decide the modes that can span parts "
        f"({', '.join(codes)}) over the whole run, citing only the steps shown; the answers "
        "for the other modes are taken from the parts."
    ]
    for result in results:
        if result.verdict is None:
            parts.append(f"{result.label}: could not be annotated.")
            continue
        found = [
            f"{c}" + (f" ({', '.join(e.step_id for e in f.evidence[:3])})" if f.evidence else "")
            for c, f in result.verdict.findings.items()
            if f.present is True
        ]
        summary = " ".join((result.verdict.summary or "").split())
        parts.append(
            f"{result.label}: modes found: {', '.join(found) or 'none'}. Summary: {summary or '-'}"
        )
    note = "\n".join(parts)
    if len(note) > FINAL_NOTE_MAX_CHARS:
        note = note[: FINAL_NOTE_MAX_CHARS - 1] + "…"
    return note
