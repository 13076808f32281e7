"""Background fsync of the results file: every record durable by close, none waited for on
the event loop, and a failed fsync never silent."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

import mast.bulk.syncer as syncer
from mast.bulk.store import ResultsStore, read_annotations
from mast.judge.annotation import Annotation
from mast.traces.model import FailureVector


def ann(i: int) -> Annotation:
    return Annotation(
        trace_id=f"t{i}", status="ok", taxonomy="MAST 1.0", vector=FailureVector({"1.1": True})
    )


def test_records_are_synced_in_another_thread_and_all_there_after_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        where.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(syncer.os, "fsync", spy)
    path = tmp_path / "r.jsonl"
    store = ResultsStore(path, background_fsync=True)
    opened = len(where)  # the new file's folder is synced on opening, as before
    for i in range(50):
        store.append(ann(i))
        # Flushed at once: a reader (or a killed process) sees the line already.
        assert path.read_bytes().count(b"\n") == i + 1
    assert store._syncer is not None
    store._syncer.close()
    during = where[opened:]
    store.close()
    assert during and all(name.startswith("mast-fsync") for name in during)
    assert len(during) <= 50  # coalesced: never more fsyncs than lines
    assert [a.trace_id for a in read_annotations(path)] == [f"t{i}" for i in range(50)]


def test_a_failed_background_fsync_shows_at_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(syncer.os, "fsync", broken)
    store = ResultsStore(tmp_path / "r.jsonl", background_fsync=True)
    store.append(ann(0))
    assert store._syncer is not None
    store._syncer.close()  # let the failed fsync finish
    with pytest.raises(OSError, match="I/O error"):
        store.append(ann(1))
    store.close()  # nothing cost money: no ledger to write beside the file


def test_without_background_each_append_is_fsynced_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = os.fsync
    monkeypatch.setattr("mast.bulk.store.os.fsync", lambda fd: (calls.append("x"), real(fd))[1])
    with ResultsStore(tmp_path / "r.jsonl") as store:
        before = len(calls)
        store.append(ann(0))
        assert len(calls) == before + 1
