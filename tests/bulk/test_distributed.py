"""The Ray engine on a real local Ray cluster (``ray.init(num_cpus=2)``) against the local
fake OpenAI server: one record per trace, one shared request rate, resume after a killed
worker, the same records as a local run, and the CLI (``--engine ray``, ``mast merge``)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'mast-annotator[ray]')")

import mast  # noqa: E402
from fake_llm_server import FakeLLMServer, Recorded, Reply, verdict_json  # noqa: E402
from mast import distributed  # noqa: E402
from mast.cli import main as cli_main  # noqa: E402
from mast.taxonomy import load_taxonomy  # noqa: E402

CODES = load_taxonomy().codes
KEY = "sk-distributed-test-key-000000000000ZZ"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray instance for the module (starting one takes a few seconds)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "default-cache"))


def number_of(request: Recorded) -> int:
    text = json.dumps(request.body)
    start = text.index("Task number ") + len("Task number ")
    return int(text[start : text.index(":", start)])


def present_in(n: int) -> tuple[str, ...]:
    """Which modes the scripted judge finds in trace number ``n``."""
    return tuple(c for i, c in enumerate(CODES) if (n + i) % 5 == 0)


def scripted(request: Recorded) -> Reply:
    """A deterministic answer per trace: which modes are present depends on its number."""
    n = number_of(request)
    return Reply.text(verdict_json(CODES, present_in(n), summary=f"trace {n}"))


def mad_file(path: Path, numbers: range) -> Path:
    """A MAD full-format JSON array (the shape of MAD_full_dataset.json) of small traces."""
    records = [
        {
            "mas_name": "AG2",
            "llm_name": "gpt-4o",
            "benchmark_name": "GSM",
            "trace_id": n,
            "trace": {
                "trajectory": f"Task number {n}: add two numbers.\n"
                f"user (to solver):\nPlease add {n} and {n + 1}.\n"
                f"solver (to user):\nThe sum is {2 * n + 1}.\n"
            },
            # The o1 labels agree with the scripted judge, so `mast agree` has data.
            "mast_annotation": {c: int(c in present_in(n)) for c in CODES},
        }
        for n in numbers
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def judge_for(server: FakeLLMServer) -> mast.Judge:
    return mast.Judge("openai/gpt-4o-mini", base_url=server.openai_base_url, api_key=KEY, fewshot=0)


def by_key(records: list[mast.Annotation]) -> dict[tuple[str, Any], dict[str, Any]]:
    return {(a.trace_id, a.judge.get("config_hash")): dict(a.vector) for a in records}


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(
        (sum(1 for t in times[i:] if t < start + window) for i, start in enumerate(times)),
        default=0,
    )


def inputs_in(tmp_path: Path, n: int = 60) -> Path:
    """A folder with a MAD file of ``n - 10`` records and 10 single-trace chat files."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    mad_file(folder / "mad.json", range(n - 10))
    for k in range(n - 10, n):
        messages = [
            {"role": "user", "content": f"Task number {k}: add two numbers."},
            {"role": "assistant", "content": f"The sum is {2 * k + 1}."},
        ]
        (folder / f"chat-{k}.json").write_text(json.dumps({"messages": messages, "id": f"c{k}"}))
    return folder


