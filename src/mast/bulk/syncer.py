"""Make appended lines durable without making the event loop wait for the disk.

``os.fsync`` takes milliseconds on a real disk (more on a busy or networked one); doing it
for every record on the event loop holds up every other trace's network I/O meanwhile. A
:class:`BackgroundSync` does it in one thread: :meth:`~BackgroundSync.request` returns at
once; at most one fsync runs at a time, and one more follows it when lines were written
while it ran, so no written line waits longer than about two fsyncs to be on disk.

The line itself is written and flushed before ``request`` (so a killed process loses
nothing); what the background fsync adds is surviving a crash of the machine.

>>> import tempfile
>>> with tempfile.TemporaryFile() as fh:
...     sync = BackgroundSync(fh.fileno())
...     _ = fh.write(b"one line\\n"); fh.flush()
...     sync.request()
...     sync.close()
...     sync.syncs >= 1 and sync.error is None
True
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["BackgroundSync"]


class BackgroundSync:
    """Coalesced fsyncs of the file descriptor ``fd`` in a worker thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.syncs = 0  # fsyncs done
        self.error: OSError | None = None  # the first failed fsync, if any
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self._thread: ThreadPoolExecutor | None = None

    def request(self) -> None:
        """Make what was written so far durable, soon (returns at once)."""
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="mast-fsync")
        self._thread.submit(self._run)

    def _run(self) -> None:
        while True:
            try:
                os.fsync(self.fd)
                self.syncs += 1
            except OSError as exc:
                self.error = self.error or exc
            with self._lock:
                if not self._again:
                    self._running = False
                    return
                self._again = False

    def close(self) -> None:
        """Wait for the fsync under way (and the one it owes), then stop the thread. The
        caller closes the file after this, never before (its descriptor must stay valid)."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
