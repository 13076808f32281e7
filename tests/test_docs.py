"""The documentation site (docs/): every public name has a reference entry, every Python
example runs offline, and every ``mast`` command line shown is one the CLI accepts.

Python blocks of a page run in order in one namespace, in a folder holding the files the
examples name (``run.json``, ``exports/``, the MAD human sample under its dataset name), with
``openai/…`` judges pointed at the local fake server. A block that cannot run here (a
platform server, the Hugging Face Hub, a Ray cluster) is preceded by
``<!-- not run: why -->``, and the test counts those. ``mast build --strict`` runs in
``.ci/run``, which fails on a broken link or a docstring that does not render.
"""

from __future__ import annotations

import re
import shlex
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import mast
from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.cli import _build_parser
from mast.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# The README's examples are held to the same rule as the pages'.
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if p.parent.name != "reference")]
FIXTURES = Path(__file__).parent / "fixtures"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run: ([^>]+) -->\s*$")


def code_blocks(page: Path) -> Iterator[tuple[str, str, str | None]]:
    """(language, code, reason it is not run or None) for each fenced block of ``page``."""
    text = page.read_text(encoding="utf-8")
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
        skip = _NOT_RUN.search(before)
        yield match.group(1), match.group(2), skip.group(1) if skip else None


def command_lines(code: str) -> Iterator[list[str]]:
    """The ``mast …`` commands of a shell block, continuation lines joined."""
    for line in code.replace("\\\n", " ").splitlines():
        for part in re.split(r"\s(?:&&|\|\|?|;)\s", line):
            words = shlex.split(part, comments=True)
            if words[:1] == ["mast"]:
                yield words[1:]


def test_every_public_name_has_a_reference_entry() -> None:
    reference = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    entries = set(re.findall(r"^::: (\S+)$", reference, re.MULTILINE))
    named = {entry.rsplit(".", 1)[-1] for entry in entries} | entries
    missing = [
        n
        for n in mast.__all__
        if n != "__version__" and n not in named and f"mast.{n}" not in named
    ]
    assert not missing, f"not in docs/reference/api.md (run scripts/docs_reference.py): {missing}"


@pytest.fixture
def example_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> Path:
    shutil.copy(FIXTURES / "chat" / "messages_list.json", tmp_path / "run.json")
    exports = tmp_path / "exports"
    exports.mkdir()
    for name in ("messages_object.json", "traces.jsonl"):
        shutil.copy(FIXTURES / "chat" / name, exports / name)
    shutil.copy(
        FIXTURES / "mad" / "human_sample.json", tmp_path / "MAD_human_labelled_dataset.json"
    )
    fake_llm.default = Reply.text(verdict_json(load_taxonomy().codes, ("1.3",)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example")
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_examples_run(page: Path, example_folder: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    with warnings.catch_warnings():  # a warning is printed, as in a user's session
        warnings.simplefilter("default")
        for language, code, skip in code_blocks(page):
            if language == "python" and not skip:
                exec(compile(code, f"{page.name}:example", "exec"), namespace)


def test_most_python_examples_run() -> None:
    blocks = [b for p in PAGES for b in code_blocks(p) if b[0] == "python"]
    skipped = [b for b in blocks if b[2]]
    assert blocks and len(skipped) <= len(blocks) // 3, [b[2] for b in skipped]
    for _, _, reason in skipped:
        assert len(reason.split()) >= 2, "say why a block is not run"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_command_lines_are_accepted_by_the_cli(page: Path) -> None:
    parser = _build_parser()
    for language, code, _ in code_blocks(page):
        if language not in ("bash", "sh", "console"):
            continue
        for argv in command_lines(code):
            try:
                parser.parse_args(argv)
            except SystemExit as exc:  # argparse reports the bad option on stderr
                pytest.fail(f"{page.name}: `mast {shlex.join(argv)}` is refused ({exc})")