def test_two_workers_one_record_per_trace_one_shared_rate_same_as_local(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.responder = scripted
    inputs = inputs_in(tmp_path)
    judge = judge_for(fake_llm)
    limit, window = 30, 3.0  # 10 requests a second
    run = distributed.annotate(
        [inputs],
        judge,
        out=tmp_path / "results",
        workers=2,
        concurrency=4,
        rpm=limit,
        rate_window=window,
        unit_size=5,
        progress=False,
    )
    records = mast.read_annotations(tmp_path / "results")
    assert len(records) == 60 and all(a.status == "ok" for a in records)
    assert len({a.trace_id for a in records}) == 60
    assert run.summary.done == 60 and not run.dead_workers and run.units_left == 0
    shards = sorted((tmp_path / "results").glob("shard-*.jsonl"))
    assert len(shards) == 2 and all(s.stat().st_size > 0 for s in shards)  # both worked
    # One limit for the cluster: never more than `limit` requests started in any window,
    # as the server saw them.
    starts = [r.started for r in fake_llm.completions]
    assert len(starts) == 60
    assert max_in_window(starts, window) <= limit
    # Two workers without the shared limiter would have sent far more in the first second.
    assert starts[-1] - starts[0] >= (60 - limit) / limit * window * 0.9

    # A plain local run over the same inputs gives the same keys and vectors.
    fake_llm.reset()
    fake_llm.responder = scripted
    local = mast.annotate_many(
        mast.load_traces(inputs), judge, out=tmp_path / "local.jsonl", progress=False
    )
    assert by_key(list(local)) == by_key(records)


def test_a_killed_worker_loses_nothing_after_the_rerun(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    # Slow answers, so that the kill lands while both workers have calls in flight.
    fake_llm.responder = lambda request: scripted(request).with_delay(0.05)
    inputs = inputs_in(tmp_path)
    out = tmp_path / "results"
    judge = judge_for(fake_llm)
    options: dict[str, Any] = dict(
        out=out, workers=2, concurrency=2, unit_size=4, max_restarts=0, progress=False
    )
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(run=distributed.annotate([inputs], judge, **options))
    )
    thread.start()
    deadline = time.monotonic() + 60
    while len(fake_llm.completions) < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    ray.kill(ray.get_actor(distributed.worker_name(out, 0)), no_restart=True)
    thread.join(timeout=120)
    assert not thread.is_alive()
    first = result["run"]
    assert first.dead_workers == [0]

    done_before = {a.trace_id for a in mast.read_annotations(out) if a.status == "ok"}
    asked_before = len(fake_llm.completions)
    second = distributed.annotate([inputs], judge, **options)
    rerun_requests = fake_llm.completions[asked_before:]
    # The rerun asks only for what had no ok record, and finishes everything.
    redone = {number_of(r) for r in rerun_requests}
    assert not {a for a in done_before if int(a.split("/")[-1].lstrip("c")) in redone}
    assert second.summary.resumed == len(done_before)
    records = mast.read_annotations(out)
    assert sorted(a.trace_id for a in records) == sorted({a.trace_id for a in records})
    assert len(records) == 60 and all(a.status == "ok" for a in records)

    # `mast merge` writes exactly one record per key.
    merged = tmp_path / "merged.jsonl"
    assert cli_main(["merge", str(out), "-o", str(merged)]) == 0
    lines = [json.loads(line) for line in merged.read_text().splitlines()]
    assert len(lines) == 60 == len({(r["trace_id"], r["judge"]["config_hash"]) for r in lines})


def test_cli_engine_ray_then_results_commands_read_the_folder(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.responder = scripted
    inputs = inputs_in(tmp_path, n=20)
    out = tmp_path / "results"
    argv = ["annotate", str(inputs), "--model", "openai/gpt-4o-mini"]
    argv += ["--base-url", fake_llm.openai_base_url, "--fewshot", "0", "-q"]
    argv += ["--out", str(out), "--engine", "ray", "--workers", "2"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        assert cli_main(argv) == 0
        printed = capsys.readouterr().out
        assert "20 trace(s): 20 annotated" in printed
        assert cli_main(argv) == 0  # the rerun resumes: nothing left to do
        assert "20 already done" in capsys.readouterr().out
    assert len(fake_llm.completions) == 20
    assert len(mast.read_annotations(out)) == 20
    # Commands that take results read the shard folder as one result set.
    report = tmp_path / "report.html"
    assert cli_main(["report", str(out), "--out", str(report), "--bootstrap", "0"]) == 0
    assert report.stat().st_size > 0
    capsys.readouterr()
    agree = ["agree", "--reference", str(inputs / "mad.json"), "--candidate", str(out)]
    assert cli_main([*agree, "--bootstrap", "0", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # The 10 MAD records carry o1 labels that the scripted judge reproduces.
    assert result["n_traces"] == 10 and result["pooled"]["kappa"] == pytest.approx(1.0)


# Ray Data warns about its own deprecated settings when it starts (not ours to fix).
@pytest.mark.filterwarnings("ignore:`use_:DeprecationWarning")
def test_a_ray_dataset_of_trace_records_is_annotated(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    data = pytest.importorskip("ray.data", reason="Ray Data needs pyarrow")
    fake_llm.responder = scripted
    rows = [
        {"id": f"d{n}", "messages": [{"role": "user", "content": f"Task number {n}: add."}]}
        for n in range(12)
    ]
    run = distributed.annotate(
        data.from_items(rows),
        judge_for(fake_llm),
        out=tmp_path / "results",
        workers=2,
        unit_size=4,
        progress=False,
    )
    records = mast.read_annotations(tmp_path / "results")
    assert run.summary.done == 12 and sorted(a.trace_id for a in records) == sorted(
        r["id"] for r in rows
    )
    assert all(a.vector.positives == list(present_in(int(a.trace_id[1:]))) for a in records)


def test_a_trace_read_by_two_units_is_annotated_once(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    # The MAD file is given twice (inside the folder and by name): its 50 records reach
    # the workers in two sets of units. Each trace must be paid for once, not once per unit.
    fake_llm.responder = lambda request: scripted(request).with_delay(0.02)
    inputs = inputs_in(tmp_path)
    run = distributed.annotate(
        [inputs, inputs / "mad.json"],
        judge_for(fake_llm),
        out=tmp_path / "results",
        workers=2,
        concurrency=2,
        unit_size=3,
        progress=False,
    )
    asked = sorted(number_of(r) for r in fake_llm.completions)
    assert asked == list(range(60))  # one request per trace
    records = mast.read_annotations(tmp_path / "results")
    assert len(records) == 60 and run.summary.done == 60
    duplicates = run.summary.duplicates
    assert len(duplicates) == 50 == len(set(duplicates))
    assert set(duplicates) <= {a.trace_id for a in records}
    assert "50 trace(s) read twice, annotated once" in run.summary.format()


def test_two_different_traces_with_one_id_stop_the_run_as_locally(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.responder = scripted
    folder = tmp_path / "inputs"
    folder.mkdir()
    for name, n in (("a", 1), ("b", 2)):
        messages = [{"role": "user", "content": f"Task number {n}: add."}]
        (folder / f"{name}.json").write_text(json.dumps({"messages": messages, "id": "same"}))
    run = distributed.annotate(
        [folder], judge_for(fake_llm), out=tmp_path / "results", workers=2, unit_size=1,
        progress=False,
        on_stop="return",
    )  # fmt: skip
    assert run.summary.stopped == "duplicate"
    assert "'same' occurs twice" in (run.summary.stop_message or "")
    assert "a.json" in (run.summary.stop_message or "")
    assert len(fake_llm.completions) <= 1


def test_samples_run_as_passes_with_the_keys_of_a_local_run(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.responder = scripted
    inputs = inputs_in(tmp_path, n=20)
    judge = mast.Judge(
        "openai/gpt-4o-mini", base_url=fake_llm.openai_base_url, api_key=KEY, fewshot=0,
        samples=2, temperature=0.7,
    )  # fmt: skip
    out = tmp_path / "results"
    run = distributed.annotate([inputs], judge, out=out, workers=2, unit_size=4, progress=False)
    records = mast.read_annotations(out)
    assert len(records) == 40 == len(fake_llm.completions) and run.summary.done == 40
    assert sorted(a.judge.get("sample", 0) for a in records) == [0] * 20 + [1] * 20
    # the same keys and vectors as a local run of the same judge
    local = mast.annotate_many(
        mast.load_traces(inputs), judge, out=tmp_path / "local.jsonl", progress=False
    )
    assert by_key(list(local)) == by_key(records)
    # a rerun resumes both samples: no new request
    asked = len(fake_llm.completions)
    again = distributed.annotate([inputs], judge, out=out, workers=2, progress=False)
    assert len(fake_llm.completions) == asked and again.summary.resumed == 40


def test_cli_ray_passes_ground_truth_and_samples_to_the_workers(
    cluster: None, tmp_path: Path, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.responder = lambda request: Reply.text(verdict_json(CODES, (), summary="s"))
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "itbench_layout"
    trial = tmp_path / "runs" / "trial-1"
    shutil.copytree(fixtures / "copied" / "run-a", trial)
    (trial / "config.toml").unlink()  # no ground truth found beside the trial
    truth = fixtures / "ground_truth" / "scenario_2" / "groundtruth.yaml"
    base = ["annotate", str(trial), "--model", "openai/gpt-4o-mini", "-q", "--fewshot", "0"]
    base += ["--base-url", fake_llm.openai_base_url, "--engine", "ray", "--workers", "1"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        assert cli_main([*base, "--out", str(tmp_path / "without")]) == 0
        assert "1 ITBench trial(s) without ground truth" in capsys.readouterr().out
        argv = [*base, "--out", str(tmp_path / "with"), "--ground-truth", str(truth)]
        assert cli_main([*argv, "--samples", "2", "--temperature", "0.7"]) == 0
    printed = capsys.readouterr().out
    assert "without ground truth" not in printed
    assert "mast agree --consensus" in printed
    records = mast.read_annotations(tmp_path / "with")
    assert sorted(a.judge.get("sample", 0) for a in records) == [0, 1]
    assert len(fake_llm.completions) == 3  # one without ground truth, two samples with it
