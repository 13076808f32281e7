"""A full disk under the results file and the cache: no traceback, a true message, and no
answer paid for twice because the disk filled (issue 33)."""

from __future__ import annotations

import errno
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.bulk.cache import CacheWarning, ResponseCache
from mast.bulk.store import ResultsStore
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace

ANSWER = verdict_json(load_taxonomy().codes, ("1.2",))


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where unsaved answers are kept
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield
    tempfile.tempdir = None


def traces(n: int) -> list[Trace]:
    return [
        Trace(id=f"t{i}", task=f"Task {i}", steps=[Step.make(0, f"work {i} " * 40, agent="a")])
        for i in range(n)
    ]


def judge(server: FakeLLMServer) -> mast.Judge:
    return mast.Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key="k", fewshot=0)


class _FillingFile:
    """A results file on a disk that fills after ``room`` bytes: writes fail with ENOSPC,
    and the bytes that fit are written (a torn line), as a real full disk does."""

    def __init__(self, real: Any, room: int) -> None:
        self.real = real
        self.room = room

    def write(self, data: bytes) -> int:
        if len(data) > self.room:
            self.real.write(data[: self.room])
            self.real.flush()
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return int(self.real.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_full_disk_ends_cleanly_and_keeps_every_paid_answer(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.default = Reply.text(ANSWER, usage={"input": 2000, "output": 300})
    out = tmp_path / "out" / "results.jsonl"
    opened = ResultsStore.__init__

    def small_disk(self: ResultsStore, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        self._file = _FillingFile(self._file, room=9000)  # type: ignore[assignment]

    monkeypatch.setattr(ResultsStore, "__init__", small_disk)
    cache = ResponseCache(tmp_path / "cache")
    cache._db.execute("PRAGMA query_only = ON")  # the cache cannot store anything either
    with pytest.warns(CacheWarning, match="cannot use the response cache"):
        run = mast.annotate_many(
            traces(6), judge(fake_llm), out=out, cache=cache, on_stop="return", concurrency=1
        )
    cache.close()
    summary = run.summary
    paid = len(fake_llm.completions)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["status"] == "ok" for line in lines)  # the torn line is cut
    assert summary.stopped == "output" and 1 <= len(lines) < paid
    message = summary.stop_message or ""
    assert "No space left" in message and "rerun uses them free" not in message
    kept = list((tmp_path / "tmp").glob("mast-unsaved-results-*.jsonl"))
    assert len(kept) == 1 and str(kept[0]) in message
    rescued = [json.loads(line)["trace_id"] for line in kept[0].read_text().splitlines()]
    assert len(lines) + len(rescued) == paid  # every paid answer is somewhere
    assert summary.cost_usd == pytest.approx(sum(a.cost_usd or 0 for a in run))

    # After freeing space: add the kept answers as the message says; the rerun pays only
    # for the traces never attempted.
    monkeypatch.setattr(ResultsStore, "__init__", opened)
    with out.open("ab") as handle:
        handle.write(kept[0].read_bytes())
    again = mast.annotate_many(traces(6), judge(fake_llm), out=out, cache=tmp_path / "c2")
    assert all(a.ok for a in again)
    assert len(fake_llm.completions) - paid == 6 - paid


def test_nothing_kept_anywhere_is_said_plainly(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.default = Reply.text(ANSWER)
    opened = ResultsStore.__init__

    def small_disk(self: ResultsStore, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        self._file = _FillingFile(self._file, room=0)  # type: ignore[assignment]

    monkeypatch.setattr(ResultsStore, "__init__", small_disk)
    missing = str(tmp_path / "missing" / "tmp")  # cannot be written
    monkeypatch.setattr(tempfile, "gettempdir", lambda: missing)
    run = mast.annotate_many(
        traces(2), judge(fake_llm), out=tmp_path / "r.jsonl", cache=False, on_stop="return"
    )
    message = run.summary.stop_message or ""
    assert "could not be kept anywhere" in message and "pays for them again" in message


def _tmpfs(path: Path) -> bool:
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    place = tmp_path / "small"
    try:
        mounted = _tmpfs(place)
    except OSError:
        mounted = False
    if not mounted:
        pytest.skip("cannot mount a tmpfs here (the test above simulates the full disk)")
    try:
        yield place
    finally:
        subprocess.run(["umount", str(place)], check=False)


def test_a_real_full_filesystem(fake_llm: FakeLLMServer, small_filesystem: Path) -> None:
    # the results file and the cache on a 64 KiB tmpfs: no traceback from closing the
    # store, and the command says where the paid answers are
    fake_llm.default = Reply.text(ANSWER)
    inputs = small_filesystem.parent / "traces.jsonl"
    inputs.write_text("\n".join(t.model_dump_json() for t in traces(40)) + "\n")
    done = subprocess.run(
        ["mast", "annotate", str(inputs), "--model", "openai/gpt-4.1", "--base-url",
         fake_llm.openai_base_url, "--out", str(small_filesystem / "results.jsonl"),
         "--cache", str(small_filesystem / "cache"), "--fewshot", "0"],
        capture_output=True, text=True, check=False, timeout=300,
        env={**__import__("os").environ, "OPENAI_API_KEY": "k"},
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert "saved in" in done.stderr or "response cache holds" in done.stderr
