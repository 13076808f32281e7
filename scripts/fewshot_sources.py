"""From the source datasets, write what the excerpt pool's leak filter and tests need.

1. fewshot/shared_text.txt: excerpt lines that recur across runs of their corpus.
2. tests/fixtures/excerpt_sources.json.gz: for every excerpt, the verbatim text of the source
   messages from its first to its last shown one, so the tests can rebuild every step
   without the datasets.

A line of an excerpt that also occurs in another run of the same corpus (framework prompts,
role prompts, fixed tool or terminal replies) says nothing about which run the excerpt came
from, so the leak filter (mast.judge.prompt.leak) never counts it as the excerpt's own text. This
script finds those lines on a local copy of the datasets and writes them, whitespace
collapsed, one per line. Run it after editing fewshot/excerpts.yaml:

    python scripts/fewshot_sources.py /path/to/datasets   # folder with whoandwhen/, ag2/, …

A corpus is the set of runs of one system in one dataset: Who&When Hand-Crafted
(Magentic-One), Who&When Algorithm-Generated (CaptainAgent), the AG2 MathChat traces (with
the MAD AG2 record), the AgentRx τ-bench retail runs, the MAD ChatDev records.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from mast._resources import data_dir
from mast.judge.prompt.excerpt_check import CUT, FOLDERS, run_messages
from mast.judge.prompt.excerpts import Excerpt, Source, load_pool
from mast.judge.prompt.leak import MIN_PROBE_CHARS, SHARED_TEXT_FILE


def _norm(text: str) -> str:
    return " ".join(text.split())


def _corpus(ex: Excerpt, root: Path) -> list[str]:
    """Whitespace-collapsed text of every run in the excerpt's corpus."""
    src = ex.source
    if src.dataset == "whoandwhen":
        folder = root / "whoandwhen" / src.path.split("/")[0]
        return [
            _run_text(
                Source(dataset="whoandwhen", path=f"{folder.name}/{p.name}", history=(0,)), root
            )
            for p in sorted(folder.glob("*.json"))
        ]
    if src.dataset == "ag2":
        runs = [
            _run_text(Source(dataset="ag2", path=p.name, history=(0,)), root)
            for p in sorted((root / "ag2").glob("AG2_trace*.json"))
        ]
        runs += [
            _norm(p.read_text(encoding="utf-8"))
            for p in sorted((root / "mad" / "frameworks" / "ag2").glob("*.trajectory.txt"))
        ]
        return runs
    if src.dataset == "agentrx" and src.path.startswith("magentic_one/"):
        folder = root / "agentrx" / "magentic_one" / "trajectories"
        return [
            _run_text(
                Source(dataset="agentrx", path=f"magentic_one/trajectories/{p.name}", history=(0,)),
                root,
            )
            for p in sorted(folder.glob("*.json"))
        ]
    if src.dataset == "agentrx":
        data = json.loads((root / "agentrx" / src.path).read_text(encoding="utf-8"))
        return [
            _run_text(
                Source(dataset="agentrx", path=src.path, run=r["task_id"], history=(0,)), root
            )
            for r in data
        ]
    return [
        _norm(p.read_text(encoding="utf-8"))
        for p in sorted((root / "mad" / "frameworks" / "chatdev").glob("*.trajectory.txt"))
    ]


_cache: dict[str, str] = {}


def _run_text(source: Source, root: Path) -> str:
    key = source.label()
    if key not in _cache:
        _cache[key] = _norm(" ".join(run_messages(source, root)))
    return _cache[key]


def shared_lines(pool: list[Excerpt], root: Path) -> list[str]:
    """Excerpt lines found in two or more runs of the excerpt's corpus."""
    out: set[str] = set()
    corpora: dict[str, list[str]] = {}
    for ex in pool:
        key = f"{ex.source.dataset}:{ex.source.path.split('/')[0]}"
        if key not in corpora:
            corpora[key] = _corpus(ex, root)
        for step in ex.steps:
            for line in step.content.split("\n"):
                line = _norm(line.replace(CUT, " "))
                if len(line) >= MIN_PROBE_CHARS and sum(line in run for run in corpora[key]) >= 2:
                    out.add(line)
    return sorted(out)


def _task_source(ex: Excerpt, root: Path, messages: list[str]) -> str:
    folder = FOLDERS[ex.source.dataset]
    if ex.source.dataset == "whoandwhen":
        data = json.loads((root / folder / ex.source.path).read_text(encoding="utf-8"))
        return str(data["question"])
    if ex.source.dataset == "ag2":
        data = json.loads((root / folder / ex.source.path).read_text(encoding="utf-8"))
        return "\n".join(data["problem_statement"])
    task = _norm(ex.task or "")
    return next((m for m in messages if task in _norm(m)), "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder holding whoandwhen/, ag2/, mad/, agentrx/")
    args = parser.parse_args(argv)
    lines = shared_lines(load_pool(), args.root)
    target = data_dir("fewshot") / SHARED_TEXT_FILE
    head = (
        "# Lines of fewshot/excerpts.yaml that recur across runs of their corpus (framework\n"
        "# prompts, fixed replies): never an excerpt's own text for the leak filter.\n"
        "# Written by scripts/fewshot_sources.py; whitespace collapsed, one per line, after\n"
        "# the blank line that ends this header (a line may start with '#').\n\n"
    )
    target.write_text(head + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    print(f"{target}: {len(lines)} shared lines")
    fixture: dict[str, dict[str, str]] = {}
    for ex in load_pool():
        messages = run_messages(ex.source, args.root)
        span = range(min(ex.source.history), max(ex.source.history) + 1)
        fixture.setdefault(ex.run, {}).update({str(i): messages[i] for i in span})
        if ex.task is not None:
            # Where a `task:` may come from: the run's question, or a message that holds it.
            fixture[ex.run]["task"] = _task_source(ex, args.root, messages)
    out = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "excerpt_sources.json.gz"
    # gzip, mtime 0: the same pool gives the same bytes.
    data = json.dumps(fixture, ensure_ascii=False, indent=0, sort_keys=True) + "\n"
    out.write_bytes(gzip.compress(data.encode("utf-8"), mtime=0))
    print(f"{out}: {sum(len(v) for v in fixture.values())} messages of {len(fixture)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
