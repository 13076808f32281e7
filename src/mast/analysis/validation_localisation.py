"""``mast validate`` on sets labelled per failure step: AgentRx (root cause + every failure)
and TRAIL (errors per span), each scored with its own published measures.

:func:`validate_localisation` annotates the set with the judge (resumable and cached like
:func:`mast.validate`) and reports, beside baselines computed on the same traces:

* **AgentRx**: root-cause agent and step accuracy (exact and within ``±within``) and
  any-failure localisation, overall and per part (:func:`mast.agree.attribution_accuracy`);
  when the judge uses the AgentRx taxonomy, agreement per category with the labels and the
  root-cause category accuracy; when it uses MAST, an *approximate* side-by-side table
  through ``taxonomy/mappings/agentrx-mast.yaml`` (no statistic goes through the mapping).
* **TRAIL**: location, joint and category-F1 measures (:func:`mast.agree.trail.trail_scores`).

Baselines: "always the first step" (its agent and step), "the agent with most steps" (that
agent, at its first step), "the most frequent category" (AgentRx: the most frequent
root-cause category; TRAIL: that category at the first span).
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mast._resources import data_dir
from mast.agree import agreement
from mast.agree.attribution import AttributionReport, attribution_accuracy, attribution_labels
from mast.agree.render import json_safe
from mast.agree.trail import TrailReport, trail_labels, trail_predictions, trail_scores
from mast.analysis.judge_run import judge_traces, results_file
from mast.errors import StatsInputError
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError, normalize_agent
from mast.judge.judge import Judge
from mast.traces.agentrx import is_agentrx, load_agentrx
from mast.traces.model import StepKind, Trace
from mast.traces.trail import is_trail, load_trail

__all__ = [
    "LocalisationReport",
    "agentrx_excerpts",
    "is_localisation_dataset",
    "validate_localisation",
]

_NOT_AN_AGENT = {StepKind.TOOL_RESULT, StepKind.SYSTEM, StepKind.LOG}


def is_localisation_dataset(dataset: object) -> bool:
    """True for ``"agentrx"``, ``"trail"`` or a path holding AgentRx or TRAIL data."""
    if isinstance(dataset, str) and dataset in ("agentrx", "trail"):
        return True
    if isinstance(dataset, (str, Path)) and Path(dataset).exists():
        return is_agentrx(dataset) or is_trail(dataset)
    return False


def agentrx_excerpts(judge: Judge) -> list[str]:
    """Ids of the judge's few-shot examples taken from AgentRx runs (the bundled pool has a
    few τ-bench retail excerpts): shown while validating on AgentRx, they contaminate it."""
    out: list[str] = []
    shots = getattr(judge, "_shots", None)
    # The pool too: a trace that leaks a chosen example gets a replacement from the pool.
    for shot in [*judge.examples, *(getattr(shots, "pool", None) or [])]:
        source = getattr(shot, "source", None)
        # datasets, not dataset: six Who&When Hand-Crafted runs are AgentRx runs too
        held_by = getattr(shot, "datasets", ())
        if "agentrx" in held_by or (isinstance(source, str) and "agentrx" in source.lower()):
            name = str(getattr(shot, "id", shot))
            if name not in out:
                out.append(name)
    return out


def load_localisation(dataset: object) -> tuple[list[Trace], str, str]:
    """The traces, their kind (``"agentrx"`` / ``"trail"``) and a name for the report."""
    if dataset == "agentrx":
        return load_agentrx(), "agentrx", "agentrx (AgentRx labelled runs bundled with mast)"
    if dataset == "trail":
        raise StatsInputError(
            "TRAIL is gated on the Hugging Face Hub and mast does not ship it: accept its "
            "terms at https://huggingface.co/datasets/PatronusAI/TRAIL, download it, and pass "
            "the file or folder: mast validate --dataset PATH"
        )
    if isinstance(dataset, (str, Path)):
        if is_agentrx(dataset):
            return load_agentrx(dataset), "agentrx", str(dataset)
        if is_trail(dataset):
            return load_trail(dataset), "trail", str(dataset)
    raise StatsInputError(f"{dataset!r} is neither AgentRx nor TRAIL data")


# --- baselines ---------------------------------------------------------------------------


def _agent_steps(trace: Trace) -> list[Any]:
    return [s for s in trace.steps if s.kind not in _NOT_AN_AGENT and s.agent]


def baseline_first_step(traces: Sequence[Trace]) -> dict[str, DecisiveError]:
    """Always the trace's first step (and the agent of that step)."""
    return {
        t.id: DecisiveError(agent=t.steps[0].agent, step_id=t.steps[0].id)
        for t in traces
        if t.steps
    }


