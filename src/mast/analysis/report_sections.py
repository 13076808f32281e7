"""The sections of the HTML report (:mod:`mast.analysis.report`): summary, failure profiles,
co-occurrence, outcomes and agreement, each as tables and figures (the per-trace explorer
is :mod:`mast.analysis.explorer`).
"""

from __future__ import annotations

import base64
import io
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mast.judge.annotation import Annotation
from mast.traces.model import Trace

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from mast.analysis.data import VectorData

Results = Mapping[str, Sequence[Annotation]] | Sequence[Annotation] | str | Path | Sequence[Path]


@dataclass
class _Table:
    """A table for the template: header cells and rows of already formatted strings."""

    columns: list[str]
    rows: list[list[str]]
    numeric_from: int = 1  # columns from this index are right-aligned


@dataclass
class _Section:
    title: str
    anchor: str
    figures: list[tuple[str, str]] = field(default_factory=list)  # (alt text, base64 png)
    tables: list[tuple[str, _Table]] = field(default_factory=list)  # (caption, table)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _num(value: object, digits: int = 3) -> str:
    from mast.agree.render import num

    text = num(value, digits)
    return "–" if text == "undef." else text


def _pct(value: object) -> str:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    return "–" if v != v else f"{v:.0%}"


def _ci(low: object, high: object, percent: bool = True) -> str:
    if _num(low) == "–" or _num(high) == "–":
        return ""
    if percent:
        return f"[{_pct(low)}, {_pct(high)}]"
    return f"[{_num(low, 2)}, {_num(high, 2)}]"


def _runs(results: Results) -> dict[str, list[Annotation]]:
    """Run name -> annotations, from paths, a list of annotations or a mapping."""
    from mast.bulk.store import read_annotations

    if isinstance(results, Mapping):
        return {str(k): list(v) for k, v in results.items()}
    if isinstance(results, (str, Path)):
        results = [Path(results)]
    items = list(results)
    if items and all(isinstance(a, Annotation) for a in items):
        return {"results": items}  # type: ignore[dict-item]
    paths = [Path(p) for p in items]  # type: ignore[arg-type]
    stems = [p.stem for p in paths]
    names = [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]
    return {name: read_annotations(path) for name, path in zip(names, paths, strict=True)}


def judge_runs(runs: Mapping[str, Sequence[Annotation]]) -> dict[str, list[Annotation]]:
    """``runs`` with each results file that holds several judge runs (samples, models) split
    into ``"<file>: <run>"`` entries, so that agreement is scored per judge run and never on
    whichever record of a trace came last."""
    from mast.agree.runs import split_runs

    out: dict[str, list[Annotation]] = {}
    for name, anns in runs.items():
        parts = split_runs(anns)
        if len(parts) > 1:
            out.update({f"{name}: {label}": part for label, part in parts.items()})
        else:
            out[name] = list(anns)
    return out


def _frame(runs: Mapping[str, Sequence[Annotation]]) -> pd.DataFrame:
    """All runs' records as one results frame with a ``run`` column."""
    import pandas as pd

    from mast.bulk.store import to_frame

    frames = [to_frame(anns).reset_index().assign(run=name) for name, anns in runs.items()]
    out: pd.DataFrame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return out


