"""The response cache: what the key contains (and not), storage, charging, persistence."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mast.bulk.cache import CACHE_FILE, ResponseCache, cache_key, default_cache_dir
from mast.judge.judge import Judge
from mast.judge.prompt.render import render
from mast.judge.providers import Completion
from mast.judge.providers.usage import Usage
from mast.traces.model import Step, Trace

TRACE = Trace(id="t", steps=[Step.make(0, "hello", agent="a"), Step.make(1, "bye", agent="b")])


def key_of(judge: Judge, trace: Trace = TRACE) -> str:
    prompt = render(trace, taxonomy=judge.taxonomy, examples=judge.examples)
    assert judge.provider is not None and judge.call_config is not None
    return cache_key(
        provider=judge.provider_name,
        body=judge.provider.request_body(prompt, judge.call_config),
        taxonomy=judge.taxonomy.label,
        prompt_hash=prompt.prompt_hash,
    )


def make(model: str = "openai/gpt-4o-mini", **kw: object) -> Judge:
    kw.setdefault("fewshot", 0)
    kw.setdefault("api_key", "sk-cache-test-000000000000000000")
    return Judge(model, **kw)  # type: ignore[arg-type]


def test_key_changes_with_what_changes_the_answer() -> None:
    base = key_of(make(base_url="http://127.0.0.1:1/v1"))
    assert key_of(make(base_url="http://127.0.0.1:1/v1")) == base  # deterministic
    other_trace = Trace(id="t", steps=[Step.make(0, "hello!", agent="a")])
    different = [
        key_of(make("openai/gpt-4.1", base_url="http://127.0.0.1:1/v1")),
        key_of(make(base_url="http://127.0.0.1:1/v1", temperature=0.7)),
        key_of(make(base_url="http://127.0.0.1:1/v1", max_tokens=123)),
        key_of(make(base_url="http://127.0.0.1:1/v1", fewshot=1)),
        key_of(make(base_url="http://127.0.0.1:1/v1"), other_trace),
    ]
    assert len({base, *different}) == len(different) + 1


def test_key_ignores_transport_settings() -> None:
    base = key_of(make(base_url="http://127.0.0.1:1/v1"))
    assert key_of(make(base_url="http://localhost:9999/v1")) == base
    assert key_of(make(base_url="http://127.0.0.1:1/v1", timeout=5.0)) == base
    assert key_of(make(base_url="http://127.0.0.1:1/v1", api_key="sk-other-key-1111")) == base


def test_key_includes_taxonomy_and_provider() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    k = cache_key(provider="openai", body=body, taxonomy="MAST 1.0")
    assert k != cache_key(provider="anthropic", body=body, taxonomy="MAST 1.0")
    assert k != cache_key(provider="openai", body=body, taxonomy="MAST 2.0")


def completion(text: str = '{"a": 1}') -> Completion:
    return Completion(
        text=text,
        usage=Usage(input_tokens=1000, cached_input_tokens=200, output_tokens=50),
        model="gpt-4o-mini-2024",
        response_id="chatcmpl-1",
        latency_s=1.25,
        finish_reason="stop",
    )


def test_put_get_charge_and_reopen(tmp_path: Path) -> None:
    with ResponseCache(tmp_path) as cache:
        assert cache.get("k") is None
        cache.put("k", completion(), provider="openai", model="gpt-4o-mini", prompt_hash="ph")
        hit = cache.get("k")
        assert hit is not None and not hit.charged and not hit.batch
        assert hit.completion == completion()
        cache.mark_charged(["k"])
        # A second put does not reset what was charged (a batch collected twice).
        cache.put("k", completion("other"), provider="openai", model="gpt-4o-mini", batch=True)
        assert len(cache) == 1
    assert (tmp_path / CACHE_FILE).is_file()
    with ResponseCache(tmp_path / CACHE_FILE) as cache:
        hit = cache.get("k")
        assert hit is not None and hit.charged and hit.completion.text == '{"a": 1}'
        cache.put("k", completion("new"), provider="openai", model="gpt-4o-mini", replace=True)
        assert cache.get("k").completion.text == "new"  # type: ignore[union-attr]
        cache.delete("k")
        assert cache.get("k") is None


def test_default_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_CACHE_DIR", "/tmp/somewhere")
    assert default_cache_dir() == Path("/tmp/somewhere")
    monkeypatch.delenv("MAST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg")
    assert default_cache_dir() == Path("/tmp/xdg/mast")


def test_unusable_cache_location_says_how_to_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(Exception, match="--no-cache"):
        ResponseCache(blocker / "sub")


# Ray actors (and shards) that start together open one new cache at once. SQLite refuses
# the journal-mode switch to all but one of them at once, without waiting its timeout: a
# worker then died with "database is locked" (seen in CI, test_distributed). In children, as
# the actors are; each opens cache{i} at the same moment as the others.
_OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from mast.bulk.cache import ResponseCache
root, start = Path(sys.argv[1]), float(sys.argv[2])
for i in range(20):
    time.sleep(max(0.0, start + 0.1 * i - time.time()))
    ResponseCache(root / f"cache{i}")
"""


def test_workers_opening_a_new_cache_at_once_all_open_it(tmp_path: Path) -> None:
    start = time.time() + 3.0  # every worker has imported mast by then
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, str(tmp_path), str(start)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    errors = [w.communicate(timeout=120)[1] for w in workers]
    failed = [err for w, err in zip(workers, errors, strict=True) if w.returncode != 0]
    assert not failed, failed[0][-2000:]
