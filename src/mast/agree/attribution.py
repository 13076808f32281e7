"""Score who/when attribution against labels such as Who&When's.

:func:`attribution_accuracy` compares predicted decisive errors (agent and step) with
labelled ones, per trace:

* **agent accuracy**: the predicted agent is the labelled one, after
  :func:`~mast.judge.attribution.normalize_agent` (case, spacing, ``_``/``-`` and a trailing
  role note such as "(thought)" ignored; ``aliases`` for the rest). The report shows every
  name that normalisation changed.
* **step accuracy**: the predicted step id *is* the labelled step id (``"s10"`` never
  matches ``"s1"``: ids are compared whole, never as substrings), and separately the share
  within ``±within`` steps (by position in the trace).
* **any-failure localisation** (AgentRx's step measure), for labels that list every
  failure of a run (AgentRx): the predicted step is one of the labelled failure steps, and
  separately within ``±within`` steps of the nearest one. The agent and step measures above
  then score the run's root cause.
* **root-cause category** (AgentRx), for labels that name the root cause's category: the
  category is one of the modes the decisive error names. A prediction naming no code of the
  labels' taxonomy (e.g. a MAST judge's modes against AgentRx categories) is unanswered.
* Labels pointing past the end of the trace (a step index the history does not have) are
  excluded from every score and listed; so are labelled traces without a prediction
  record and predictions without a label.
* A record that names no agent (or no step) is *unanswered*: each accuracy is given over
  the answered traces and over all scored traces (unanswered counted wrong), with its
  ``n``; unknown is never silently turned into a wrong or a right answer.

Each accuracy has a percentile bootstrap interval over traces, overall and per subset
(Who&When's Hand-Crafted / Algorithm-Generated) and per system.

>>> from mast.judge.attribution import DecisiveError
>>> labels = {"t1": AttributionLabel("t1", agent="WebSurfer", step_id="s1", n_steps=12),
...           "t2": AttributionLabel("t2", agent="Coder", step_id="s3", n_steps=2)}
>>> preds = {"t1": DecisiveError(agent="websurfer", step_id="s10")}
>>> rep = attribution_accuracy(preds, labels, bootstrap=0)
>>> rep.overall["agent"].correct, rep.overall["step"].correct, rep.excluded_past_end
(1, 0, ['t2'])
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError, normalize_agent, step_number
from mast.judge.reply.parse import normalize_step_id
from mast.traces.model import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Accuracy",
    "AttributionLabel",
    "AttributionReport",
    "attribution_accuracy",
    "attribution_labels",
]

METRICS = ("agent", "step", "step_within", "any_step", "any_step_within", "category")
_OPTIONAL = ("any_step", "any_step_within", "category")  # only where the labels have them


@dataclass(frozen=True)
class AttributionLabel:
    """The labelled decisive error of one trace (e.g. Who&When's mistake agent and step).

    ``step_id`` uses the trace's step ids (Who&When's 0-based ``mistake_step`` N is
    ``s<N+1>``). ``n_steps`` (or ``step_ids``) tells whether the label lies past the end.
    """

    trace_id: str
    agent: str | None = None
    step_id: str | None = None
    n_steps: int | None = None
    step_ids: tuple[str, ...] = ()
    subset: str | None = None
    system: str | None = None
    failure_steps: tuple[str, ...] = ()
    """Step ids of every labelled failure of the run (AgentRx), empty when only the
    decisive error is labelled (Who&When)."""
    category: str | None = None
    """The root cause's category code (AgentRx), if labelled."""
    category_codes: tuple[str, ...] = ()
    """Every code of the taxonomy ``category`` belongs to."""

    @property
    def past_end(self) -> bool:
        """True when the labelled step is not in the trace (beyond its last step)."""
        if self.step_id is None:
            return False
        if self.step_ids:
            return self.step_id not in self.step_ids
        number = step_number(self.step_id)
        return self.n_steps is not None and number is not None and number > self.n_steps

    def position(self, step_id: str | None) -> int | None:
        """0-based position of ``step_id`` in the trace (by id, else by its number)."""
        if step_id is None:
            return None
        if step_id in self.step_ids:
            return self.step_ids.index(step_id)
        number = step_number(step_id)
        return number - 1 if number is not None else None


