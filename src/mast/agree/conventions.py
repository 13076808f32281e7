"""What agreement reports say about their sources: 3.2/3.3 convention and system per trace.

MAST codes 3.2 and 3.3 mean different things in the ``paper`` convention (mast's: 3.2 No or
Incomplete, 3.3 Incorrect Verification) and the ``official`` one (3.2 Weak, 3.3 No or
Incorrect Verification). A report names each side's convention; when they differ it warns
(:class:`~mast.errors.VerificationConventionWarning`) and leads with the merged 3.2-or-3.3
row, the one comparison that does not depend on the choice.

>>> from mast.traces.datasets import examples_path, load_mad_human
>>> human = load_mad_human(examples_path() / "mad_human_sample.json")
>>> source_verification(human, "annotator_1")
'paper'
>>> source_verification([{"trace_id": "t", "vector": {}, "judge": {"verification": "official"}}])
'official'
>>> source_verification({"t": {"3.2": True}}) is None
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from mast.agree import stats
from mast.agree.render import num, table
from mast.agree.table import LabelSet, natural_key
from mast.errors import VerificationConventionWarning
from mast.traces.model import Trace

__all__ = [
    "MIXED",
    "convention_header",
    "conventions_differ",
    "merged_first",
    "per_system_frame",
    "per_system_section",
    "source_systems",
    "source_verification",
    "warn_if_conventions_differ",
]

MIXED = "mixed"
"""A source whose labels come in more than one convention."""

# Judge records written before the convention was recorded all used mast's bundled MAST
# taxonomy, which had only the paper convention.
_BEFORE = {"MAST 1.0": "paper"}


def source_verification(source: object, annotator: str | None = None) -> str | None:
    """The 3.2/3.3 convention of a label source: ``"paper"``, ``"official"``, ``"mixed"``,
    or ``None`` when the source does not say (plain mappings, tables).

    Traces tell it through ``label_sources[annotator].verification``, judge records through
    ``judge["verification"]`` (records of a MAST judge without it are ``"paper"``).
    """
    found: set[str] = set()
    if isinstance(source, LabelSet):
        found = set(source.verifications)
    elif isinstance(source, (Mapping, str, bytes)) or not isinstance(source, Iterable):
        return None
    elif isinstance(source, Sequence):
        for item in source:
            name = _item_verification(item, annotator)
            if name is not None:
                found.add(name)
    return _one(found)


def _one(found: set[str]) -> str | None:
    if not found:
        return None
    return next(iter(found)) if len(found) == 1 else MIXED


def _item_verification(item: object, annotator: str | None) -> str | None:
    if isinstance(item, Trace):
        chosen = annotator if annotator is not None else next(iter(item.labels), None)
        source = item.label_sources.get(chosen) if chosen is not None else None
        return source.verification if source is not None else None
    judge = item.get("judge") if isinstance(item, Mapping) else getattr(item, "judge", None)
    taxonomy = (
        item.get("taxonomy") if isinstance(item, Mapping) else getattr(item, "taxonomy", None)
    )
    if isinstance(judge, Mapping):
        value = judge.get("verification")
        if isinstance(value, str):
            return value
        if isinstance(taxonomy, str):
            return _BEFORE.get(taxonomy)
    return None


def conventions_differ(reference: str | None, candidate: str | None) -> bool:
    """True when both conventions are known and not the same (``"mixed"`` differs from all)."""
    if reference is None or candidate is None:
        return False
    return reference != candidate or reference == MIXED


def convention_header(names: Mapping[str, str], conventions: Mapping[str, str | None]) -> str:
    """One line naming every side's 3.2/3.3 convention."""
    shown = "; ".join(
        f"{names.get(side, side)}: {conventions.get(side) or 'not recorded'}" for side in names
    )
    return f"3.2/3.3 convention: {shown}"


def warn_if_conventions_differ(
    names: Mapping[str, str], conventions: Mapping[str, str | None]
) -> str | None:
    """Warn (and return the text) when the reference's and candidate's conventions differ."""
    ref, cand = conventions.get("reference"), conventions.get("candidate")
    if not conventions_differ(ref, cand):
        return None
    text = (
        f"3.2/3.3 conventions differ: {names.get('reference', 'reference')} uses {ref}, "
        f"{names.get('candidate', 'candidate')} uses {cand} (paper: 3.2 No or Incomplete, "
        "3.3 Incorrect Verification; official: 3.2 Weak, 3.3 No or Incorrect Verification). "
        "Per-mode rows 3.2 and 3.3 compare different meanings; read the merged 3.2∨3.3 row, "
        "shown first, or put both sides in one convention (load_mad_human/load_mad "
        "verification=..., Judge(verification=...))"
    )
    warnings.warn(text, VerificationConventionWarning, stacklevel=3)
    return text


