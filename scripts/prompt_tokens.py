"""Prompt tokens per trace before and after compact rendering.

Renders each trace's judge prompt twice, with every step in full (before) and with repeats
as references (after, what mast sends), and prints the tokens of the trace part (the fenced
block) and of the whole prompt. Tokens come from tiktoken's o200k_base when it is installed
with its encoding on disk, else from mast's estimate; the output says which.

Usage:   python scripts/prompt_tokens.py [PATH ...]
         (default: the MAD traces in tests/fixtures: human samples and one per framework)
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import mast
from mast.judge.prompt.render import render
from mast.judge.prompt.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    ROOT / "tests" / "fixtures" / "mad" / "human_sample.json",
    *sorted((ROOT / "tests" / "fixtures" / "mad_frameworks").glob("*/*.record.json")),
]


def _block(user: str, boundary: str) -> str:
    # The fence lines, not the sentence that names them.
    return user.split(f"<<<BEGIN {boundary}>>>\n", 1)[1].split(f"<<<END {boundary}>>>\n", 1)[0]


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or DEFAULT
    rows = []
    methods = set()
    seen = set()
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces = list(mast.load_traces(path))
        for trace in traces:
            if trace.id in seen:
                continue
            seen.add(trace.id)
            full, compact = render(trace, compact=False), render(trace)
            counts = [
                count_tokens(_block(full.user, full.boundary)),
                count_tokens(_block(compact.user, compact.boundary)),
                count_tokens(full.system + full.user),
                count_tokens(compact.system + compact.user),
            ]
            methods |= {c.method for c in counts}
            rows.append(
                (trace.id, trace.system or "?", len(trace.steps), *(c.tokens for c in counts))
            )
    print(f"tokens: {', '.join(sorted(methods))} (o200k_base)")
    head = f"{'trace':34} {'system':10} {'steps':>5} {'trace before':>12} {'after':>7} {'saved':>6}"
    print(head + f" {'prompt before':>13} {'after':>7}")
    for tid, system, n, tb, ta, pb, pa in rows:
        saved = 1 - ta / tb if tb else 0.0
        print(f"{tid[:34]:34} {system[:10]:10} {n:5} {tb:12} {ta:7} {saved:6.0%} {pb:13} {pa:7}")
    tb_all, ta_all = sum(r[3] for r in rows), sum(r[4] for r in rows)
    print(f"{'all':34} {'':10} {'':5} {tb_all:12} {ta_all:7} {1 - ta_all / tb_all:6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
