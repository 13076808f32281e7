"""Trace-id maps for label tables whose ids follow another scheme (``mad-3`` for
``mad-human/3``): a two-column file or a pattern, applied to a source's label table.

>>> rename = id_pattern("mad-{n}=mad-human/{n}")
>>> rename("mad-3"), rename("other")
('mad-human/3', 'other')
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from mast.agree.table import LabelTable
from mast.errors import StatsInputError

__all__ = ["id_map_file", "id_pattern", "rename_table"]

Rename = Callable[[str], str]


def id_pattern(spec: str) -> Rename:
    """``"FROM=TO"`` with one ``{name}`` placeholder on each side: ids matching FROM become
    TO (``"mad-{n}=mad-human/{n}"``); other ids are kept."""
    if spec.count("=") != 1:
        raise StatsInputError(
            f"--id-pattern {spec!r}: expected FROM=TO, e.g. 'mad-{{n}}=mad/{{n}}'"
        )
    source, target = spec.split("=")
    names = re.findall(r"\{(\w+)\}", source)
    if len(names) != 1 or re.findall(r"\{(\w+)\}", target) != names:
        raise StatsInputError(
            f"--id-pattern {spec!r}: FROM and TO need the same one placeholder, e.g. "
            "'mad-{n}=mad-human/{n}'"
        )
    head, tail = source.split("{" + names[0] + "}")
    matcher = re.compile(re.escape(head) + "(.+?)" + re.escape(tail) + r"\Z")

    def rename(trace_id: str) -> str:
        found = matcher.match(trace_id)
        return target.replace("{" + names[0] + "}", found.group(1)) if found else trace_id

    return rename


def id_map_file(path: str | Path) -> Rename:
    """A two-column CSV/TSV (label-table id, trace id; a header row is allowed) or a JSON
    object ``{label-table id: trace id}``; ids not in it are kept."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise StatsInputError(f"--id-map {path}: cannot read it ({exc.strerror or exc})") from exc
    mapping: dict[str, str] = {}
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        if not isinstance(data, Mapping):
            raise StatsInputError(f"--id-map {path}: expected a JSON object {{id: trace id}}")
        mapping = {str(k): str(v) for k, v in data.items()}
    else:
        dialect = "excel-tab" if "\t" in text.splitlines()[0] else "excel"
        for n, row in enumerate(csv.reader(text.splitlines(), dialect=dialect), 1):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 2:
                raise StatsInputError(
                    f"--id-map {path}: line {n} has {len(row)} column(s); expected two "
                    "(the id in the label table, the trace id)"
                )
            mapping[row[0].strip()] = row[1].strip()
    return lambda trace_id: mapping.get(trace_id, trace_id)


def rename_table(table: LabelTable, rename: Rename) -> tuple[LabelTable, int]:
    """``table`` with its trace ids renamed, and how many changed; two ids renamed to one
    trace id are an error (the map would merge two traces' labels)."""
    ids = [rename(i) for i in table.ids]
    if len(set(ids)) < len(ids):
        seen: dict[str, str] = {}
        for old, new in zip(table.ids, ids, strict=True):
            if new in seen:
                raise StatsInputError(
                    f"{table.name}: the id map gives {seen[new]!r} and {old!r} the same trace id "
                    f"{new!r}"
                )
            seen[new] = old
    failed = {status: [rename(i) for i in found] for status, found in table.failed.items()}
    blocks = (
        None if table.blocks is None else {rename(k): rename(v) for k, v in table.blocks.items()}
    )
    changed = sum(old != new for old, new in zip(table.ids, ids, strict=True))
    return replace(table, ids=ids, failed=failed, blocks=blocks), changed
