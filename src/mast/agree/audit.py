"""Audit a taxonomy's decision rules against labels people (or a judge) actually gave.

A decision rule of kind ``exclusive`` claims that its modes are never both true of one
trace; ``tie-break`` and ``co-label`` rules allow both. :func:`audit_taxonomy` counts, for
every rule, how often the labels co-mark its modes (per annotator and for the majority),
flags every ``exclusive`` rule a majority label contradicts, and lists each mode's
prevalence and the pairs the labels co-mark most that no rule mentions. It works for any
taxonomy file (custom ones, the SRE flavour), not only for MAST.

>>> import mast
>>> from mast.traces.datasets import examples_path, load_mad_human
>>> audit = audit_taxonomy(None, load_mad_human(examples_path() / "mad_human_sample.json"))
>>> rule = audit.rule("3.2", "3.3")
>>> rule.kind, rule.co_labelled, rule.contradicted
('tie-break', 2, False)
>>> [r.modes for r in audit.rules if r.contradicted]
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mast.agree.table import LabelTable, labels_of, natural_key, to_table
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Trace

__all__ = ["PairCount", "RuleAudit", "TaxonomyAudit", "audit_taxonomy"]

MAJORITY = "majority"


@dataclass(frozen=True)
class PairCount:
    """How often the labels co-mark two modes."""

    modes: tuple[str, ...]
    co_labelled: int
    """Traces whose majority label marks every mode of the pair."""
    known: int
    """Traces whose majority label is known (true or false) for every mode of the pair."""
    per_annotator: dict[str, int] = field(default_factory=dict)
    """Annotator -> traces on which that annotator marked every mode of the pair."""


@dataclass(frozen=True)
class RuleAudit(PairCount):
    """One decision rule and what the labels say about it."""

    kind: str = "tie-break"
    contradicted: bool = False
    """True for an ``exclusive`` rule that a majority label co-marks on some trace."""
    contradicting: list[str] = field(default_factory=list)
    """Trace ids whose majority label contradicts an ``exclusive`` rule."""
    contradicted_by: list[str] = field(default_factory=list)
    """Annotators whose own labels co-mark an ``exclusive`` rule's modes on some trace."""