def _summary(runs: Mapping[str, Sequence[Annotation]], traces: Sequence[Trace]) -> _Section:
    section = _Section("Run summary", "summary")
    rows = []
    reasons: Counter[tuple[str, str, str]] = Counter()
    for name, anns in runs.items():
        status = Counter(a.status for a in anns)
        costs = [a.cost_usd for a in anns if a.cost_usd is not None]
        tokens_in = sum(a.usage.input_tokens or 0 for a in anns)
        tokens_out = sum(a.usage.output_tokens or 0 for a in anns)
        unknown = sum(len(a.vector.unknown) for a in anns if a.ok)
        ungrounded = sum(len(a.ungrounded) for a in anns)
        judges = sorted({str(a.judge.get("model") or "?") for a in anns})
        rows.append(
            [
                name,
                ", ".join(judges),
                str(len(anns)),
                str(status.get("ok", 0)),
                str(status.get("parse_error", 0)),
                str(status.get("error", 0)),
                str(unknown),
                str(ungrounded),
                f"${sum(costs):.4f}" if costs else "–",
                str(len(anns) - len(costs)),
                f"{tokens_in:,}",
                f"{tokens_out:,}",
            ]
        )
        for a in anns:
            if not a.ok:
                reason = (a.error or "(no message)").strip().splitlines()[0][:200]
                reasons[(name, a.status, reason)] += 1
    section.tables.append(
        (
            "Records per run (unknown cells: modes without an answer in usable records)",
            _Table(
                [
                    *("run", "judge", "records", "ok", "parse_error", "error"),
                    *("unknown cells", "ungrounded findings", "cost", "cost unknown"),
                    *("input tokens", "output tokens"),
                ],
                rows,
                numeric_from=2,
            ),
        )
    )
    for name, anns in runs.items():
        consistency = _self_consistency(anns)
        if consistency is not None:
            note, table = consistency
            section.notes.append(f"{name}: {note}")
            section.tables.append((f"Self-consistency of the runs in {name}", table))
    grounding = _grounding_table(runs)
    if grounding is not None:
        section.tables.append(
            (
                "Positive answers with grounded evidence, per mode (grounded / positives; "
                "fuzzy: ungrounded, quoted near-verbatim; off-agent: grounded on a step of "
                "another agent than the finding names)",
                grounding,
            )
        )
    if reasons:
        section.tables.append(
            (
                "Failures by reason (these records are in no statistic)",
                _Table(
                    ["run", "status", "reason", "records"],
                    [[r, s, m, str(n)] for (r, s, m), n in reasons.most_common()],
                    numeric_from=3,
                ),
            )
        )
    else:
        section.notes.append("No failed record: every annotation was read.")
    if traces:
        outcomes = Counter(t.outcome.value for t in traces)
        section.notes.append(
            f"{len(traces)} trace(s) loaded for fields and evidence; outcomes: "
            + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        )
    return section


def _self_consistency(anns: Sequence[Annotation]) -> tuple[str, _Table] | None:
    """Samples or models of the same traces in one results file: how often they flip."""
    from mast.agree.consensus import consensus

    report = consensus(anns)
    if not report.majority:
        return None
    note = (
        f"{len(report.runs)} runs of {len(report.majority)} traces "
        f"({', '.join(report.runs)}): flip rate {_pct(report.pooled_flip_rate)}, Fleiss kappa "
        f"{_num(report.pooled_fleiss_kappa)}; runs that agree can share a mistake, so read "
        "this beside the agreement with people"
    )
    rows = [
        [code, str(m.n_traces), str(m.flips), _pct(m.flip_rate), _num(m.fleiss_kappa)]
        for code, m in report.per_mode.items()
    ]
    return note, _Table(["mode", "traces", "flips", "flip rate", "Fleiss kappa"], rows)


def _grounding_table(runs: Mapping[str, Sequence[Annotation]]) -> _Table | None:
    from mast.judge.reply.grounding import grounded_share

    shares = {name: grounded_share(a.findings for a in anns if a.ok) for name, anns in runs.items()}
    codes = sorted({c for share in shares.values() for c in share}, key=_code_order)
    if not codes:
        return None
    rows = []
    for code in codes:
        row = [code]
        for share in shares.values():
            s = share.get(code)
            row += (
                [f"{s.grounded}/{s.positives} ({_pct(s.share)})", str(s.fuzzy), str(s.off_agent)]
                if s
                else ["–", "–", "–"]
            )
        rows.append(row)
    # Fuzzy: ungrounded positives that quoted near-verbatim (a paraphrase); off-agent:
    # grounded positives quoting a step of another agent than the finding names.
    header = [f"{run} {part}" if len(runs) > 1 else part for run in runs
              for part in ("grounded", "fuzzy", "off-agent")]  # fmt: skip
    return _Table(["mode", *header], rows)


def _code_order(code: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in code.split("."))


def _group_field(data: VectorData, runs: Mapping[str, Sequence[Annotation]]) -> str | None:
    if len(runs) > 1:
        return "run"
    for name in ("system", "model", "benchmark"):
        if name in data.fields.columns and data.fields[name].nunique(dropna=True) > 1:
            return name
    return None


