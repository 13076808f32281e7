"""Every shell block of the README and the docs pages runs, offline, and does what its page says.

A page's shell blocks (```bash, ```sh, ```console) run in order, one ``mast …`` command at a
time through ``mast.cli.main`` in this process, in a temporary folder holding the files the
examples name (``runs/``, ``Who_and_When/``, ``TRAIL/gaia.jsonl``, …: see ``_FOLDER``), with
``openai/…`` and ``anthropic/…`` judges pointed at the local fake server, which answers every
prompt with a well-formed verdict for the codes that prompt asks for. Each command must exit
with status 0 and leave what the page promises: every file or folder given to ``--out``,
``-o`` or ``--weights`` exists and is not empty, and the command's own check in ``_CHECKS``
holds (the traces ``inspect`` counts, the records ``annotate`` writes, the files ``validate``
names, the statistics ``agree`` prints).

``mast label serve`` runs the app until Ctrl+C, so it runs as a subprocess on a free port
(the page's 8765 may be taken on a shared machine), two labellers answer every trace through
its forms as a browser does, and the test stops it with SIGINT.

A block that cannot run here (installing from the network, a platform server, a Ray
cluster, a download from the Hugging Face Hub) is preceded by ``<!-- not run: why -->``; the
test counts those and fails on a marker without a reason, and on a block that holds a
command other than ``mast`` without one.
"""

from __future__ import annotations

import argparse
import contextlib
import http.cookiejar
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fake_llm_server import FakeLLMServer, Recorded, Reply
from mast.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIXTURES = Path(__file__).parent / "fixtures"
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if p.parent.name != "reference")]
SHELLS = ("bash", "sh", "console")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run:(.*?)-->\s*$")

# The files the examples name, made from the bundled examples and the test fixtures.
_FOLDER: dict[str, Path] = {
    "runs": ROOT / "src" / "mast" / "traces" / "examples",  # 3 AG2 runs, 4 MAD records
    "labelled_traces.json": FIXTURES / "mad" / "human_sample.json",  # 4 human-labelled
    "Who_and_When/Hand-Crafted": FIXTURES / "whoandwhen_attr" / "Hand-Crafted",
    "Who_and_When/Algorithm-Generated": FIXTURES / "whoandwhen_attr" / "Algorithm-Generated",
    "TRAIL/gaia.jsonl": FIXTURES / "trail" / "gaia_rows.jsonl",  # 2 TRAIL rows
}
# What a page takes as done before its first command: the labelling page starts from a
# judge's results on the traces it samples.
_BEFORE: dict[str, list[list[str]]] = {
    "labelling.md": [["annotate", "runs/", "--model", "openai/gpt-4.1", "--out", "results.jsonl"]],
}
# Pages whose blocks are alternatives (one platform each): each block runs in a folder of
# its own, so that one platform's pulled.jsonl is not another's.
_BLOCK_BY_BLOCK = {"platforms.md"}
_RUNS = 7  # traces in runs/
_BUNDLED = 7  # traces `mast inspect` reads without an input (the bundled examples)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    code: str
    reason: str | None  # why it is not run, or None

    @property
    def name(self) -> str:
        return f"{self.page.name}:{self.line}"


