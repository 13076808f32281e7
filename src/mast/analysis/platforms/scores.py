"""MAST verdicts as platform scores: one :class:`PlatformScore` per judged mode.

Platform-neutral: which span, observation or run a score belongs on, its value (1 = the mode
is present, 0 = absent), label, explanation, metadata and the id it is written under. The
platform modules (:mod:`.phoenix`, :mod:`.langfuse`, :mod:`.langsmith`, :mod:`.inspect_log`)
only translate these into their SDK's calls.

* **Where.** A trace loaded from the platform's own export (or pulled with ``mast pull``)
  carries the platform ids of its steps: the score goes on the span / observation / run of
  the first evidence step that has one, else on the trace's root. A trace with no id of that
  platform cannot be attached and gets no score (counted in ``unattached``).
* **What.** Unknown modes get no score (unknown is not "no"); an annotation that failed
  (status not ``ok``) is reported in ``failed`` and nothing of it is written.
* **Idempotent ids.** Every id is derived from the record key (trace id, judge config hash),
  the annotator and the mode code, so writing the same results twice updates the same scores.
* **Redaction.** Rationales and quotes go through the same secret redaction as everything
  mast sends (:mod:`mast.privacy.redact`) before they leave the machine.

>>> import mast
>>> trace = mast.Trace(id="0af7651916cd43dd8448eb211c80319c", format="otel",
...     metadata={"trace_id": "0af7651916cd43dd8448eb211c80319c",
...               "root_span_id": "b7ad6b7169203331"},
...     steps=[mast.Step.make(0, "hi", metadata={"span_id": "00f067aa0ba902b7"})])
>>> ann = mast.Annotation(trace_id=trace.id, status="ok", taxonomy="MAST 1.0",
...     vector=mast.FailureVector({"1.3": False}), judge={"model": "heuristic"})
>>> report = build_scores([ann], [trace], "phoenix")
>>> [(s.name, s.value, s.label, s.target_id) for s in report.scores]
[('MAST 1.3 Step Repetition', 0.0, 'absent', 'b7ad6b7169203331')]
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector, Trace

__all__ = [
    "ExportReport",
    "HumanLabels",
    "Platform",
    "PlatformScore",
    "build_scores",
    "score_id",
]

Platform = Literal["phoenix", "langfuse", "langsmith", "inspect"]
AnnotatorKind = Literal["LLM", "CODE", "HUMAN"]

# uuid5 namespace of every id mast derives (a fixed random uuid: changing it would make a
# rerun write new scores instead of updating the old ones).
_NAMESPACE = uuid.UUID("5b0f3f8e-6a1c-4c57-9f51-3a6c8d2e7b14")

# The step metadata key holding the platform's id of the step's span/observation/run, and
# the trace formats that carry it.
_STEP_KEYS: dict[str, tuple[str, ...]] = {
    "phoenix": ("span_id",),
    "langfuse": ("observation_id",),
    "langsmith": ("run_id",),
    "inspect": (),
}
_FORMATS: dict[str, tuple[str, ...]] = {
    "phoenix": ("otel",),
    "langfuse": ("langfuse",),
    "langsmith": ("langsmith",),
    "inspect": ("inspect",),
}
PAPER_CONVENTION = "paper: 3.2 no or incomplete verification, 3.3 incorrect verification"


@dataclass(frozen=True)
class HumanLabels:
    """One labeller's labels of one trace (a row of ``mast label export``)."""

    trace_id: str
    annotator: str
    vector: Mapping[str, bool | None]


@dataclass(frozen=True)
class PlatformScore:
    """One score (one judged mode of one trace) as it goes to a platform."""

    id: str
    """The id it is written under: a uuid derived from the record key, annotator and mode."""
    identifier: str
    """A shorter key of the record and annotator (Phoenix's annotation ``identifier``)."""
    trace_id: str
    """mast's trace id (the platform's trace id for traces that came from it)."""
    target: Literal["span", "trace"]
    """``"span"``: on the span/observation/run ``target_id``; ``"trace"``: on the trace."""
    target_id: str | None
    code: str
    name: str
    value: float
    label: str
    explanation: str | None
    metadata: dict[str, Any]
    annotator_kind: AnnotatorKind
    annotator: str
    """The judge model (``provider/model``) or the labeller's name."""
    timestamp: str | None = None
    """When the verdict was made (ISO 8601), sent where a platform keys updates on it."""

    def as_dict(self) -> dict[str, Any]:
        """A plain dict (``--dry-run --format json``)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class ExportReport:
    """What an export did (or, with ``dry_run``, would do)."""

    platform: str
    scores: list[PlatformScore] = field(default_factory=list)
    written: int = 0
    """Scores the platform accepted (0 on a dry run)."""
    annotations: int = 0
    unknown_cells: int = 0
    """Modes left unknown: no score."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """Annotations that failed, ``(trace id, status: error)``: reported, never written."""
    unattached: list[str] = field(default_factory=list)
    """Trace ids with no id of this platform (or not among the traces given): no score."""
    on_root: int = 0
    """Scores placed on the trace's root because no evidence step had a platform id."""
    rejected: list[tuple[str, str]] = field(default_factory=list)
    """``(score id, why)`` for scores the platform refused."""
    dry_run: bool = False

    def summary(self) -> str:
        """One line for the command line."""
        verb = "would write" if self.dry_run else "wrote"
        count = len(self.scores) if self.dry_run else self.written
        parts = [
            f"{verb} {count} score(s) to {self.platform} from {self.annotations} record(s)",
            f"{self.on_root} on the trace root (no evidence step with a {self.platform} id)",
            f"{self.unknown_cells} unknown mode(s) without a score",
            f"{len(self.failed)} failed annotation(s) not written",
        ]
        if self.unattached:
            parts.append(f"{len(self.unattached)} trace(s) without {self.platform} ids skipped")
        if self.rejected:
            parts.append(f"{len(self.rejected)} score(s) rejected by {self.platform}")
        return "; ".join(parts)


