"""``mast taxonomy``: print a taxonomy's modes, or audit its decision rules against labels.

``mast taxonomy --audit LABELS`` reads any label file ``mast agree`` reads (a MAD file or
other traces with labels, a table with an ``annotator`` column, a results store) and prints
:func:`mast.audit_taxonomy` for it: co-label counts per rule (per annotator and majority),
every ``exclusive`` rule the labels contradict, prevalence, and co-labelled pairs no rule
mentions. ``--format json`` prints the same as one object.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["register"]


def _cmd_taxonomy(args: argparse.Namespace) -> int:
    from mast.taxonomy import load_taxonomy

    tax = load_taxonomy(args.path, verification=args.verification)
    if args.examples is not None:
        from mast.judge.prompt.excerpts import load_pool, pool_table

        pool = load_pool(args.examples or None, taxonomy=tax)
        print(pool_table(pool, tax))
        return 0
    if args.audit is not None:
        return _audit(args, tax)
    if args.verbose:
        for mode in tax:
            print(f"{mode.code}  {mode.name}  [{mode.category}, {mode.stage}]")
            print(textwrap.indent(textwrap.fill(mode.definition, 88), "     "))
        for rule in tax.decision_rules:
            print(f"rule {' / '.join(rule.modes)} ({rule.kind})")
            print(textwrap.indent(textwrap.fill(" ".join(rule.rule.split()), 88), "     "))
        return 0
    if args.format == "json":
        print(json.dumps(_as_json(tax), indent=2, ensure_ascii=False))
        return 0
    width = max(len(m.name) for m in tax)
    convention = f" ({tax.verification} convention of 3.2/3.3)" if tax.verification else ""
    print(f"{tax.label}: {len(tax)} failure modes{convention}")
    print(f"{'code':<5} {'name':<{width}}  {'category':<30} stage")
    for mode in tax:
        category = f"{mode.category} {tax.category(mode.category).name}"
        print(f"{mode.code:<5} {mode.name:<{width}}  {category:<30} {mode.stage or ''}")
    return 0


def _as_json(tax: Any) -> dict[str, Any]:
    """The taxonomy as plain data, for scripts and agents (``mast taxonomy --format json``)."""
    return {
        "label": tax.label,
        "verification": tax.verification,
        "modes": [
            {
                "code": m.code,
                "name": m.name,
                "category": m.category,
                "category_name": tax.category(m.category).name,
                "stage": m.stage,
                "definition": m.definition,
            }
            for m in tax
        ],
        "decision_rules": [
            {"modes": list(r.modes), "kind": r.kind, "rule": " ".join(r.rule.split())}
            for r in tax.decision_rules
        ],
    }


def _audit(args: argparse.Namespace, tax: Any) -> int:
    from mast.agree.audit import audit_taxonomy
    from mast.agree.label_files import read_labels, read_raters
    from mast.errors import StatsInputError

    path = Path(args.audit)
    if not path.exists() and not any(ch in str(path) for ch in "*?["):
        raise FileNotFoundError(f"no such label file or folder: {path}")
    try:
        sources, traces, notes = read_raters(path)
    except StatsInputError:
        # One set of labels (a results store, a table without an annotator column).
        loaded = read_labels(path)
        sources, traces, notes = {loaded.name: loaded.source}, loaded.traces, loaded.notes
    labelled: Any = traces if traces else sources
    audit = audit_taxonomy(tax, labelled, annotators=args.annotators, top=args.top)
    if args.format == "json":
        print(json.dumps({**audit.to_dict(), "labels": str(path), "read_notes": notes}, indent=2))
    else:
        for note in notes:
            print(f"note: {note}")
        print(audit.to_text())
    contradicted = [r for r in audit.rules if r.contradicted]
    return 1 if contradicted and args.strict else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mast taxonomy``."""
    p = sub.add_parser(
        "taxonomy",
        help="print the failure modes as a table, or audit the rules against labels",
        description="Print the failure modes of MAST, of a bundled taxonomy (sre) or of a "
        "custom taxonomy file; with --audit LABELS, check its decision rules against labels.",
    )
    p.add_argument(
        "path",
        nargs="?",
        metavar="NAME|PATH",
        help="'mast' (default) or 'sre' for a bundled taxonomy, or a custom taxonomy YAML",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="include definitions and rules")
    p.add_argument(
        "--verification",
        choices=["paper", "official"],
        default=None,
        help="convention of 3.2/3.3: 'paper' (MAST default: 3.2 No or Incomplete, 3.3 "
        "Incorrect) or 'official' (3.2 Weak, 3.3 No or Incorrect Verification)",
    )
    p.add_argument(
        "--audit",
        metavar="LABELS",
        default=None,
        help="label file (anything `mast agree` reads): count co-labels per decision rule, "
        "flag exclusive rules the labels contradict",
    )
    p.add_argument(
        "--annotators", nargs="+", default=None, help="audit against these annotators only"
    )
    p.add_argument(
        "--examples",
        nargs="?",
        const="",
        default=None,
        metavar="POOL",
        help="print the few-shot excerpt pool (default: the bundled one) as a table: per mode "
        "its positives and near misses, their systems and second-reader verdicts",
    )
    p.add_argument("--top", type=int, default=5, help="co-labelled pairs without a rule to list")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when an exclusive rule is contradicted"
    )
    p.set_defaults(handler=_cmd_taxonomy)
