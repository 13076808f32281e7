"""Grounding of a verdict's evidence against the trace: :func:`ground`.

Each evidence item must cite a step that exists (``"s3"``; ``"s3-s5"`` is a range whose steps
must all exist) and, if it quotes, the quote must occur in the cited step's text (content,
tool name and tool arguments), compared case-insensitively with whitespace collapsed and
typographic quotes and dashes unified; an ellipsis inside a quote separates parts that must
occur in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mast.judge.parse import normalize_step_id
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.traces.model import Trace

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


def _quote_found(quote: str, haystack: str) -> bool:
    parts = [p for p in (_norm(x).strip(" \"'") for x in _ELLIPSIS.split(quote)) if p]
    if not parts:
        return True
    pos = 0
    for part in parts:
        found = haystack.find(part, pos)
        if found == -1:
            return False
        pos = found + len(part)
    return True


def ground(verdict: Verdict, trace: Trace, *, drop_ungrounded: bool = False) -> Verdict:
    """Check every evidence item of ``verdict`` against ``trace`` (see the module docstring).

    Returns a new verdict; the input is not changed. Grounding never changes ``present``:
    a positive finding whose evidence all failed stays positive, is listed in
    :attr:`Verdict.ungrounded` and noted in ``problems``, so the caller decides.

    >>> from mast.judge.parse import parse_response
    >>> from mast.traces.model import Step
    >>> t = Trace(id="t", steps=[Step.make(0, "Continue.  Please keep solving")])
    >>> ev = '[{"step_id": "s1", "quote": "continue. please KEEP"}, {"step_id": "s9"}]'
    >>> v = parse_response('{"modes": {"1.5": {"present": true, "evidence": %s}}}' % ev)
    >>> [e.grounded for e in ground(v, t).findings["1.5"].evidence]
    [True, False]
    """
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
        updated = finding.model_copy(update={"evidence": kept, "dropped": dropped})
        findings[code] = updated
        bad = [e for e in (*kept, *dropped) if e.grounded is False]
        for item in bad:
            note = f"grounding: {code} cites {item.step_id}: {item.problem}"
            if note not in problems:
                problems.append(note)
        if updated.present is True and updated.grounded is False:
            note = f"grounding: {code} is judged present but none of its evidence is grounded"
            if note not in problems:
                problems.append(note)
    return verdict.model_copy(update={"findings": findings, "problems": problems})


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
    if item.quote and item.quote.strip():
        haystack = "\n".join(text_of(r) for r in refs)
        if not _quote_found(item.quote, haystack):
            return item.model_copy(
                update={
                    "step_id": ref,
                    "grounded": False,
                    "problem": f"quote not found in {ref}: {item.quote[:80]!r}",
                }
            )
    return item.model_copy(update={"step_id": ref, "grounded": True, "problem": None})
