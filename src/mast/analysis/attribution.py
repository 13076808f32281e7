"""Which agents start failures: decisive errors and first steps counted by agent and mode.

:func:`failure_starters` reads the attribution the judge wrote into its annotations (the
decisive error of each failed run, and each present mode's responsible agent) and counts
them. Agent names are grouped by :func:`~mast.judge.attribution.normalize_agent` (so
"Orchestrator (thought)" and "Orchestrator" are one agent) and shown as first written.
Unknown agents are a row of their own (``agent`` = ``None``), never dropped; annotations
that failed (status not ``"ok"``) are left out and counted.

>>> from mast.judge.annotation import Annotation
>>> from mast.judge.attribution import DecisiveError
>>> from mast.judge.verdict import Finding
>>> from mast.traces.model import FailureVector
>>> def ann(tid, agent, code):
...     f = Finding(code=code, present=True, first_step="s2", agent=agent)
...     return Annotation(trace_id=tid, status="ok", taxonomy="MAST", findings={code: f},
...                       vector=FailureVector({code: True}),
...                       decisive_error=DecisiveError(agent=agent, step_id="s2", modes=[code]))
>>> fs = failure_starters([ann("a", "Coder", "1.3"), ann("b", "coder", "1.3"),
...                        ann("c", "Planner", "2.6")])
>>> fs.by_agent[["agent", "traces", "share"]].to_dict("records")[0]
{'agent': 'Coder', 'traces': 2, 'share': 0.6666666666666666}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mast.judge.annotation import Annotation
from mast.judge.attribution import normalize_agent

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FailureStarters", "failure_starters"]


@dataclass
class FailureStarters:
    """Counts of who starts failures.

    ``by_agent``: one row per agent named in a decisive error (``traces``, ``share`` of the
    traces with a decisive error, and the modes those errors start). ``by_mode``: one row
    per (mode, agent) over present modes (``traces``, ``share`` of the mode's present
    traces). ``None`` agent rows count what the judge left unattributed.
    """

    by_agent: pd.DataFrame
    by_mode: pd.DataFrame
    excluded: dict[str, int] = field(default_factory=dict)
    """``{"not ok": n, "no decisive error": n}``: annotations left out of ``by_agent``."""

    def to_text(self) -> str:
        """Both tables as plain text."""
        lines = ["Decisive errors by agent:", self.by_agent.to_string(index=False), ""]
        lines += ["First steps of present modes by agent:", self.by_mode.to_string(index=False)]
        if self.excluded:
            lines += ["", "left out: " + ", ".join(f"{k}: {v}" for k, v in self.excluded.items())]
        return "\n".join(lines)


def failure_starters(annotations: Iterable[Annotation] | str | Path) -> FailureStarters:
    """Count decisive errors by agent, and present modes by responsible agent."""
    import pandas as pd

    from mast.bulk.store import read_annotations

    items = read_annotations(annotations) if isinstance(annotations, (str, Path)) else annotations
    display: dict[str | None, str | None] = {None: None}

    def name(raw: str | None) -> str | None:
        key = normalize_agent(raw)
        if key is not None and key not in display:
            display[key] = raw
        return key

    decisive: Counter[str | None] = Counter()
    started: dict[str | None, Counter[str]] = {}
    per_mode: Counter[tuple[str, str | None]] = Counter()
    mode_totals: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    total = 0
    for ann in items:
        if ann.status != "ok":
            excluded["not ok"] += 1
            continue
        for code, finding in ann.findings.items():
            if finding.present is True:
                mode_totals[code] += 1
                per_mode[(code, name(finding.agent))] += 1
        error = ann.decisive_error
        if error is None:
            excluded["no decisive error"] += 1
            continue
        total += 1
        key = name(error.agent)
        decisive[key] += 1
        started.setdefault(key, Counter()).update(error.modes)
    by_agent = pd.DataFrame.from_records(
        [
            {
                "agent": display[key],
                "traces": count,
                "share": count / total,
                "modes_started": ", ".join(
                    f"{c} ({n})" for c, n in sorted(started.get(key, Counter()).items())
                ),
            }
            for key, count in sorted(decisive.items(), key=lambda kv: (-kv[1], kv[0] or "~"))
        ],
        columns=["agent", "traces", "share", "modes_started"],
    )
    by_mode = pd.DataFrame.from_records(
        [
            {
                "mode": code,
                "agent": display[key],
                "traces": count,
                "share": count / mode_totals[code],
            }
            for (code, key), count in sorted(
                per_mode.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1] or "~")
            )
        ],
        columns=["mode", "agent", "traces", "share"],
    )
    for table in (by_agent, by_mode):
        # pandas writes a missing name as NaN: keep the unknown agent a plain None.
        table["agent"] = table["agent"].astype(object).where(table["agent"].notna(), None)
    return FailureStarters(by_agent=by_agent, by_mode=by_mode, excluded=dict(excluded))
