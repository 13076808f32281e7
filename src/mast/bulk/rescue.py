"""Paid answers that neither the results file nor the response cache could take (a full
disk): written to the temporary folder, on another filesystem more often than not, so that
the money is not spent twice; and one true sentence about where they are.

>>> from mast.judge.annotation import Annotation
>>> from mast.traces.model import FailureVector
>>> ann = Annotation(trace_id="t1", status="ok", taxonomy="MAST 1.0", vector=FailureVector())
>>> rescue([ann], Path("results.jsonl"), cached=True)
'the response cache holds the answers of the 1 record(s) not written: the rerun uses them free'
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from mast.judge.annotation import Annotation

__all__ = ["rescue"]


def rescue(unwritten: Sequence[Annotation], results: Path, *, cached: bool) -> str:
    """Keep ``unwritten`` records (paid for, not in ``results``) and say where they are."""
    count = len(unwritten)
    if cached:
        return (
            f"the response cache holds the answers of the {count} record(s) not written: "
            "the rerun uses them free"
        )
    cost = sum(a.cost_usd or 0.0 for a in unwritten)
    name = f"mast-unsaved-{results.stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
    target = Path(tempfile.gettempdir()) / name
    try:
        with open(target, "wb") as handle:
            for ann in unwritten:
                handle.write(ann.model_dump_json().encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        target.unlink(missing_ok=True)
        return (
            f"{count} paid answer(s) (${cost:.4f}) could not be kept anywhere (not in "
            f"{results}, not in the response cache, and {target.parent} failed too: "
            f"{exc.strerror or exc}): the rerun pays for them again"
        )
    return (
        f"{count} paid answer(s) (${cost:.4f}) that neither {results} nor the response "
        f"cache could take are saved in {target}; after freeing space, add them with "
        f"`cat {target} >> {results}` before the rerun, or the rerun pays for them again"
    )
