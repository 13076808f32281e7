"""Measure the few-shot leak filter on every Who&When run of a local copy of the dataset.

For each run, the excerpts the filter drops (mast.judge.prompt.leak.leaked over the whole pool, and
what the default judge's selection leaves out for that trace) must be exactly the excerpts
cut from that run. Prints one line per run that breaks this and a summary; exits 1 if any.

    python scripts/fewshot_leak_check.py /path/to/datasets/whoandwhen
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import mast
import mast.judge.prompt.leak
from mast.judge.prompt.excerpts import load_pool
from mast.judge.prompt.leak import partial
from mast.judge.prompt.shots import Shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the Who&When folder (Hand-Crafted/, …)")
    parser.add_argument(
        "--without-corpus-text",
        action="store_true",
        help="ignore fewshot/shared_text.txt (how the filter did before it existed)",
    )
    args = parser.parse_args(argv)
    if args.without_corpus_text:
        import mast.judge.prompt.leak as leak_module

        leak_module.shared_text = lambda: frozenset()  # type: ignore[assignment]
    pool = load_pool()
    default = Shots.resolve(None)
    files = sorted(args.folder.glob("*/*.json"))
    bad = dropped_total = partial_total = own_total = 0
    for file in files:
        rel = f"{file.parent.name}/{file.name}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (trace,) = list(mast.load_traces(file))
        own = {ex.id for ex in pool if ex.dataset == "whoandwhen" and ex.source.path == rel}
        whole = set(mast.judge.prompt.leak.leaked(pool, trace))
        shots = default.for_trace(trace)
        # What the default judge drops as leaked (it then fills the gap from the rest).
        left_out = set(mast.judge.prompt.leak.leaked(default.chosen, trace))
        maybe = partial(pool, trace)
        own_total += len(own)
        dropped_total += len(whole)
        partial_total += len(maybe)
        chosen_own = own & set(default.ids)
        if whole != own or left_out != chosen_own or set(shots.ids) & own:
            bad += 1
            print(
                f"{rel}: own {sorted(own)}, pool filter drops {sorted(whole)}, "
                f"default judge leaves out {sorted(left_out)}"
            )
        elif maybe:
            print(f"{rel}: kept with a 'may come from this trace' note: {maybe}")
    print(
        f"{len(files)} Who&When runs, {len(pool)} excerpts ({len(default.ids)} in the default "
        f"selection): {dropped_total} drops over the whole pool, {own_total} expected "
        f"(excerpts cut from the run judged); {partial_total} partial overlaps noted; "
        f"{bad} runs where the filter drops anything else or misses an own excerpt"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
