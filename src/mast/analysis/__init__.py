"""From failure vectors to findings: prevalence, modes per trace, co-occurrence, outcomes,
two-group comparisons, and which agents start failures (:func:`failure_starters`).

Every function takes the failure vectors in whatever form you have them — a results frame
(``mast.to_frame(annotations)``), a list of :class:`~mast.judge.annotation.Annotation`, a
``{trace_id: {code: True | False | None}}`` mapping, traces that carry labels (with
``annotator=``) — and joins trace fields by trace id from ``traces=`` (a list of
:class:`~mast.traces.model.Trace`, or a DataFrame with a ``trace_id`` column or index).  Group with
``by=`` any trace field: ``"system"``, ``"model"``, ``"benchmark"``, ``"outcome"``, ``"run"``
or a column of your own.

**Unknown is not "no".**  A ``None`` cell is in no numerator and no denominator: a mode's
share is ``present / known``.  Annotations that failed (status not ``"ok"``) are left out.
Every result carries ``.excluded`` (:class:`Excluded`) with what was left out and why, and
every table has an ``n_unknown`` column.

Intervals are seeded and reproducible: bootstrap over traces (percentile) for shares and
means, Newcombe's score interval for differences of two proportions, exact or Woolf
intervals for odds ratios (see each function).

Results are small objects with a tidy ``.table`` (one row per group x mode), ``.excluded``,
``.notes``, ``.to_frame()`` and ``.plot()`` (matplotlib figure, never shown).

>>> import mast
>>> from mast import analysis
>>> vectors = {"t1": {"1.1": True, "1.3": True}, "t2": {"1.1": False, "1.3": True},
...            "t3": {"1.1": None, "1.3": False}}
>>> fields = {"t1": {"system": "A"}, "t2": {"system": "A"}, "t3": {"system": "B"}}
>>> prev = analysis.prevalence(vectors, traces=fields, by="system", modes=["1.1", "1.3"],
...                            bootstrap=0)
>>> prev.table[["system", "row", "n_present", "n_known", "share_of_traces"]]
  system  row  n_present  n_known  share_of_traces
0      A  1.1          1        2              0.5
1      A  1.3          2        2              1.0
2      B  1.1          0        0              NaN
3      B  1.3          0        1              0.0
>>> prev.excluded.unknown_cells
{'1.1': 1, '1.3': 0}
"""

from mast._lazy import submodule_getattr
from mast.analysis.attribution import FailureStarters, failure_starters
from mast.analysis.data import Excluded, VectorData, collect, trace_fields
from mast.analysis.outcomes import compare, outcome_analysis
from mast.analysis.profiles import cooccurrence, frame, modes_per_trace, prevalence
from mast.analysis.results import (
    Comparison,
    Cooccurrence,
    ModesPerTrace,
    OutcomeAnalysis,
    Prevalence,
)

__all__ = [
    "Comparison",
    "Cooccurrence",
    "Excluded",
    "FailureStarters",
    "ModesPerTrace",
    "OutcomeAnalysis",
    "Prevalence",
    "VectorData",
    "collect",
    "compare",
    "cooccurrence",
    "failure_starters",
    "frame",
    "modes_per_trace",
    "outcome_analysis",
    "prevalence",
    "trace_fields",
]

__getattr__ = submodule_getattr(__name__)  # `mast.analysis.<module>` without an import
