"""Re-read human labels under another mapping of a label version (``verification=``).

The MAD human file's draft rounds label verification failures "Lack of result verification"
(checking left out) and "Lack of critical verification" (a weak verifier). mast maps them by
those texts: result -> 3.2, critical -> 3.3 (see ``taxonomy/versions/``). Read by their
numbers instead, the two final codes swap. :func:`apply_reading` turns traces loaded with the
default mapping into that other reading, so a report can show how much 3.2/3.3 agreement
depends on the choice; the merged 3.2-or-3.3 row does not.

>>> from mast.traces.datasets import examples_path, load_mad_human
>>> by_text = load_mad_human(examples_path() / "mad_human_sample.json")
>>> by_number = apply_reading(by_text, "by-number")
>>> trace, other = by_text[1], by_number[1]
>>> trace.id, trace.labels["annotator_1"]["3.2"], other.labels["annotator_1"]["3.2"]
('mad-human/7', True, False)
"""

from __future__ import annotations

from collections.abc import Iterable

from mast.taxonomy import Reading, load_label_version
from mast.traces.model import FailureVector, Trace

__all__ = ["apply_reading"]

_BUNDLED = ("round1", "rounds2-3", "final")


def apply_reading(traces: Iterable[Trace], reading: Reading) -> list[Trace]:
    """Copies of ``traces`` with each human annotator's labels moved to ``reading``'s codes.

    Only labels whose source names a bundled label version (``round1``, ``rounds2-3``,
    ``final``) change; ``"by-definition"`` returns the traces unchanged. The copies record
    the reading in ``metadata["label_reading"]``.
    """
    if reading not in ("by-definition", "by-number"):
        raise ValueError(f"reading must be 'by-definition' or 'by-number', got {reading!r}")
    out: list[Trace] = []
    for trace in traces:
        if reading == "by-definition":
            out.append(trace)
            continue
        copy = trace.model_copy(deep=True)
        for annotator, source in copy.label_sources.items():
            version = source.taxonomy_version
            if version not in _BUNDLED or annotator not in copy.labels:
                continue
            moves = load_label_version(version).reading_map(reading)
            old = copy.labels[annotator]
            values = {code: old[code] for code in old}
            for src, dst in moves.items():
                values[dst] = old[src]
            copy.labels[annotator] = FailureVector(values, codes=list(old))
        copy.metadata["label_reading"] = reading
        out.append(copy)
    return out
