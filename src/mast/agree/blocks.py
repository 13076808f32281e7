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

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mast.errors import DuplicateLabelsWarning

__all__ = [
    "DuplicateLabelsWarning",
    "block_clusters",
    "describe_duplicates",
    "duplicate_blocks",
    "sum_by_unit",
]


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


def describe_duplicates(groups: Sequence[Sequence[str]], n_traces: int, n_blocks: int) -> str:
    """One sentence for a warning or a report note."""
    shown = "; ".join("{" + ", ".join(g) + "}" for g in groups[:6])
    more = f"; … (+{len(groups) - 6} groups)" if len(groups) > 6 else ""
    return (
        f"{n_traces} traces carry only {n_blocks} distinct label blocks: identical labels from "
        f"every annotator on every mode for {shown}{more}. Copied labels are not independent "
        "evidence: the bootstrap resamples distinct blocks (cluster bootstrap), not traces"
    )


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