def score_id(platform: str, trace_id: str, config: str | None, annotator: str, code: str) -> str:
    """The uuid a score is written under: the same inputs give the same id on every run.

    >>> score_id("langfuse", "t1", None, "heuristic", "1.3") == score_id(
    ...     "langfuse", "t1", None, "heuristic", "1.3")
    True
    """
    return str(
        uuid.uuid5(_NAMESPACE, "\x1f".join((platform, trace_id, config or "", annotator, code)))
    )


def _identifier(trace_id: str, config: str | None, annotator: str) -> str:
    digest = hashlib.sha256("\x1f".join((trace_id, config or "", annotator)).encode()).hexdigest()
    return f"mast-{digest[:16]}"


def _mode_names(taxonomy: str) -> dict[str, str]:
    from mast.taxonomy import load_taxonomy

    tax = load_taxonomy()
    if not taxonomy.startswith(tax.name):
        return {}  # a custom taxonomy: its codes alone
    return {code: tax[code].name for code in tax.codes}


def _redactor(redact: bool | Any) -> Any:
    # The exports' one redactor (mast.analysis.redaction): text sent to a platform is shown
    # the way mast report and the file exports show it.
    from mast.analysis.redaction import shown_redactor

    return shown_redactor(redact)


def _platform_ids(trace: Trace, platform: str, step_ids: Sequence[str]) -> list[str]:
    keys = _STEP_KEYS[platform]
    found: list[str] = []
    for step_id in step_ids:
        try:
            step = trace.step(step_id)
        except KeyError:
            continue
        for key in keys:
            value = step.metadata.get(key)
            if value and str(value) not in found:
                found.append(str(value))
    return found


def _root_id(trace: Trace, platform: str) -> str | None:
    if platform == "langsmith":
        return trace.id  # a LangSmith root run's id is its trace id
    if platform == "langfuse":
        return None  # Langfuse's root is the trace itself: a trace-level score
    root = trace.metadata.get("root_span_id")
    return str(root) if root else None


def _attachable(trace: Trace | None, platform: str) -> bool:
    if trace is None:
        return False
    if platform == "inspect":
        return trace.format == "inspect" or "inspect" in trace.metadata
    if trace.format not in _FORMATS[platform]:
        return False
    return platform != "phoenix" or bool(trace.metadata.get("trace_id"))


def _judge_meta(ann: Annotation) -> dict[str, Any]:
    judge = ann.judge
    provider = str(judge.get("provider") or "")
    model = str(judge.get("model") or "")
    name = (
        model
        if not provider or model.startswith(f"{provider}/") or model == provider
        else (f"{provider}/{model}")
    )
    meta: dict[str, Any] = {"model": name or None, "taxonomy": ann.taxonomy}
    meta["convention"] = PAPER_CONVENTION if ann.taxonomy.startswith("MAST") else None
    for key in ("config_hash", "answer", "mast_version"):
        if judge.get(key):
            meta[key] = judge[key]
    return meta


