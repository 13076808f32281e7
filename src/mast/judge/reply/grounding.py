"""Grounding of a verdict's evidence against the trace (:func:`ground`), and the evidence
policy that decides what an ungrounded positive answer is worth.

Each evidence item cites steps: ``"s3"``, a range ``"s3-s5"``, a list ``"s3, s5"`` /
``"s3 and s5"`` / ``"steps 3, 5"``. A cited id that names no step of the trace is dropped
from the item with a note; an item that names no existing step at all moves to
``Finding.dropped`` (with a note), and holds nothing. A quote must occur in one cited step's
text (content, tool name and tool arguments) after both are normalised (case, whitespace,
quote marks and dashes, escaping such as ``\\\\boxed``; see :mod:`mast.judge.reply.quotes`); it
may start in a cited step and run on into the next step. A quote of a compaction reference
the prompt showed (``[same content as s3]``, ``[lines 2-9 of s3, repeated]`` …) stands for
the text it replaced and is checked against the step as the prompt rendered it. A quote must
be long enough to prove something (at least :data:`MIN_QUOTE_WORDS` words or
:data:`MIN_QUOTE_CHARS` characters). An ellipsis inside a quote separates fragments that
must all occur, in order, in one step, each at most :data:`MAX_ELLIPSIS_GAP` characters
after the previous one.

What an item is worth:

- a quote found: ``grounded=True``. When the finding names an ``agent`` and the quoted step
  is another agent's, the item is flagged ``off_agent`` (noted, still grounded);
- a quote not found verbatim whose words are at least
  :data:`~mast.judge.reply.quotes.FUZZY_OVERLAP` in one stretch of a cited step:
  ``fuzzy=True``, ``grounded=False`` (reported, not evidence);
- no quote: a plain step citation, ``grounded=None``: it says where to look, it proves
  nothing.

A positive answer is **grounded** only with at least one non-empty quote found in a step it
cites (:attr:`Finding.grounded`); otherwise it is **ungrounded** and the evidence policy
(``Judge(ungrounded=…)``) says what happens:

- ``"keep"``: the answer stands; evidence items still carry ``grounded`` and ``problem``;
- ``"flag"`` (default): the answer stands and ``problems`` says which positives are
  ungrounded and why;
- ``"unknown"``: the answer becomes ``None`` (counted and reported); ``Finding.judged``
  keeps what the judge said.

:func:`grounded_share` gives, per mode, how many positive answers were grounded, how many
stood only on near-verbatim quotes, and how many quoted another agent's step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mast.judge.prompt.compact import compact_steps
from mast.judge.reply.parse import normalize_step_id
from mast.judge.reply.quotes import MAX_ELLIPSIS_GAP, fragments_at, near_verbatim, norm, quote_parts
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import FailureVector, Trace

# The names other modules' evidence checks import (attribution grounding).
_norm = norm
_quote_parts = quote_parts

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

# One fragment of an elided quote must say something on its own ("a … b" proves nothing).
_MIN_FRAGMENT_CHARS = 4

# Separators of a list of step ids: "s3, s5", "s3; s5", "s3 and s5", "s3 & s5", "s3 / s5".
_LIST_SEP = re.compile(r"\s*(?:,|;|&|\+|/|\band\b)\s*", re.IGNORECASE)
_STEPS_WORD = re.compile(r"^\s*steps?\b[\s:#]*(?=\d)", re.IGNORECASE)
# A compaction reference of the compact rendering (mast.judge.prompt.compact) in a quote.
_COMPACT_MARK = re.compile(r"same content as s\d|of s\d+, repeated|repeated \d+ more time"
                           r"|same text as s\d|\[= content lines")  # fmt: skip


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


def _cited(raw: str, ids: Mapping[str, int]) -> tuple[str, list[str], list[str]]:
    """The canonical form of a citation, the existing steps it names (in order, once each)
    and the parts that name no step."""
    ref = normalize_step_id(raw)
    refs = _expand(ref, ids)
    if refs is not None:
        return ref, refs, []
    text = _STEPS_WORD.sub("", ref.strip().strip("[]()"))
    pieces = [p for p in _LIST_SEP.split(text) if p.strip()]
    if len(pieces) < 2:
        return ref, [], [ref]
    found: list[str] = []
    bad: list[str] = []
    canon: list[str] = []
    for piece in pieces:
        one = normalize_step_id(piece)
        canon.append(one)
        expanded = _expand(one, ids)
        if expanded is None:
            bad.append(one)
        else:
            found += [r for r in expanded if r not in found]
    return ", ".join(canon), found, bad


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
    return fragments_at(parts, haystack)


class _Texts:
    """Normalised step texts of one trace, as written and as the compact prompt showed them
    (computed once, when a quote needs them)."""

    def __init__(self, trace: Trace, shown: Mapping[str, str] | None = None) -> None:
        self.trace = trace
        self.ids = {s.id: i for i, s in enumerate(trace.steps)}
        self._plain: dict[str, str] = {}
        self._shown_raw = shown
        self._shown: dict[str, str] = {}

    def plain(self, step_id: str) -> str:
        if step_id not in self._plain:
            self._plain[step_id] = _norm(_step_text(self.trace.steps[self.ids[step_id]]))
        return self._plain[step_id]

    def shown(self, step_id: str) -> str:
        if self._shown_raw is None:
            self._shown_raw = {r.id: r.text for r in compact_steps(self.trace.steps)}
        if step_id not in self._shown:
            raw = self._shown_raw.get(step_id)
            self._shown[step_id] = "" if raw is None else _norm(raw)
        return self._shown[step_id]

    def next_of(self, step_id: str) -> str | None:
        i = self.ids[step_id] + 1
        return self.trace.steps[i].id if i < len(self.trace.steps) else None

    def agent(self, step_id: str) -> str | None:
        return self.trace.steps[self.ids[step_id]].agent


def ground(
    verdict: Verdict,
    trace: Trace,
    *,
    drop_ungrounded: bool = False,
    policy: EvidencePolicy = "flag",
    shown: Mapping[str, str] | None = None,
) -> Verdict:
    """Check every evidence item of ``verdict`` against ``trace`` (see the module docstring),
    then apply the evidence ``policy`` to positive answers that are not grounded.

    ``shown`` maps each step id to the text the compact prompt showed under its header
    (:attr:`~mast.judge.prompt.types.Prompt.shown_steps` of a prompt of the whole trace);
    without it the trace is compacted again when a quote needs that text.

    Returns a new verdict; the input is not changed. With ``"keep"`` and ``"flag"`` an
    ungrounded positive stays positive (listed in :attr:`Verdict.ungrounded`; ``"flag"``
    notes it in ``problems``); with ``"unknown"`` it becomes ``None``. Items that name no
    step move to ``Finding.dropped``; with ``drop_ungrounded`` so does every item whose
    quote failed.

    Examples
    --------
    >>> from mast.judge.reply.parse import parse_response
    >>> from mast.traces.model import Step
    >>> t = Trace(id="t", steps=[Step.make(0, "Continue.  Please keep solving")])
    >>> ev = '[{"step_id": "s1", "quote": "continue. please KEEP"}, {"step_id": "s9"}]'
    >>> v = ground(parse_response('{"modes": {"1.5": {"present": true, "evidence": %s}}}' % ev), t)
    >>> [e.grounded for e in v.findings["1.5"].evidence], v.findings["1.5"].dropped[0].step_id
    ([True], 's9')
    """
    if policy not in EVIDENCE_POLICIES:
        raise ValueError(f"policy must be one of {EVIDENCE_POLICIES}, got {policy!r}")
    texts = _Texts(trace, shown)
    problems = list(verdict.problems)

    def note(text: str) -> None:
        if text not in problems:
            problems.append(text)

    findings: dict[str, Finding] = {}
    for code, finding in verdict.findings.items():
        kept: list[Evidence] = []
        dropped = list(finding.dropped)

        def noted(text: str, code: str = code) -> None:
            note(f"grounding: {code} {text}")

        for item in finding.evidence:
            checked = _check(item, texts, finding.agent, noted)
            no_step = (
                checked.grounded is False
                and checked.problem is not None
                and (checked.problem.startswith("no step"))
            )
            if no_step or (checked.grounded is False and drop_ungrounded):
                dropped.append(checked)
            else:
                kept.append(checked)
        findings[code] = finding.model_copy(update={"evidence": kept, "dropped": dropped})
        for item in (*kept, *dropped):
            if item.grounded is False:
                note(f"grounding: {code} cites {item.step_id}: {item.problem}")
    grounded = verdict.model_copy(update={"findings": findings, "problems": problems})
    return apply_evidence_policy(grounded, policy)


def _why_ungrounded(finding: Finding) -> str:
    items = [*finding.evidence, *finding.dropped]
    if not items:
        return "cites no evidence"
    if all(e.grounded is False and (e.problem or "").startswith("no step") for e in items):
        return "cites no step of the trace"
    if not any(e.quote and e.quote.strip() for e in items):
        return "quotes nothing (a step citation is not evidence)"
    fuzzy = sum(e.fuzzy for e in items)
    if fuzzy:
        return f"none of its quotes is found verbatim ({fuzzy} near-verbatim)"
    return "none of its quotes is found in the steps it cites"


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
        why = _why_ungrounded(finding)
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
    """Of those, answers with at least one quote found in a step they cite."""
    fuzzy: int = 0
    """Of the ungrounded ones, answers that quoted near-verbatim (a paraphrase)."""
    off_agent: int = 0
    """Of the grounded ones, answers that quote a step of another agent than they name."""

    @property
    def share(self) -> float | None:
        """``grounded / positives`` (None when there were no positives)."""
        return self.grounded / self.positives if self.positives else None


def grounded_share(findings: Iterable[Mapping[str, Finding]]) -> dict[str, GroundedShare]:
    """Per mode, the positive answers and how many of them were grounded, fuzzy or
    off-agent.

    Takes the ``findings`` of annotations or verdicts (a positive set to unknown by the
    ``"unknown"`` policy still counts, as ungrounded).

    >>> f = Finding(code="1.3", present=True)
    >>> grounded_share([{"1.3": f}])["1.3"]
    GroundedShare(positives=1, grounded=0, fuzzy=0, off_agent=0)
    """
    counts: dict[str, list[int]] = {}
    for by_code in findings:
        for code, finding in by_code.items():
            if finding.present is not True and finding.judged is not True:
                continue
            entry = counts.setdefault(code, [0, 0, 0, 0])
            items = [*finding.evidence, *finding.dropped]
            grounded = finding.grounded is True
            entry[0] += 1
            entry[1] += grounded
            entry[2] += not grounded and any(e.fuzzy for e in items)
            entry[3] += grounded and any(e.off_agent for e in items)
    return {code: GroundedShare(*numbers) for code, numbers in counts.items()}


def _same_agent(a: str, b: str) -> bool:
    return "".join(a.casefold().split()) == "".join(b.casefold().split())


def _check(
    item: Evidence, texts: _Texts, agent: str | None, note: Callable[[str], None]
) -> Evidence:
    trace = texts.trace
    ref, refs, bad = _cited(item.step_id, texts.ids)
    if not refs:
        span = f"s1–s{len(trace.steps)}" if trace.steps else "none"
        return item.model_copy(
            update={
                "step_id": ref,
                "grounded": False,
                "problem": f"no step {ref!r} in trace {trace.id!r} (its steps are {span})",
            }
        )
    for missing in bad:
        note(f"cites {missing} (in {ref!r}): no such step; that part of the citation is ignored")
    parts = _quote_parts(item.quote or "")
    if not parts and not (item.quote or "").strip():
        # A plain step citation says where to look; it proves nothing.
        return item.model_copy(update={"step_id": ref, "grounded": None, "problem": None})
    # "..." quotes nothing: it is too short, not a plain step citation.
    problem = _quote_problem(parts or [""])
    if (
        problem is not None
        and len(parts) == 1
        and any(
            parts[0] == _norm(trace.steps[texts.ids[r]].content or "").strip(" \"'.,;:")
            for r in refs
        )
    ):
        problem = None  # short, but the whole of the step: nothing else it could match
    if problem is not None:
        return item.model_copy(update={"step_id": ref, "grounded": False, "problem": problem})
    where = _find(parts, refs, texts, item.quote or "")
    if where is None:
        share = max((near_verbatim(" ".join(parts), texts.plain(r)) or 0.0) for r in refs)
        if share:
            problem = (
                f"quote not found verbatim in {ref}; near-verbatim ({share:.0%} of its words "
                f"in order): reported, not evidence: {(item.quote or '')[:80]!r}"
            )
            return item.model_copy(
                update={"step_id": ref, "grounded": False, "problem": problem, "fuzzy": True}
            )
        problem = f"quote not found in {ref}: {(item.quote or '')[:80]!r}"
        return item.model_copy(update={"step_id": ref, "grounded": False, "problem": problem})
    off = False
    step_agent = texts.agent(where)
    if agent and step_agent and not _same_agent(agent, step_agent):
        off = True
        note(f"quotes {where}, a step of {step_agent!r}, but names agent {agent!r}")
    return item.model_copy(
        update={"step_id": ref, "grounded": True, "problem": None, "off_agent": off}
    )


def _find(parts: list[str], refs: list[str], texts: _Texts, quote: str) -> str | None:
    """The cited step the quote comes from: found in the step, starting in it and running
    on into the next step, or in the step as the compact prompt showed it."""
    for r in refs:
        if fragments_at(parts, texts.plain(r)):
            return r
    for r in refs:
        after = texts.next_of(r)
        # One run of text only: an elided quote stitched across steps proves nothing.
        if after is not None and len(parts) == 1:
            here = texts.plain(r)
            if fragments_at(parts, f"{here} {texts.plain(after)}", before=len(here)):
                return r
    if _COMPACT_MARK.search(_norm(quote)):
        for r in refs:
            if fragments_at(parts, texts.shown(r)):
                return r
    return None
