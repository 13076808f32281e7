"""``mast annotate``: annotate trace files in bulk into a resumable results file.

A thin layer over :func:`mast.annotate_many`: it loads the inputs, builds the judge, runs,
and prints a final summary (done / failed by reason / cached / cost / time) on stdout, with
progress and problems on stderr. Rerunning the same command resumes. The exit code is 0
when at least one trace has an ``ok`` record, 1 when nothing could be done, 2 for usage or
configuration errors, 3 when the budget stopped the run with traces not attempted (see
:data:`EXIT_BUDGET`), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mast.cli._shown import shown_lines
from mast.cli.inputs import add_input_options
from mast.errors import BudgetExceeded

__all__ = ["ATTRIBUTION_METHODS", "EXIT_BUDGET", "register"]

EXIT_BUDGET = BudgetExceeded.exit_code
"""Exit code of ``mast annotate`` when the budget stopped the run before every trace was
attempted: the results file holds what was done; raise ``--budget`` to finish."""

EXIT_CODES = (
    "exit status: 0 at least one trace annotated; 1 nothing could be done (or the results "
    "file could not be written); 2 usage or configuration error; 3 stopped by --budget "
    "with traces not attempted (raise --budget and rerun to finish); 130 interrupted."
)

# The methods of mast.judge.attribute.METHODS, spelled out so `mast --help` stays light.
ATTRIBUTION_METHODS = ("all-at-once", "step-by-step", "binary-search")


def add_fewshot_exclude(p: argparse.ArgumentParser, note: str) -> None:
    """``--fewshot-exclude``, the same option on every command that builds a judge."""
    p.add_argument(
        "--fewshot-exclude",
        nargs="+",
        default=[],
        metavar="DATASET",
        help="never show the bundled excerpts of these datasets (whoandwhen, ag2, mad-full, "
        f"agentrx), {note}",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def fewshot_arg(text: str) -> int | str:
    """``--fewshot``: a number of excerpts (>= 0) or the path of example files."""
    if text.strip().isdigit():
        return int(text)
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"expected a number or an existing path, got {text!r}")
    return text


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _redact_pattern(text: str) -> tuple[str, str]:
    import re

    kind, sep, pattern = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_]+", kind) or not pattern:
        raise argparse.ArgumentTypeError(
            f"expected KIND=REGEX (KIND: letters, digits, _), got {text!r}"
        )
    try:
        re.compile(pattern)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"invalid regular expression {pattern!r}: {exc}") from exc
    return kind, pattern


def _cmd_annotate(args: argparse.Namespace) -> int:
    from mast.cli.inputs import InputNotes
    from mast.cli.inputs import load_inputs as load_traces
    from mast.errors import TraceFormatError

    models = (
        [m.strip() for m in args.models.split(",") if m.strip()] if args.models else [args.model]
    )
    if not models or len(set(models)) != len(models):
        print(
            "mast: error: --models needs distinct names, e.g. openai/a,anthropic/b", file=sys.stderr
        )
        return 2
    judges = []
    for model in models:
        judge = _judge(model, args)
        if isinstance(judge, int):
            return judge
        judges.append(judge)
    if args.samples > 1 and not args.temperature and models != ["heuristic"]:
        print(
            "mast: note: --samples at temperature 0 gives near-identical samples; "
            "pass --temperature (e.g. 0.7) for independent judgments",
            file=sys.stderr,
        )
    if args.engine == "ray":
        from mast.cli.annotate_ray import annotate_on_ray

        if len(judges) > 1:
            print("mast: error: --engine ray runs one --model at a time", file=sys.stderr)
            return 2
        try:
            return annotate_on_ray(args, judges[0], _run_options(args))
        except KeyboardInterrupt:
            return interrupted(args.out)
    # The traces are streamed: read as the workers take them, never all held in memory
    # (each judge reads the inputs again). Unreadable inputs are listed after the first
    # pass, which is when they are known.
    errors: list[TraceFormatError] = []
    notes = InputNotes()

    def read(first: bool) -> Iterator[Any]:
        for trace in load_traces(
            args.inputs,
            format=args.format,
            on_error="skip",
            errors=errors if first else [],
            ground_truth=args.ground_truth,
        ):
            if first:
                notes.see(trace)
            yield trace

    traces = read(first=True)
    head = next(traces, None)  # nothing readable: say so before a results file is made
    if head is None:
        _unreadable(errors)
        print("mast: error: no trace could be loaded from the inputs", file=sys.stderr)
        return 1
    codes = []
    for number, judge in enumerate(judges):
        if len(judges) > 1:
            print(f"== {judge.model} ==")
        stream = itertools.chain([head], traces) if number == 0 else read(first=False)
        codes.append(_run(judge, stream, args))
        if codes[-1] in (2, 130):  # two traces with one id, or interrupted
            return codes[-1]
        if number == 0:
            for _ in traces:  # a run that stopped early: read the rest for the notes
                pass
            _unreadable(errors)
    if errors:
        print(f"{len(errors)} input(s) could not be read (listed on stderr)")
    for note in notes.lines():
        print(note)
    print(f"results: {args.out}")
    if len(judges) > 1 or args.samples > 1:
        print(f"self-consistency of the runs: mast agree --consensus {args.out}")
    if EXIT_BUDGET in codes:
        return EXIT_BUDGET
    return 0 if 0 in codes else 1


def _unreadable(errors: list[Any]) -> None:
    for err in errors[:10]:
        print(f"mast: skipped unreadable input: {shown_lines(err)}", file=sys.stderr)
    if len(errors) > 10:
        print(f"mast: … and {len(errors) - 10} more unreadable input(s)", file=sys.stderr)


def _judge(model: str, args: argparse.Namespace) -> Any:
    """The judge for ``model`` from the command's options, or an exit code."""
    from mast.judge.judge import Judge
    from mast.privacy.redact import Redactor

    redact: bool | Redactor = not args.no_redact
    if args.redact_pattern:
        base = Redactor(patterns=()) if args.no_redact else Redactor()
        redact = Redactor(patterns=base.patterns, extra=args.redact_pattern)
    judge: Any = Judge(
        model,
        fewshot=args.fewshot,
        fewshot_exclude=getattr(args, "fewshot_exclude", ()),
        base_url=args.base_url,
        prices=args.prices,
        max_tokens=args.max_tokens,
        timeout=args.timeout,
        redact=redact,
        samples=args.samples,
        answer=args.answer,
        taxonomy=getattr(args, "taxonomy", None),
        verification=getattr(args, "verification", None),
        **({"temperature": args.temperature} if args.temperature is not None else {}),
    )
    if args.attribution:
        if model == "heuristic":
            print(
                "mast: error: --attribution needs an LLM judge (--model provider/model); the "
                "heuristic judge makes no calls",
                file=sys.stderr,
            )
            return 2
        from mast.judge.attribute import AttributionJudge

        judge = AttributionJudge(judge, args.attribution)
    return judge


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings both engines take from the command line (local and Ray)."""
    from mast.bulk.types import RetryPolicy

    return {
        "out": args.out,
        "concurrency": args.concurrency,
        "rpm": args.rpm,
        "tpm": args.tpm,
        "retry_failed": args.retry_failed,
        "budget_usd": args.budget,
        "budget_scope": args.budget_scope,
        "cache": False if args.no_cache else (args.cache or True),
        "retry": RetryPolicy(
            max_attempts=args.max_attempts, max_rate_limited=args.max_rate_limited
        ),
        "progress": not args.quiet,
        "on_stop": "return",
    }


def _run(judge: Any, traces: Iterable[Any], args: argparse.Namespace) -> int:
    """Annotate ``traces`` with one judge (all its samples) and print the summary."""
    from mast.bulk.runner import annotate_many

    if args.batch and judge.model == "heuristic":
        print("mast: --batch ignored: the heuristic judge makes no calls", file=sys.stderr)
    try:
        run = annotate_many(
            traces,
            judge,
            batch=args.batch,
            batch_poll_interval=args.batch_poll,
            process_pool=not args.no_process_pool,
            # Streaming: the summary is all this needs, and memory stays flat at any size
            # (--attribution counts the decisive errors named, so it keeps the records).
            keep=bool(args.attribution),
            **_run_options(args),
        )
    except KeyboardInterrupt:
        return interrupted(args.out)
    summary = run.summary
    if summary.stopped == "duplicate":
        # The input is streamed, so two traces with one id are found when the second is
        # read; what was annotated before it is kept in the results file (a rerun resumes).
        print(f"mast: error: {shown_lines(summary.stop_message)}", file=sys.stderr)
        return 2
    print(shown_lines(summary.format()))  # it names traces: ids come from the input
    if args.attribution:
        named = sum(1 for a in run if a.decisive_error is not None)
        print(
            f"{args.attribution}: decisive error named for {named} of {len(run)} trace(s); "
            f"score it with: mast agree --attribution --reference … --candidate {args.out}"
        )
    if summary.stopped:
        print(f"mast: stopped early: {shown_lines(summary.stop_message)}", file=sys.stderr)
        print(
            f"mast: {len(summary.not_attempted)} trace(s) not attempted; fix the cause and "
            "run the same command again to resume",
            file=sys.stderr,
        )
    if summary.stopped and (
        summary.stopped == "output" or summary.done + summary.failed_total == 0
    ):
        return 1  # stopped before anything could be done, or results could not be written
    if summary.stopped == "budget" and summary.not_attempted:
        return EXIT_BUDGET  # work is left: a script must not take this run for finished
    # Records with an answer: made now, or kept from earlier runs (not failures kept).
    ok = summary.done + summary.resumed - sum(summary.failed_earlier.values())
    return 0 if ok else 1


def interrupted(out: object) -> int:
    """What an interrupted ``mast annotate`` says (records so far are kept), and its exit code."""
    print(
        f"mast: interrupted; records written so far are in {out}. "
        "Run the same command again to resume.",
        file=sys.stderr,
    )
    return 130


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``annotate`` subcommand to the ``mast`` CLI parser."""
    p = sub.add_parser(
        "annotate",
        help="annotate trace files into a resumable results file (JSON Lines)",
        description=(
            "Annotate traces with MAST failure modes: concurrent, rate-limited, retried, "
            "cached, resumable (rerun the same command), within a budget."
        ),
        epilog=EXIT_CODES,
    )
    p.add_argument("inputs", nargs="+", help="trace files, folders or globs")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="judge model 'provider/model', or 'heuristic' (offline)")
    which.add_argument(
        "--models",
        metavar="A,B,…",
        help="several judges, one after the other, into the same results file",
    )
    p.add_argument(
        "--samples",
        type=_positive_int,
        default=1,
        metavar="K",
        help="independent judgments per trace and judge (each cached and billed; see "
        "'mast agree --consensus')",
    )
    p.add_argument(
        "--temperature",
        type=_non_negative_float,
        default=None,
        help="sampling temperature (default 0; use more than 0 with --samples)",
    )
    p.add_argument("--base-url", default=None, help="server URL (OpenAI-compatible or proxy)")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        help="results file (JSON Lines); with --engine ray a folder of result shards",
    )
    p.add_argument(
        "--concurrency", type=_positive_int, default=8, help="calls in flight (default 8)"
    )
    p.add_argument("--rpm", type=_positive_float, default=None, help="max requests per minute")
    p.add_argument("--tpm", type=_positive_float, default=None, help="max tokens per minute")
    p.add_argument(
        "--budget",
        type=_non_negative_float,
        default=None,
        metavar="USD",
        help="stop before a call would take the spending past this (estimated prompt "
        "tokens + the call's max output tokens; calls in flight settle first); exit status 3 "
        "when it stops the run with traces left",
    )
    p.add_argument(
        "--budget-scope",
        choices=("file", "run"),
        default="file",
        help="file (default): the budget is for the --out results file, so what its records "
        "cost in earlier runs (kept beside it in OUT.spent.json) counts; run: for this run "
        "alone",
    )
    p.add_argument("--batch", action="store_true", help="use the provider's batch API")
    p.add_argument(
        "--fewshot",
        type=fewshot_arg,
        default=None,
        metavar="N|PATH",
        help="worked excerpts to show (default: enough for a positive and a near miss of "
        "every mode; 0 = zero-shot), or a file/folder of your own examples",
    )
    add_fewshot_exclude(p, "e.g. the one you evaluate on")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="redo traces recorded as failed: an unreadable answer (parse_error) is asked "
        "for again from the provider unless the cached one now reads; transport failures "
        "are retried anyway",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="response cache directory (default: $MAST_CACHE_DIR or ~/.cache/mast)",
    )
    group.add_argument("--no-cache", action="store_true", help="do not cache answers")
    add_input_options(p)
    p.add_argument("--prices", default=None, metavar="YAML", help="price overrides (USD/1M)")
    p.add_argument("--max-tokens", type=_positive_int, default=None, help="output token cap")
    p.add_argument(
        "--taxonomy",
        default=None,
        metavar="NAME|PATH",
        help="failure taxonomy the judge uses: mast (default), a bundled one (sre, agentrx, "
        "trail) or a taxonomy YAML",
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
        help="answer shape (default compact): compact writes absent modes as plain false and "
        "gives evidence and a rationale only for present modes, far fewer output tokens but no "
        "rationale for absent modes; full explains every mode. The two never share records",
    )
    p.add_argument(
        "--timeout", type=_positive_float, default=300.0, help="seconds per call (default 300)"
    )
    p.add_argument(
        "--max-attempts", type=_positive_int, default=6, help="calls per request incl. retries"
    )
    p.add_argument(
        "--max-rate-limited",
        type=_positive_int,
        default=100,
        help="429 answers one request may get before its trace fails (default 100; they do "
        "not count against --max-attempts: without --rpm the run slows down to the limit)",
    )
    p.add_argument(
        "--batch-poll",
        type=_positive_float,
        default=15.0,
        metavar="SECONDS",
        help="first interval between batch status checks (grows to 2 minutes)",
    )
    p.add_argument(
        "--no-redact",
        action="store_true",
        help="send trace text as it is, secrets included (the judge's own API key is "
        "still removed); see SECURITY.md",
    )
    p.add_argument(
        "--redact-pattern",
        action="append",
        type=_redact_pattern,
        default=[],
        metavar="KIND=REGEX",
        help="also replace matches of REGEX with [REDACTED:KIND] (repeatable)",
    )
    p.add_argument(
        "--attribution",
        choices=ATTRIBUTION_METHODS,
        default=None,
        metavar="METHOD",
        help="instead of the failure modes, find each failed run's decisive error (agent and "
        "step) with one of: " + ", ".join(ATTRIBUTION_METHODS) + " (1 call; one call per "
        "step until the first error; about log2(steps) calls). Use its own --out file",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local (one process, default) or ray: workers on a Ray cluster writing one "
        "shard each into the folder --out (pip install 'mast-annotator[ray]')",
    )
    p.add_argument(
        "--address", default=None, help="Ray cluster address (default: start a local Ray)"
    )
    p.add_argument("--workers", type=_positive_int, default=2, help="Ray worker actors (default 2)")
    p.add_argument(
        "--no-process-pool",
        action="store_true",
        help="prepare very long traces in a thread, not in worker processes (local engine)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(handler=_cmd_annotate)
