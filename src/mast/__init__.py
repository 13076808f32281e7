"""mast: turn agent traces into MAST failure vectors and measure judge-human agreement.

>>> import mast
>>> mast.load_taxonomy()["1.3"].name
'Step Repetition'
"""

from mast import datasets
from mast._version import __version__
from mast.errors import LabelMappingError, MastError, TaxonomyError, TraceFormatError
from mast.loaders import load_trace, load_traces
from mast.taxonomy import (
    FailureMode,
    LabelVersion,
    Taxonomy,
    load_label_version,
    load_taxonomy,
)
from mast.trace import FailureVector, LabelSource, Outcome, Step, StepKind, Trace

__all__ = [
    "FailureMode",
    "FailureVector",
    "LabelMappingError",
    "LabelSource",
    "LabelVersion",
    "MastError",
    "Outcome",
    "Step",
    "StepKind",
    "Taxonomy",
    "TaxonomyError",
    "Trace",
    "TraceFormatError",
    "__version__",
    "datasets",
    "load_label_version",
    "load_taxonomy",
    "load_trace",
    "load_traces",
]
