"""Converters for two MAD-related shapes that carry no labels: a MAD-shaped run record
(mast-lint's fresh runs) and a MetaGPT run record on its own."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from mast.errors import TraceFormatError
from mast.traces.loaders._records import _from_log, _mas_and_benchmark, _opt_str
from mast.traces.model import Trace

__all__ = ["CONVERTERS", "mad_run", "metagpt"]


def mad_run(record: Mapping[str, Any]) -> Trace:
    """A MAD-shaped run without labels (``trace_id``, ``mas_name``, ``benchmark_name``,
    ``round``, ``trace``: the log text, or a run record serialized as a string)."""
    if not isinstance(record["trace"], str):
        raise TraceFormatError(
            f"field 'trace' is a {type(record['trace']).__name__}, not the run as text",
            format="mad-run",
            expected="'trace': the log text or a JSON string of the run record",
        )
    system, benchmark, quirks = _mas_and_benchmark(record)
    trace_id = record.get("trace_id")
    return _from_log(
        record["trace"],
        framework=system,
        id=f"mad-run/{trace_id}" if trace_id is not None else "",
        system=system,
        benchmark=benchmark,
        metadata={"mad_trace_id": trace_id, "round": _opt_str(record.get("round")), **quirks},
    )


def metagpt(record: Mapping[str, Any]) -> Trace:
    """A MetaGPT run record on its own: ``{run_id, prompt, content: "<log>", cost, …}``; the
    prompt is the task, the log the steps (as inside a MAD record)."""
    run_id = record.get("run_id")
    return _from_log(
        json.dumps(dict(record), ensure_ascii=False),
        framework="MetaGPT",
        id=f"metagpt/{run_id}" if run_id is not None else "",
        system="MetaGPT",
        metadata={k: v for k, v in record.items() if k not in ("content", "prompt")},
    )


CONVERTERS: dict[str, Callable[[Any], Trace]] = {"mad-run": mad_run, "metagpt": metagpt}
