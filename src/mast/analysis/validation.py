"""``mast.validate``: can this judge be trusted?  Annotate a human-labelled set and compare.

One call loads a labelled set (the MAD human file at its pinned revision, a file or folder of
traces that carry several people's labels, or such traces in memory), annotates it with the
judge through :func:`mast.annotate_many` (resumable, cached, within a budget), and puts side
by side what a reader needs: kappa against each annotator and against their majority, the
human–human ceiling on the same cells, the baselines that only know which modes are common,
macro kappa, coverage, per mode with intervals and the merged 3.2 ∨ 3.3 row, per taxonomy
version, duplicated label blocks (resampled as clusters), and the cost.

>>> import mast
>>> human = [t for t in mast.datasets.example_traces() if t.format == "mad-human"]
>>> result = mast.validate(mast.Judge("heuristic"), human, bootstrap=0, progress=False)
>>> list(result.reports)
['annotator_1', 'annotator_2', 'annotator_3', 'majority']
>>> result.majority.context.cells_asked
56
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mast.agree import AgreementReport, agreement
from mast.agree.blocks import Resample, block_clusters, check_resample, duplicate_blocks
from mast.agree.resample import binary_metrics
from mast.agree.stats import UndefinedMetricWarning
from mast.agree.table import LabelSet, human_annotators, labels_of, majority_vote, to_table
from mast.analysis.judge_run import judge_traces, results_file
from mast.analysis.validation_report import ValidationReport
from mast.errors import DatasetUnavailableError, StatsInputError
from mast.judge.judge import Judge
from mast.taxonomy import Taxonomy
from mast.traces.model import Trace

__all__ = ["MAD_HUMAN", "ValidationReport", "validate"]

MAD_HUMAN = "mad-human"
"""The dataset name of MAST-Data's human-labelled file (downloaded at the pinned revision)."""

Int8Array = npt.NDArray[np.int8]


def _load(dataset: object, revision: str | None) -> tuple[list[Trace], str]:
    from mast.traces.datasets import load_mad_human
    from mast.traces.loaders import load_traces

    if isinstance(dataset, str) and dataset == MAD_HUMAN:
        with warnings.catch_warnings():
            # The published file repeats label blocks: the report says so in its own words.
            warnings.filterwarnings("ignore", message=r".*distinct label blocks")
            try:
                traces = load_mad_human(revision=revision)
            except DatasetUnavailableError as exc:
                raise with_path_hint(exc, "mast.validate(judge, {file!r})") from exc
        return traces, "mad-human (MAST-Data human-labelled file)"
    if isinstance(dataset, (str, Path)):
        path = Path(dataset)
        if not path.exists() and not any(ch in str(dataset) for ch in "*?["):
            raise StatsInputError(
                f"dataset {str(dataset)!r}: no such file or folder; give 'mad-human' (downloaded "
                "at its pinned revision) or trace files whose traces carry people's labels"
            )
        return list(load_traces(path)), str(path)
    if isinstance(dataset, Sequence) and all(isinstance(t, Trace) for t in dataset):
        return list(dataset), f"{len(dataset)} given traces"
    raise StatsInputError(
        f"dataset must be 'mad-human', a path, or a list of traces; got {type(dataset).__name__}"
    )


def with_path_hint(exc: DatasetUnavailableError, form: str) -> DatasetUnavailableError:
    """``exc`` with its "pass its path" hint in the caller's form (``{file!r}`` is filled
    with the file name): the loader function in Python, ``--dataset PATH`` on the CLI."""
    from mast.traces.catalog import info

    name = exc.filename or "MAD_human_labelled_dataset.json"
    loader_call = f"{info(MAD_HUMAN).loader}({name!r})"
    message = str(exc)
    for call in (loader_call, f"mast.validate(judge, {name!r})"):
        message = message.replace(call, form.format(file=name))
    return type(exc)(
        message,
        dataset=exc.dataset,
        repo_id=exc.repo_id,
        revision=exc.revision,
        filename=exc.filename,
        url=exc.url,
    )


def _aligned(source: object, ids: Sequence[str], tax: Taxonomy, name: str) -> Int8Array:
    """``source``'s labels as a traces x modes array in the order of ``ids`` (-1: unknown)."""
    table = to_table(source, modes=tax.codes, taxonomy=tax, name=name)
    out = np.full((len(ids), len(tax.codes)), -1, dtype=np.int8)
    where = table.index()
    for k, trace_id in enumerate(ids):
        if trace_id in where:
            out[k] = table.values[where[trace_id]]
    return out


def _kappa_on(a: Int8Array, b: Int8Array, mask: npt.NDArray[np.bool_]) -> float:
    x, y = a[mask], b[mask]
    counts = [
        np.sum((x == 1) & (y == 1)),
        np.sum((x == 0) & (y == 1)),
        np.sum((x == 1) & (y == 0)),
        np.sum((x == 0) & (y == 0)),
    ]
    return float(binary_metrics(np.array(counts, dtype=np.float64))["kappa"])


def _mean(values: Sequence[float]) -> float:
    defined = [v for v in values if v == v]
    return float(np.mean(defined)) if defined else float("nan")