def shell_blocks(page: Path) -> list[Block]:
    """The shell blocks of ``page`` with their line and their not-run reason."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group(1) not in SHELLS:
            continue
        before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
        marker = _NOT_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(page, line, match.group(2), marker.group(1) if marker else None))
    return blocks


def commands(code: str) -> Iterator[list[str]]:
    """The commands of a shell block: continuation lines joined, comments dropped, ``&&`` and
    ``;`` separating commands."""
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", ";"):
                if command:
                    yield command
                command = []
            else:
                command.append(word)


BLOCKS = [b for p in PAGES for b in shell_blocks(p)]
RUN = [b for b in BLOCKS if b.reason is None]


# -- the judge: a verdict for whatever codes a prompt asks about --------------------------

_CODES = re.compile(r"for each of these codes: (\d+(?:\.\d+)*(?:, \d+(?:\.\d+)*)*)")
_STEP = re.compile(r"^\[(s\d+)\] agent=(\S+)[^\n]*\n([^\n]*)", re.MULTILINE)


def _docs_judge(request: Recorded) -> Reply:
    """An answer in the shape the prompt asks for: attribution (``found``), or one verdict
    over the prompt's codes with its first code present, quoting a step the trace has."""
    messages = request.body.get("messages") or []
    system = request.body.get("system") or ""
    if not isinstance(system, str):  # Anthropic: a list of text blocks
        system = " ".join(block.get("text", "") for block in system)
    texts = [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
             for m in messages]  # fmt: skip
    prompt = "\n".join([system, *texts])
    # the second step of the trace (the first is often the task), and a quote from its text
    steps = [s for s in _STEP.findall(prompt.split("BEGIN MAST-TRACE", 1)[-1]) if s[2].strip()]
    step, agent, text = steps[min(1, len(steps) - 1)] if steps else ("s1", "assistant", "")
    quote = "" if text.startswith("[") else text.strip()[:40].strip()
    if '"found"' in prompt:
        answer = {"found": True, "agent": agent, "step_id": step, "reason": "r", "quote": quote}
        return Reply.text(json.dumps(answer))
    found = _CODES.search(prompt)
    assert found, "the docs judge cannot tell which codes the prompt asks for"
    codes = [c.strip() for c in found.group(1).split(",")]
    modes: dict[str, object] = {code: False for code in codes}
    modes[codes[0]] = {
        "evidence": [{"step_id": step, "quote": quote}],
        "rationale": "the docs judge flags the first mode",
        "present": True,
        "confidence": 0.8,
        "first_step": step,
        "agent": agent,
    }
    verdict = {
        "summary": "one mode shows",
        "modes": modes,
        "decisive_error": {
            "agent": agent,
            "step_id": step,
            "modes": [codes[0]],
            "reason": "r",
            "quote": quote,
        },
        "task_completed": False,
    }
    return Reply.text(json.dumps(verdict))


@pytest.fixture
def docs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer) -> Path:
    for name, source in _FOLDER.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("README.md"))
        else:
            shutil.copy(source, target)
    fake_llm.responder = _docs_judge
    monkeypatch.chdir(tmp_path)
    for provider in ("OPENAI", "ANTHROPIC"):
        monkeypatch.setenv(f"{provider}_API_KEY", "sk-docs-example")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / ".cache"))
    return tmp_path


# -- what each command must leave behind ---------------------------------------------------

Check = Callable[[list[str], str, Path], None]


def _option(argv: list[str], *names: str) -> str | None:
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _inspect(argv: list[str], out: str, folder: Path) -> None:
    if _option(argv, "--output") == "json":
        summary = json.loads(out)
        count, errors = len(summary["traces"]), len(summary["errors"])
    else:
        loaded = re.search(r"^(\d+) trace\(s\) loaded, (\d+) error\(s\)$", out, re.M)
        assert loaded, out
        count, errors = int(loaded.group(1)), int(loaded.group(2))
    expected = _BUNDLED if argv == ["inspect"] else _RUNS if argv[1:2] == ["runs/"] else None
    assert errors == 0 and count > 0, out
    assert expected is None or count == expected, (count, expected)


def _annotate(argv: list[str], out: str, folder: Path) -> None:
    import mast

    records = list(mast.read_annotations(folder / str(_option(argv, "--out"))))
    assert records and all(r.status == "ok" for r in records), [r.status for r in records]
    if "--attribution" not in argv:
        # the docs judge answers every mode and flags one, quoting the trace
        for r in records:
            assert len(r.vector.positives) == 1 and None not in r.vector.values(), r.vector
        shares = mast.grounded_share(r.findings for r in records).values()
        assert all(s.grounded == s.positives for s in shares), shares
    inputs = argv[1]
    if inputs == "runs/":
        assert len(records) == _RUNS


def _report(argv: list[str], out: str, folder: Path) -> None:
    html = (folder / str(_option(argv, "--out"))).read_text(encoding="utf-8")
    assert 'id="mast-data"' in html


