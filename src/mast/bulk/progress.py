"""A small progress line for bulk runs: done / failed / cached counts, rate, ETA and cost.

On a terminal it redraws one line on stderr (at most ten times a second). In a notebook it
prints a plain line now and then (every ``notebook_every`` seconds), since carriage returns
do not redraw there. Anywhere else (logs, CI, pipes) it stays quiet.

>>> import io
>>> out = io.StringIO()
>>> bar = Progress(3, mode="lines", stream=out)
>>> bar.advance(ok=1, cost=0.012); bar.close()
>>> "1/3" in out.getvalue() and "$0.0120" in out.getvalue()
True
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Literal, TextIO

__all__ = ["Progress", "format_duration"]

Mode = Literal["tty", "lines", "off"]


def format_duration(seconds: float) -> str:
    """``"42s"``, ``"3m05s"``, ``"2h10m"``.

    >>> format_duration(42.3), format_duration(185), format_duration(7800)
    ('42s', '3m05s', '2h10m')
    """
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _in_notebook() -> bool:
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()  # type: ignore[no-untyped-call,unused-ignore]
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def detect_mode(stream: TextIO, enabled: bool) -> Mode:
    """Which kind of progress output suits ``stream``."""
    if not enabled:
        return "off"
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return "tty"
    return "lines" if _in_notebook() else "off"


class Progress:
    """Counts and shows progress of ``total`` items (None = unknown total)."""

    def __init__(
        self,
        total: int | None,
        *,
        mode: Mode | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        notebook_every: float = 10.0,
        label: str = "annotate",
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode: Mode = mode or detect_mode(self.stream, enabled)
        self.total = total
        self.ok = 0
        self.failed = 0
        self.cached = 0
        self.skipped = 0
        self.cost = 0.0
        self.note = ""
        self.label = label
        self._clock = clock
        self._start = clock()
        self._last_draw = -1e9
        self._every = 0.1 if self.mode == "tty" else notebook_every
        self._width = 0

    @property
    def done(self) -> int:
        """Items finished in this run (ok or failed)."""
        return self.ok + self.failed

    def advance(
        self, *, ok: int = 0, failed: int = 0, cached: int = 0, skipped: int = 0, cost: float = 0.0
    ) -> None:
        """Count finished items and redraw if it is time."""
        self.ok += ok
        self.failed += failed
        self.cached += cached
        self.skipped += skipped
        self.cost += cost
        self._maybe_draw()

    def set_note(self, note: str) -> None:
        """A short status shown after the counts (e.g. "waiting for batch …")."""
        self.note = note
        self._maybe_draw(force=True)

    def line(self) -> str:
        """The progress text."""
        elapsed = self._clock() - self._start
        done = self.done
        position = done + self.skipped
        total = f"/{self.total}" if self.total is not None else ""
        parts = [f"{self.label} {position}{total}", f"ok {self.ok}", f"failed {self.failed}"]
        if self.cached:
            parts.append(f"cached {self.cached}")
        if self.skipped:
            parts.append(f"resumed {self.skipped}")
        rate = done / elapsed if elapsed > 0 else 0.0
        if done:
            parts.append(f"{rate * 60:.1f}/min" if rate < 1 else f"{rate:.1f}/s")
        if self.total is not None and rate > 0:
            parts.append(f"ETA {format_duration((self.total - position) / rate)}")
        parts.append(f"${self.cost:.4f}")
        if self.note:
            parts.append(self.note)
        return " | ".join(parts)

    def _maybe_draw(self, *, force: bool = False) -> None:
        if self.mode == "off":
            return
        now = self._clock()
        if not force and now - self._last_draw < self._every:
            return
        self._last_draw = now
        self._draw()

    def _draw(self, final: bool = False) -> None:
        text = self.line()
        if self.mode == "tty":
            pad = max(0, self._width - len(text))
            self._width = len(text)
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state (and end the terminal line)."""
        if self.mode != "off":
            self._draw(final=True)
            self.mode = "off"
