"""What every platform export takes: results (files or annotations), traces, human labels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mast.errors import MissingDependencyError
from mast.judge.annotation import Annotation
from mast.traces.model import Trace

Results = str | Path | Iterable[Annotation] | Iterable[str | Path]
TraceInputs = str | Path | Iterable[Trace] | Iterable[str | Path]


def annotations_of(results: Results) -> list[Annotation]:
    """Annotations from results files (or folders), or the annotations themselves."""
    from mast.bulk.store import read_annotations

    if isinstance(results, (str, Path)):
        return read_annotations(results)
    items = list(results)
    out: list[Annotation] = []
    for item in items:
        if isinstance(item, Annotation):
            out.append(item)
        else:
            out.extend(read_annotations(item))
    return out


def traces_of(traces: TraceInputs, errors: list[Any] | None = None) -> list[Trace]:
    """Traces, or the traces of files (bad traces are skipped into ``errors``)."""
    from mast.traces.loaders import load_traces

    if isinstance(traces, (str, Path)):
        traces = [traces]
    items = list(traces)
    loaded = [t for t in items if isinstance(t, Trace)]
    paths = [p for p in items if not isinstance(p, Trace)]
    if paths:
        found: list[Any] = [] if errors is None else errors
        loaded.extend(load_traces(paths, on_error="skip", errors=found))
    return loaded


_PACKAGES = {
    "phoenix": "arize-phoenix-client",
    "inspect_ai": "inspect-ai",
    "inspect_scout": "inspect-scout",
}


def need(module: str, extra: str, what: str) -> Any:
    """Import an optional SDK, or say which package and extra install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingDependencyError(
            f"{what} needs {_PACKAGES.get(top, top)}. Install it with: "
            f'pip install "mast-annotator[{extra}]"'
        ) from exc


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """``items`` in pieces of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
