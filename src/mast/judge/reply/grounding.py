"""Grounding of a verdict's evidence against the trace (:func:`ground`), and the evidence
policy that decides what an ungrounded positive answer is worth.

Each evidence item must cite a step that exists (``"s3"``; ``"s3-s5"`` is a range whose steps
must all exist) and, if it quotes, the quote must occur in the cited step's text (content,
tool name and tool arguments), compared case-insensitively with whitespace collapsed and
typographic quotes and dashes unified. A quote must be long enough to prove something (at
least :data:`MIN_QUOTE_WORDS` words or :data:`MIN_QUOTE_CHARS` characters: "the" or "..."
occur anywhere). An ellipsis inside a quote separates fragments that must all occur, in
order, in *one* step, each at most :data:`MAX_ELLIPSIS_GAP` characters after the previous
one. An empty quote is a plain step citation.

A positive answer is **ungrounded** when it cites no evidence at all, or when none of its
evidence holds. The evidence policy (``Judge(ungrounded=…)``) says what happens then:

- ``"keep"``: the answer stands; evidence items still carry ``grounded`` and ``problem``;
- ``"flag"`` (default): the answer stands and ``problems`` says which positives are
  ungrounded;
- ``"unknown"``: the answer becomes ``None`` (counted and reported); ``Finding.judged``
  keeps what the judge said.

:func:`grounded_share` gives, per mode, how many positive answers were grounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mast.judge.reply.parse import normalize_step_id
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import FailureVector, Trace

__all__ = [
    "EVIDENCE_POLICIES",
    "MAX_ELLIPSIS_GAP",
    "MIN_QUOTE_CHARS",
    "MIN_QUOTE_WORDS",
    "EvidencePolicy",
    "GroundedShare",
    "apply_evidence_policy",
    "ground",
    "grounded_share",
]

EvidencePolicy = Literal["keep", "flag", "unknown"]
"""What an ungrounded positive answer becomes (see the module docstring)."""

EVIDENCE_POLICIES: tuple[EvidencePolicy, ...] = ("keep", "flag", "unknown")

MIN_QUOTE_WORDS = 3
"""A quote of fewer words needs at least :data:`MIN_QUOTE_CHARS` characters to count."""

MIN_QUOTE_CHARS = 15
"""A quote of fewer characters needs at least :data:`MIN_QUOTE_WORDS` words to count."""

MAX_ELLIPSIS_GAP = 300
"""Most characters an ellipsis in a quote may stand for between two fragments."""

# One fragment of an elided quote must say something on its own ("a … b" proves nothing).
_MIN_FRAGMENT_CHARS = 4

_QUOTE_CHARS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u2013": "-", "\u2014": "-", "\u00a0": " "})  # fmt: skip


_ELLIPSIS = re.compile(r"\s*(?:\.\.\.+|…|\[\s*(?:\.\.\.|…)\s*\])\s*")


def _norm(text: str) -> str:
    return " ".join(text.translate(_QUOTE_CHARS).casefold().split())


def _step_text(trace_step: Any) -> str:
    parts = [trace_step.content or ""]
    if trace_step.tool_name:
        parts.append(str(trace_step.tool_name))
    if trace_step.tool_args not in (None, "", {}, []):
        args = trace_step.tool_args
        parts.append(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
    return "\n".join(parts)


def _expand(ref: str, ids: Mapping[str, int]) -> list[str] | None:
    if ref in ids:
        return [ref]
    span = re.fullmatch(r"s(\d+)-s(\d+)", ref)
    if span:
        lo, hi = sorted((int(span.group(1)), int(span.group(2))))
        refs = [f"s{n}" for n in range(lo, hi + 1)]
        if all(r in ids for r in refs):
            return refs
    return None


def _quote_parts(quote: str) -> list[str]:
    return [p for p in (_norm(x).strip(" \"'.,;:") for x in _ELLIPSIS.split(quote)) if p]


def _quote_problem(parts: list[str]) -> str | None:
    """Why a quote is too short to ground anything (None when it is long enough)."""
    joined = " ".join(parts)
    if len(joined) < MIN_QUOTE_CHARS and len(joined.split()) < MIN_QUOTE_WORDS:
        return (
            f"quote too short to check ({joined!r}); quote at least {MIN_QUOTE_WORDS} words "
            f"or {MIN_QUOTE_CHARS} characters"
        )
    if len(parts) > 1 and any(len(p) < _MIN_FRAGMENT_CHARS for p in parts):
        return "a fragment of the elided quote is too short to check"
    return None


def _quote_found(quote: str, haystack: str) -> bool:
    """Whether ``quote`` grounds in ``haystack`` (normalized text) by the rules above; an
    empty quote is no quote and holds (other modules' evidence uses this too)."""
    parts = _quote_parts(quote)
    if not parts:
        return not quote.strip()
    return _quote_problem(parts) is None and _fragments_in(parts, haystack)


def _fragments_in(parts: list[str], haystack: str) -> bool:
    """All fragments in order, each close enough after the previous one."""
    start = haystack.find(parts[0])
    while start != -1:
        pos, ok = start + len(parts[0]), True
        for part in parts[1:]:
            found = haystack.find(part, pos)
            if found == -1 or found - pos > MAX_ELLIPSIS_GAP:
                ok = False
                break
            pos = found + len(part)
        if ok:
            return True
        start = haystack.find(parts[0], start + 1)
    return False


def ground(
    verdict: Verdict,
    trace: Trace,
    *,
    drop_ungrounded: bool = False,
    policy: EvidencePolicy = "flag",
) -> Verdict:
    """Check every evidence item of ``verdict`` against ``trace`` (see the module docstring),
    then apply the evidence ``policy`` to positive answers that are not grounded.

    Returns a new verdict; the input is not changed. With ``"keep"`` and ``"flag"`` an
    ungrounded positive stays positive (listed in :attr:`Verdict.ungrounded`; ``"flag"``
    notes it in ``problems``); with ``"unknown"`` it becomes ``None``.

    Examples
    --------
    >>> from mast.judge.reply.parse import parse_response
    >>> from mast.traces.model import Step
    >>> t = Trace(id="t", steps=[Step.make(0, "Continue.  Please keep solving")])
    >>> ev = '[{"step_id": "s1", "quote": "continue. please KEEP"}, {"step_id": "s9"}]'
    >>> v = parse_response('{"modes": {"1.5": {"present": true, "evidence": %s}}}' % ev)
    >>> [e.grounded for e in ground(v, t).findings["1.5"].evidence]
    [True, False]
    """
    if policy not in EVIDENCE_POLICIES:
        raise ValueError(f"policy must be one of {EVIDENCE_POLICIES}, got {policy!r}")
    ids = {s.id: i for i, s in enumerate(trace.steps)}
    texts: dict[str, str] = {}

    def text_of(step_id: str) -> str:
        if step_id not in texts:
            texts[step_id] = _norm(_step_text(trace.steps[ids[step_id]]))
        return texts[step_id]

    problems = list(verdict.problems)
    findings: dict[str, Finding] = {}
    for code, finding in verdict.findings.items():
        kept: list[Evidence] = []
        dropped = [e for e in finding.dropped]
        for item in finding.evidence:
            checked = _check(item, ids, text_of, trace)
            if checked.grounded is False and drop_ungrounded:
                dropped.append(checked)
            else:
                kept.append(checked)
        findings[code] = finding.model_copy(update={"evidence": kept, "dropped": dropped})
        for item in (*kept, *dropped):
            note = f"grounding: {code} cites {item.step_id}: {item.problem}"
            if item.grounded is False and note not in problems:
                problems.append(note)
    grounded = verdict.model_copy(update={"findings": findings, "problems": problems})
    return apply_evidence_policy(grounded, policy)


def apply_evidence_policy(verdict: Verdict, policy: EvidencePolicy) -> Verdict:
    """``verdict`` with the evidence ``policy`` applied to its ungrounded positive answers.

    >>> from mast.judge.reply.parse import parse_response
    >>> v = parse_response('{"modes": {"1.3": {"present": true, "evidence": []}}}')
    >>> apply_evidence_policy(v, "unknown").vector["1.3"], v.vector["1.3"]
    (None, True)
    """
    if policy not in EVIDENCE_POLICIES:
        raise ValueError(f"policy must be one of {EVIDENCE_POLICIES}, got {policy!r}")
    ungrounded = verdict.ungrounded
    if policy == "keep" or not ungrounded:
        return verdict
    problems = list(verdict.problems)
    findings = dict(verdict.findings)
    for code in ungrounded:
        finding = findings[code]
        why = (
            "cites no evidence"
            if not (finding.evidence or finding.dropped)
            else ("none of its evidence is grounded")
        )
        if policy == "flag":
            note = f"grounding: {code} is judged present but {why}"
        else:
            note = f"grounding: {code} was judged present but {why}; set to unknown"
            findings[code] = finding.model_copy(update={"present": None, "judged": True})
        if note not in problems:
            problems.append(note)
    vector = FailureVector({c: f.present for c, f in findings.items()}, codes=list(verdict.vector))
    return verdict.model_copy(update={"findings": findings, "vector": vector, "problems": problems})


@dataclass(frozen=True)
class GroundedShare:
    """How many positive answers for one mode were grounded."""

    positives: int
    """Answers "present" as the judge gave them (before any evidence policy)."""
    grounded: int
    """Of those, answers with at least one grounded evidence item."""

    @property
    def share(self) -> float | None:
        """``grounded / positives`` (None when there were no positives)."""
        return self.grounded / self.positives if self.positives else None


def grounded_share(findings: Iterable[Mapping[str, Finding]]) -> dict[str, GroundedShare]:
    """Per mode, the positive answers and how many of them were grounded.

    Takes the ``findings`` of annotations or verdicts (a positive set to unknown by the
    ``"unknown"`` policy still counts, as ungrounded).

    >>> f = Finding(code="1.3", present=True)
    >>> grounded_share([{"1.3": f}])["1.3"]
    GroundedShare(positives=1, grounded=0)
    """
    counts: dict[str, list[int]] = {}
    for by_code in findings:
        for code, finding in by_code.items():
            if finding.present is not True and finding.judged is not True:
                continue
            entry = counts.setdefault(code, [0, 0])
            entry[0] += 1
            entry[1] += finding.grounded is True
    return {code: GroundedShare(p, g) for code, (p, g) in counts.items()}


def _check(item: Evidence, ids: Mapping[str, int], text_of: Any, trace: Trace) -> Evidence:
    ref = normalize_step_id(item.step_id)
    refs = _expand(ref, ids)
    if refs is None:
        span = f"s1–s{len(trace.steps)}" if trace.steps else "none"
        return item.model_copy(
            update={
                "step_id": ref,
                "grounded": False,
                "problem": f"no step {ref!r} in trace {trace.id!r} (its steps are {span})",
            }
        )
    parts = _quote_parts(item.quote or "")
    if parts or (item.quote or "").strip():
        # "..." quotes nothing: it is too short, not a plain step citation.
        problem = _quote_problem(parts or [""])
        if (
            problem is not None
            and len(parts) == 1
            and any(
                parts[0] == _norm(trace.steps[ids[r]].content or "").strip(" \"'.,;:") for r in refs
            )
        ):
            problem = None  # short, but the whole of the step: nothing else it could match
        if problem is None and not any(_fragments_in(parts, text_of(r)) for r in refs):
            problem = f"quote not found in {ref}: {(item.quote or '')[:80]!r}"
        if problem is not None:
            return item.model_copy(update={"step_id": ref, "grounded": False, "problem": problem})
    return item.model_copy(update={"step_id": ref, "grounded": True, "problem": None})