def attribution_labels(traces: Iterable[Trace]) -> dict[str, AttributionLabel]:
    """Who&When-style labels carried by traces (``metadata`` ``mistake_agent`` and
    ``mistake_step_id`` / ``mistake_step``); traces without them are skipped.

    The subset is ``metadata["dataset"]["subset"]`` or, failing that, a
    ``Hand-Crafted`` / ``Algorithm-Generated`` folder in the trace's source path.
    """
    out: dict[str, AttributionLabel] = {}
    for trace in traces:
        meta = trace.metadata
        agent = meta.get("mistake_agent")
        step = meta.get("mistake_step_id")
        if step is None and str(meta.get("mistake_step", "")).strip().isdigit():
            step = f"s{int(str(meta['mistake_step']).strip()) + 1}"
        if not agent and step is None:
            continue
        labelled: Mapping[str, Any] = (
            meta["agentrx"] if isinstance(meta.get("agentrx"), Mapping) else {}
        )
        failures = labelled.get("failures") or []
        root = labelled.get("root_cause")
        steps = tuple(
            dict.fromkeys(
                normalize_step_id(str(f["step_id"]))
                for f in failures
                if isinstance(f, Mapping) and f.get("step_id") is not None
            )
        )
        out[trace.id] = AttributionLabel(
            trace_id=trace.id,
            agent=str(agent) if agent else None,
            step_id=normalize_step_id(step) if step is not None else None,
            n_steps=len(trace.steps),
            step_ids=tuple(s.id for s in trace.steps),
            subset=_subset(trace),
            system=trace.system,
            failure_steps=tuple(s for s in steps if s is not None),
            category=root.get("category") if isinstance(root, Mapping) else None,
            category_codes=tuple(trace.labels["agentrx"]) if "agentrx" in trace.labels else (),
        )
    return out


def _subset(trace: Trace) -> str | None:
    dataset = trace.metadata.get("dataset")
    if isinstance(dataset, Mapping) and dataset.get("subset"):
        return str(dataset["subset"])
    parts = PurePosixPath((trace.source or "").split("#", 1)[0].replace("\\", "/")).parts
    for part in ("Hand-Crafted", "Algorithm-Generated"):
        if part in parts:
            return part
    return None


@dataclass(frozen=True)
class Accuracy:
    """One accuracy: ``correct`` of ``answered`` (traces with an answer) and of ``total``
    (all scored traces, unanswered counted wrong), with bootstrap intervals."""

    correct: int
    answered: int
    total: int
    ci_answered: tuple[float, float] = (math.nan, math.nan)
    ci_all: tuple[float, float] = (math.nan, math.nan)

    @property
    def value(self) -> float:
        """Accuracy over answered traces (NaN when none was answered)."""
        return self.correct / self.answered if self.answered else math.nan

    @property
    def value_all(self) -> float:
        """Accuracy over all scored traces, unanswered counted wrong."""
        return self.correct / self.total if self.total else math.nan


