"""Redactors for the process-pool tests. They live in a module of their own (not a test
module) so that a worker process can import them by name when it unpickles a job."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mast.privacy.redact import Redactor
from mast.traces.model import Trace


class GatedRedactor(Redactor):
    """Redacts the trace named "long" only once the file ``gate`` exists, and notes in
    ``log`` the process that did it. The gate is a file because the two sides of the
    wait may be different processes."""

    def __init__(self, gate: Path, log: Path) -> None:
        super().__init__()
        self.gate, self.log = str(gate), str(log)

    def redact_trace(self, trace: Trace) -> tuple[Trace, dict[str, int]]:
        if trace.id == "long":
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
            deadline = time.monotonic() + 20
            while not os.path.exists(self.gate):
                if time.monotonic() > deadline:
                    raise AssertionError("the small trace was never sent: the loop was blocked")
                time.sleep(0.01)
        return super().redact_trace(trace)


class CrashingRedactor(Redactor):
    """Kills any process but the one that made it (a worker dying mid-job)."""

    def __init__(self) -> None:
        super().__init__()
        self.home = os.getpid()

    def redact_trace(self, trace: Trace) -> tuple[Trace, dict[str, int]]:
        if os.getpid() != self.home:
            os._exit(3)
        return super().redact_trace(trace)


class ChattyRedactor(Redactor):
    """Prints while it works: a worker's stdout must not corrupt its replies."""

    def redact_trace(self, trace: Trace) -> tuple[Trace, dict[str, int]]:
        print("redacting", trace.id, "\n" * 3, "\x00\x01 binary-looking noise")
        return super().redact_trace(trace)
