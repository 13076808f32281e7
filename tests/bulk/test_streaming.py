"""``annotate_many(keep=False)``: what ``mast annotate`` runs; memory holds no record."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import mast
from mast.judge.annotation import Annotation
from mast.traces.model import Step, Trace

N = 60


def _live_annotations() -> int:
    gc.collect()
    return sum(isinstance(o, Annotation) for o in gc.get_objects())


def _traces(seen: list[int]) -> Iterator[Trace]:
    """A lazy input that counts the annotations alive when its last trace is taken."""
    for i in range(N):
        if i == N - 1:
            seen.append(_live_annotations())
        yield Trace(id=f"t{i}", steps=[Step.make(0, f"hello number {i}", agent="a")])


def _run(out: Path, keep: bool, seen: list[int]) -> mast.AnnotationRun:
    return mast.annotate_many(
        _traces(seen), mast.Judge("heuristic"), out=out, keep=keep, progress=False, cache=False,
        concurrency=4, process_pool=False,
    )  # fmt: skip


def test_streaming_run_holds_no_annotation_list(tmp_path: Path) -> None:
    before = _live_annotations()
    seen: list[int] = []
    run = _run(tmp_path / "r.jsonl", False, seen)
    assert list(run) == [] and run.summary.done == N and run.summary.total == N
    assert seen[0] - before <= 8  # at most the ones in flight, not one per trace
    assert [a.trace_id for a in mast.read_annotations(tmp_path / "r.jsonl")] == [
        f"t{i}" for i in range(N)
    ]
    # The default keeps every record (and so the count above can fail).
    kept: list[int] = []
    run = _run(tmp_path / "kept.jsonl", True, kept)
    assert len(run) == N and kept[0] - before >= N - 8


def test_streaming_rerun_reads_no_record_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.jsonl"
    _run(out, False, [])
    validated: list[object] = []
    original = Annotation.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Annotation], obj: object, **kw: object) -> Annotation:
        validated.append(obj)
        return original(cls, obj, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Annotation, "model_validate", classmethod(counting))
    run = _run(out, False, [])
    assert run.summary.resumed == N and run.summary.done == 0 and run.summary.calls == 0
    assert validated == []
    run = _run(out, True, [])  # the default reads them back, to return them
    assert len(run) == N and len(validated) == N


def test_streaming_needs_a_results_file() -> None:
    with pytest.raises(ValueError, match="keep=False needs out="):
        mast.annotate_many([], mast.Judge("heuristic"), keep=False, progress=False, cache=False)
