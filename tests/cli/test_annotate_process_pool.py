"""``mast annotate --no-process-pool`` keeps long traces in a thread (the pool is on by
default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mast.bulk.runner as runner_mod
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.cli import main
from mast.judge.offload.pool import ProcessPool
from mast.taxonomy import load_taxonomy


@pytest.mark.parametrize(("flag", "setting"), [([], True), (["--no-process-pool"], False)])
def test_the_flag_reaches_the_run(
    flag: list[str],
    setting: bool,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool | int | ProcessPool] = []
    real = runner_mod._process_pool

    def spy(value: bool | int | ProcessPool, concurrency: int) -> ProcessPool | None:
        seen.append(value)
        return real(value, concurrency)

    monkeypatch.setattr(runner_mod, "_process_pool", spy)
    fake_llm.responder = lambda _: Reply.text(verdict_json(load_taxonomy().codes))
    chats = tmp_path / "chats.jsonl"
    messages = [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}]
    chats.write_text(json.dumps({"id": "c1", "messages": messages}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    server = ["--base-url", fake_llm.openai_base_url, "--fewshot", "0", "--quiet", "--no-cache"]
    code = main(
        ["annotate", str(chats), *flag, "--model", "openai/gpt-4o-mini", *server, "--out", str(out)]
    )
    assert code == 0 and seen == [setting]
    assert json.loads(out.read_text(encoding="utf-8"))["status"] == "ok"