@dataclass
class AttributionReport:
    """What :func:`attribution_accuracy` found (see the module docstring)."""

    within: int
    overall: dict[str, Accuracy]
    groups: dict[tuple[str, str], dict[str, Accuracy]]
    """``{("subset", "Hand-Crafted"): {metric: Accuracy}, ("system", …): …}``."""
    rows: list[dict[str, Any]]
    """One row per scored trace: labels, prediction, and the three outcomes."""
    excluded_past_end: list[str] = field(default_factory=list)
    not_predicted: list[str] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    """Traces with records of more than one judge or method (the last record was scored)."""
    agent_names: dict[str, str] = field(default_factory=dict)
    """Predicted agent names that matched a label only after normalisation → that label."""
    confidence: float = 0.95
    bootstrap: int = 0

    def metric_name(self, metric: str) -> str:
        if metric == "step_within":
            return f"step ±{self.within}"
        if metric == "any_step":
            return "any failure"
        if metric == "any_step_within":
            return f"any ±{self.within}"
        return metric

    def to_frame(self) -> pd.DataFrame:
        """One row per (group, metric): correct, answered, total, accuracies, intervals."""
        import pandas as pd

        records = []
        sections = [(("all", "all"), self.overall), *self.groups.items()]
        for (by, group), metrics in sections:
            for metric, acc in metrics.items():
                records.append(
                    {
                        "by": by,
                        "group": group,
                        "metric": self.metric_name(metric),
                        "correct": acc.correct,
                        "answered": acc.answered,
                        "total": acc.total,
                        "accuracy": acc.value,
                        "ci_low": acc.ci_answered[0],
                        "ci_high": acc.ci_answered[1],
                        "accuracy_all": acc.value_all,
                        "ci_all_low": acc.ci_all[0],
                        "ci_all_high": acc.ci_all[1],
                    }
                )
        frame: pd.DataFrame = pd.DataFrame.from_records(records)
        return frame

    def to_text(self) -> str:
        """A plain-text table with the exclusions and the agent-name mapping below it."""
        pct = round(self.confidence * 100)
        lines = [
            f"Attribution accuracy (step ids compared whole; ±{self.within} by position; "
            f"{pct}% bootstrap CI over traces, {self.bootstrap} resamples)",
            "",
            f"{'group':<28} {'metric':<11} {'answered':>14} {'CI':>15}   "
            f"{'all (unanswered=wrong)':>22} {'CI':>15}",
        ]
        sections = [(("all", "all"), self.overall), *self.groups.items()]
        for (by, group), metrics in sections:
            label = "all traces" if by == "all" else f"{by}={group}"
            for metric, acc in metrics.items():
                lines.append(
                    f"{label:<28} {self.metric_name(metric):<11} "
                    f"{_frac(acc.correct, acc.answered):>14} {_ci(acc.ci_answered):>15}   "
                    f"{_frac(acc.correct, acc.total):>22} {_ci(acc.ci_all):>15}"
                )
                label = ""
        lines.append("")
        lines.append(f"scored traces: {len(self.rows)}")
        lines.append(
            f"excluded, label past the end of the trace: {len(self.excluded_past_end)}"
            + (f" ({', '.join(self.excluded_past_end)})" if self.excluded_past_end else "")
        )
        lines.append(
            f"labelled but not predicted (no record): {len(self.not_predicted)}"
            + (
                f" ({', '.join(self.not_predicted[:10])}…)"
                if len(self.not_predicted) > 10
                else f" ({', '.join(self.not_predicted)})"
                if self.not_predicted
                else ""
            )
        )
        lines.append(f"predicted but not labelled: {len(self.unlabelled)}")
        if self.repeated:
            lines.append(
                f"{len(self.repeated)} trace(s) have records of more than one judge or method; "
                "the last record of each was scored (give each run its own results file)"
            )
        if self.agent_names:
            lines.append("agent names matched after normalisation (predicted -> label):")
            for raw, label in sorted(self.agent_names.items()):
                lines.append(f"  {raw!r} -> {label!r}")
        return "\n".join(lines)

    def to_json(self, **kwargs: Any) -> str:
        """The report as JSON (NaN written as null)."""

        def acc(a: Accuracy) -> dict[str, Any]:
            return {
                "correct": a.correct,
                "answered": a.answered,
                "total": a.total,
                "accuracy": _num(a.value),
                "ci": [_num(a.ci_answered[0]), _num(a.ci_answered[1])],
                "accuracy_all": _num(a.value_all),
                "ci_all": [_num(a.ci_all[0]), _num(a.ci_all[1])],
            }

        data = {
            "within": self.within,
            "confidence": self.confidence,
            "bootstrap": self.bootstrap,
            "overall": {m: acc(a) for m, a in self.overall.items()},
            "groups": [
                {"by": by, "group": g, "metrics": {m: acc(a) for m, a in ms.items()}}
                for (by, g), ms in self.groups.items()
            ],
            "excluded_past_end": self.excluded_past_end,
            "not_predicted": self.not_predicted,
            "unlabelled": self.unlabelled,
            "repeated": self.repeated,
            "agent_names": self.agent_names,
            "traces": self.rows,
        }
        return json.dumps(data, ensure_ascii=False, **kwargs)

    def __str__(self) -> str:
        return self.to_text()


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _frac(correct: int, n: int) -> str:
    return f"{correct}/{n} = {correct / n:.3f}" if n else f"{correct}/0 = n/a"