def _ceilings(
    humans: Sequence[str],
    cube: Int8Array,
    judged: Int8Array,
    majority: Int8Array,
    references: dict[str, LabelSet],
    ids: Sequence[str],
    tax: Taxonomy,
) -> dict[str, float]:
    """Human–human kappa on the cells the judge was scored on, per reference."""
    out: dict[str, float] = {}
    for k, ref_name in enumerate(humans):
        ref = cube[:, :, k]
        out[ref_name] = _mean(
            [
                _kappa_on(ref, cube[:, :, h], (ref >= 0) & (judged >= 0) & (cube[:, :, h] >= 0))
                for h in range(len(humans))
                if h != k
            ]
        )
    # For the majority: each annotator against the majority of the others (leave one out).
    values = []
    for k, name in enumerate(humans):
        rest = [a for a in humans if a != name]
        others = (
            majority_vote({a: references[a] for a in rest}, taxonomy=tax)
            if len(rest) > 1
            else references[rest[0]]
        )
        other = _aligned(others, ids, tax, "others")
        own = cube[:, :, k]
        mask = (majority >= 0) & (judged >= 0) & (other >= 0) & (own >= 0)
        values.append(_kappa_on(other, own, mask))
    out["majority"] = _mean(values)
    return out


def validate(
    judge: Judge,
    dataset: object = MAD_HUMAN,
    *,
    out: str | Path | None = None,
    budget_usd: float | None = None,
    concurrency: int = 8,
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    revision: str | None = None,
    cache: bool | str | Path = True,
    progress: bool = True,
    resample: Resample = "auto",
) -> ValidationReport:
    """Annotate a human-labelled set with ``judge`` and report how far it can be trusted.

    ``dataset``: ``"mad-human"`` (downloaded at the pinned revision, or ``revision``, and
    checked), a path to trace files whose traces carry two or more people's labels, or such
    traces.  With ``out`` the annotations go to ``out/results.jsonl`` (a rerun resumes from
    it and pays for nothing twice) and the report to ``out/report.md`` and
    ``out/report.json``.  ``budget_usd`` stops the run before a call would pass it; what was
    annotated is still reported, the rest counted as not attempted.  ``resample`` is the
    bootstrap unit, as in :func:`mast.agreement`: ``"auto"`` resamples distinct label blocks
    when the people's labels repeat whole blocks (copied labels), ``"blocks"`` always,
    ``"traces"`` never.
    """
    check_resample(resample)
    traces, name = _load(dataset, revision)
    humans = human_annotators(traces)
    labelled = [t for t in traces if any(a in t.labels for a in humans)]
    if len(humans) < 2 or not labelled:
        raise StatsInputError(
            f"{name}: validation needs traces labelled by two or more people; found "
            f"{len(labelled)} labelled trace(s), annotators {humans or 'none'}"
        )
    results = results_file(out)
    run = judge_traces(
        labelled,
        judge,
        results=results,
        budget_usd=budget_usd,
        concurrency=concurrency,
        cache=cache,
        progress=progress,
    )
    tax = judge.taxonomy
    ids = [t.id for t in labelled]
    references: dict[str, LabelSet] = {a: labels_of(labelled, a) for a in humans}
    cube = np.stack([_aligned(references[a], ids, tax, a) for a in humans], axis=-1)
    block_of = block_clusters(cube)
    groups = duplicate_blocks(cube, ids)
    # Copied label blocks are resampled together (cluster bootstrap); otherwise, traces.
    by_blocks = resample == "blocks" or (resample == "auto" and bool(groups))
    clusters: dict[str, Hashable] | None = (
        dict(zip(ids, block_of, strict=True)) if by_blocks else None
    )
    majority = labels_of(labelled, "majority")
    sources: dict[str, LabelSet] = {**references, "majority": majority}
    annotations = list(run)
    notes: list[str] = []
    options: dict[str, Any] = {
        "bootstrap": bootstrap,
        "seed": seed,
        "confidence": confidence,
        "taxonomy": tax,
        "clusters": clusters,
        "resample": "auto" if by_blocks else "traces",
        "candidate_name": judge.model,
    }
    reports: dict[str, AgreementReport] = {}
    by_version: dict[str, AgreementReport] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for ref_name, ref in sources.items():
            reports[ref_name] = agreement(ref, annotations, reference_name=ref_name, **options)
        for version in sorted({v for v in majority.versions.values() if v}):
            subset = {t: majority[t] for t in majority if majority.versions.get(t) == version}
            picked = [a for a in annotations if a.trace_id in subset]
            if picked:
                by_version[version] = agreement(
                    subset, picked, reference_name=f"majority ({version})", **options
                )
    undefined = 0
    for w in caught:
        if issubclass(w.category, UndefinedMetricWarning):
            undefined += 1  # each report lists its own in its notes (report.json)
            continue
        line = f"{w.category.__name__}: {w.message}"
        if line not in notes:
            notes.append(line)
    if undefined:
        notes.append(
            f"{undefined} of the agreement reports have values undefined on this data (a mode "
            "nobody flagged, or one the reference gives one class): they are NaN, shown as "
            "'undef.', and each report's notes in report.json name them"
        )
    judged = _aligned(annotations, ids, tax, "judge")
    majority_values = _aligned(majority, ids, tax, "majority")
    ceilings = _ceilings(humans, cube, judged, majority_values, references, ids, tax)
    failed: dict[str, list[str]] = {}
    for a in annotations:
        if a.status != "ok":
            failed.setdefault(a.status, []).append(a.trace_id)
    if run.summary.not_attempted:
        failed["not attempted"] = list(run.summary.not_attempted)
        notes.append(f"the run stopped early ({run.summary.stopped}): {run.summary.stop_message}")
    costs = [a.cost_usd for a in annotations]
    report = ValidationReport(
        model=judge.model,
        answer=judge.answer,
        dataset=name,
        n_traces=len(labelled),
        reports=reports,
        ceilings=ceilings,
        by_version=by_version,
        duplicate_groups=groups,
        n_blocks=len(set(block_of)),
        resampling="label blocks" if by_blocks else "traces",
        cost_usd=float(sum(c for c in costs if c is not None)),
        cost_unknown=sum(c is None for c in costs),
        failed=failed,
        results_path=str(results) if results is not None else None,
        notes=notes,
    )
    if out is not None:
        report.write(out)
    return report