def _profiles(
    data: VectorData, by: str | None, bootstrap: int, seed: int, ci: str = "bootstrap"
) -> _Section:
    from mast import analysis

    section = _Section("Failure profiles", "profiles")
    kind: Any = ci
    prev = analysis.prevalence(data, by=by, bootstrap=bootstrap, seed=seed, ci=kind)
    cats = analysis.prevalence(
        data, by=by, level="category", bootstrap=bootstrap, seed=seed, ci=kind
    )
    section.figures.append(("Prevalence per mode", _png(prev.plot())))
    section.figures.append(("Categories: share of all flags", _png(cats.plot("share_of_flags"))))
    for caption, result in (("Per mode", prev), ("Per category", cats)):
        section.tables.append((caption, _wide(result, by)))
    # The analysis notes speak to API users; here the same switch is a command-line option.
    section.notes += [
        note.replace("use ci='wilson'", "use --ci wilson (ci='wilson' in Python)")
        for note in prev.notes
    ]
    section.notes += prev.excluded.lines()
    mpt = analysis.modes_per_trace(data, by=by, bootstrap=bootstrap, seed=seed)
    section.figures.append(("Modes per trace", _png(mpt.plot())))
    section.tables.append(
        (
            "Failure modes per trace (counts are lower bounds where cells are unknown)",
            _Table(
                [
                    *([by] if by else []),
                    *("traces", "mean", "CI", "max", "with unknown cells"),
                    *("failed runs", "mean (failed)", "CI", "successful runs", "mean (success)"),
                ],
                [
                    [
                        *([str(r[by])] if by else []),
                        str(r["n_traces"]),
                        _num(r["mean"], 2),
                        _ci(r["mean_low"], r["mean_high"], percent=False),
                        str(r["max"]),
                        str(r["n_with_unknown"]),
                        str(r["n_failed"]),
                        _num(r["mean_failed"], 2),
                        _ci(r["failed_low"], r["failed_high"], percent=False),
                        str(r["n_success"]),
                        _num(r["mean_success"], 2),
                    ]
                    for _, r in mpt.table.iterrows()
                ],
                numeric_from=1 if by else 0,
            ),
        )
    )
    return section


def _wide(result: Any, by: str | None) -> _Table:
    """Rows = modes (or categories), one pair of columns per group: share of traces with
    counts and interval, and share of all flags."""
    table = result.table
    groups = list(dict.fromkeys(table[by].tolist())) if by else [None]
    head = ["mode" if result.level == "mode" else "category", "name"]
    columns = list(head)
    for g in groups:
        label = f"{g}: " if by else ""
        columns += [f"{label}share of traces (present/known) [CI]", f"{label}of flags"]
    rows = []
    for row in dict.fromkeys(table["row"].tolist()):
        part = table[table["row"] == row]
        cells = [str(row), str(part["name"].iloc[0])]
        for g in groups:
            match = part[part[by] == g] if by else part
            r = match.iloc[0]
            unknown = f", {r['n_unknown']} unknown" if r["n_unknown"] else ""
            cells.append(
                f"{_pct(r['share_of_traces'])} ({r['n_present']}/{r['n_known']}{unknown}) "
                f"{_ci(r['traces_low'], r['traces_high'])}".strip()
            )
            cells.append(_pct(r["share_of_flags"]))
        rows.append(cells)
    return _Table(columns, rows, numeric_from=2)


def _per_run(data: VectorData, runs: Mapping[str, Sequence[Annotation]], build: Any) -> _Section:
    """``build(data)`` once per run (one section, parts labelled by run) when there are
    several runs; plainly otherwise."""
    if len(runs) < 2:
        result: _Section = build(data)
        return result
    merged: _Section | None = None
    column = data.fields["run"]
    for run in runs:
        part: _Section = build(data.subset((column == run).to_numpy()))
        if merged is None:
            merged = _Section(part.title, part.anchor)
        merged.figures += [(f"{run}: {alt}", png) for alt, png in part.figures]
        merged.tables += [(f"{run}: {caption}", table) for caption, table in part.tables]
        merged.notes += [f"{run}: {note}" for note in part.notes]
        if part.skipped:
            merged.notes.append(f"{run}: {part.skipped}")
    assert merged is not None
    return merged


