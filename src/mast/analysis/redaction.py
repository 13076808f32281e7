"""What the report and the exports show of traces and annotations, through :mod:`mast.privacy`.

Trace text reaches a page or a file in two ways: the traces themselves (task, steps, names)
and what a judge wrote about them (summary, rationales, quotes, error lines, the decisive
error), which quotes the trace and holds its secrets too when the judge ran without
redaction. Both pass through one :class:`~mast.privacy.redact.Redactor` here before
``mast report`` or ``mast export`` writes anything; ``redact=False`` (``--no-redact``) keeps
the raw text for a user who asks for it.

>>> from mast.traces.model import Step, Trace
>>> trace = Trace(id="t", steps=[Step.make(0, "key: sk-proj-" + "a1B2" * 8, agent="a")])
>>> [shown], count = redact_traces([trace], shown_redactor(True))
>>> shown.steps[0].content, count
('key: [REDACTED:openai_key]', 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mast.judge.annotation import Annotation
from mast.judge.verdict import Evidence
from mast.privacy.redact import Redactor
from mast.traces.model import Trace

__all__ = ["redact_annotation", "redact_runs", "redact_traces", "shown_redactor"]


def shown_redactor(redact: bool | Redactor) -> Redactor:
    """The redactor of a page or export: the default patterns for ``True``, a disabled one
    for ``False``, or the one given."""
    if isinstance(redact, Redactor):
        return redact
    return Redactor() if redact else Redactor.off()


def redact_traces(traces: Iterable[Trace], redactor: Redactor) -> tuple[list[Trace], int]:
    """The traces with their text redacted, and how many secrets were replaced."""
    out: list[Trace] = []
    total = 0
    for trace in traces:
        shown, counts = redactor.redact_trace(trace)
        out.append(shown)
        total += sum(counts.values())
    return out, total


def _text(redactor: Redactor, value: str | None) -> str | None:
    return redactor.redact(value).text if value else value


def _evidence(redactor: Redactor, items: list[Evidence]) -> list[Evidence]:
    out = []
    for item in items:
        quote = _text(redactor, item.quote)
        out.append(item if quote == item.quote else item.model_copy(update={"quote": quote}))
    return out


def redact_annotation(ann: Annotation, redactor: Redactor) -> Annotation:
    """A copy of ``ann`` whose free text (error, summary, problems, rationales, evidence
    quotes, the decisive error's reason, quote and problem) is redacted; labels, ids and
    numbers are unchanged. The same object when nothing changed."""
    if not redactor.enabled:
        return ann
    updates: dict[str, Any] = {}
    for name in ("error", "summary"):
        value = getattr(ann, name)
        if value and (new := _text(redactor, value)) != value:
            updates[name] = new
    problems = [redactor.redact(p).text for p in ann.problems]
    if problems != ann.problems:
        updates["problems"] = problems
    findings = {}
    for code, finding in ann.findings.items():
        rationale = _text(redactor, finding.rationale)
        evidence = _evidence(redactor, finding.evidence)
        dropped = _evidence(redactor, finding.dropped)
        if (rationale, evidence, dropped) != (finding.rationale, finding.evidence, finding.dropped):
            update = {"rationale": rationale, "evidence": evidence, "dropped": dropped}
            finding = finding.model_copy(update=update)
        findings[code] = finding
    if any(findings[c] is not f for c, f in ann.findings.items()):
        updates["findings"] = findings
    error = ann.decisive_error
    if error is not None:
        texts = {n: getattr(error, n) for n in ("reason", "quote", "problem")}
        changed = {n: _text(redactor, v) for n, v in texts.items() if v}
        changed = {n: v for n, v in changed.items() if v != texts[n]}
        if changed:
            updates["decisive_error"] = error.model_copy(update=changed)
    return ann.model_copy(update=updates) if updates else ann


def redact_runs(
    runs: Mapping[str, Sequence[Annotation]], redactor: Redactor
) -> dict[str, list[Annotation]]:
    """Every run's annotations through :func:`redact_annotation`."""
    return {run: [redact_annotation(a, redactor) for a in anns] for run, anns in runs.items()}
