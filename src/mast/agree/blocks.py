"""Traces whose whole label blocks are identical: detection, and resampling units for them.

A *label block* is everything the annotators said about one trace: annotators x modes, each
cell present / absent / unknown.  Two different traces with identical blocks are possible by
chance when labels are sparse, but in a small labelled set they usually mean labels were
copied from one trace to others.  Either way those traces are not independent evidence: a
bootstrap that resamples them one by one makes intervals too narrow.  :func:`duplicate_blocks`
finds them; :func:`block_clusters` gives each trace its block's number, so a bootstrap can
resample distinct blocks (a cluster bootstrap) instead of traces.

>>> import numpy as np
>>> cube = np.array([[[1, 1]], [[1, 1]], [[0, 1]]], dtype=np.int8)  # traces x modes x raters
>>> duplicate_blocks(cube, ["a", "b", "c"])
[['a', 'b']]
>>> block_clusters(cube)
[0, 0, 1]
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from mast.errors import DuplicateLabelsWarning, StatsInputError

if TYPE_CHECKING:
    from mast.traces.model import Trace

__all__ = [
    "RESAMPLE",
    "DuplicateLabelsWarning",
    "Resample",
    "block_clusters",
    "block_map",
    "describe_duplicates",
    "duplicate_blocks",
    "resampling_units",
    "sum_by_unit",
]

Resample = Literal["auto", "traces", "blocks"]
RESAMPLE: tuple[Resample, ...] = ("auto", "traces", "blocks")


def _keys(cube: npt.NDArray[np.int8]) -> list[bytes]:
    data = np.ascontiguousarray(cube, dtype=np.int8)
    return [data[i].tobytes() for i in range(len(data))]


def block_clusters(cube: npt.NDArray[np.int8]) -> list[int]:
    """Per trace (first axis of ``cube``), the number of its distinct label block (0, 1, …,
    in order of first appearance).  A block with no known label is its own cluster: having
    no labels is not evidence of copying."""
    numbers: dict[bytes, int] = {}
    out: list[int] = []
    known_cells: npt.NDArray[np.bool_] = (np.asarray(cube) >= 0).reshape(len(cube), -1)
    known = [bool(row.any()) for row in known_cells]
    for i, key in enumerate(_keys(cube)):
        if not known[i]:
            key = b"empty:%d" % i
        out.append(numbers.setdefault(key, len(numbers)))
    return out


def duplicate_blocks(cube: npt.NDArray[np.int8], ids: Sequence[str]) -> list[list[str]]:
    """Groups (two or more trace ids) whose label blocks are identical, in input order."""
    groups: dict[int, list[str]] = {}
    for trace_id, cluster in zip(ids, block_clusters(cube), strict=True):
        groups.setdefault(cluster, []).append(trace_id)
    return [g for g in groups.values() if len(g) > 1]


def describe_duplicates(
    groups: Sequence[Sequence[str]], n_traces: int, n_blocks: int, *, resampled: bool = True
) -> str:
    """One sentence for a warning or a report note; ``resampled``: blocks are resampled."""
    shown = "; ".join("{" + ", ".join(g) + "}" for g in groups[:6])
    more = f"; … (+{len(groups) - 6} groups)" if len(groups) > 6 else ""
    done = (
        "the bootstrap resamples distinct blocks (cluster bootstrap), not traces"
        if resampled
        else "resample='traces' was asked, so the bootstrap resamples traces and its intervals "
        "are too narrow if these labels were copied"
    )
    return (
        f"{n_traces} traces carry only {n_blocks} distinct label blocks: identical labels from "
        f"every annotator on every mode for {shown}{more}. Copied labels are not independent "
        f"evidence: {done}"
    )


def check_resample(resample: object) -> None:
    """``resample`` must be one of :data:`RESAMPLE`."""
    if resample not in RESAMPLE:
        raise StatsInputError(f"resample must be 'auto', 'traces' or 'blocks'; got {resample!r}")


def block_map(traces: Iterable[Trace]) -> dict[str, str]:
    """Trace id -> the first id of its group, for traces whose whole label blocks (every
    annotator, every mode) are identical to another trace's; other traces are left out.

    This is what :func:`mast.agreement` resamples together under ``resample="auto"`` when it
    is given traces or :func:`~mast.agree.table.labels_of`; pass it as ``clusters=`` with a
    plain ``{trace_id: vector}`` mapping, which carries no block information.

    >>> import mast
    >>> block_map(mast.traces.datasets.example_traces())
    {}
    """
    from mast.traces.datasets import duplicate_label_blocks

    return {t: group[0] for group in duplicate_label_blocks(list(traces)) for t in group}


def resampling_units(
    ids: Sequence[str],
    *,
    resample: Resample,
    clusters: Mapping[str, Hashable] | None,
    blocks: Mapping[str, str] | None,
    values: npt.NDArray[np.int8],
    stacklevel: int = 3,
) -> dict[str, Hashable] | None:
    """The one resampling rule of every agreement report: trace id -> bootstrap unit for
    the reference's ``ids`` (``None``: each trace is its own unit).

    ``clusters`` (the caller's own units) win.  Otherwise ``blocks`` are the duplicated label
    blocks the reference's traces carry (:func:`block_map`; ``None`` when the reference is a
    plain mapping).  ``"auto"`` resamples them as blocks when there are any, ``"blocks"``
    always does (for a plain mapping: traces whose reference rows in ``values`` are
    identical), ``"traces"`` never does.  A :class:`DuplicateLabelsWarning` says which.
    """
    check_resample(resample)
    if clusters is not None:
        if resample == "traces":
            raise StatsInputError(
                "clusters= gives resampling units, resample='traces' asks for none: drop one"
            )
        return dict(clusters)
    if blocks is None and resample == "blocks":
        # A plain mapping: the only labels known are the reference's own rows.
        found = block_clusters(np.asarray(values, dtype=np.int8)[:, :, None])
        first: dict[int, str] = {}
        for trace_id, cluster in zip(ids, found, strict=True):
            first.setdefault(cluster, trace_id)
        blocks = {trace_id: first[c] for trace_id, c in zip(ids, found, strict=True)}
    known = blocks or {}
    groups: dict[str, list[str]] = {}
    for trace_id in ids:
        if trace_id in known:
            groups.setdefault(known[trace_id], []).append(trace_id)
    copies = [g for g in groups.values() if len(g) > 1]
    by_blocks = resample == "blocks" or (resample == "auto" and bool(copies))
    if copies:
        n_units = len(ids) - sum(len(g) - 1 for g in copies)
        warnings.warn(
            describe_duplicates(copies, len(ids), n_units, resampled=by_blocks),
            DuplicateLabelsWarning,
            stacklevel=stacklevel,
        )
    if not by_blocks:
        return None
    return {trace_id: known.get(trace_id, trace_id) for trace_id in ids}


def sum_by_unit(features: npt.NDArray[Any], units: Sequence[int] | None) -> npt.NDArray[np.float64]:
    """Per-trace bootstrap features added up per resampling unit (``units[i]`` is trace i's).

    The reports' statistics are functions of sums over traces, so resampling units whose
    features are these sums moves all traces of a unit together: a cluster bootstrap.
    """
    if units is None:
        return np.asarray(features, dtype=np.float64)
    out = np.zeros((max(units, default=-1) + 1, *features.shape[1:]))
    np.add.at(out, np.asarray(units, dtype=np.intp), features)
    return out