def _cooccurrence(data: VectorData) -> _Section:
    from mast import analysis

    section = _Section("Co-occurrence", "cooccurrence")
    co = analysis.cooccurrence(data)
    flagged = [c for c in co.joint.index if co.joint.loc[c, c] > 0]
    if len(flagged) >= 2:
        section.figures.append(
            ("Phi between the modes flagged at least once", _png(co.plot("phi")))
        )
    top = co.table[(co.table["n_both"] > 0) & co.table["phi"].notna()].head(15)
    if top.empty:
        section.notes.append("No two modes were flagged in the same trace.")
    else:
        section.tables.append(
            (
                "Pairs flagged together, by phi (pairs where both are known)",
                _Table(
                    ["A", "B", "both", "known", "phi", "P(B|A)", "P(A|B)", "Fisher p"],
                    [
                        [
                            f"{r['a']} {r['name_a']}",
                            f"{r['b']} {r['name_b']}",
                            str(r["n_both"]),
                            str(r["n_known"]),
                            _num(r["phi"], 2),
                            _pct(r["p_b_given_a"]),
                            _pct(r["p_a_given_b"]),
                            _num(r["p_value"], 3),
                        ]
                        for _, r in top.iterrows()
                    ],
                    numeric_from=2,
                ),
            )
        )
    section.notes += co.notes
    return section


def _outcomes(data: VectorData, bootstrap: int, seed: int) -> _Section:
    from mast import analysis

    section = _Section("Outcome analysis", "outcomes")
    if "outcome" not in data.fields.columns:
        section.skipped = "No outcomes: give the trace files with --traces to analyse outcomes."
        return section
    outcomes = Counter(str(v) for v in data.fields["outcome"].tolist())
    if not outcomes.get("failure") or not outcomes.get("success"):
        section.skipped = (
            "Outcomes need both failed and successful runs; the annotated traces have "
            + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
            + "."
        )
        return section
    # Sign stability of the regression needs far fewer refits than intervals need resamples.
    result = analysis.outcome_analysis(data, bootstrap=min(bootstrap, 100), seed=seed)
    section.figures.append(("Rates and odds ratios by outcome", _png(result.plot())))
    shown = result.table[result.table["n_failure"] + result.table["n_success"] > 0]
    section.tables.append(
        (
            "Per mode (odds ratio of failure when the mode is present; "
            "* = Haldane–Anscombe corrected for a zero cell)",
            _Table(
                [
                    *("mode", "name", "failed runs", "successful runs", "difference", "CI"),
                    *("lift", "odds ratio", "CI", "CI method", "Fisher p", "reading"),
                ],
                [
                    [
                        str(r["row"]),
                        str(r["name"]),
                        f"{r['present_failure']}/{r['n_failure']} ({_pct(r['rate_failure'])})",
                        f"{r['present_success']}/{r['n_success']} ({_pct(r['rate_success'])})",
                        _pct(r["difference"]),
                        _ci(r["diff_low"], r["diff_high"]),
                        _num(r["lift"], 2),
                        _num(r["odds_ratio"], 2) + ("*" if r["corrected"] else ""),
                        _ci(r["or_low"], r["or_high"], percent=False),
                        str(r["or_ci"]),
                        _num(r["p_value"], 3),
                        str(r["association"]),
                    ]
                    for _, r in shown.iterrows()
                ],
                numeric_from=2,
            ),
        )
    )
    if result.regression is not None:
        info = result.regression_info
        section.tables.append(
            (
                f"L2-penalized logistic regression of failure on the modes "
                f"(C={info['C']}, {info['n']} complete traces, {info['n_failure']} failed)",
                _Table(
                    ["mode", "name", "coefficient", "odds multiplier", "sign stability"],
                    [
                        [
                            str(r["row"]),
                            str(r["name"]),
                            _num(r["coef"], 3),
                            _num(r["odds_multiplier"], 2),
                            _pct(r["sign_stability"]),
                        ]
                        for _, r in result.regression.iterrows()
                    ],
                    numeric_from=2,
                ),
            )
        )
    section.notes += result.notes + result.excluded.lines()
    return section


