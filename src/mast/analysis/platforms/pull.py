"""Resumable pulls: platform records appended to a JSON Lines file that ``mast annotate`` reads.

A pull writes one platform record per line (a Phoenix span, a Langfuse observation, a
LangSmith run), in the shape mast's loaders read for that platform, so every step keeps its
platform id and ``mast export`` puts the scores back on the right spans. Beside the output a
state file (``OUT.pull-state.json``) records the traces written whole and the listing cursor;
a pull that stops (a crash, a timeout, Ctrl-C) is resumed by running it again: traces already
written are not fetched again, and the listing goes on from the saved cursor.

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "pulled.jsonl"
>>> with PullWriter(out, platform="phoenix", trace_of=lambda r: r["trace"]) as w:
...     w.write_trace("t1", [{"trace": "t1", "name": "root"}])
...     w.done("t1")
1
True
>>> PullWriter(out, platform="phoenix").seen("t1")
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from mast.errors import MastError

__all__ = ["PullReport", "PullWriter", "parse_time"]


@dataclass
class PullReport:
    """What a pull wrote."""

    platform: str
    out: Path
    traces: int = 0
    """Traces written by this run."""
    records: int = 0
    """Records (spans / observations / runs) written by this run."""
    skipped: int = 0
    """Traces already in the output from an earlier run (resumed)."""
    complete: bool = True
    """False when the limit stopped the listing before its end."""
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the command line."""
        text = (
            f"pulled {self.traces} trace(s) ({self.records} record(s)) from {self.platform} "
            f"into {self.out}; {self.skipped} already there from an earlier pull"
        )
        return text + "".join(f"; {n}" for n in self.notes)


class PullWriter:
    """Appends whole traces to ``out`` and remembers which are done (see the module doc)."""

    def __init__(
        self,
        out: str | Path,
        *,
        platform: str,
        query: Mapping[str, Any] | None = None,
        trace_of: Callable[[Any], object] | None = None,
    ):
        self.out = Path(out)
        self.trace_of = trace_of
        self.state_path = self.out.with_name(self.out.name + ".pull-state.json")
        self.platform = platform
        self.query = dict(query or {})
        self._done: set[str] = set()
        self.cursor: str | None = None
        self._handle: Any = None
        if self.state_path.exists():
            try:
                state = json.loads(self.state_path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise MastError(
                    f"{self.state_path}: the pull state is not JSON ({exc}); delete it (and "
                    f"{self.out}) to pull again from the start"
                ) from exc
            if state.get("platform") != platform or (query and state.get("query") != self.query):
                raise MastError(
                    f"{self.state_path}: {self.out} was pulled with other settings "
                    f"({state.get('platform')}, {state.get('query')}); pull into another "
                    "file, or delete both to start again"
                )
            self._done = set(state.get("done") or [])
            self.cursor = state.get("cursor")
        elif self.out.exists() and self.out.stat().st_size:
            raise MastError(
                f"{self.out} exists but has no pull state beside it; pull into a new file "
                "(a pull appends, it never rewrites a file it did not start)"
            )

    def __enter__(self) -> PullWriter:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._truncate_torn_tail()
        self._handle = open(self.out, "a", encoding="utf-8")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._save()

    def _truncate_torn_tail(self) -> None:
        # A crash between a trace's lines and its state entry leaves records of an unfinished
        # trace (and maybe a torn last line): they are dropped, so the rerun writes that trace
        # again whole and no record appears twice.
        if not self.out.exists() or self.trace_of is None:
            return
        data = self.out.read_bytes()
        keep: list[bytes] = []
        dropped = False
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                trace = self.trace_of(json.loads(line))
            except ValueError:
                trace = None
            if trace is not None and str(trace) in self._done:
                keep.append(line + b"\n")
            else:
                dropped = True
        if dropped:
            tmp = self.out.with_name(self.out.name + ".tmp")
            tmp.write_bytes(b"".join(keep))
            os.replace(tmp, self.out)

    def seen(self, trace_id: str) -> bool:
        """Whether ``trace_id`` was written whole by an earlier run."""
        return trace_id in self._done

    def write_trace(self, trace_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        """Append the records of one trace; returns how many."""
        lines = [json.dumps(r, ensure_ascii=False, default=str) for r in records]
        self._handle.write("".join(line + "\n" for line in lines))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        return len(lines)

    def done(self, trace_id: str, cursor: str | None = None) -> bool:
        """Record ``trace_id`` as written (and the listing cursor reached)."""
        self._done.add(trace_id)
        if cursor is not None:
            self.cursor = cursor
        self._save()
        return True

    def _save(self) -> None:
        state = {
            "platform": self.platform,
            "query": self.query,
            "cursor": self.cursor,
            "done": sorted(self._done),
        }
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, self.state_path)


def parse_time(value: str | datetime | None) -> datetime | None:
    """An ISO 8601 time (a date alone is midnight UTC); naive times are UTC."""
    from datetime import timezone

    if value is None or isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise MastError(
                f"{value!r} is not an ISO 8601 time; write e.g. 2026-11-30 or 2026-11-30T12:00:00Z"
            ) from exc
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment
