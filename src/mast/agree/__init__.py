"""Agreement reports: a judge against people (:func:`agreement`), people among themselves
(:func:`agreement_among`), and human agreement per taxonomy version (:func:`agreement_by_version`).

Every number comes from :mod:`mast.agree.stats` (point estimates, analytic standard errors); the
confidence intervals come from a bootstrap over *traces* (all modes and raters of a trace
are resampled together), percentile and BCa, seeded and reproducible.  Whatever could not be
scored is counted in ``report.excluded`` — unknown (``None``) cells, failed annotations,
traces present in one source only, codes the taxonomy does not know, draft-taxonomy modes
with no final code — never turned into "no".

The module is ``mast.agree`` (not ``mast.agreement``) so that the *function*
``mast.agreement`` is never shadowed by a submodule of the same name.

>>> import mast
>>> ref = {"t1": {"1.1": True, "1.2": False}, "t2": {"1.1": False, "1.2": False},
...        "t3": {"1.1": True, "1.2": True}, "t4": {"1.1": False, "1.2": None}}
>>> judge = {"t1": {"1.1": True, "1.2": False}, "t2": {"1.1": True, "1.2": False},
...          "t3": {"1.1": True, "1.2": True}}
>>> rep = mast.agreement(ref, judge, modes=["1.1", "1.2"], bootstrap=200)
>>> round(rep.pooled.kappa, 3), rep.pooled.n_cells, rep.excluded.missing["candidate"]
(0.667, 6, ['t4'])
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from mast._lazy import submodule_getattr
from mast.agree import stats
from mast.agree.among import AmongPooled, AmongReport, agreement_among
from mast.agree.base import (
    BASELINE_ROWS,
    MACRO,
    POOLED,
    VERIFICATION,
    CiMethod,
    _as_labels,
    _bootstrap_frame,
    _check_options,
    _finish_frame,
    _interval_frame,
    _kleene_or,
    _notes,
    _select_modes,
    _set_kappa,
    _taxonomy,
    _Undefined,
)
from mast.agree.baselines import (
    BASELINES_MEANING,
    AgreementContext,
    agreement_context,
    macro_modes,
)
from mast.agree.blocks import (
    DuplicateLabelsWarning,
    Resample,
    block_map,
    duplicate_blocks,
    resampling_units,
    sum_by_unit,
)
from mast.agree.conventions import (
    per_system_frame,
    source_systems,
    source_verification,
    warn_if_conventions_differ,
)
from mast.agree.exclusions import Exclusions, _table_exclusions
from mast.agree.pair_report import (
    _BINARY_CI,
    _BINARY_COLUMNS,
    _BINARY_COUNTS,
    AgreementReport,
    PooledKappa,
)
from mast.agree.resample import binary_metrics
from mast.agree.table import (
    MAJORITY,
    UNKNOWN,
    LabelSet,
    LabelTable,
    labels_of,
    majority_of,
    majority_vote,
    natural_key,
    to_table,
)
from mast.agree.versions import OVERALL, VersionReport, agreement_by_version
from mast.errors import NoOverlapError
from mast.taxonomy import Taxonomy

__all__ = [
    "BASELINES_MEANING",
    "MACRO",
    "MAJORITY",
    "OVERALL",
    "POOLED",
    "VERIFICATION",
    "AgreementContext",
    "AgreementReport",
    "AmongPooled",
    "AmongReport",
    "DuplicateLabelsWarning",
    "Exclusions",
    "LabelSet",
    "PooledKappa",
    "VersionReport",
    "agreement",
    "agreement_among",
    "agreement_by_version",
    "block_map",
    "duplicate_blocks",
    "labels_of",
    "majority_of",
    "majority_vote",
]


def _source_name(source: object, annotator: str | None, given: str | None, default: str) -> str:
    if given:
        return given
    if annotator:
        return annotator
    if isinstance(source, LabelSet):
        return source.annotator
    return default


def agreement(
    reference: object,
    candidate: object,
    *,
    modes: Iterable[str] | None = None,
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    ci: CiMethod = "percentile",
    taxonomy: Taxonomy | str | Path | None = None,
    merge_verification: bool = True,
    reference_annotator: str | None = None,
    candidate_annotator: str | None = None,
    reference_name: str | None = None,
    candidate_name: str | None = None,
    clusters: Mapping[str, Hashable] | None = None,
    resample: Resample = "auto",
    reference_verification: str | None = None,
    candidate_verification: str | None = None,
    systems: Mapping[str, str | None] | None = None,
) -> AgreementReport:
    """Agreement of ``candidate`` labels (e.g. an LLM judge) with ``reference`` labels.

    Each source may be ``{trace_id: {code: True | False | None}}``, ``{trace_id:
    FailureVector}``, a DataFrame (index or ``trace_id`` column = trace ids, columns =
    codes, optional ``status``), a list of annotations (``.trace_id``, ``.vector``,
    ``.status``) or of dict records, :func:`labels_of` ``(traces, annotator)``, or a list of
    traces with ``reference_annotator`` / ``candidate_annotator`` naming whose labels to use.

    Only traces both sources labelled usably are compared; within them, a cell with an
    unknown (``None``) label on either side is left out.  Annotations whose ``status`` is
    not ``"ok"`` are left out (they are failures, not "no").  All of it is counted in
    ``report.excluded``.  ``modes`` selects codes (default: every code of ``taxonomy``,
    the bundled MAST taxonomy by default).

    Point estimates and the analytic SE of kappa come from :mod:`mast.agree.stats`.  Intervals
    come from ``bootstrap`` resamples of whole traces (``0`` turns them off), seeded with
    ``seed``; ``ci`` picks which interval fills the ``*_low``/``*_high`` columns
    (``"percentile"`` or ``"bca"``; both are in ``report.intervals``).

    ``resample`` is the bootstrap unit, the same rule as ``mast agree --resample``:
    ``"auto"`` (default) resamples distinct label blocks when the reference's traces carry
    identical blocks from every annotator (copied labels; known when the reference is traces
    or :func:`labels_of`), else traces; ``"blocks"`` always resamples blocks, ``"traces"``
    never.  A :class:`DuplicateLabelsWarning` says what was done, and
    ``report.context.resampling`` records it.  ``clusters`` maps trace ids to your own
    resampling units (traces of one unit are resampled together; :func:`block_map` gives the
    blocks of traces for a plain ``{trace_id: vector}`` reference).  Values that are
    undefined on the data (kappa of a mode nobody flagged) are NaN, with one
    :class:`~mast.agree.stats.UndefinedMetricWarning` listing them; kappa is never reported as
    1.0 for such a mode.  (AC1 and PABAK are 1.0 there by their definition: they measure raw
    agreement.)

    ``reference_verification`` / ``candidate_verification`` name a side's 3.2/3.3
    convention (``"paper"`` or ``"official"``) when the source does not record it (traces
    and judge records do). Different conventions give a
    :class:`~mast.errors.VerificationConventionWarning` and a first note. ``systems`` maps
    trace ids to systems for ``report.per_system`` (default: from the sources' traces).

    >>> import mast
    >>> human = mast.traces.datasets.example_traces()
    >>> rep = mast.agreement(human, human, reference_annotator="annotator_1",
    ...                      candidate_annotator="annotator_2", modes=["1.5", "2.5", "3.3"],
    ...                      bootstrap=0)
    >>> round(rep.pooled.kappa, 3), rep.n_traces, rep.context.cells_scored
    (0.824, 4, 12)
    """
    _check_options(bootstrap, seed, confidence, ci)
    tax = _taxonomy(taxonomy)
    codes = _select_modes(modes, tax)
    ref_name = _source_name(reference, reference_annotator, reference_name, "reference")
    cand_name = _source_name(candidate, candidate_annotator, candidate_name, "candidate")
    ref = to_table(
        reference, modes=codes, taxonomy=tax, name=ref_name, annotator=reference_annotator
    )
    cand = to_table(
        candidate, modes=codes, taxonomy=tax, name=cand_name, annotator=candidate_annotator
    )
    ref_at, cand_at = ref.index(), cand.index()
    ids = sorted(set(ref_at) & set(cand_at), key=natural_key)
    _check_overlap(ref, cand)
    m = len(codes)
    r_vals = ref.values[[ref_at[i] for i in ids]].reshape(len(ids), m)
    c_vals = cand.values[[cand_at[i] for i in ids]].reshape(len(ids), m)
    rows = list(codes)
    if merge_verification and "3.2" in codes and "3.3" in codes:
        j2, j3 = codes.index("3.2"), codes.index("3.3")
        r_vals = np.column_stack([r_vals, _kleene_or(r_vals[:, j2], r_vals[:, j3])])
        c_vals = np.column_stack([c_vals, _kleene_or(c_vals[:, j2], c_vals[:, j3])])
        rows.append(VERIFICATION)
    r_vals, c_vals = r_vals.astype(np.int8), c_vals.astype(np.int8)

    # Per trace and row, the one-hot 2x2 cell (tp, fp, fn, tn) of that trace; the pooled row
    # adds up the modes.  Counts, estimates and bootstrap resamples all come from these sums.
    onehot = np.stack(
        [
            (r_vals == 1) & (c_vals == 1),
            (r_vals == 0) & (c_vals == 1),
            (r_vals == 1) & (c_vals == 0),
            (r_vals == 0) & (c_vals == 0),
        ],
        axis=-1,
    ).astype(np.float64)
    features = np.concatenate([onehot, onehot[:, :m].sum(axis=1, keepdims=True)], axis=1)
    chosen = resampling_units(
        ref.ids, resample=resample, clusters=clusters, blocks=ref.blocks, values=ref.values
    )
    units = _cluster_numbers(ids, chosen)
    boot, frame = _bootstrap_frame(
        sum_by_unit(features, units),
        binary_metrics,
        rows,
        m,
        _BINARY_CI,
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
        ci=ci,
        macro_modes=macro_modes,
    )
    scored = [*rows, POOLED]
    frame["pos_agreement"] = frame["f1"]  # 2a / (2a + b + c): the same quantity as F1

    # Cohen's kappa and its analytic SE from mast.agree.stats, per row and over all cells.
    und = _Undefined()
    columns = [(_as_labels(r_vals[:, j]), _as_labels(c_vals[:, j])) for j in range(len(rows))]
    columns.append((_as_labels(r_vals[:, :m].ravel()), _as_labels(c_vals[:, :m].ravel())))
    kappas = [
        und.call(row, "kappa", stats.cohen_kappa_with_se, y1, y2, confidence=confidence)
        for row, (y1, y2) in zip(scored, columns, strict=True)
    ]
    counts = features.sum(axis=0).astype(np.int64)
    kept = macro_modes(counts[:m].astype(np.float64))
    _set_kappa(frame, "kappa", kappas, m, kept)
    for metric in ("ac1", "pabak", "precision", "recall", "f1", "neg_agreement"):
        und.note(metric, [r for r in scored if np.isnan(frame.at[r, metric])])
    n_cells = int(counts[-1].sum())
    und.emit(
        f"agreement of {cand_name} with {ref_name}",
        None if n_cells else f"no trace x mode cell could be compared ({len(ids)} matched)",
    )
    for k, name in enumerate(("tp", "fp", "fn", "tn")):
        frame[name] = [*counts[:, k].tolist(), pd.NA]
    frame["n"] = [*counts.sum(axis=1).tolist(), pd.NA]
    known_r, known_c = r_vals >= 0, c_vals >= 0
    unknown_r = (~known_r).sum(axis=0)
    unknown_c = (~known_c).sum(axis=0)
    unscored = (~(known_r & known_c)).sum(axis=0)
    frame["unknown_reference"] = [*unknown_r, unknown_r[:m].sum(), pd.NA]
    frame["unknown_candidate"] = [*unknown_c, unknown_c[:m].sum(), pd.NA]
    frame["unscored"] = [*unscored, unscored[:m].sum(), pd.NA]
    frame = _finish_frame(
        frame, rows, tax, _BINARY_COLUMNS, _BINARY_COUNTS, "modes w/ both ref. classes"
    )

    intervals = _interval_frame(frame, boot, _BINARY_CI, "kappa")
    excluded = _table_exclusions(
        {"reference": ref, "candidate": cand},
        {
            "reference": dict(zip(rows, map(int, unknown_r), strict=True)),
            "candidate": dict(zip(rows, map(int, unknown_c), strict=True)),
        },
        dict(zip(rows, map(int, unscored), strict=True)),
    )
    summary_rows = [r for r in (VERIFICATION, POOLED, MACRO) if r in frame.index]
    # Context numbers over every trace the reference labelled: a trace the candidate lacks
    # is asked and not scored (coverage), and is "no" in the unknown-as-no line.
    cand_on_ref = np.full(ref.values.shape, UNKNOWN, dtype=np.int8)
    for k, trace_id in enumerate(ref.ids):
        if trace_id in cand_at:
            cand_on_ref[k] = cand.values[cand_at[trace_id]]
    context = agreement_context(
        ref.values,
        cand_on_ref,
        codes,
        bootstrap=0,  # its only interval, the macro one, is the table's (below)
        confidence=confidence,
        seed=seed,
        clusters=_cluster_numbers(ref.ids, chosen),
        ci=ci,
    )
    # One macro kappa: the context shows the table's macro row (same definition and cells, so
    # the same estimate; the interval is the table's, from resampling the compared traces).
    macro_row = frame.loc[MACRO]
    context = replace(
        context,
        macro_kappa=float(macro_row["kappa"]),
        macro_low=float(macro_row["kappa_low"]),
        macro_high=float(macro_row["kappa_high"]),
    )
    pooled_row = frame.loc[POOLED]
    pooled = PooledKappa(
        kappa=float(pooled_row["kappa"]),
        se=float(pooled_row["kappa_se"]),
        wald_low=float(pooled_row["kappa_wald_low"]),
        wald_high=float(pooled_row["kappa_wald_high"]),
        boot_low=float(pooled_row["kappa_low"]),
        boot_high=float(pooled_row["kappa_high"]),
        method=ci,
        confidence=float(confidence),
        n_cells=int(n_cells),
        n_traces=len(ids),
        macro_kappa=context.macro_kappa,
        macro_low=context.macro_low,
        macro_high=context.macro_high,
        constant_kappa=context.constant_kappa,
        chance_kappa=context.chance_kappa,
    )
    notes = _notes(
        frame, codes, boot, len(ids), bootstrap, "kappa", ("AC1", "PABAK"), kept.tolist()
    )
    if isinstance(reference, LabelSet) and reference.voters:
        tied = sum(len(v) for k, v in reference.ties.items() if k in ref_at)
        notes.append(
            f"the reference is the majority vote of {', '.join(reference.voters)}; "
            f"{tied} tied cell(s) are unknown and left out"
        )
    conventions = {
        "reference": reference_verification or source_verification(reference, reference_annotator),
        "candidate": candidate_verification or source_verification(candidate, candidate_annotator),
    }
    differ = warn_if_conventions_differ(
        {"reference": ref_name, "candidate": cand_name}, conventions
    )
    if differ:
        notes.insert(0, differ)
    known = {**source_systems(candidate), **source_systems(reference), **(systems or {})}
    return AgreementReport(
        reference_name=ref_name,
        candidate_name=cand_name,
        taxonomy=tax.label,
        modes=codes,
        trace_ids=ids,
        pooled=pooled,
        per_mode=frame.loc[codes],
        summary=_with_baselines(frame.loc[summary_rows], context),
        intervals=intervals,
        excluded=excluded,
        notes=notes,
        bootstrap=int(bootstrap),
        seed=None if seed is None else int(seed),
        confidence=float(confidence),
        ci=ci,
        context=context,
        conventions=conventions,
        per_system=per_system_frame(ids, known, r_vals, c_vals, codes),
    )


def _with_baselines(summary: pd.DataFrame, c: AgreementContext) -> pd.DataFrame:
    """The summary rows and, under them, the two baselines' kappa on the same cells."""
    constant = "{" + ", ".join(c.constant_modes) + "}"
    rows = pd.DataFrame(
        {
            "name": [
                f"constant judge flagging {constant} on every trace",
                "chance judge at the reference prevalence (expected)",
            ],
            "kappa": [c.constant_kappa, c.chance_kappa],
        },
        index=pd.Index(list(BASELINE_ROWS), name=summary.index.name),
    )
    out: pd.DataFrame = pd.concat([summary, rows.reindex(columns=summary.columns)])
    for column in _BINARY_COUNTS:
        out[column] = out[column].astype(summary[column].dtype)
    return out


def _cluster_numbers(ids: list[str], clusters: Mapping[str, Hashable] | None) -> list[int] | None:
    """Resampling unit per trace (a trace missing from ``clusters`` is a unit of its own)."""
    if clusters is None:
        return None
    numbers: dict[object, int] = {}
    return [numbers.setdefault(clusters.get(i, ("own", i)), len(numbers)) for i in ids]


def _check_overlap(ref: LabelTable, cand: LabelTable) -> None:
    """Two non-empty sources without a single common trace id: an error, not a NaN report."""
    ref_ids = [*ref.ids, *(i for ids in ref.failed.values() for i in ids)]
    cand_ids = [*cand.ids, *(i for ids in cand.failed.values() for i in ids)]
    if not ref_ids or not cand_ids or set(ref_ids) & set(cand_ids):
        return
    raise NoOverlapError(
        f"{ref.name} and {cand.name} share no trace id, so nothing can be compared: "
        f"{ref.name} has {len(ref_ids)} (e.g. {', '.join(map(repr, ref_ids[:3]))}), "
        f"{cand.name} has {len(cand_ids)} (e.g. {', '.join(map(repr, cand_ids[:3]))}). "
        "Most likely the two use different id schemes (e.g. 'mad-human/16' against '16', or "
        "file names against record ids): make the ids match, e.g. with a trace_id column"
    )


__getattr__ = submodule_getattr(__name__)  # `mast.agree.<module>` without an import
