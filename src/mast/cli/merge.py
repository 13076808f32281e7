"""``mast merge``: results files and shard folders into one results file, one record per key.

The Ray engine (``mast annotate --engine ray --out DIR``) leaves one shard per worker in
``DIR``; every command that takes results reads such a folder directly, and this command
writes it as one file (the newest record of each key, written atomically).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _cmd_merge(args: argparse.Namespace) -> int:
    from mast.bulk.store import merge_results

    written = merge_results(args.sources, args.output)
    print(f"{written} record(s) written to {args.output}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``merge`` subcommand to the ``mast`` CLI parser."""
    p = sub.add_parser(
        "merge",
        help="merge results files and shard folders into one results file",
        description="Write the records of results files and folders (the Ray engine's "
        "shards) into one results file with exactly one record per key (the newest).",
    )
    p.add_argument("sources", nargs="+", type=Path, help="results files or folders")
    p.add_argument("-o", "--output", required=True, type=Path, help="the merged results file")
    p.set_defaults(handler=_cmd_merge)