def baseline_most_steps(traces: Sequence[Trace]) -> dict[str, DecisiveError]:
    """The agent with most steps (names compared after normalisation; ties: the first to
    speak), at its first step."""
    out: dict[str, DecisiveError] = {}
    for t in traces:
        steps = _agent_steps(t)
        if not steps:
            continue
        counts = Counter(normalize_agent(s.agent) for s in steps)
        best = max(counts.values())
        first = next(s for s in steps if counts[normalize_agent(s.agent)] == best)
        out[t.id] = DecisiveError(agent=first.agent, step_id=first.id)
    return out


# --- the report --------------------------------------------------------------------------


@dataclass
class LocalisationReport:
    """What :func:`validate_localisation` measured; :meth:`to_markdown` is the report."""

    model: str
    dataset: str
    kind: str
    taxonomy: str
    n_traces: int
    attribution: AttributionReport | None = None
    baselines: dict[str, AttributionReport] = field(default_factory=dict)
    trail: TrailReport | None = None
    trail_baseline: TrailReport | None = None
    categories: Any = None
    category_accuracy: dict[str, Any] = field(default_factory=dict)
    side_by_side: list[dict[str, Any]] = field(default_factory=list)
    cost_usd: float = 0.0
    failed: dict[str, list[str]] = field(default_factory=dict)
    results_path: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The report as Markdown."""
        lines = [
            f"# {self.model} on {self.dataset}",
            "",
            f"{self.n_traces} traces, judged with the {self.taxonomy} taxonomy; cost "
            f"${self.cost_usd:.4f}; results: {self.results_path or '(in memory)'}.",
            "",
        ]
        if self.attribution is not None:
            lines += [
                "## Root cause and any-failure localisation (AgentRx's measures)",
                "",
                "Agent and step score the labelled root cause; *any failure* counts a step "
                "that is one of the run's labelled failure steps. Step numbers of the labels "
                "are 1-based (checked against the histories).",
                "",
                "```",
                self.attribution.to_text(),
                "```",
                "",
                "### Baselines on the same traces",
                "",
            ]
            lines += _baseline_table({"judge": self.attribution, **self.baselines})
        if self.category_accuracy:
            ca = self.category_accuracy
            lines += [
                "",
                "## Root-cause category",
                "",
                f"judge: {ca['correct']}/{ca['answered']} answered ({ca['total']} labelled); "
                f"baseline 'the most frequent category' ({ca['baseline_category']}): "
                f"{ca['baseline_correct']}/{ca['total']}",
            ]
        if self.categories is not None:
            lines += [
                "",
                "## Agreement per category (a category is present when any labelled failure "
                "of the run has it)",
                "",
                self.categories.to_markdown(),
            ]
        if self.side_by_side:
            lines += [
                "",
                "## AgentRx categories beside MAST modes (APPROXIMATE mapping, no statistic)",
                "",
                "Mapping: taxonomy/mappings/agentrx-mast.yaml. For each AgentRx category: the "
                "share of runs where the judge flagged any of the mapped MAST modes, on runs "
                "labelled with the category and on the others.",
                "",
                "| AgentRx category | mapped MAST modes | runs with | flagged | runs without "
                "| flagged |",
                "|---|---|---|---|---|---|",
            ]
            for r in self.side_by_side:
                lines.append(
                    f"| {r['category']} {r['name']} | {', '.join(r['mast']) or '—'} | "
                    f"{r['with']} | {r['with_flagged']} | {r['without']} | "
                    f"{r['without_flagged']} |"
                )
        if self.trail is not None:
            lines += ["", "## TRAIL measures", "", "```", self.trail.to_text(), "```"]
            if self.trail_baseline is not None:
                lines += [
                    "",
                    "Baseline 'the most frequent category at the first span': location "
                    f"{self.trail_baseline.location_accuracy:.3f}, joint "
                    f"{self.trail_baseline.joint_accuracy:.3f}, weighted category F1 "
                    f"{self.trail_baseline.category_f1_weighted:.3f}",
                ]
        if self.failed:
            lines += ["", "## Not scored", ""]
            lines += [f"- {k}: {len(v)} ({', '.join(v[:10])})" for k, v in self.failed.items()]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The report's numbers as plain data."""
        data: dict[str, Any] = {
            "model": self.model,
            "dataset": self.dataset,
            "kind": self.kind,
            "taxonomy": self.taxonomy,
            "n_traces": self.n_traces,
            "cost_usd": self.cost_usd,
            "failed": self.failed,
            "results_path": self.results_path,
            "notes": self.notes,
        }
        if self.attribution is not None:
            data["attribution"] = json.loads(self.attribution.to_json())
            data["baselines"] = {k: json.loads(v.to_json()) for k, v in self.baselines.items()}
        if self.category_accuracy:
            data["root_cause_category"] = self.category_accuracy
        if self.categories is not None:
            data["categories"] = self.categories.to_dict()
        if self.side_by_side:
            data["side_by_side_approximate"] = self.side_by_side
        if self.trail is not None:
            data["trail"] = json.loads(self.trail.to_json())
        if self.trail_baseline is not None:
            data["trail_baseline"] = json.loads(self.trail_baseline.to_json())
        return json_safe(data)  # type: ignore[no-any-return]

    def write(self, out: str | Path) -> None:
        """Write ``report.md`` and ``report.json`` into ``out``."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.md").write_text(self.to_markdown(), encoding="utf-8")
        (folder / "report.json").write_text(
            json.dumps(self.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8"
        )


def _baseline_table(reports: Mapping[str, AttributionReport]) -> list[str]:
    first = next(iter(reports.values()))
    metrics = list(first.overall)
    head = "| predictor | " + " | ".join(first.metric_name(m) for m in metrics) + " |"
    lines = [head, "|---|" + "---|" * len(metrics)]
    for name, rep in reports.items():
        cells = []
        for m in metrics:
            acc = rep.overall.get(m)
            cells.append(f"{acc.correct}/{acc.total}" if acc is not None else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Counts over all scored traces (a trace the judge left unanswered counts wrong).")
    return lines


def _mapping() -> dict[str, list[str]]:
    raw = yaml.safe_load((data_dir("taxonomy") / "mappings" / "agentrx-mast.yaml").read_text())
    return {str(k): [str(c) for c in v] for k, v in raw["mapping"].items()}


def validate_localisation(
    judge: Judge,
    dataset: object = "agentrx",
    *,
    out: str | Path | None = None,
    within: int = 1,
    budget_usd: float | None = None,
    concurrency: int = 8,
    bootstrap: int = 1000,
    seed: int = 0,
    cache: bool | str | Path = True,
    progress: bool = True,
) -> LocalisationReport:
    """Annotate AgentRx or TRAIL with ``judge`` and score it with that set's own measures.

    ``dataset``: ``"agentrx"`` (the copy bundled with mast), a path to AgentRx or TRAIL data,
    or a list of traces loaded by :func:`mast.datasets.load_agentrx` / ``load_trail``.
    """
    if isinstance(dataset, list) and all(isinstance(t, Trace) for t in dataset):
        traces: list[Trace] = dataset
        kind = "trail" if any("trail" in t.metadata for t in traces) else "agentrx"
        name = f"{len(traces)} given traces"
    else:
        traces, kind, name = load_localisation(dataset)
    results = results_file(out)
    run = judge_traces(
        traces,
        judge,
        results=results,
        budget_usd=budget_usd,
        concurrency=concurrency,
        cache=cache,
        progress=progress,
    )
    annotations = list(run)
    tax = judge.taxonomy
    report = LocalisationReport(
        model=judge.model,
        dataset=name,
        kind=kind,
        taxonomy=tax.label,
        n_traces=len(traces),
        cost_usd=float(sum(a.cost_usd for a in annotations if a.cost_usd is not None)),
        results_path=str(results) if results is not None else None,
    )
    for a in annotations:
        if a.status != "ok":
            report.failed.setdefault(a.status, []).append(a.trace_id)
    if run.summary.not_attempted:
        report.failed["not attempted"] = list(run.summary.not_attempted)
    ok = [a for a in annotations if a.status == "ok"]
    leaked = agentrx_excerpts(judge) if kind == "agentrx" else []
    if leaked:
        report.notes.append(
            f"CONTAMINATION RISK: the judge's few-shot examples or pool include excerpts of "
            f"AgentRx runs ({', '.join(leaked)}), which can be shown on these traces; pass "
            "fewshot_exclude=['agentrx'] to the Judge (mast validate does)"
        )
    if kind == "agentrx":
        _score_agentrx(report, traces, ok, judge, within, bootstrap, seed)
    else:
        _score_trail(report, traces, ok, judge)
    if out is not None:
        report.write(out)
    return report


def _score_agentrx(
    report: LocalisationReport,
    traces: Sequence[Trace],
    ok: Sequence[Annotation],
    judge: Judge,
    within: int,
    bootstrap: int,
    seed: int,
) -> None:
    labels = attribution_labels(traces)
    options: dict[str, Any] = {"within": within, "bootstrap": bootstrap, "seed": seed}
    report.attribution = attribution_accuracy(ok, labels, **options)
    quiet = {**options, "bootstrap": 0}
    report.baselines = {
        "always the first step": attribution_accuracy(baseline_first_step(traces), labels, **quiet),
        "the agent with most steps": attribution_accuracy(
            baseline_most_steps(traces), labels, **quiet
        ),
    }
    roots = [lab.category for lab in labels.values() if lab.category]
    if roots:
        common = Counter(roots).most_common(1)[0][0]
        report.baselines["the most frequent category"] = attribution_accuracy(
            {tid: DecisiveError(modes=[common]) for tid in labels}, labels, **quiet
        )
        acc = report.attribution.overall.get("category")
        base = report.baselines["the most frequent category"].overall["category"]
        report.category_accuracy = {
            "correct": acc.correct if acc else 0,
            "answered": acc.answered if acc else 0,
            "total": acc.total if acc else len(roots),
            "baseline_category": common,
            "baseline_correct": base.correct,
        }
    if judge.taxonomy.name == "AgentRx":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report.categories = agreement(
                {t.id: t.labels["agentrx"] for t in traces if "agentrx" in t.labels},
                list(ok),
                taxonomy=judge.taxonomy,
                bootstrap=bootstrap,
                seed=seed,
                reference_name="AgentRx labels",
                candidate_name=judge.model,
            )
        report.notes += sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    elif judge.taxonomy.name == "MAST":
        vectors = {a.trace_id: a.vector for a in ok}
        mapping = _mapping()
        agentrx = {m.code: m.name for m in load_agentrx_taxonomy().modes}
        for code, mast_codes in mapping.items():
            with_ = [t for t in traces if t.id in vectors and t.labels["agentrx"][code]]
            without = [t for t in traces if t.id in vectors and t.labels["agentrx"][code] is False]

            def flagged(group: Sequence[Trace], codes: Sequence[str] = mast_codes) -> str:
                hits = sum(any(vectors[t.id][c] is True for c in codes) for t in group)
                return f"{hits}/{len(group)}" if codes else "—"

            report.side_by_side.append(
                {
                    "category": code,
                    "name": agentrx[code],
                    "mast": mast_codes,
                    "with": len(with_),
                    "with_flagged": flagged(with_),
                    "without": len(without),
                    "without_flagged": flagged(without),
                }
            )


def load_agentrx_taxonomy() -> Any:
    from mast.taxonomy import load_taxonomy

    return load_taxonomy("agentrx")


def _score_trail(
    report: LocalisationReport, traces: Sequence[Trace], ok: Sequence[Annotation], judge: Judge
) -> None:
    if judge.taxonomy.name != "TRAIL":
        report.notes.append(
            f"the judge used the {judge.taxonomy.label} taxonomy, so its categories are not "
            "TRAIL's: only the location accuracy is meaningful (run with --taxonomy trail)"
        )
    report.trail = trail_scores(trail_predictions(ok, traces), traces)
    gold = trail_labels(traces)
    counts = Counter(cat for pairs in gold.values() for _, cat in pairs if cat)
    if counts:
        common = counts.most_common(1)[0][0]
        first = {t.id: [(t.steps[0].metadata.get("span_id"), common)] for t in traces if t.steps}
        report.trail_baseline = trail_scores(first, gold)
