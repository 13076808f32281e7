"""Verdicts out of mast: the public path of the exports (``mast.export.to_phoenix(...)``).

Writes MAST verdicts where users look at their traces — Phoenix span annotations, Langfuse
scores, LangSmith feedback, Inspect sample scores, OpenTelemetry evaluation events — and pulls
traces from those platforms. See :mod:`mast.analysis.platforms` and
:mod:`mast.analysis.otel_export`.

>>> import mast.export
>>> callable(mast.export.to_phoenix) and callable(mast.export.pull_langsmith)
True
"""

from mast.analysis.otel_export import export_otel as to_otel
from mast.analysis.platforms import (
    ExportReport,
    HumanLabels,
    PlatformScore,
    build_scores,
)
from mast.analysis.platforms.inspect_log import to_inspect
from mast.analysis.platforms.langfuse import pull_langfuse, to_langfuse
from mast.analysis.platforms.langsmith import pull_langsmith, to_langsmith
from mast.analysis.platforms.phoenix import pull_phoenix, to_phoenix
from mast.analysis.platforms.scores import human_labels
from mast.analysis.platforms.scout import mast_scanner, mast_scorer

__all__ = [
    "ExportReport",
    "HumanLabels",
    "PlatformScore",
    "build_scores",
    "human_labels",
    "mast_scanner",
    "mast_scorer",
    "pull_langfuse",
    "pull_langsmith",
    "pull_phoenix",
    "to_inspect",
    "to_langfuse",
    "to_langsmith",
    "to_otel",
    "to_phoenix",
]