def _context_rows(c: Any) -> list[list[str]]:
    """Rows beside the pooled kappa: coverage, the two baselines on the same cells, and
    kappa with unknown read as "no" (issue 17).  The macro kappa is the table's own macro
    row (one row, not two)."""
    blank = ["", "", "", "", ""]
    constant = "{" + ", ".join(c.constant_modes) + "}"
    return [
        ["coverage", "cells scored / asked", f"{c.cells_scored}/{c.cells_asked}", "", "", *blank],
        ["baseline", f"constant judge {constant}", "", _num(c.constant_kappa, 2), "", *blank],
        ["baseline", "chance at reference prevalence", "", _num(c.chance_kappa, 2), "", *blank],
        [
            "unknown→no",
            "unknown read as no",
            str(c.unknown_as_no_cells),
            _num(c.unknown_as_no_kappa, 2),
            "",
            *blank,
        ],
    ]


def _agreement(
    runs: Mapping[str, Sequence[Annotation]],
    reference: Any,
    name: str,
    bootstrap: int,
    seed: int,
    resample: Any = "auto",
) -> _Section:
    from mast.agree import BASELINES_MEANING, agreement
    from mast.agree.conventions import convention_header, merged_first
    from mast.errors import MastError

    section = _Section(f"Agreement with {name}", "agreement")
    for run, anns in runs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                rep = agreement(
                    reference,
                    list(anns),
                    bootstrap=bootstrap,
                    seed=seed,
                    reference_name=name,
                    candidate_name=run,
                    resample=resample,
                )
            except MastError as exc:
                section.notes.append(f"{run}: no agreement report: {exc}")
                continue
        section.notes += [f"{run}: {w.message}" for w in caught]
        p = rep.pooled
        section.notes.append(
            f"{run}: pooled Cohen's kappa {_num(p.kappa, 3)} "
            f"{_ci(p.boot_low, p.boot_high, percent=False)} over {p.n_cells} cells of "
            f"{rep.n_traces} traces; {BASELINES_MEANING}"
        )
        if rep.n_traces:
            section.figures.append((f"Agreement per mode: {run}", _png(rep.plot())))
        differ = rep.conventions_differ
        if differ:  # said first: the per-mode 3.2/3.3 rows compare different meanings
            section.notes.insert(0, f"{run}: WARNING: {rep.notes[0]}")
        section.notes.append(f"{run}: {convention_header(rep._names(), rep.conventions)}")
        frame = merged_first(rep.to_frame(), differ)
        section.tables.append(
            (
                f"{run} against {name}",
                _Table(
                    ["row", "name", "n", "kappa", "CI", "AC1", "P", "R", "F1", "tp/fp/fn/tn"],
                    [
                        [
                            str(i),
                            str(r["name"]),
                            str(len(rep.context.macro_modes)) if i == "macro" else _num(r["n"]),
                            _num(r["kappa"], 2),
                            _ci(r["kappa_low"], r["kappa_high"], percent=False),
                            _num(r["ac1"], 2),
                            _num(r["precision"], 2),
                            _num(r["recall"], 2),
                            _num(r["f1"], 2),
                            "/".join(_num(r[c]) for c in ("tp", "fp", "fn", "tn")),
                        ]
                        for i, r in frame.iterrows()
                    ]
                    + _context_rows(rep.context),
                    numeric_from=2,
                ),
            )
        )
        if not rep.per_system.empty:
            cols = ["traces", "cells", "kappa", "macro_kappa", "ac1", "accuracy"]
            rows = [
                [str(system), *(_num(r[c], 0 if k < 2 else 2) for k, c in enumerate(cols))]
                for system, r in rep.per_system.iterrows()
            ]
            head = ["system", "traces", "cells", "kappa", "macro kappa", "AC1", "accuracy"]
            section.tables.append((f"{run} against {name}, per system", _Table(head, rows, 1)))
        section.notes += [f"{run}: excluded: {line}" for line in rep.excluded.lines()]
    return section
