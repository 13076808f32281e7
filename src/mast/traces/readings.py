"""Move labels between the two conventions of 3.2/3.3 (``verification=``).

MAST codes 3.2 and 3.3 mean different things in different sources. The **paper**
convention (mast's): 3.2 No or Incomplete Verification (checking left out), 3.3 Incorrect
Verification (a check that got it wrong). The **official** convention (the official
definitions file, MAST-Data's o1 labels, the ITBench x MAST study): 3.2 Weak Verification
(a check too shallow), 3.3 No or Incorrect Verification. Every label source records its
convention in ``trace.label_sources[annotator].verification``.

The MAD human file's draft rounds label verification failures "Lack of result verification"
(checking left out) and "Lack of critical verification" (a weak verifier). Mapped by those
texts (``taxonomy/versions/``) they are paper 3.2 and 3.3; read by their numbers they are the
official 3.3 and 3.2, so ``"official"`` is the by-number reading. :func:`apply_reading`
moves labels from one convention to the other: the two codes swap. The swap is the nearest
code, not an identity (paper 3.2 "no or incomplete" spreads over official 3.3 "none" and 3.2
"too weak"), which is why agreement reports lead with the merged 3.2-or-3.3 row when two
conventions meet; that row does not depend on the choice.

>>> from mast.traces.datasets import examples_path, load_mad_human
>>> by_text = load_mad_human(examples_path() / "mad_human_sample.json")
>>> by_number = apply_reading(by_text, "official")
>>> trace, other = by_text[1], by_number[1]
>>> trace.id, trace.labels["annotator_1"]["3.2"], other.labels["annotator_1"]["3.2"]
('mad-human/7', True, False)
>>> other.label_sources["annotator_1"].verification
'official'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from mast.taxonomy import load_label_version
from mast.traces.model import FailureVector, LabelSource, Trace

__all__ = ["VERIFICATIONS", "Verification", "apply_reading", "verification_name"]

Verification = Literal["paper", "official"]
"""The two conventions of MAST codes 3.2/3.3."""

VERIFICATIONS: tuple[str, ...] = ("paper", "official")

# The names mast 0.x used for the human file's two readings: by text = paper, by number =
# official (the draft numbers follow the official file's split).
_ALIASES = {"by-definition": "paper", "by-number": "official"}
_BUNDLED = ("round1", "rounds2-3", "final")


def verification_name(value: str) -> Verification:
    """``"paper"`` or ``"official"`` for ``value`` (also the old names ``"by-definition"`` /
    ``"by-number"``); anything else raises :class:`ValueError` naming the choices.

    >>> verification_name("by-number")
    'official'
    """
    name = _ALIASES.get(value, value)
    if name == "paper":
        return "paper"
    if name == "official":
        return "official"
    raise ValueError(
        f"verification must be 'paper' or 'official' (or the older 'by-definition' / "
        f"'by-number'), got {value!r}"
    )


def apply_reading(traces: Iterable[Trace], reading: str) -> list[Trace]:
    """Copies of ``traces`` with every label source moved to convention ``reading``.

    ``reading`` is ``"paper"`` or ``"official"`` (or ``"by-definition"`` / ``"by-number"``).
    A source already in that convention, or one whose convention is unknown (``None``), is
    left as it is. Human sources of the bundled MAD label versions move by their version's
    ``readings`` (the 3.2/3.3 swap); others swap 3.2 and 3.3. A trace that changed records
    the convention in ``metadata["label_reading"]``; traces already in it come back as given.
    """
    target = verification_name(reading)
    out: list[Trace] = []
    for trace in traces:
        moving = [
            name
            for name, source in trace.label_sources.items()
            if name in trace.labels and source.verification not in (None, target)
        ]
        if not moving:
            out.append(trace)
            continue
        copy = trace.model_copy(deep=True)
        for annotator in moving:
            source = copy.label_sources[annotator]
            old = copy.labels[annotator]
            values = {code: old[code] for code in old}
            for src, dst in _moves(source).items():
                values[dst] = old.get(src)
            copy.labels[annotator] = FailureVector(values, codes=list(old))
            copy.label_sources[annotator] = source.model_copy(update={"verification": target})
        copy.metadata["label_reading"] = target
        out.append(copy)
    return out


def _moves(source: LabelSource) -> dict[str, str]:
    version = source.taxonomy_version
    if source.kind == "human" and version in _BUNDLED:
        return load_label_version(version).reading_map("by-number")
    return {"3.2": "3.3", "3.3": "3.2"}
