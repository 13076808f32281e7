"""Figures for :mod:`mast.analysis` results and agreement reports (matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing
is ever shown implicitly and no global figure state is touched (safe in servers, tests and
the ``mast report`` command); save it with ``fig.savefig("x.png")`` or let a notebook
display it.  Pass ``ax=`` to draw into an axes of your own where a function takes one.

Needs matplotlib: ``pip install 'mast-annotator[plot]'``.

>>> from mast import analysis, plots
>>> prev = analysis.prevalence({"t1": {"1.1": True}, "t2": {"1.1": False}}, modes=["1.1"],
...                            bootstrap=0)
>>> fig = plots.prevalence_bars(prev)
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from mast.errors import MissingDependencyError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "agreement_forest",
    "category_stack",
    "comparison_forest",
    "cooccurrence_heatmap",
    "modes_per_trace",
    "outcome_lift",
    "prevalence_bars",
]


# What each figure reads of a result of mast.analysis.results. The results' .plot() methods
# call these functions, so the functions name the results by what they read, not by class.
class _Result(Protocol):
    @property
    def table(self) -> pd.DataFrame: ...
    def _title(self) -> str: ...


class _Grouped(_Result, Protocol):  # ModesPerTrace
    @property
    def by(self) -> list[str]: ...


class _Prevalence(_Grouped, Protocol):
    @property
    def level(self) -> str: ...


class _Cooccurrence(_Result, Protocol):
    @property
    def phi(self) -> pd.DataFrame: ...
    @property
    def conditional(self) -> pd.DataFrame: ...
    @property
    def joint(self) -> pd.DataFrame: ...


class _Outcomes(_Result, Protocol):
    @property
    def confidence(self) -> float: ...


class _Comparison(_Result, Protocol):
    @property
    def names(self) -> tuple[str, str]: ...


_INSTALL = "pip install 'mast-annotator[plot]' (or: pip install matplotlib)"


def _new_figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - exercised by hiding matplotlib
        raise MissingDependencyError(
            f"plotting needs matplotlib, which is not installed. Install it with: {_INSTALL}"
        ) from None
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _figure_of(ax: Axes) -> Figure:
    fig = ax.get_figure()
    if fig is None:  # pragma: no cover - an Axes always belongs to a figure
        raise RuntimeError("the axes given belong to no figure")
    return fig  # type: ignore[return-value]


def _plain(text: str) -> str:
    """Text shown literally: a ``$`` in a trace field must not start matplotlib mathtext
    (which would fail to parse, or render something else)."""
    return text.replace("$", r"\$")


def _label(row: object, name: object, width: int = 38) -> str:
    text = f"{row}  {name}" if name else str(row)
    return _plain(text if len(text) <= width else text[: width - 1] + "…")


def _group_label(record: Any, by: Sequence[str]) -> str:
    return _plain(" / ".join(str(record[b]) for b in by)) if by else "all traces"


def _percent_axis(ax: Axes, axis: Literal["x", "y"] = "x") -> None:
    from matplotlib.ticker import PercentFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))


def _nan(value: object) -> bool:
    try:
        return math.isnan(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def prevalence_bars(
    result: _Prevalence,
    *,
    value: Literal["share_of_traces", "share_of_flags"] = "share_of_traces",
    ax: Axes | None = None,
    title: str | None = None,
    drop_unknown: bool = True,
) -> Figure:
    """Horizontal bars per mode (or category), one colour per group, with CI whiskers.

    A row with no known value in a group is marked "n/a" there instead of being drawn as 0;
    with ``drop_unknown`` rows unknown in every group are left out (listed under the plot).
    """
    low_col, high_col = (
        ("traces_low", "traces_high") if value == "share_of_traces" else ("flags_low", "flags_high")
    )
    table = result.table
    hidden: list[str] = []
    if drop_unknown:
        known = table.groupby("row", sort=False)["n_known"].sum()
        hidden = [str(r) for r, k in known.items() if k == 0]
        table = table[~table["row"].isin(hidden)]
    rows = list(dict.fromkeys(table["row"].tolist()))
    names = dict(zip(table["row"], table["name"], strict=True))
    by = result.by
    groups = list(dict.fromkeys(_group_label(r, by) for _, r in table.iterrows()))
    n_rows, n_groups = len(rows), max(len(groups), 1)
    if ax is None:
        fig, (ax,) = _new_figure(7.5, 1.0 + 0.22 * n_rows * max(n_groups, 2) ** 0.8)
    else:
        fig = _figure_of(ax)
    height = 0.8 / n_groups
    position = {row: n_rows - 1 - i for i, row in enumerate(rows)}
    for g, group in enumerate(groups):
        part = table[[_group_label(r, by) == group for _, r in table.iterrows()]]
        y = np.array([position[r] for r in part["row"]]) + 0.4 - height * (g + 0.5)
        est = part[value].to_numpy(dtype=float)
        low = part[low_col].to_numpy(dtype=float)
        high = part[high_col].to_numpy(dtype=float)
        ok = ~np.isnan(est)
        ax.barh(y[ok], est[ok], height=height * 0.9, color=f"C{g % 10}", label=group)
        # A tick at the estimate, so that a share of 0 % is visible as an answer.
        ax.plot(est[ok], y[ok], "|", color=f"C{g % 10}", markersize=7, markeredgewidth=2)
        whisk = ok & ~np.isnan(low) & ~np.isnan(high)
        if whisk.any():
            ax.errorbar(
                est[whisk],
                y[whisk],
                xerr=np.vstack([est[whisk] - low[whisk], high[whisk] - est[whisk]]),
                fmt="none",
                ecolor="0.25",
                elinewidth=0.9,
                capsize=2,
            )
        for yi in y[~ok]:
            ax.text(0.005, yi, "n/a (all unknown)", va="center", fontsize=7, color="0.45")
    ax.set_yticks(range(n_rows), labels=[_label(r, names[r]) for r in reversed(rows)], fontsize=8)
    ax.set_ylim(-0.6, n_rows - 0.4)
    ax.set_xlim(0, 1)
    _percent_axis(ax)
    ax.set_xlabel("share of traces" if value == "share_of_traces" else "share of all flags")
    ax.grid(axis="x", color="0.92")
    if by:
        ax.legend(fontsize=7, title=_plain(", ".join(by)), title_fontsize=7, loc="lower right")
    ax.set_title(title or result._title(), fontsize=10)
    if hidden:
        note = f"not shown (no known value): {', '.join(hidden)}"
        ax.annotate(
            note,
            (0, 0),
            xycoords="axes fraction",
            xytext=(0, -32),
            textcoords="offset points",
            fontsize=7,
            color="0.4",
            va="top",
        )
    return fig


def category_stack(
    result: _Prevalence,
    *,
    value: Literal["share_of_flags", "share_of_traces"] = "share_of_flags",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """One stacked bar per group: each category's share of all flags (adds up to 100 %).

    The MAST paper's headline (FC1 41.8 %, FC2 36.9 %, FC3 21.3 % of all flags) is one such
    bar.  Needs a category-level result (``prevalence(..., level="category")``).
    """
    if result.level != "category":
        raise ValueError("category_stack needs prevalence(..., level='category')")
    table = result.table
    by = result.by
    groups = list(dict.fromkeys(_group_label(r, by) for _, r in table.iterrows()))
    cats = list(dict.fromkeys(table["row"].tolist()))
    names = dict(zip(table["row"], table["name"], strict=True))
    own = ax is None
    if ax is None:
        fig, (ax,) = _new_figure(7.5, 1.4 + 0.45 * len(groups))
    else:
        fig = _figure_of(ax)
    for gi, group in enumerate(groups):
        part = table[[_group_label(r, by) == group for _, r in table.iterrows()]]
        share = dict(zip(part["row"], part[value].astype(float), strict=True))
        y = len(groups) - 1 - gi
        left = 0.0
        total = int(part["total_flags"].iloc[0]) if len(part) else 0
        if all(_nan(share.get(c)) for c in cats):
            ax.text(0.01, y, "no flags", va="center", fontsize=8, color="0.45")
            continue
        for k, cat in enumerate(cats):
            width = 0.0 if _nan(share.get(cat)) else float(share[cat])
            ax.barh(
                y,
                width,
                left=left,
                color=f"C{k % 10}",
                height=0.6,
                label=f"{cat} {names[cat]}" if gi == 0 else None,
            )
            if width >= 0.06:
                ax.text(
                    left + width / 2,
                    y,
                    f"{width:.0%}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
            left += width
        if value == "share_of_flags":
            ax.text(1.01, y, f"{total} flags", va="center", fontsize=7, color="0.35")
    ax.set_yticks(range(len(groups)), labels=list(reversed(groups)), fontsize=8)
    ax.set_xlim(0, 1.12 if value == "share_of_flags" else None)
    _percent_axis(ax)
    ax.set_xlabel("share of all flags" if value == "share_of_flags" else "share of traces")
    if own:  # below the plot, outside the axes
        fig.legend(fontsize=7, loc="outside lower center", ncol=max(len(cats), 1))
    else:
        ax.legend(fontsize=7)
    ax.set_title(title or "Failure categories: share of all flags", fontsize=10)
    return fig


def cooccurrence_heatmap(
    result: _Cooccurrence,
    *,
    kind: Literal["phi", "conditional"] = "phi",
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    drop_undefined: bool = True,
) -> Figure:
    """Heatmap of phi (-1 … 1) or of P(column | row) (0 … 1); grey cells are undefined.

    With ``drop_undefined`` modes that were never flagged are left out (their rows would be
    all grey); cells are annotated with their values up to 16 modes (``annotate``).
    """
    import matplotlib as mpl

    matrix = result.phi if kind == "phi" else result.conditional
    if drop_undefined:
        # Modes never flagged (or never known) have no defined cell: they only add grey.
        keep = [c for c in matrix.index if result.joint.loc[c, c] > 0]
        matrix = matrix.loc[keep, keep]
    values = matrix.to_numpy(dtype=float).copy()
    codes = [str(c) for c in matrix.index]
    m = len(codes)
    if kind == "phi":
        np.fill_diagonal(values, np.nan)  # phi of a mode with itself says nothing
    if ax is None:
        side = 1.6 + 0.42 * m
        fig, (ax,) = _new_figure(side + 1.2, side)
    else:
        fig = _figure_of(ax)
    cmap = mpl.colormaps["RdBu_r" if kind == "phi" else "Blues"].with_extremes(bad="0.88")
    vmin, vmax = (-1.0, 1.0) if kind == "phi" else (0.0, 1.0)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(m), labels=codes, fontsize=8, rotation=90)
    ax.set_yticks(range(m), labels=codes, fontsize=8)
    if kind == "conditional":
        ax.set_xlabel("B", fontsize=8)
        ax.set_ylabel("A", fontsize=8)
    if annotate if annotate is not None else m <= 16:
        for i in range(m):
            for j in range(m):
                v = values[i, j]
                if not np.isnan(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if abs(v) > 0.6 else "black",
                    )
    fig.colorbar(image, ax=ax, shrink=0.8, label="phi" if kind == "phi" else "P(B | A)")
    ax.set_title(
        title or ("Co-occurrence: phi" if kind == "phi" else "Co-occurrence: P(B | A)"),
        fontsize=10,
    )
    return fig


def agreement_forest(report: Any, metric: str | None = None, *, ax: Axes | None = None) -> Figure:
    """Per-mode forest plot of an agreement report (``mast.agreement`` and friends).

    The report draws itself (:meth:`~mast.agree.AgreementReport.plot`); this is the same
    figure, here so that every plot of a study can be found in one module.
    """
    fig: Figure = report.plot(metric, ax=ax)
    return fig


_ASSOCIATION_COLOURS = {
    "predicts failure": "C3",
    "more common in successes": "C2",
    "common in successes": "C1",
    "no clear association": "0.45",
}


def outcome_lift(
    result: _Outcomes,
    *,
    value: Literal["odds_ratio", "lift"] = "odds_ratio",
    title: str | None = None,
) -> Figure:
    """Two panels per mode: rate in successful vs failed runs, and the odds ratio (log scale,
    with its interval; colour = association) or the lift.

    Modes with no estimate (never known, or no run of one outcome) are left out.
    """
    table = result.table
    keep = ~(table["rate_failure"].isna() & table["rate_success"].isna())
    table = table[keep]
    n = len(table)
    fig, (left, right) = _new_figure(9.5, 1.2 + 0.3 * max(n, 1), ncols=2)
    y = np.arange(n)[::-1]
    labels = [_label(r, nm, 34) for r, nm in zip(table["row"], table["name"], strict=True)]
    rate_s = table["rate_success"].to_numpy(dtype=float)
    rate_f = table["rate_failure"].to_numpy(dtype=float)
    for yi, s, f in zip(y, rate_s, rate_f, strict=True):
        if not (np.isnan(s) or np.isnan(f)):
            left.plot([s, f], [yi, yi], color="0.75", linewidth=1.5, zorder=1)
    left.scatter(rate_s, y, color="C2", label="successful runs", zorder=2, s=22)
    left.scatter(rate_f, y, color="C3", label="failed runs", zorder=2, s=22)
    left.set_yticks(y, labels=labels, fontsize=8)
    left.set_xlim(-0.03, 1.03)
    _percent_axis(left)
    left.set_xlabel("share of runs with the mode")
    left.legend(fontsize=7, loc="lower right")
    left.grid(axis="x", color="0.92")
    colours = [_ASSOCIATION_COLOURS.get(a, "0.45") for a in table["association"]]
    if value == "odds_ratio":
        est = table["odds_ratio"].to_numpy(dtype=float)
        low = table["or_low"].to_numpy(dtype=float)
        high = table["or_high"].to_numpy(dtype=float)
        finite = np.concatenate([est, low, high])
        finite = finite[np.isfinite(finite) & (finite > 0)]
        lo_lim = min(0.1, float(finite.min()) / 1.5) if finite.size else 0.1
        hi_lim = max(10.0, float(finite.max()) * 1.5) if finite.size else 10.0
        lo_lim, hi_lim = max(lo_lim, 1e-3), min(hi_lim, 1e3)
        for yi, e, lo, hi, colour in zip(y, est, low, high, colours, strict=True):
            if np.isnan(e):
                right.text(1.0, yi, "not estimable", fontsize=7, color="0.45", va="center")
                continue
            a = min(max(lo, lo_lim), hi_lim) if not np.isnan(lo) else e
            b = min(max(hi, lo_lim), hi_lim) if not np.isnan(hi) else e
            right.plot([a, b], [yi, yi], color=colour, linewidth=1.3)
            right.plot([min(max(e, lo_lim), hi_lim)], [yi], "o", color=colour, markersize=5)
            if not np.isnan(hi) and hi > hi_lim:
                right.annotate(
                    "",
                    (hi_lim, yi),
                    (hi_lim / 1.6, yi),
                    arrowprops={"arrowstyle": "->", "color": colour},
                )
            if not np.isnan(lo) and lo < lo_lim:
                right.annotate(
                    "",
                    (lo_lim, yi),
                    (lo_lim * 1.6, yi),
                    arrowprops={"arrowstyle": "->", "color": colour},
                )
        right.set_xscale("log")
        right.set_xlim(lo_lim, hi_lim)
        right.axvline(1.0, color="0.5", linewidth=0.8)
        right.set_xlabel(f"odds ratio of failure ({result.confidence:.0%} CI, log scale)")
    else:
        lift = table["lift"].to_numpy(dtype=float)
        ok = ~np.isnan(lift)
        right.barh(y[ok], lift[ok], color=[c for c, k in zip(colours, ok, strict=True) if k])
        right.axvline(1.0, color="0.5", linewidth=0.8)
        right.set_xlabel("lift: P(failure | mode) / P(failure)")
    right.set_yticks(y, labels=[""] * n)
    right.set_ylim(left.get_ylim())
    right.grid(axis="x", color="0.92")
    handles = [
        right.plot([], [], "o", color=c, label=k)[0] for k, c in _ASSOCIATION_COLOURS.items()
    ]
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncol=4)
    fig.suptitle(title or result._title(), fontsize=10)
    return fig


def modes_per_trace(
    result: _Grouped, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Mean modes per trace per group: all traces, failed and successful runs, with CIs."""
    table = result.table
    by = result.by
    groups = [_group_label(r, by) for _, r in table.iterrows()]
    n = len(groups)
    own = ax is None
    if ax is None:
        fig, (ax,) = _new_figure(7.0, 1.5 + 0.45 * max(n, 1))
    else:
        fig = _figure_of(ax)
    y = np.arange(n)[::-1].astype(float)
    series = [
        ("mean", "mean_low", "mean_high", "all traces", "C0", 0.18),
        ("mean_failed", "failed_low", "failed_high", "failed runs", "C3", 0.0),
        ("mean_success", "success_low", "success_high", "successful runs", "C2", -0.18),
    ]
    for col, lo_col, hi_col, label, colour, offset in series:
        est = table[col].to_numpy(dtype=float)
        lo = table[lo_col].to_numpy(dtype=float)
        hi = table[hi_col].to_numpy(dtype=float)
        ok = ~np.isnan(est)
        if not ok.any():
            continue
        yy = y + offset
        ax.plot(est[ok], yy[ok], "o", color=colour, label=label, markersize=5)
        ci = ok & ~np.isnan(lo) & ~np.isnan(hi)
        if ci.any():
            ax.errorbar(
                est[ci],
                yy[ci],
                xerr=np.vstack([est[ci] - lo[ci], hi[ci] - est[ci]]),
                fmt="none",
                ecolor=colour,
                elinewidth=1,
                capsize=2,
            )
    ax.set_yticks(y, labels=groups, fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel("failure modes per trace (mean)")
    ax.grid(axis="x", color="0.92")
    if own:
        fig.legend(fontsize=7, loc="outside lower center", ncol=3)
    else:
        ax.legend(fontsize=7)
    ax.set_title(title or result._title(), fontsize=10)
    return fig


def comparison_forest(
    result: _Comparison, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Change in prevalence per mode (b minus a) with its interval."""
    from mast.agree.render import forest_plot

    table = result.table
    labels = [_label(r, nm) for r, nm in zip(table["row"], table["name"], strict=True)]
    a, b = result.names
    fig = forest_plot(
        labels,
        table["difference"].astype(float).tolist(),
        table["diff_low"].astype(float).tolist(),
        table["diff_high"].astype(float).tolist(),
        title=title or result._title(),
        xlabel=f"share of traces: {b} minus {a}",
        ax=ax,
    )
    return fig
