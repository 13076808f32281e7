"""Labels out of a queue, in the label-table shape ``mast agree`` and ``mast validate`` read.

One row per (trace, labeller) with the labeller's newest version; one column per code with
``true`` / ``false``, and an empty cell (CSV) or ``null`` (JSONL) for "unsure" (unknown,
never "no"). Sampling weights go to a file of their own so the label table stays a table of
labels.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from mast.label.queue import LabelQueue, QueueError

__all__ = ["write_labels", "write_weights"]


def write_labels(queue: LabelQueue, out: str | Path) -> int:
    """Write ``queue``'s labels to ``out`` (``.csv``/``.tsv`` or ``.jsonl``); rows written."""
    out = Path(out)
    rows = list(queue.label_rows())
    columns = ["trace_id", "annotator", *queue.codes]
    if out.suffix in (".csv", ".tsv"):
        with out.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, delimiter="\t" if out.suffix == ".tsv" else ",")
            writer.writerow(columns)
            for row in rows:
                writer.writerow([_cell(row[c]) for c in columns])
    elif out.suffix in (".jsonl", ".ndjson"):
        with out.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps({c: row[c] for c in columns}) + "\n")
    else:
        raise QueueError(f"{out}: write labels to a .csv, .tsv or .jsonl file")
    return len(rows)


def write_weights(queue: LabelQueue, out: str | Path) -> None:
    """``trace_id,weight`` (1 / inclusion probability) for every trace of the queue."""
    with Path(out).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["trace_id", "weight"])
        for trace_id, weight in queue.weights().items():
            writer.writerow([trace_id, f"{weight:.6g}"])


def _cell(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)
