"""Text and markdown tables, JSON-safe values and forest plots for agreement reports.

>>> print(table(["mode", "kappa"], [["1.1", "0.412"], ["1.2", "undef."]], fmt="markdown", left=1))
| mode | kappa |
| --- | ---: |
| 1.1 | 0.412 |
| 1.2 | undef. |
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from mast.errors import MissingDependencyError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ci_text", "forest_plot", "json_safe", "num", "table"]

UNDEFINED = "undef."

Format = Literal["text", "markdown"]


def num(value: object, digits: int = 3) -> str:
    """A number for a table: fixed decimals, integers as is, NaN/None as ``undef.``."""
    if value is None or _isnan(value):
        return UNDEFINED
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}f}"
    return str(value)


def ci_text(low: object, high: object, digits: int = 2) -> str:
    """``[0.41, 0.77]``, or ``—`` when the interval is undefined."""
    if low is None or high is None or _isnan(low) or _isnan(high):
        return "—"
    return f"[{float(low):.{digits}f}, {float(high):.{digits}f}]"  # type: ignore[arg-type]


def _isnan(value: object) -> bool:
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return math.isnan(value)  # type: ignore[arg-type]
    except TypeError:
        return False


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    fmt: Format = "text",
    left: int = 2,
) -> str:
    """Render rows of strings; the first ``left`` columns align left, the others right."""
    if fmt == "markdown":
        escape = [[cell.replace("|", "\\|") for cell in row] for row in rows]
        align = ["---" if i < left else "---:" for i in range(len(headers))]
        lines = [list(headers), align, *escape]
        return "\n".join("| " + " | ".join(line) + " |" for line in lines)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(w) if i < left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def json_safe(value: Any) -> Any:
    """Recursively turn numpy/pandas scalars into plain Python; NaN and NA become ``None``."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or _isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def forest_plot(
    labels: Sequence[str],
    estimates: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    *,
    title: str,
    xlabel: str,
    separators: Sequence[int] = (),
    ax: Axes | None = None,
) -> Figure:
    """Draw estimates with interval whiskers, one row per label (top to bottom).

    Undefined estimates are written as text at the row instead of being drawn as a value.
    ``separators`` are row indices above which a thin line separates groups (e.g. summary
    rows).  Returns the figure (a new one unless ``ax`` is given).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - exercised by monkeypatching sys.modules
        raise MissingDependencyError(
            "plotting needs matplotlib, which is not installed. "
            "Install it with: pip install 'mast-annotator[plot]' (or: pip install matplotlib)"
        ) from None
    n = len(labels)
    if ax is None:
        fig = Figure(figsize=(7.0, 0.9 + 0.32 * max(n, 1)), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.get_figure()  # type: ignore[assignment]
    y = np.arange(n)[::-1]
    est = np.asarray(estimates, dtype=float)
    lo = np.asarray(lows, dtype=float)
    hi = np.asarray(highs, dtype=float)
    has_ci = ~np.isnan(lo) & ~np.isnan(hi) & ~np.isnan(est)
    ok = ~np.isnan(est)
    ax.axvline(0.0, color="0.6", linewidth=0.8, zorder=0)
    ax.errorbar(
        est[has_ci],
        y[has_ci],
        xerr=np.vstack([est[has_ci] - lo[has_ci], hi[has_ci] - est[has_ci]]),
        fmt="none",
        ecolor="0.35",
        elinewidth=1.2,
        capsize=3,
    )
    ax.plot(est[ok], y[ok], "o", color="C0", markersize=5)
    for yi in y[~ok]:
        ax.text(0.0, yi, "  undefined", va="center", ha="left", fontsize=8, color="0.4")
    for index in separators:
        if 0 < index < n:
            ax.axhline(y[index] + 0.5, color="0.8", linewidth=0.8)
    ax.set_yticks(y, labels=list(labels), fontsize=8)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", color="0.92")
    if fig is None:  # pragma: no cover - an Axes always belongs to a figure
        raise RuntimeError("the axes given belong to no figure")
    return fig
