"""MAST verdicts where users look: scores written back into Phoenix, Langfuse, LangSmith and
Inspect logs, traces pulled from those platforms, and mast as an Inspect Scout scanner.

Every SDK is an optional extra and loads only when its function runs:
``pip install "mast-annotator[phoenix]"`` (``[langfuse]``, ``[langsmith]``, ``[inspect]``,
``[scout]``). The public path is :mod:`mast.export` (``mast.export.to_phoenix(...)``).
"""

from mast._lazy import submodule_getattr
from mast.analysis.platforms.scores import ExportReport, HumanLabels, PlatformScore, build_scores

__all__ = [
    "ExportReport",
    "HumanLabels",
    "PlatformScore",
    "build_scores",
    "pull_langfuse",
    "pull_langsmith",
    "pull_phoenix",
    "to_inspect",
    "to_langfuse",
    "to_langsmith",
    "to_phoenix",
]

_OWNERS = {
    "pull_langfuse": "langfuse",
    "pull_langsmith": "langsmith",
    "pull_phoenix": "phoenix",
    "to_inspect": "inspect_log",
    "to_langfuse": "langfuse",
    "to_langsmith": "langsmith",
    "to_phoenix": "phoenix",
}


_submodule = submodule_getattr(__name__)


def __getattr__(name: str) -> object:
    import importlib

    if name in _OWNERS:
        module = importlib.import_module(f"mast.analysis.platforms.{_OWNERS[name]}")
        return getattr(module, name)
    return _submodule(name)