def build_scores(
    annotations: Iterable[Annotation],
    traces: Iterable[Trace] | str | Path,
    platform: Platform,
    *,
    human: Iterable[HumanLabels] = (),
    redact: bool | Any = True,
) -> ExportReport:
    """The scores an export to ``platform`` writes (see the module docstring).

    ``redact``: ``True`` (mast's default patterns), ``False`` (rationales and quotes as the
    judge wrote them) or a :class:`~mast.privacy.redact.Redactor`.
    """
    from mast.analysis.platforms._inputs import traces_of

    by_id: Mapping[str, Trace] = {t.id: t for t in traces_of(traces)}
    report = ExportReport(platform=platform)
    redactor = _redactor(redact)

    def clean(text: str | None) -> str | None:
        if text is None:
            return text
        return str(redactor.redact(text).text)

    for ann in annotations:
        report.annotations += 1
        if not ann.ok:
            report.failed.append((ann.trace_id, f"{ann.status}: {ann.error or ann.error_kind}"))
            continue
        trace = by_id.get(ann.trace_id)
        if not _attachable(trace, platform):
            report.unattached.append(ann.trace_id)
            continue
        assert trace is not None
        judge = _judge_meta(ann)
        config = judge.get("config_hash")
        annotator = str(judge["model"] or "mast")
        names = _mode_names(ann.taxonomy)
        # The heuristic baseline is rules, not a model: Phoenix's "CODE" annotator kind.
        kind: AnnotatorKind = "CODE" if ann.judge.get("provider") == "heuristic" else "LLM"
        for code in ann.vector:
            value = ann.vector[code]
            if value is None:
                report.unknown_cells += 1
                continue
            finding = ann.findings.get(code)
            evidence = finding.evidence if finding else []
            steps = [e.step_id for e in evidence]
            quotes = [clean(e.quote) for e in evidence if e.quote]
            metadata: dict[str, Any] = {
                "mast_mode": code,
                "mast_trace_id": ann.trace_id,
                "annotator_kind": kind.lower(),
                "judge": judge,
                "step_ids": steps,
                "quote": quotes[0] if quotes else None,
                "quotes": quotes,
            }
            if finding is not None and finding.confidence is not None:
                metadata["confidence"] = finding.confidence
            _add(
                report,
                trace,
                platform,
                code=code,
                name=f"MAST {code} {names[code]}" if code in names else f"MAST {code}",
                value=value,
                explanation=clean(finding.rationale) if finding else None,
                metadata=metadata,
                ids=(ann.trace_id, config, annotator),
                kind=kind,
                timestamp=ann.created_at.isoformat(),
            )
    for row in human:
        report.annotations += 1
        trace = by_id.get(row.trace_id)
        if not _attachable(trace, platform):
            report.unattached.append(row.trace_id)
            continue
        assert trace is not None
        names = _mode_names("MAST")
        for code, value in row.vector.items():
            if value is None:
                report.unknown_cells += 1
                continue
            _add(
                report,
                trace,
                platform,
                code=code,
                name=f"MAST {code} {names[code]}" if code in names else f"MAST {code}",
                value=value,
                explanation=None,
                metadata={
                    "mast_mode": code,
                    "mast_trace_id": row.trace_id,
                    "annotator_kind": "human",
                    "labeller": row.annotator,
                    "step_ids": [],
                },
                ids=(row.trace_id, None, f"human:{row.annotator}"),
                kind="HUMAN",
                timestamp=None,
            )
    return report


def _add(
    report: ExportReport,
    trace: Trace,
    platform: str,
    *,
    code: str,
    name: str,
    value: bool,
    explanation: str | None,
    metadata: dict[str, Any],
    ids: tuple[str, str | None, str],
    kind: AnnotatorKind,
    timestamp: str | None,
) -> None:
    trace_id, config, annotator = ids
    targets = _platform_ids(trace, platform, metadata["step_ids"])
    metadata["platform_ids"] = targets
    target_id = targets[0] if targets else _root_id(trace, platform)
    if not targets:
        report.on_root += 1
    report.scores.append(
        PlatformScore(
            id=score_id(platform, trace_id, config, annotator, code),
            identifier=_identifier(trace_id, config, annotator),
            trace_id=trace.metadata.get("trace_id") or trace.id
            if platform == "phoenix"
            else trace.id,
            target="span" if target_id else "trace",
            target_id=target_id,
            code=code,
            name=name,
            value=1.0 if value else 0.0,
            label="present" if value else "absent",
            explanation=explanation,
            metadata=metadata,
            annotator_kind=kind,
            annotator=annotator.removeprefix("human:"),
            timestamp=timestamp,
        )
    )


def human_labels(path: str, *, codes: Iterable[str] | None = None) -> list[HumanLabels]:
    """The rows of a ``mast label export`` file (CSV or JSON Lines: ``trace_id``,
    ``annotator`` and one column per code; empty / ``null`` = unknown)."""
    import csv
    import json
    from pathlib import Path

    from mast.errors import MastError

    file = Path(path)
    text = file.read_text(encoding="utf-8")
    if file.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        rows = list(csv.DictReader(text.splitlines()))
    out: list[HumanLabels] = []
    for number, row in enumerate(rows, start=2 if file.suffix.lower() == ".csv" else 1):
        if not isinstance(row, dict) or not row.get("trace_id") or not row.get("annotator"):
            raise MastError(
                f"{file}: row {number} has no trace_id/annotator; expected the file "
                "`mast label export` writes (trace_id, annotator, one column per code)"
            )
        vector: dict[str, bool | None] = {}
        for key, cell in row.items():
            if key in ("trace_id", "annotator") or (codes is not None and key not in codes):
                continue
            vector[str(key)] = _cell(cell, file, number, str(key))
        out.append(HumanLabels(str(row["trace_id"]), str(row["annotator"]), FailureVector(vector)))
    return out


def _cell(cell: object, file: object, number: int, key: str) -> bool | None:
    from mast.errors import MastError

    if cell is None or isinstance(cell, bool):
        return cell
    text = str(cell).strip().lower()
    if text in ("", "null", "none", "nan", "unknown"):
        return None
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise MastError(f"{file}: row {number}, column {key}: {cell!r} is not 1/0/true/false/empty")