def _validate(argv: list[str], out: str, folder: Path) -> None:
    made = folder / str(_option(argv, "--out"))
    # the page names the three files: report.md, report.json and a resumable results.jsonl
    for name in ("report.md", "report.json", "results.jsonl"):
        assert (made / name).stat().st_size > 0, name
    assert json.loads((made / "report.json").read_text(encoding="utf-8")), "empty report.json"
    dataset = _option(argv, "--dataset")
    size = {
        "agentrx": "37 runs",
        "labelled_traces.json": "4 traces",
        "TRAIL/gaia.jsonl": "2 traces",
    }
    assert f" on {dataset}" in out and size[str(dataset)] in out, out


def _agree(argv: list[str], out: str, folder: Path) -> None:
    if "--attribution" in argv:  # the page: agent accuracy and step accuracy, within K
        for row in (r"agent", r"step", r"step ±1"):
            assert re.search(rf"^\S*\s+{row}\s+\d+/\d+ = [\d.]+\s+\[", out, re.M), (row, out)
    else:  # the κ family: a pooled row over all cells, and the macro κ beside it
        assert re.search(r"^pooled\s+all cells\s+\d+\s+-?[\d.]+", out, re.M), out
        assert re.search(r"^macro\s", out, re.M), out
        if "--among" in argv:
            assert "Pairwise agreement" in out and "alice" in out and "bob" in out, out


def _label(argv: list[str], out: str, folder: Path) -> None:
    if argv[1] == "new":
        assert re.search(r"\d+ of \d+ traces to label", out), out
    elif argv[1] == "export":
        rows = (folder / str(_option(argv, "--out"))).read_text(encoding="utf-8").splitlines()
        assert len(rows) > 1, rows


def _demo(argv: list[str], out: str, folder: Path) -> None:
    # the page: the offline heuristic on the bundled traces, no agreement computed on them,
    # its result on held-out MAD records quoted instead
    assert f"judge 'heuristic' on {_BUNDLED} bundled example traces" in out, out
    assert "No agreement is computed on these traces" in out and "held-out MAD" in out, out


def _pull(argv: list[str], out: str, folder: Path) -> None:
    import mast

    pulled = re.search(r"pulled (\d+) trace\(s\)", out)
    assert pulled and int(pulled.group(1)) > 0, out
    assert len(list(mast.load_traces(folder / str(_option(argv, "--out"))))) == int(pulled[1])


_CHECKS: dict[str, Check] = {
    "inspect": _inspect,
    "annotate": _annotate,
    "report": _report,
    "validate": _validate,
    "agree": _agree,
    "label": _label,
    "demo": _demo,
    "pull": _pull,
}