def _ci(ci: tuple[float, float]) -> str:
    return "n/a" if math.isnan(ci[0]) else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


PredictionLike = DecisiveError | Annotation | Mapping[str, Any] | None


def _prediction(value: PredictionLike) -> DecisiveError | None:
    if value is None:
        return None
    if isinstance(value, Annotation):
        return value.decisive_error
    if isinstance(value, DecisiveError):
        return value
    if isinstance(value, Mapping):
        step = value.get("step_id", value.get("step"))
        return DecisiveError(
            agent=value.get("agent"),
            step_id=normalize_step_id(step) if step is not None else None,
            modes=[str(m) for m in value.get("modes") or []],
        )
    raise TypeError(f"a prediction must be a DecisiveError, Annotation or mapping, got {value!r}")


def attribution_accuracy(
    predictions: Mapping[str, PredictionLike] | Iterable[Annotation],
    labels: Mapping[str, AttributionLabel] | Iterable[Trace],
    *,
    within: int = 1,
    aliases: Mapping[str, str] | None = None,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AttributionReport:
    """Agent and step accuracy of ``predictions`` against ``labels`` (module docstring).

    ``predictions``: annotations (their ``decisive_error``; for a trace with several
    records the last one counts) or ``{trace_id: DecisiveError | {"agent", "step"} | None}``.
    ``labels``: traces carrying Who&When labels, or ``{trace_id: AttributionLabel}``.
    """
    if within < 0:
        raise ValueError(f"within must be >= 0, got {within}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    repeated: list[str] = []
    if isinstance(predictions, Mapping):
        preds = {str(k): _prediction(v) for k, v in predictions.items()}
    else:
        preds = {}
        for ann in predictions:
            if not isinstance(ann, Annotation):
                raise TypeError(f"expected Annotation records, got {type(ann).__name__}")
            if ann.trace_id in preds:
                repeated.append(ann.trace_id)
            preds[ann.trace_id] = ann.decisive_error
    labelled = dict(labels) if isinstance(labels, Mapping) else attribution_labels(labels)

    names: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    excluded = [tid for tid, lab in labelled.items() if lab.past_end]
    not_predicted = [tid for tid, lab in labelled.items() if not lab.past_end and tid not in preds]
    unlabelled = [tid for tid in preds if tid not in labelled]
    for tid, lab in labelled.items():
        if lab.past_end or tid not in preds:
            continue
        pred = preds[tid]
        p_agent = pred.agent if pred else None
        p_step = pred.step_id if pred else None
        l_key, p_key = normalize_agent(lab.agent, aliases), normalize_agent(p_agent, aliases)
        if p_key is not None and p_key == l_key and p_agent != lab.agent:
            names[str(p_agent)] = str(lab.agent)
        row: dict[str, Any] = {
            "trace_id": tid,
            "subset": lab.subset,
            "system": lab.system,
            "label_agent": lab.agent,
            "label_step": lab.step_id,
            "predicted_agent": p_agent,
            "predicted_step": p_step,
            "agent": None if lab.agent is None or p_key is None else p_key == l_key,
            "step": None if lab.step_id is None or p_step is None else p_step == lab.step_id,
        }
        p_pos, l_pos = lab.position(p_step), lab.position(lab.step_id)
        if lab.step_id is None or p_step is None:
            row["step_within"] = None
        else:
            row["step_within"] = (
                p_pos is not None and l_pos is not None and abs(p_pos - l_pos) <= within
            )
        # Any-failure localisation: the predicted step against every labelled failure step.
        failure_pos = [lab.position(s) for s in lab.failure_steps]
        near = [abs(p_pos - f) for f in failure_pos if f is not None and p_pos is not None]
        has_failures = bool(lab.failure_steps)
        unknown = not has_failures or p_step is None
        row["any_step"] = None if unknown else p_step in lab.failure_steps
        row["any_step_within"] = None if unknown else bool(near) and min(near) <= within
        if has_failures:
            row["label_failure_steps"] = list(lab.failure_steps)
        named = [m for m in (pred.modes if pred else []) if m in lab.category_codes]
        row["category"] = None if lab.category is None or not named else lab.category in named
        if lab.category is not None:
            row["label_category"], row["predicted_categories"] = lab.category, named
        row["labelled"] = {
            "agent": lab.agent is not None,
            "step": lab.step_id is not None,
            "step_within": lab.step_id is not None,
            "any_step": has_failures,
            "any_step_within": has_failures,
            "category": lab.category is not None,
        }
        rows.append(row)

    rng = np.random.default_rng(seed)
    overall = _score(rows, bootstrap, confidence, rng)
    groups: dict[tuple[str, str], dict[str, Accuracy]] = {}
    for by in ("subset", "system"):
        values = sorted({r[by] for r in rows if r[by] is not None})
        for value in values:
            members = [r for r in rows if r[by] == value]
            groups[(by, value)] = _score(members, bootstrap, confidence, rng)
    for row in rows:
        del row["labelled"]
    return AttributionReport(
        within=within,
        overall=overall,
        groups=groups,
        rows=rows,
        excluded_past_end=excluded,
        not_predicted=not_predicted,
        unlabelled=unlabelled,
        repeated=sorted(set(repeated)),
        agent_names=names,
        confidence=confidence,
        bootstrap=bootstrap,
    )


def _score(
    rows: list[dict[str, Any]], bootstrap: int, confidence: float, rng: np.random.Generator
) -> dict[str, Accuracy]:
    out: dict[str, Accuracy] = {}
    for metric in METRICS:
        scored = [r for r in rows if r["labelled"][metric]]
        if not scored and metric in _OPTIONAL:
            continue  # no label lists failures or categories (Who&When): not measured
        correct = np.array([r[metric] is True for r in scored], dtype=np.float64)
        answered = np.array([r[metric] is not None for r in scored], dtype=np.float64)
        out[metric] = Accuracy(
            correct=int(correct.sum()),
            answered=int(answered.sum()),
            total=len(scored),
            ci_answered=_interval(correct, answered, bootstrap, confidence, rng),
            ci_all=_interval(correct, np.ones_like(correct), bootstrap, confidence, rng),
        )
    return out


def _interval(
    correct: np.ndarray[Any, np.dtype[np.float64]],
    base: np.ndarray[Any, np.dtype[np.float64]],
    bootstrap: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Percentile bootstrap of ``sum(correct) / sum(base)`` over traces."""
    n = len(correct)
    if bootstrap < 2 or n < 2 or base.sum() == 0:
        return math.nan, math.nan
    draws = rng.integers(0, n, size=(bootstrap, n))
    num = correct[draws].sum(axis=1)
    den = base[draws].sum(axis=1)
    values = num[den > 0] / den[den > 0]
    if len(values) < 2:
        return math.nan, math.nan
    alpha = 1 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)
