"""What an agreement report left out, and why: :class:`Exclusions` (never counted as "no")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast.agree.table import LabelTable, natural_key


def _shorten(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")


@dataclass(frozen=True)
class Exclusions:
    """What a report left out, and why, per source (``"reference"``/``"candidate"`` or an
    annotator name).  Nothing here is counted as "no"; all of it is left out of the
    statistics.
    """

    sources: tuple[str, ...]
    missing: dict[str, list[str]]
    """Trace ids another source labelled but this one has no record for."""
    failed: dict[str, dict[str, list[str]]]
    """Records that carry no usable vector, by status (``"parse_error"``, ``"error"``…)."""
    unknown_cells: dict[str, dict[str, int]]
    """``None`` cells per row (mode) among the traces this source labelled and that were
    compared."""
    unscored: dict[str, int]
    """Cells per row that could not be scored: pairs with an unknown side (two sources) or
    items with fewer than two known ratings (many raters)."""
    unknown_codes: dict[str, dict[str, int]]
    """Label keys the taxonomy does not know -> number of traces carrying them."""
    unmapped: dict[str, dict[str, int]]
    """Draft-taxonomy modes with no final code -> number of traces carrying them."""
    duplicates: dict[str, int]
    """Records that repeated a trace id (the last usable one was kept)."""
    ignored_fields: dict[str, list[str]] = field(default_factory=dict)
    """Columns / keys that are not failure-mode codes (e.g. ``cost_usd``)."""

    @property
    def is_empty(self) -> bool:
        """True when nothing at all was left out."""
        return not self.lines()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict of every field."""
        return {
            "sources": list(self.sources),
            "missing": self.missing,
            "failed": self.failed,
            "unknown_cells": self.unknown_cells,
            "unscored": self.unscored,
            "unknown_codes": self.unknown_codes,
            "unmapped": self.unmapped,
            "duplicates": self.duplicates,
            "ignored_fields": self.ignored_fields,
        }

    def lines(self, names: Mapping[str, str] | None = None) -> list[str]:
        """One human-readable line per kind of exclusion (empty when nothing was left out)."""
        names = names or {}
        out: list[str] = []
        for source in self.sources:
            label = names.get(source, source)
            if self.missing.get(source):
                ids = self.missing[source]
                out.append(
                    f"{label}: {len(ids)} trace(s) labelled by another source have no record "
                    f"here: {_shorten(ids)}"
                )
            for status, ids in self.failed.get(source, {}).items():
                out.append(f"{label}: {len(ids)} record(s) with status {status!r}: {_shorten(ids)}")
            cells = {k: v for k, v in self.unknown_cells.get(source, {}).items() if v}
            if cells:
                detail = ", ".join(f"{k}: {v}" for k, v in cells.items())
                out.append(f"{label}: {sum(cells.values())} unknown (None) cell(s) — {detail}")
            if self.unknown_codes.get(source):
                detail = ", ".join(f"{k} ({v})" for k, v in self.unknown_codes[source].items())
                out.append(f"{label}: codes unknown to the taxonomy (traces): {detail}")
            if self.unmapped.get(source):
                detail = "; ".join(f"{k} ({v})" for k, v in self.unmapped[source].items())
                out.append(f"{label}: draft-taxonomy modes with no final code (traces): {detail}")
            if self.duplicates.get(source):
                out.append(
                    f"{label}: {self.duplicates[source]} duplicate record(s) "
                    "(the last usable one per trace was kept)"
                )
            if self.ignored_fields.get(source):
                out.append(
                    f"{label}: ignored non-mode fields: {', '.join(self.ignored_fields[source])}"
                )
        unscored = {k: v for k, v in self.unscored.items() if v}
        if unscored:
            detail = ", ".join(f"{k}: {v}" for k, v in unscored.items())
            out.append(f"cells not scored: {sum(unscored.values())} — {detail}")
        return out


def _table_exclusions(
    tables: Mapping[str, LabelTable],
    unknown_cells: dict[str, dict[str, int]],
    unscored: dict[str, int],
) -> Exclusions:
    present = {key: set(t.ids) for key, t in tables.items()}
    missing: dict[str, list[str]] = {}
    for key, t in tables.items():
        others: set[str] = set().union(*(ids for k, ids in present.items() if k != key))
        failed_here = {i for ids in t.failed.values() for i in ids}
        missing[key] = sorted(others - present[key] - failed_here, key=natural_key)
    return Exclusions(
        sources=tuple(tables),
        missing=missing,
        failed={k: dict(t.failed) for k, t in tables.items()},
        unknown_cells=unknown_cells,
        unscored=unscored,
        unknown_codes={k: dict(t.unknown_codes) for k, t in tables.items() if t.unknown_codes},
        unmapped={k: dict(t.unmapped) for k, t in tables.items() if t.unmapped},
        duplicates={k: t.duplicates for k, t in tables.items() if t.duplicates},
        ignored_fields={k: list(t.ignored_fields) for k, t in tables.items() if t.ignored_fields},
    )


def dropped_columns(excluded: Exclusions, names: Mapping[str, str]) -> str:
    """Columns (label keys) no mode was read from, for the headline line: a table whose
    columns are named another way would otherwise score nothing without saying so up front."""
    parts = []
    for source, label in names.items():
        keys = [*excluded.unknown_codes.get(source, {}), *excluded.ignored_fields.get(source, [])]
        if keys:
            shown = ", ".join(keys[:6]) + (", …" if len(keys) > 6 else "")
            parts.append(f"{len(keys)} column(s) of {label} dropped ({shown})")
    return f"; {'; '.join(parts)}: see Excluded" if parts else ""
