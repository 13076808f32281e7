"""The report's "Runs compared" section: how far several runs (judges, prompts, models)
agree with each other on the traces they share, pair by pair.

>>> import mast
>>> traces = mast.traces.datasets.example_traces()[:4]
>>> judge = mast.Judge("heuristic")
>>> anns = [judge.annotate(t) for t in traces]
>>> section = runs_compared({"a": anns, "b": anns}, bootstrap=20, seed=0)
>>> section.anchor, section.tables[0][1].columns[:3]
('runs', ['run A', 'run B', 'shared traces'])
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence

from mast.analysis.report_sections import _ci, _num, _Section, _Table
from mast.judge.annotation import Annotation

__all__ = ["runs_compared"]


def runs_compared(
    runs: Mapping[str, Sequence[Annotation]], *, bootstrap: int, seed: int
) -> _Section:
    """Pairwise agreement between runs: pooled κ per pair, then each pair's modes side by side
    (how often each run says yes, and κ per mode)."""
    from mast.agree import agreement
    from mast.errors import MastError

    section = _Section("Runs compared", "runs")
    pooled_rows: list[list[str]] = []
    for a, b in itertools.combinations(runs, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                rep = agreement(
                    list(runs[a]),
                    list(runs[b]),
                    bootstrap=bootstrap,
                    seed=seed,
                    reference_name=a,
                    candidate_name=b,
                )
            except MastError as exc:
                section.notes.append(f"{a} vs {b}: not compared: {exc}")
                continue
        section.notes += [f"{a} vs {b}: {w.message}" for w in caught]
        p = rep.pooled
        pooled_rows.append(
            [
                a,
                b,
                str(rep.n_traces),
                str(p.n_cells),
                _num(p.kappa, 3),
                _ci(p.boot_low, p.boot_high, percent=False),
            ]
        )
        frame = rep.to_frame()
        rows = []
        for code, r in frame.iterrows():
            cells = {c: r[c] for c in ("tp", "fp", "fn", "tn")}
            try:
                yes_a = int(cells["tp"]) + int(cells["fn"])
                yes_b = int(cells["tp"]) + int(cells["fp"])
            except (TypeError, ValueError):  # a summary row without cell counts
                yes_a = yes_b = -1
            rows.append(
                [
                    str(code),
                    str(r["name"]),
                    _num(r["n"]),
                    str(yes_a) if yes_a >= 0 else "–",
                    str(yes_b) if yes_b >= 0 else "–",
                    _num(r["kappa"], 2),
                    _ci(r["kappa_low"], r["kappa_high"], percent=False),
                ]
            )
        section.tables.append(
            (
                f"{a} vs {b}, per mode (yes counts over the traces both judged)",
                _Table(["row", "name", "n", f"{a}: yes", f"{b}: yes", "kappa", "CI"], rows, 2),
            )
        )
        section.notes += [f"{a} vs {b}: excluded: {line}" for line in rep.excluded.lines()]
    section.tables.insert(
        0,
        (
            "Pooled Cohen's kappa between runs (cells both runs answered)",
            _Table(["run A", "run B", "shared traces", "cells", "kappa", "CI"], pooled_rows, 2),
        ),
    )
    return section
