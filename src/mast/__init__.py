"""mast: turn agent traces into MAST failure vectors and measure judge-human agreement.

>>> import mast
>>> mast.load_taxonomy()["1.3"].name
'Step Repetition'
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from mast import datasets
from mast._version import __version__
from mast.bulk.runner import AnnotationRun, RetryPolicy, RunSummary, aannotate_many, annotate_many
from mast.bulk.store import read_annotations, to_frame
from mast.errors import (
    AuthError,
    BudgetExceeded,
    ConfigError,
    ContextLengthError,
    DatasetAccessError,
    DatasetChecksumError,
    DatasetError,
    DatasetUnavailableError,
    DuplicateTraceError,
    FewShotError,
    GroundTruthError,
    LabelMappingError,
    MastError,
    MissingDependencyError,
    NoOverlapError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    RunStopped,
    StatsInputError,
    TaxonomyError,
    TraceFormatError,
    VerdictParseError,
)
from mast.judge.annotation import Annotation
from mast.judge.attribute import AttributionJudge, attribute
from mast.judge.attribution import DecisiveError
from mast.judge.fewshot import FewShotExample, load_examples, select_examples
from mast.judge.grounding import ground, grounded_share
from mast.judge.heuristic import heuristic_verdict
from mast.judge.judge import Judge
from mast.judge.parse import parse_response
from mast.judge.redact import Redactor
from mast.judge.usage import Usage
from mast.judge.verdict import Evidence, Finding, Verdict, verdict_json_schema
from mast.taxonomy import (
    FailureMode,
    LabelVersion,
    Taxonomy,
    load_label_version,
    load_taxonomy,
)
from mast.traces import itbench
from mast.traces.loaders import load_trace, load_traces
from mast.traces.model import FailureVector, LabelSource, Outcome, Step, StepKind, Trace
from mast.traces.segment import SegmentationWarning

if _TYPE_CHECKING:
    from mast import agree as agree
    from mast import analysis as analysis
    from mast import plots as plots
    from mast import stats as stats
    from mast.agree import (
        AgreementReport,
        AmongReport,
        VersionReport,
        agreement,
        agreement_among,
        agreement_by_version,
        labels_of,
    )
    from mast.agree.attribution import AttributionReport, attribution_accuracy
    from mast.agree.consensus import ConsensusReport, consensus
    from mast.agree.sweep import SweepReport, sweep_confidence
    from mast.analysis.validation import ValidationReport, validate

# Agreement needs numpy and pandas: load it on first use so that `import mast` stays fast.
# (The implementation lives in `mast.agree`, not `mast.agreement`: a submodule named like
# the function would replace `mast.agreement` as soon as anything imported from it.)
_LAZY = {
    "AgreementReport": "mast.agree",
    "AmongReport": "mast.agree",
    "VersionReport": "mast.agree",
    "agree": None,
    "agreement": "mast.agree",
    "agreement_among": "mast.agree",
    "agreement_by_version": "mast.agree",
    "analysis": None,
    "AttributionReport": "mast.agree.attribution",
    "attribution_accuracy": "mast.agree.attribution",
    "labels_of": "mast.agree",
    "plots": None,
    "stats": None,
    "ValidationReport": "mast.analysis.validation",
    "validate": "mast.analysis.validation",
    "ConsensusReport": "mast.agree.consensus",
    "consensus": "mast.agree.consensus",
    "SweepReport": "mast.agree.sweep",
    "sweep_confidence": "mast.agree.sweep",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'mast' has no attribute {name!r}")
    import importlib

    owner = _LAZY[name]
    value = (
        importlib.import_module(f"mast.{name}")
        if owner is None
        else getattr(importlib.import_module(owner), name)
    )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AgreementReport",
    "AmongReport",
    "Annotation",
    "AnnotationRun",
    "AttributionJudge",
    "AttributionReport",
    "AuthError",
    "BudgetExceeded",
    "ConfigError",
    "ConsensusReport",
    "ContextLengthError",
    "DatasetAccessError",
    "DatasetChecksumError",
    "DatasetError",
    "DatasetUnavailableError",
    "DecisiveError",
    "DuplicateTraceError",
    "Evidence",
    "FailureMode",
    "FailureVector",
    "FewShotError",
    "FewShotExample",
    "Finding",
    "GroundTruthError",
    "Judge",
    "LabelMappingError",
    "LabelSource",
    "LabelVersion",
    "MastError",
    "MissingDependencyError",
    "NoOverlapError",
    "Outcome",
    "ProviderError",
    "ProviderTimeout",
    "RateLimitError",
    "Redactor",
    "RetryPolicy",
    "RunStopped",
    "RunSummary",
    "SegmentationWarning",
    "StatsInputError",
    "Step",
    "StepKind",
    "SweepReport",
    "Taxonomy",
    "TaxonomyError",
    "Trace",
    "TraceFormatError",
    "Usage",
    "ValidationReport",
    "Verdict",
    "VerdictParseError",
    "VersionReport",
    "__version__",
    "aannotate_many",
    "agreement",
    "agreement_among",
    "agreement_by_version",
    "analysis",
    "annotate_many",
    "attribute",
    "attribution_accuracy",
    "consensus",
    "datasets",
    "ground",
    "grounded_share",
    "heuristic_verdict",
    "itbench",
    "labels_of",
    "load_examples",
    "load_label_version",
    "load_taxonomy",
    "load_trace",
    "load_traces",
    "parse_response",
    "plots",
    "read_annotations",
    "select_examples",
    "sweep_confidence",
    "to_frame",
    "validate",
    "verdict_json_schema",
]