def merged_first(frame: pd.DataFrame, differ: bool, row: str = "3.2∨3.3") -> pd.DataFrame:
    """``frame`` with the merged verification row first when the conventions differ."""
    if not differ or row not in frame.index:
        return frame
    return cast("pd.DataFrame", pd.concat([frame.loc[[row]], frame.drop(index=row)]))


def source_systems(source: object) -> dict[str, str | None]:
    """Trace id -> system (framework) of a source that knows it (traces, ``labels_of``)."""
    if isinstance(source, LabelSet):
        return dict(source.systems)
    if isinstance(source, (Mapping, str, bytes)) or not isinstance(source, Sequence):
        return {}
    out: dict[str, str | None] = {}
    for item in source:
        if isinstance(item, Trace):
            out[item.id] = item.system
    return out


def per_system_frame(
    ids: Sequence[str],
    systems: Mapping[str, str | None],
    r_vals: npt.NDArray[np.int8],
    c_vals: npt.NDArray[np.int8],
    codes: Sequence[str],
) -> pd.DataFrame:
    """Agreement per system on the compared traces: one row per system (``"unknown"`` for
    traces whose system is not known), pooled kappa and AC1 over the system's cells, the
    macro kappa over modes with both reference classes there, cells, traces and positives.
    """
    columns = [
        "traces",
        "cells",
        "kappa",
        "macro_kappa",
        "ac1",
        "accuracy",
        "positives_reference",
        "positives_candidate",
    ]
    if not systems or not ids:
        return cast("pd.DataFrame", pd.DataFrame(columns=columns).rename_axis("system"))
    m = len(codes)
    groups: dict[str, list[int]] = {}
    for k, trace_id in enumerate(ids):
        groups.setdefault(systems.get(trace_id) or "unknown", []).append(k)
    rows: dict[str, dict[str, Any]] = {}
    for system in sorted(groups, key=natural_key):
        at = groups[system]
        r, c = r_vals[at, :m], c_vals[at, :m]
        known = (r >= 0) & (c >= 0)
        y1, y2 = _labels(r[known]), _labels(c[known])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an undefined value is NaN here, said by the row
            kappa = stats.cohen_kappa(y1, y2) if y1 else math.nan
            ac1 = stats.gwet_ac1(y1, y2) if y1 else math.nan
            per_mode = []
            for j in range(m):
                ok = known[:, j]
                ref_col = r[ok, j]
                if ok.any() and 0 < int(ref_col.sum()) < len(ref_col):
                    per_mode.append(stats.cohen_kappa(_labels(ref_col), _labels(c[ok, j])))
        defined = [v for v in per_mode if not math.isnan(v)]
        rows[system] = {
            "traces": len(at),
            "cells": int(known.sum()),
            "kappa": kappa,
            "macro_kappa": float(np.mean(defined)) if defined else math.nan,
            "ac1": ac1,
            "accuracy": float((r[known] == c[known]).mean()) if known.any() else math.nan,
            "positives_reference": int((r[known] == 1).sum()),
            "positives_candidate": int((c[known] == 1).sum()),
        }
    frame = pd.DataFrame([rows[k] for k in rows], index=list(rows), columns=columns)
    for name in ("traces", "cells", "positives_reference", "positives_candidate"):
        frame[name] = frame[name].astype("int64")
    return cast("pd.DataFrame", frame.rename_axis("system"))


def per_system_section(frame: pd.DataFrame, fmt: Literal["text", "markdown"]) -> list[str]:
    """The per-system table as one printable section (none when systems are unknown)."""
    if frame.empty:
        return []
    headers = [
        "system",
        "traces",
        "cells",
        "kappa",
        "macro kappa",
        "AC1",
        "accuracy",
        "pos ref/cand",
    ]
    rows = [
        [
            str(system),
            str(int(r["traces"])),
            str(int(r["cells"])),
            num(r["kappa"]),
            num(r["macro_kappa"]),
            num(r["ac1"]),
            num(r["accuracy"]),
            f"{int(r['positives_reference'])}/{int(r['positives_candidate'])}",
        ]
        for system, r in frame.iterrows()
    ]
    title = "Per system (pooled over the system's cells; no interval: few traces each):"
    return [title + "\n" + table(headers, rows, fmt=fmt, left=1)]


def _labels(values: npt.NDArray[np.int8]) -> list[bool]:
    return [bool(v) for v in values.ravel().tolist()]
