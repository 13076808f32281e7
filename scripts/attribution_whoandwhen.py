"""Who&When attribution end to end with a scripted judge: do the scores come out as counted
by hand?

It serves scripted answers from a local OpenAI-compatible server (the tests' fake server;
nothing leaves the machine), runs the README's two commands on the Who&When runs in
``tests/fixtures/whoandwhen_attr`` for each attribution method::

    mast annotate tests/fixtures/whoandwhen_attr --model openai/scripted --base-url URL \\
        --attribution METHOD --out OUT/METHOD.jsonl
    mast agree --attribution --reference tests/fixtures/whoandwhen_attr \\
        --candidate OUT/METHOD.jsonl --format json

and compares the accuracies, exclusions and provider call counts with the values computed
by hand in ``tests/fixtures/whoandwhen_attr/scripted.yaml``. The scripted judge answers as
that file says: all-at-once names the scripted agent and step; step-by-step says "yes" at
the scripted step; binary search says "yes" for every prefix that contains it (and "no"
everywhere for a run whose answer is null).

Usage: ``python scripts/attribution_whoandwhen.py [--out DIR]``; exit status 0 when every
number matches, 1 otherwise (each mismatch is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "whoandwhen_attr"
sys.path.insert(0, str(ROOT / "tests"))  # the fake server lives with the tests
sys.path.insert(0, str(ROOT / "src"))

from fake_llm_server import FakeLLMServer, Recorded, Reply  # noqa: E402

METHODS = ("all-at-once", "step-by-step", "binary-search")


def _script() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / "scripted.yaml").read_text("utf-8"))
    return data


def _runs() -> dict[str, dict[str, Any]]:
    """Scripted answer per run, keyed by the run's question text (what the prompt shows)."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in _script()["runs"].items():
        record = json.loads((FIXTURES / name).read_text("utf-8"))
        out[name] = {"question": record["question"], "answer": entry["answer"]}
    return out


def _responder(method: str) -> Any:
    runs = _runs()

    def respond(request: Recorded) -> Reply:
        user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
        matches = [r for r in runs.values() if r["question"].strip() in user]
        if len(matches) != 1:
            return Reply.error(500, "scripted judge: the prompt matches no single run")
        answer = matches[0]["answer"]
        shown = re.findall(r"^\[(s\d+)\] ", user, flags=re.MULTILINE)
        last = int(shown[-1][1:]) if shown else 0
        target = int(answer["step"][1:]) if answer else None
        if method == "all-at-once":
            found = answer is not None
        elif method == "step-by-step":
            found = target is not None and last == target
        else:
            found = target is not None and target <= last
        body = {
            "found": found,
            "agent": answer["agent"] if found and answer else None,
            "step_id": answer["step"] if found and answer else None,
            "reason": "scripted answer" if found else "",
            "quote": "",
        }
        return Reply.text(json.dumps(body))

    return respond


def _mast(*args: str) -> tuple[int, str]:
    from mast.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(list(args))
    return int(code or 0), buffer.getvalue()


def run(out: Path) -> list[str]:
    """Run every method; return the mismatches with the hand-computed values (empty = ok)."""
    script = _script()
    problems: list[str] = []
    os.environ["OPENAI_API_KEY"] = "sk-scripted-judge-no-real-key"  # the fake server's
    with FakeLLMServer() as server:
        for method in METHODS:
            server.reset()
            server.responder = _responder(method)
            results = out / f"{method}.jsonl"
            results.unlink(missing_ok=True)
            code, _ = _mast(
                "annotate", str(FIXTURES), "--model", "openai/scripted", "--base-url",
                server.openai_base_url, "--attribution", method, "--out", str(results),
                "--no-cache", "-q",
            )  # fmt: skip
            if code != 0:
                problems.append(f"{method}: mast annotate exited with {code}")
                continue
            calls = len(server.completions)
            code, text = _mast(
                "agree", "--attribution", "--reference", str(FIXTURES), "--candidate",
                str(results), "--format", "json", "--bootstrap", "200",
            )  # fmt: skip
            report = json.loads(text)
            problems += _compare(method, report, calls, script["expected"][method])
            _print(method, report, calls)
    return problems


def _compare(method: str, report: dict[str, Any], calls: int, want: dict[str, Any]) -> list[str]:
    out: list[str] = []

    def check(what: str, got: Any, expected: Any) -> None:
        if got != expected:
            out.append(f"{method}: {what} is {got!r}, hand count says {expected!r}")

    check("provider calls", calls, want["calls"])
    check("scored traces", len(report["traces"]), want["scored"])
    check("excluded past the end", len(report["excluded_past_end"]), want["excluded_past_end"])
    groups = {g["group"]: g["metrics"] for g in report["groups"] if g["by"] == "subset"}
    for section in ("overall", "Algorithm-Generated", "Hand-Crafted"):
        metrics = report["overall"] if section == "overall" else groups.get(section, {})
        for metric, name in (("agent", "agent"), ("step", "step_exact"),
                             ("step_within", "step_within_1")):  # fmt: skip
            got = metrics.get(metric)
            expected = want[section][name]
            if got is None:
                out.append(f"{method}: no {metric} accuracy for {section}")
                continue
            check(f"{section} {metric} (answered)", [got["correct"], got["answered"]],
                  expected["answered"])  # fmt: skip
            check(f"{section} {metric} (all)", [got["correct"], got["total"]], expected["all"])
    return out


def _print(method: str, report: dict[str, Any], calls: int) -> None:
    o = report["overall"]
    print(
        f"{method:<14} calls={calls:<3} agent {o['agent']['correct']}/{o['agent']['answered']}"
        f" (all {o['agent']['total']})  step {o['step']['correct']}/{o['step']['answered']}"
        f"  step±1 {o['step_within']['correct']}/{o['step_within']['answered']}"
        f"  excluded past end: {len(report['excluded_past_end'])}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the results files here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        problems = run(out)
    for line in problems:
        print(f"MISMATCH: {line}")
    print("all numbers match the hand count" if not problems else f"{len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
