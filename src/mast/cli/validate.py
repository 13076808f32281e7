"""``mast validate``: can I trust this judge?  One command from a labelled set to a report.

Loads the human-labelled set (``mad-human``: MAST-Data's file at its pinned revision, or a
path), annotates it with ``--model`` (resumable and cached in ``--out``/results.jsonl, within
``--budget``), and writes ``--out``/report.md and report.json: kappa against each annotator
and their majority, the human ceiling on the same cells, baselines, macro kappa, coverage,
per mode with intervals (and the merged 3.2 ∨ 3.3 row), per taxonomy version, duplicated
label blocks, and cost.  Kept light at import time (the work is imported when it runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mast.cli.annotate import _non_negative_float, _positive_int, add_fewshot_exclude

_EXAMPLES = """\
examples:
  mast validate --model heuristic --dataset labelled_traces.json --out validation/
  mast validate --model openai/gpt-4.1 --budget 5 --out validation-gpt41/
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``validate`` subcommand to the ``mast`` parser."""
    p = sub.add_parser(
        "validate",
        help="annotate a human-labelled set and report how far the judge can be trusted",
        description=__doc__.split("\n\n", 1)[1].rsplit("  Kept light", 1)[0],
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="judge 'provider/model', or 'heuristic'")
    p.add_argument(
        "--dataset",
        default="mad-human",
        metavar="mad-human|agentrx|trail|PATH",
        help="the labelled set (default: mad-human, downloaded at its pinned revision; "
        "agentrx: AgentRx's labelled runs bundled with mast, scored by root cause and "
        "any-failure localisation; a TRAIL download's path: scored with TRAIL's measures)",
    )
    p.add_argument(
        "--taxonomy",
        default=None,
        metavar="NAME|PATH",
        help="judge with another taxonomy (agentrx, trail, …): with agentrx on AgentRx, "
        "agreement per category is reported too (default: MAST)",
    )
    p.add_argument(
        "--within",
        type=int,
        default=1,
        metavar="K",
        help="AgentRx: also count steps at most K apart (default 1)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("mast-validate"),
        metavar="DIR",
        help="folder for results.jsonl, report.md and report.json (default: mast-validate)",
    )
    p.add_argument("--revision", default=None, help="with mad-human: another Hub revision")
    p.add_argument("--base-url", default=None, help="server URL (OpenAI-compatible or proxy)")
    p.add_argument("--fewshot", type=int, default=2, help="few-shot examples (default 2)")
    add_fewshot_exclude(
        p, "as Judge(fewshot_exclude=...); on AgentRx runs agentrx is always left out"
    )
    p.add_argument(
        "--verification",
        choices=("paper", "official"),
        default=None,
        help="3.2/3.3 convention the judge is told: paper (default: 3.2 No or Incomplete, 3.3 "
        "Incorrect Verification) or official (3.2 Weak, 3.3 No or Incorrect Verification, as "
        "MAST-Data's o1 labels); part of the records and the cache key",
    )
    p.add_argument(
        "--answer",
        choices=("full", "compact"),
        default="compact",
        help="answer shape (default compact, as mast annotate): validate the judge in the "
        "shape you will run it in, since the two shapes may not give the same verdicts",
    )
    p.add_argument(
        "--budget", type=_non_negative_float, default=None, metavar="USD", help="spending cap"
    )
    p.add_argument("--concurrency", type=_positive_int, default=8, help="calls in flight")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)")
    p.add_argument(
        "--resample",
        choices=["auto", "traces", "blocks"],
        default="auto",
        help="bootstrap unit, as in mast agree: auto resamples distinct label blocks when the "
        "people's labels repeat whole blocks, else traces",
    )
    p.add_argument("--no-cache", action="store_true", help="do not cache answers")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    from mast.analysis.validation import validate
    from mast.analysis.validation_localisation import is_localisation_dataset
    from mast.judge.judge import Judge

    localisation = is_localisation_dataset(args.dataset)
    on_agentrx = localisation and args.dataset != "trail" and not _is_trail(args.dataset)
    judge = Judge(
        args.model,
        fewshot=args.fewshot,
        base_url=args.base_url,
        answer=args.answer,
        taxonomy=args.taxonomy,
        fewshot_exclude=fewshot_exclude(args.fewshot_exclude, on_agentrx=on_agentrx),
        verification=args.verification,
    )
    if localisation:
        return _localisation(args, judge)
    from mast.analysis.validation import with_path_hint
    from mast.errors import DatasetUnavailableError

    try:
        report = validate(
            judge,
            args.dataset,
            out=args.out,
            budget_usd=args.budget,
            concurrency=args.concurrency,
            bootstrap=args.bootstrap,
            seed=args.seed,
            revision=args.revision,
            cache=not args.no_cache,
            progress=not args.quiet,
            resample=args.resample,
        )
    except DatasetUnavailableError as exc:  # the hint names this command's option
        raise with_path_hint(exc, "mast validate --dataset {file} …") from exc
    majority = report.majority
    c = majority.context
    print(
        f"{report.model} on {report.dataset}: {report.n_traces} traces; against the "
        f"annotators' majority pooled kappa {_num(majority.pooled.kappa)}, macro kappa "
        f"{_num(c.macro_kappa)}, coverage {c.cells_scored}/{c.cells_asked}; constant baseline "
        f"{_num(c.constant_kappa)}, chance baseline {_num(c.chance_kappa)}; human ceiling "
        f"{_num(report.ceilings.get('majority', float('nan')))}; cost ${report.cost_usd:.4f}"
    )
    if report.duplicate_groups:
        print(
            f"note: {report.n_traces} traces carry {report.n_blocks} distinct label blocks; "
            f"intervals resample {report.resampling} (see the report)",
            file=sys.stderr,
        )
    print(f"report: {args.out / 'report.md'} (and report.json); results: {report.results_path}")
    return 0 if majority.pooled.n_cells else 1


def fewshot_exclude(asked: Sequence[str], *, on_agentrx: bool) -> list[str]:
    """The datasets whose bundled excerpts the judge never shows: those asked for, and
    ``agentrx`` when validating on AgentRx runs (its excerpts would contaminate the measure).

    >>> fewshot_exclude(["ag2"], on_agentrx=True)
    ['ag2', 'agentrx']
    """
    return sorted({*asked, *(["agentrx"] if on_agentrx else [])})


def _is_trail(dataset: str) -> bool:
    from mast.traces.trail import is_trail

    return Path(dataset).exists() and is_trail(dataset)


def _localisation(args: argparse.Namespace, judge: object) -> int:
    from mast.analysis.validation_localisation import validate_localisation
    from mast.errors import StatsInputError

    if args.within < 0:
        print(f"mast validate: error: --within must be >= 0, got {args.within}", file=sys.stderr)
        return 2
    try:
        report = validate_localisation(
            judge,  # type: ignore[arg-type]
            args.dataset,
            out=args.out,
            within=args.within,
            budget_usd=args.budget,
            concurrency=args.concurrency,
            bootstrap=args.bootstrap,
            seed=args.seed,
            cache=not args.no_cache,
            progress=not args.quiet,
        )
    except StatsInputError as exc:
        print(f"mast validate: error: {exc}", file=sys.stderr)
        return 2
    if report.attribution is not None:
        o = report.attribution.overall
        print(
            f"{report.model} on {report.dataset}: {report.n_traces} runs; root-cause agent "
            f"{o['agent'].correct}/{o['agent'].total}, step {o['step'].correct}/"
            f"{o['step'].total}, any failure {o['any_step'].correct}/{o['any_step'].total} "
            f"(first-step baseline: step "
            f"{report.baselines['always the first step'].overall['step'].correct}); "
            f"cost ${report.cost_usd:.4f}"
        )
    if report.trail is not None:
        print(
            f"{report.model} on {report.dataset}: {report.n_traces} traces; location "
            f"{_num(report.trail.location_accuracy)}, joint {_num(report.trail.joint_accuracy)}, "
            f"weighted category F1 {_num(report.trail.category_f1_weighted)}"
        )
    print(f"report: {args.out / 'report.md'} (and report.json); results: {report.results_path}")
    scored = report.attribution.rows if report.attribution is not None else []
    return 0 if scored or report.trail is not None else 1


def _num(value: float) -> str:
    return "undef." if value != value else f"{value:.3f}"
