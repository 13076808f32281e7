"""mast: turn agent traces into MAST failure vectors and measure judge-human agreement.

>>> import mast
>>> mast.load_taxonomy()["1.3"].name
'Step Repetition'

``import mast`` loads only the version and the error classes: every other public name is
imported from its stage on first use (module ``__getattr__``), so ``import mast`` and the
``mast`` command start fast and a script pays only for what it touches. ``from mast import
Judge`` and type checkers see the same names as before (the ``TYPE_CHECKING`` imports).
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from mast._version import __version__
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

if _TYPE_CHECKING:
    from mast import agree as agree
    from mast import analysis as analysis
    from mast import datasets as datasets
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
    from mast.agree.audit import TaxonomyAudit, audit_taxonomy
    from mast.agree.consensus import ConsensusReport, consensus
    from mast.agree.sweep import SweepReport, sweep_confidence
    from mast.analysis.validation import ValidationReport, validate
    from mast.bulk.runner import aannotate_many, annotate_many
    from mast.bulk.store import read_annotations, to_frame
    from mast.bulk.types import AnnotationRun, RetryPolicy, RunSummary
    from mast.judge.annotation import Annotation
    from mast.judge.attribute import AttributionJudge, attribute
    from mast.judge.attribution import DecisiveError
    from mast.judge.heuristic import heuristic_verdict
    from mast.judge.judge import Judge
    from mast.judge.prompt.fewshot import FewShotExample, load_examples, select_examples
    from mast.judge.providers.usage import Usage
    from mast.judge.reply.grounding import ground, grounded_share
    from mast.judge.reply.parse import parse_response
    from mast.judge.verdict import Evidence, Finding, Verdict, verdict_json_schema
    from mast.privacy.redact import Redactor
    from mast.taxonomy import (
        FailureMode,
        LabelVersion,
        Taxonomy,
        load_label_version,
        load_taxonomy,
    )
    from mast.traces import itbench as itbench
    from mast.traces.loaders import load_trace, load_traces
    from mast.traces.model import FailureVector, LabelSource, Outcome, Step, StepKind, Trace
    from mast.traces.segment import SegmentationWarning

# Public name -> the module that defines it. (Agreement lives in `mast.agree`, not
# `mast.agreement`: a submodule named like the function would replace `mast.agreement` as
# soon as anything imported from it.)
_OWNERS = {
    "mast.agree": "AgreementReport AmongReport VersionReport agreement agreement_among "
    "agreement_by_version labels_of",
    "mast.agree.attribution": "AttributionReport attribution_accuracy",
    "mast.agree.audit": "TaxonomyAudit audit_taxonomy",
    "mast.agree.consensus": "ConsensusReport consensus",
    "mast.agree.sweep": "SweepReport sweep_confidence",
    "mast.analysis.validation": "ValidationReport validate",
    "mast.bulk.runner": "aannotate_many annotate_many",
    "mast.bulk.store": "read_annotations to_frame",
    "mast.bulk.types": "AnnotationRun RetryPolicy RunSummary",
    "mast.judge.annotation": "Annotation",
    "mast.judge.attribute": "AttributionJudge attribute",
    "mast.judge.attribution": "DecisiveError",
    "mast.judge.prompt.fewshot": "FewShotExample load_examples select_examples",
    "mast.judge.reply.grounding": "ground grounded_share",
    "mast.judge.heuristic": "heuristic_verdict",
    "mast.judge.judge": "Judge",
    "mast.judge.reply.parse": "parse_response",
    "mast.privacy.redact": "Redactor",
    "mast.judge.providers.usage": "Usage",
    "mast.judge.verdict": "Evidence Finding Verdict verdict_json_schema",
    "mast.taxonomy": "FailureMode LabelVersion Taxonomy load_label_version load_taxonomy",
    "mast.traces": "itbench",
    "mast.traces.loaders": "load_trace load_traces",
    "mast.traces.model": "FailureVector LabelSource Outcome Step StepKind Trace",
    "mast.traces.segment": "SegmentationWarning",
}
_LAZY = {name: module for module, names in _OWNERS.items() for name in names.split()}

# Submodules reachable as attributes (`mast.traces.datasets…`) before anything imported them.
_SUBMODULES = frozenset(
    ["agree", "analysis", "bulk", "cli", "datasets", "distributed", "export", "judge", "label",
     "plots", "redact", "report", "stats", "taxonomy", "traces"]
)  # fmt: skip


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY:
        owner = importlib.import_module(_LAZY[name])
        try:
            value = getattr(owner, name)
        except AttributeError:  # a submodule of the owner package (itbench)
            value = importlib.import_module(f"{_LAZY[name]}.{name}")
    elif name in _SUBMODULES:
        value = importlib.import_module(f"mast.{name}")
    else:
        raise AttributeError(f"module 'mast' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


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
    "TaxonomyAudit",
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
    "audit_taxonomy",
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