@dataclass(frozen=True)
class TaxonomyAudit:
    """What :func:`audit_taxonomy` found: rules, prevalence and unruled co-labelled pairs."""

    taxonomy: str
    verification: str | None
    traces: int
    annotators: list[str]
    rules: list[RuleAudit]
    prevalence: dict[str, dict[str, Any]]
    """Code -> ``{"name", "majority", "known", "per_annotator": {annotator: count}}``."""
    unruled_pairs: list[PairCount]
    """Pairs no rule names, most co-labelled (by the majority) first; only pairs co-marked."""
    notes: list[str] = field(default_factory=list)

    def rule(self, *modes: str) -> RuleAudit:
        """The audit of the rule for exactly these modes (in any order)."""
        wanted = set(modes)
        for rule in self.rules:
            if set(rule.modes) == wanted:
                return rule
        raise KeyError(f"no decision rule for {sorted(wanted)} in {self.taxonomy}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``rules`` holds one object per rule."""
        return {
            "taxonomy": self.taxonomy,
            "verification": self.verification,
            "traces": self.traces,
            "annotators": self.annotators,
            "rules": [{**asdict(r), "modes": list(r.modes)} for r in self.rules],
            "prevalence": self.prevalence,
            "unruled_pairs": [{**asdict(p), "modes": list(p.modes)} for p in self.unruled_pairs],
            "notes": self.notes,
        }

    def to_text(self) -> str:
        """A plain-text report for the terminal."""
        who = ", ".join(self.annotators)
        lines = [
            f"Audit of {self.taxonomy} ({self.verification or 'no'} convention) against "
            f"{self.traces} labelled trace(s); annotators: {who}; majority: more than half "
            "of the known labels of a trace",
            *(f"note: {n}" for n in self.notes),
            "",
            "Decision rules (co-labelled = traces whose majority marks both modes):",
        ]
        for r in self.rules:
            each = ", ".join(f"{a} {n}" for a, n in r.per_annotator.items())
            flag = ""
            if r.kind == "exclusive":
                flag = (
                    f"  CONTRADICTED on {', '.join(r.contradicting)}"
                    if r.contradicted
                    else "  holds"
                )
                if r.contradicted_by:
                    flag += f" (co-marked by {', '.join(r.contradicted_by)})"
            lines.append(
                f"  {' / '.join(r.modes):<12} {r.kind:<10} co-labelled {r.co_labelled} of "
                f"{r.known} [{each}]{flag}"
            )
        lines += ["", "Prevalence (majority, of traces with a known label):"]
        for code, p in self.prevalence.items():
            each = ", ".join(f"{a} {n}" for a, n in p["per_annotator"].items())
            lines.append(f"  {code:<5} {p['name']:<40} {p['majority']} of {p['known']} [{each}]")
        lines += ["", "Most co-labelled pairs that no rule mentions:"]
        if not self.unruled_pairs:
            lines.append("  none")
        for pair in self.unruled_pairs:
            lines.append(
                f"  {' / '.join(pair.modes):<12} co-labelled {pair.co_labelled} of {pair.known}"
            )
        return "\n".join(lines)


def audit_taxonomy(
    taxonomy: Taxonomy | str | Path | None,
    labelled_traces: Iterable[Trace] | Mapping[str, object],
    *,
    annotators: Iterable[str] | None = None,
    top: int = 5,
) -> TaxonomyAudit:
    """Check every decision rule of ``taxonomy`` against labels.

    A trace's majority marks a mode when more than half of its annotators' known labels do
    (one annotator: that annotator's labels). Unknown labels are counted out, never as no.

    Parameters
    ----------
    taxonomy
        A :class:`~mast.taxonomy.Taxonomy`, a path or bundled name, or ``None`` for MAST.
    labelled_traces
        Traces carrying labels (``trace.labels``), or ``{annotator: labels}`` where labels
        is anything :func:`mast.agreement` reads (``{trace_id: {code: bool | None}}``, a
        results list, a DataFrame).
    annotators
        Annotators to use (default: all of them).
    top
        How many of the most co-labelled pairs without a rule to list.

    Examples
    --------
    >>> labels = {"a": {"t1": {"1.5": True, "3.1": True}, "t2": {"1.5": True}},
    ...           "b": {"t1": {"1.5": True, "3.1": False}, "t2": {"1.5": True, "3.1": True}},
    ...           "c": {"t1": {"1.5": False, "3.1": True}, "t2": {"1.5": False}}}
    >>> rule = audit_taxonomy(None, labels).rule("1.5", "3.1")
    >>> rule.kind, rule.co_labelled, rule.contradicting, rule.per_annotator
    ('exclusive', 2, ['t1', 't2'], {'a': 1, 'b': 1, 'c': 0})
    """
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    notes: list[str] = []
    if isinstance(labelled_traces, Mapping):
        sources = dict(labelled_traces)
    else:
        traces = list(labelled_traces)
        names = sorted({a for t in traces for a in t.labels}, key=natural_key)
        sources = {a: labels_of(traces, a) for a in names}
        notes += _convention_notes(traces, tax)
    if annotators is not None:
        chosen = list(annotators)
        missing = [a for a in chosen if a not in sources]
        if missing:
            raise ValueError(f"no labels from {missing}; the labels come from {list(sources)}")
        sources = {a: sources[a] for a in chosen}
    if not sources:
        raise ValueError("no labels to audit against: the traces carry none")
    codes = tax.codes
    tables = {a: to_table(s, modes=codes, taxonomy=tax, name=a) for a, s in sources.items()}
    ids, cube = _cube(tables)
    majority = _majority(cube)
    names = list(tables)
    rules = [_rule(r.modes, r.kind, codes, ids, cube, majority, names) for r in tax.decision_rules]
    ruled = {frozenset(r.modes) for r in tax.decision_rules}
    pairs = [
        _pair((a, b), codes, cube, majority, names)
        for a, b in combinations(codes, 2)
        if frozenset((a, b)) not in ruled
    ]
    pairs = sorted(
        (p for p in pairs if p.co_labelled > 0), key=lambda p: (-p.co_labelled, p.modes)
    )[: max(top, 0)]
    prevalence = {
        code: {
            "name": tax[code].name,
            "majority": int((majority[:, j] == 1).sum()),
            "known": int((majority[:, j] >= 0).sum()),
            "per_annotator": {a: int((cube[k, :, j] == 1).sum()) for k, a in enumerate(names)},
        }
        for j, code in enumerate(codes)
    }
    return TaxonomyAudit(
        taxonomy=tax.label,
        verification=tax.verification,
        traces=len(ids),
        annotators=names,
        rules=rules,
        prevalence=prevalence,
        unruled_pairs=pairs,
        notes=notes,
    )


def _convention_notes(traces: list[Trace], tax: Taxonomy) -> list[str]:
    found = sorted(
        {
            str(s.verification)
            for t in traces
            for a, s in t.label_sources.items()
            if a in t.labels and s.verification is not None
        }
    )
    if tax.verification is None or not found or found == [tax.verification]:
        return []
    return [
        f"the labels use the {' and '.join(found)} convention of 3.2/3.3 and the taxonomy "
        f"the {tax.verification} one: counts on 3.2 and 3.3 compare different meanings "
        "(load the labels with verification=... or audit the taxonomy in their convention)"
    ]


def _cube(tables: Mapping[str, LabelTable]) -> tuple[list[str], npt.NDArray[np.int8]]:
    """annotators x traces x modes, -1 where an annotator has no label."""
    ids = sorted({i for t in tables.values() for i in t.ids}, key=natural_key)
    where = {trace_id: k for k, trace_id in enumerate(ids)}
    first = next(iter(tables.values()))
    cube = np.full((len(tables), len(ids), len(first.modes)), -1, dtype=np.int8)
    for k, table in enumerate(tables.values()):
        cube[k, [where[i] for i in table.ids]] = table.values
    return ids, cube


def _majority(cube: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    pos = (cube == 1).sum(axis=0)
    neg = (cube == 0).sum(axis=0)
    out = np.full(pos.shape, -1, dtype=np.int8)
    out[pos > neg] = 1
    out[neg > pos] = 0
    return out


def _pair(
    modes: tuple[str, ...],
    codes: list[str],
    cube: npt.NDArray[np.int8],
    majority: npt.NDArray[np.int8],
    names: list[str],
) -> PairCount:
    cols = [codes.index(m) for m in modes]
    both = np.all(majority[:, cols] == 1, axis=1)
    known = np.all(majority[:, cols] >= 0, axis=1)
    each = {a: int(np.all(cube[k][:, cols] == 1, axis=1).sum()) for k, a in enumerate(names)}
    return PairCount(tuple(modes), int(both.sum()), int(known.sum()), each)


def _rule(
    modes: tuple[str, ...],
    kind: str,
    codes: list[str],
    ids: list[str],
    cube: npt.NDArray[np.int8],
    majority: npt.NDArray[np.int8],
    names: list[str],
) -> RuleAudit:
    pair = _pair(modes, codes, cube, majority, names)
    cols = [codes.index(m) for m in modes]
    contradicting: list[str] = []
    by: list[str] = []
    if kind == "exclusive":
        both = np.all(majority[:, cols] == 1, axis=1)
        contradicting = [ids[i] for i in np.flatnonzero(both)]
        by = [a for a, n in pair.per_annotator.items() if n > 0]
    return RuleAudit(
        modes=pair.modes,
        co_labelled=pair.co_labelled,
        known=pair.known,
        per_annotator=pair.per_annotator,
        kind=kind,
        contradicted=bool(contradicting),
        contradicting=contradicting,
        contradicted_by=by,
    )
