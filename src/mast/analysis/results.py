"""Result objects of :mod:`mast.analysis` (tables, exclusions, notes and plots).

Private: the public names live in ``mast.analysis``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from mast.analysis.data import Excluded

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Level = Literal["mode", "category"]


@dataclass(frozen=True, eq=False)
class _Result:
    table: pd.DataFrame
    excluded: Excluded
    notes: list[str]

    def to_frame(self) -> pd.DataFrame:
        """The result table (a copy)."""
        copy: pd.DataFrame = self.table.copy()
        return copy

    def _title(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        parts = [self._title(), self.table.to_string(index=False)]
        lines = self.excluded.lines()
        parts.append(
            "Excluded (never counted as 'no'):\n"
            + ("\n".join("  " + line for line in lines) if lines else "  nothing")
        )
        if self.notes:
            parts.append("Notes:\n" + "\n".join("  " + n for n in self.notes))
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:  # notebooks
        lines = self.excluded.lines() or ["nothing"]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<p><b>{html.escape(self._title())}</b></p>"
            + self.table.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–")
            + f"<p>Excluded (never counted as 'no'):</p><ul>{items}</ul>"
            + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
        )


@dataclass(frozen=True, eq=False)
class Prevalence(_Result):
    """How often each mode (or category) is present, per group.

    ``table`` has one row per group x mode: the ``by`` columns, ``row`` (code or category),
    ``name``, ``n_traces`` (usable traces in the group), ``n_known``, ``n_present``,
    ``n_unknown``, ``share_of_traces`` (``n_present / n_known``) with ``traces_low`` /
    ``traces_high``, ``n_flags`` (flags in this row), ``total_flags`` (flags of all
    selected modes in the group), ``share_of_flags`` with ``flags_low`` / ``flags_high``.
    With ``correct_with=`` also ``sensitivity``, ``specificity`` and the Rogan–Gladen
    ``corrected`` share with ``corrected_low`` / ``corrected_high``.
    """

    level: Level = "mode"
    by: list[str] = field(default_factory=list)
    ci: str = "bootstrap"
    confidence: float = 0.95

    def _title(self) -> str:
        group = f" by {', '.join(self.by)}" if self.by else ""
        return f"Prevalence per {self.level}{group} ({self.confidence:.0%} {self.ci} CI)"

    def wide(self, value: str = "share_of_traces") -> pd.DataFrame:
        """``value`` as a rows x groups table (one column per group)."""
        out: pd.DataFrame
        if not self.by:
            out = self.table.set_index("row")[[value]]
        else:
            out = self.table.pivot_table(
                index="row", columns=self.by, values=value, sort=False, dropna=False
            )
        return out

    def plot(
        self,
        value: Literal["share_of_traces", "share_of_flags"] = "share_of_traces",
        **kwargs: Any,
    ) -> Figure:
        """Bars per mode and group with intervals (category level, share of flags: stacked)."""
        from mast.analysis import plots

        if self.level == "category" and value == "share_of_flags":
            return plots.category_stack(self, **kwargs)
        return plots.prevalence_bars(self, value=value, **kwargs)


@dataclass(frozen=True, eq=False)
class ModesPerTrace(_Result):
    """How many modes a trace has, per group, overall and among failed / successful runs.

    ``table`` per group: ``n_traces``, ``mean`` (``mean_low``/``mean_high``), ``median``,
    ``max``, ``n_with_unknown`` (traces with at least one unknown cell: their count is a
    lower bound), ``mean_unknown`` (unknown cells per trace), ``n_failed``, ``mean_failed``
    (``failed_low``/``failed_high``), ``n_success``, ``mean_success``
    (``success_low``/``success_high``), ``n_outcome_unknown``.  ``per_trace`` has one row
    per trace: ``trace_id``, the ``by`` fields, ``outcome`` (if known), ``n_modes``,
    ``n_known``, ``n_unknown``.
    """

    per_trace: pd.DataFrame = field(default_factory=pd.DataFrame)
    by: list[str] = field(default_factory=list)

    def _title(self) -> str:
        group = f" by {', '.join(self.by)}" if self.by else ""
        return f"Failure modes per trace{group}"

    def plot(self, **kwargs: Any) -> Figure:
        """Mean modes per trace and per failed trace, per group, with intervals."""
        from mast.analysis import plots

        return plots.modes_per_trace(self, **kwargs)


@dataclass(frozen=True, eq=False)
class Cooccurrence(_Result):
    """Which modes occur together.

    ``phi`` (modes x modes): phi coefficient (Pearson correlation of the 0/1 indicators)
    over the traces where both modes are known; NaN when a mode is constant there.
    ``conditional``: row A, column B holds P(B | A) = traces with both / traces with A,
    among traces where both are known.  ``joint``: traces with both present;
    ``known``: traces where both are known.  ``table`` (also ``pairs``): one row per
    unordered pair with ``n_known``, ``n_a``, ``n_b``, ``n_both``, ``phi``,
    ``p_b_given_a``, ``p_a_given_b`` and Fisher's exact ``p_value``, by descending phi.
    """

    phi: pd.DataFrame = field(default_factory=pd.DataFrame)
    conditional: pd.DataFrame = field(default_factory=pd.DataFrame)
    joint: pd.DataFrame = field(default_factory=pd.DataFrame)
    known: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def pairs(self) -> pd.DataFrame:
        """One row per pair of modes (the same as ``table``)."""
        return self.table

    def _title(self) -> str:
        return "Co-occurrence of failure modes (pairs by phi)"

    def plot(self, kind: Literal["phi", "conditional"] = "phi", **kwargs: Any) -> Figure:
        """Heatmap of ``phi`` or of the conditional rates P(column | row)."""
        from mast.analysis import plots

        return plots.cooccurrence_heatmap(self, kind=kind, **kwargs)


@dataclass(frozen=True, eq=False)
class OutcomeAnalysis(_Result):
    """Which modes go with failed runs, and which are common in successful ones too.

    ``table`` per mode (traces with a known outcome and a known value for that mode):
    ``n_failure`` / ``present_failure`` / ``rate_failure``, the same for success,
    ``difference`` (failure rate minus success rate) with Newcombe's interval
    (``diff_low``/``diff_high``), ``lift`` = P(failure | mode) / P(failure), the odds ratio
    of failure given the mode (``odds_ratio``, ``or_low``, ``or_high``, ``or_ci`` = how the
    interval was made, ``corrected`` = Haldane–Anscombe used), Fisher's exact ``p_value``,
    ``n_unknown`` and ``association``: ``"predicts failure"`` (interval above 1), ``"more
    common in successes"`` (interval below 1), ``"common in successes"`` (present in at
    least ``common`` of successful runs without predicting failure) or ``"no clear
    association"``.

    ``regression``: the L2-penalized logistic regression of failure on all modes together
    (complete cases): ``coef`` (log-odds, shrunk towards 0), ``odds_multiplier`` =
    exp(coef), ``sign_stability`` (share of bootstrap refits with the same sign),
    ``n_present``.  ``regression_info``: ``n``, ``n_failure``, ``C``, ``intercept``, the
    modes left out of it and why.
    """

    regression: pd.DataFrame | None = None
    regression_info: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.95

    def _title(self) -> str:
        return f"Failure modes and run outcome ({self.confidence:.0%} CI)"

    def plot(self, value: Literal["odds_ratio", "lift"] = "odds_ratio", **kwargs: Any) -> Figure:
        """Rates in failed vs successful runs and the odds ratio (or lift) per mode."""
        from mast.analysis import plots

        return plots.outcome_lift(self, value=value, **kwargs)


@dataclass(frozen=True, eq=False)
class Comparison(_Result):
    """Change per mode between two groups (``names[0]`` = a, ``names[1]`` = b).

    ``table`` per mode: ``n_a``, ``present_a``, ``rate_a``, ``unknown_a``, the same for b,
    ``difference`` = rate_b - rate_a with ``diff_low``/``diff_high`` (``ci_method``),
    ``ratio`` = rate_b / rate_a and Fisher's exact ``p_value``.
    """

    names: tuple[str, str] = ("a", "b")
    level: Level = "mode"
    confidence: float = 0.95

    def _title(self) -> str:
        a, b = self.names
        return f"{b} vs {a}: change per {self.level} ({self.confidence:.0%} CI)"

    def plot(self, **kwargs: Any) -> Figure:
        """Forest plot of the change per mode with its interval."""
        from mast.analysis import plots

        return plots.comparison_forest(self, **kwargs)
