"""Readers for public MAST datasets and the example traces bundled with mast.

``load_mad`` reads MAST-Data's full file (1,642 traces labelled by an o1 judge, stored as
annotator ``"o1"``); ``load_mad_human`` reads the small human-labelled file, mapping each
annotator's labels from its round's taxonomy version onto the final codes (annotators
``"annotator_1"`` … ``"annotator_3"``; draft modes without a final counterpart stay visible in
``trace.label_sources[annotator].unmapped``).

>>> traces = example_traces()
>>> sorted({t.format for t in traces})
['ag2', 'mad-human']
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal, overload

from mast.loaders import load_traces
from mast.trace import Trace

__all__ = ["example_traces", "examples_path", "load_mad", "load_mad_human"]

_EXAMPLES = Path(__file__).resolve().parent / "examples"


def examples_path() -> Path:
    """The folder of real public example traces shipped with mast (see its README)."""
    return _EXAMPLES


def example_traces() -> list[Trace]:
    """Load the bundled example traces: 4 MAD human-labelled records and 3 AG2 runs."""
    return list(load_traces(_EXAMPLES))


@overload
def load_mad(path: str | Path, *, stream: Literal[False] = False) -> list[Trace]: ...
@overload
def load_mad(path: str | Path, *, stream: Literal[True]) -> Iterator[Trace]: ...


def load_mad(path: str | Path, *, stream: bool = False) -> list[Trace] | Iterator[Trace]:
    """Read ``MAD_full_dataset.json`` (or any file of its records) with the o1 labels.

    The file is parsed record by record; ``stream=True`` returns an iterator so that the
    ~200 MB file never sits in memory whole. ``null`` labels stay ``None`` (unknown).

    >>> traces = load_mad("MAD_full_dataset.json", stream=True)  # doctest: +SKIP
    >>> next(traces).labels["o1"]["1.1"]  # doctest: +SKIP
    True
    """
    traces = load_traces(path, format="mad-full")
    return traces if stream else list(traces)


def load_mad_human(path: str | Path) -> list[Trace]:
    """Read ``MAD_human_labelled_dataset.json``: 3 annotators' labels on final MAST codes.

    Each annotator's :class:`~mast.trace.LabelSource` records the taxonomy version of the
    record's round (``"round1"``, ``"rounds2-3"`` or ``"final"``) and the unmapped draft labels.

    >>> human = load_mad_human(examples_path() / "mad_human_sample.json")
    >>> first = human[0]
    >>> first.labels["annotator_1"]["1.3"], first.label_sources["annotator_1"].taxonomy_version
    (False, 'round1')
    """
    return list(load_traces(path, format="mad-human"))