def run_mast(argv: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run one ``mast`` command in this process; check its status and what it left."""
    capsys.readouterr()
    if argv[:2] == ["label", "serve"]:
        out = _serve_and_label(argv, folder)
        code = 0
    else:
        code = main(argv)
        captured = capsys.readouterr()
        out = captured.out
        assert code == 0, f"`mast {shlex.join(argv)}` exited {code}:\n{captured.err}{out}"
    for option in ("--out", "-o", "--weights"):
        made = _option(argv, option)
        if made is not None:
            path = folder / made
            assert path.exists(), f"`mast {shlex.join(argv)}` wrote no {made}"
            assert any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0, made
    check = _CHECKS.get(argv[0])
    if check is not None:
        check(argv, out, folder)
    return out


# -- mast label serve: a server people label in -----------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _form_token(html: str) -> str:
    found = re.search(r'name="form_token" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


class _Browser:
    """Enough of a browser for the labelling app: a cookie jar, redirects, urlencoded forms."""

    def __init__(self, base: str) -> None:
        self.base = base
        jar = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        self.opener = urllib.request.build_opener(jar)

    def open(self, url: str, form: dict[str, str] | None = None) -> tuple[str, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        with self.opener.open(urllib.parse.urljoin(self.base, url), data, timeout=30) as r:
            return r.geturl(), r.read().decode("utf-8")


def _label_every_trace(base: str, labeller: str, flip: int) -> int:
    """Answer every trace of the queue as ``labeller`` through the app's forms; ``flip``
    makes the labellers disagree on some answers. Returns the traces labelled."""
    browser = _Browser(base)
    url, html = browser.open("/")
    if url.endswith("/labeller"):
        url, html = browser.open(url, {"name": labeller, "form_token": _form_token(html)})
    done = 0
    while "/item/" in url:
        codes = re.findall(r'name="m_([^"]+)" value="yes"', html)
        assert codes, html[:500]
        position = int(url.rsplit("/", 1)[-1])
        answers = {
            f"m_{code}": "yes" if (position + i + flip * (i == 0)) % 3 == 0 else "no"
            for i, code in enumerate(codes)
        }
        url, html = browser.open(url, {**answers, "form_token": _form_token(html)})
        done += 1
    assert url.endswith("/done") and f"{labeller}: {done} of" in html, html[:500]
    return done


def _serve_and_label(argv: list[str], folder: Path) -> str:
    """``mast label serve``: start it, label every trace as two people, stop it (Ctrl+C)."""
    from mast.cli import _build_parser

    # the page's comment names the default address; the test needs a port of its own
    assert _build_parser().parse_args(argv).port == 8765
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "mast", *argv, "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/labeller", timeout=5).close()
                break
            except urllib.error.URLError:
                assert server.poll() is None, server.communicate()[0]
                assert time.monotonic() < deadline, "mast label serve did not start"
                time.sleep(0.2)
        labellers = {"alice": 0, "bob": 1}
        labelled = [_label_every_trace(base, who, flip) for who, flip in labellers.items()]
        assert labelled[0] > 0 and labelled[0] == labelled[1], labelled
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=60)
    assert f"at http://127.0.0.1:{port}/" in out, out
    return out


# -- where your traces live: Langfuse and LangSmith stand-ins --------------------------------

PLATFORMS = FIXTURES / "platforms"


def _standins() -> object:
    spec = importlib.util.spec_from_file_location(
        "docs_standins", Path(__file__).parent / "analysis" / "platforms" / "standins.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _platform(
    block: Block, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[], None] | None]:
    """For a block that pulls from Langfuse or LangSmith: the platform's local stand-in (which
    checks every request against the documented API shape) behind the variables the page
    names, and a check that the export sent one score per judged mode. Else nothing."""
    kind = next((k for k in ("langfuse", "langsmith") if f"mast pull {k}" in block.code), None)
    if kind is None:
        yield None
        return
    pytest.importorskip(kind)
    standins: Any = _standins()
    rows = PLATFORMS / f"{kind}_{'observations' if kind == 'langfuse' else 'runs'}.jsonl"
    records = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    if kind == "langfuse":
        server = standins.LangfuseStandIn(observations=records)
        monkeypatch.setenv("LANGFUSE_HOST", server.url)
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        # the page's --human labels.csv, as `mast label export` writes it, for the pulled trace
        trace_id = records[0]["traceId"]
        (folder / "labels.csv").write_text(f"trace_id,annotator,1.1,1.2\n{trace_id},alice,1,0\n")
    else:
        server = standins.LangSmithStandIn(runs=records)
        monkeypatch.setenv("LANGSMITH_ENDPOINT", server.url)
        monkeypatch.setenv("LANGSMITH_API_KEY", server.api_key)
        monkeypatch.setenv("LANGSMITH_TRACING", "false")

    def sent_one_score_per_mode() -> None:
        assert server.problems == [], server.problems
        sent = list((server.scores if kind == "langfuse" else server.feedback).values())
        judged = [s for s in sent if s.get("source", "API") == "API"]
        human = [s for s in sent if s.get("source") == "ANNOTATION"]
        assert len(judged) == 14, len(judged)  # the docs judge answers all 14 modes
        assert len(human) == (2 if kind == "langfuse" else 0), human

    try:
        yield sent_one_score_per_mode
    finally:
        server.close()


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_shell_blocks_run(
    page: Path,
    docs_folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for argv in _BEFORE.get(page.name, []):
        run_mast(argv, docs_folder, capsys)
    for block in shell_blocks(page):
        if block.reason is not None:
            continue
        folder = docs_folder
        if page.name in _BLOCK_BY_BLOCK:  # each block its own folder: alternatives
            folder = docs_folder / f"block-{block.line}"
            folder.mkdir()
            monkeypatch.chdir(folder)
        with _platform(block, folder, monkeypatch) as check_platform:
            for argv in commands(block.code):
                assert argv[0] == "mast", (
                    f"{block.name}: `{shlex.join(argv)}` is not a mast command: run it here "
                    "or mark the block <!-- not run: why -->"
                )
                run_mast(argv[1:], folder, capsys)
            if check_platform is not None:
                check_platform()


def test_blocks_not_run_say_why_and_are_few() -> None:
    skipped = [b for b in BLOCKS if b.reason is not None]
    for block in skipped:
        assert len(str(block.reason).split()) >= 3, f"{block.name}: say why it is not run"
    shown = [(b, argv) for b in BLOCKS for argv in commands(b.code) if argv[0] == "mast"]
    not_run = [f"{b.name} mast {argv[1]}" for b, argv in shown if b.reason is not None]
    assert RUN and len(not_run) <= len(shown) // 2, not_run


@pytest.mark.parametrize("page", [ROOT / "README.md", DOCS / "index.md"], ids=lambda p: p.name)
def test_the_first_command_installs_and_runs_the_demo(
    page: Path,
    docs_folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The install cannot run offline (tests/test_packaging.py installs the wheel into a
    # fresh venv); the demo it ends with runs here, with no key and no server.
    first = next(b for b in shell_blocks(page))
    steps = list(commands(first.code))
    assert steps == [
        ["python3", "-m", "venv", ".venv"],
        [".", ".venv/bin/activate"],
        ["pip", "install", "."],
        ["mast", "demo"],
    ], steps
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # "no API key needed"
        monkeypatch.delenv(name)
    run_mast(["demo"], docs_folder, capsys)


def test_every_command_of_a_run_block_is_checked() -> None:
    # a command without its own check is held only to its status and output files: name
    # every subcommand the pages run, so a new one gets a check or a reason
    ran = {argv[1] for b in RUN for argv in commands(b.code)}
    # (export: the platform stand-in checks what it received, see _platform)
    assert ran <= {*_CHECKS, "export"}, ran - set(_CHECKS)


def test_every_block_names_its_language() -> None:
    # an unnamed fence would escape both this test and the Python one
    unnamed = [
        f"{page.name}:{page.read_text(encoding='utf-8').count(chr(10), 0, m.start()) + 1}"
        for page in PAGES
        for m in _FENCE.finditer(page.read_text(encoding="utf-8"))
        if not m.group(1)
    ]
    assert not unnamed, f"name the language of these blocks (text for a synopsis): {unnamed}"


def _options_of(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its subcommands, recursively."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options_of(sub)
    return found


def test_the_synopsis_names_only_options_that_exist() -> None:
    # bulk.md's command-line synopsis is text, not commands: each option it shows for a
    # command must be one that command (or one of its subcommands) has
    from mast.cli import _build_parser

    parser = _build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    text = (DOCS / "bulk.md").read_text(encoding="utf-8")
    synopsis = next(m.group(2) for m in _FENCE.finditer(text) if m.group(1) == "text")
    command, unknown, checked = "", [], 0
    for line in synopsis.splitlines():
        if line.startswith("mast "):
            command = line.split()[1]
            assert command in sub.choices, line
        for option in re.findall(r"(?<![\w-])--[a-z][\w-]*|(?<![\w-])-[a-z](?![\w-])", line):
            checked += 1
            if option not in _options_of(sub.choices[command]):
                unknown.append(f"mast {command} {option}")
    assert checked > 30 and not unknown, unknown


def test_every_command_help_names_a_page_that_shows_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mast.cli import _build_parser

    parser = _build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for command in sub.choices:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        guide = re.search(r"Guide: (docs/[\w/.-]+\.md)", " ".join(capsys.readouterr().out.split()))
        assert guide, f"`mast {command} --help` names no page"
        page = (ROOT / guide.group(1)).read_text(encoding="utf-8")
        assert f"mast {command}" in page, f"{guide.group(1)} never shows `mast {command}`"
