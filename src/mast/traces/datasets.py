"""Public datasets on demand, pinned to a revision and checked, plus mast's bundled examples.

``load_mad()`` reads MAST-Data's full file (traces labelled by an o1 judge, stored as annotator
``"o1"``); ``load_mad_human()`` reads the small human-labelled file, mapping each annotator's
labels from its round's taxonomy version onto the final codes (annotators ``"annotator_1"`` …
``"annotator_3"``; draft modes without a final counterpart stay visible in
``trace.label_sources[annotator].unmapped``). ``load_whoandwhen()`` and
``load_itbench_trajectories()`` read two other public sets of failed agent runs.
``load_agentrx()`` reads AgentRx's human-labelled failed runs (every failure with its step,
agent and category, and the root cause; a copy ships with mast) and ``load_trail(path)``
your download of the gated TRAIL set (errors labelled per span).

Called without a path, each loader downloads from the Hugging Face Hub at a pinned revision
(cached, honouring ``HF_HOME``, ``HF_HUB_OFFLINE``, ``HF_ENDPOINT`` and tokens), checks every
file's SHA-256 and records what it read in ``trace.metadata["dataset"]``: dataset name,
repository, revision, file, sha256 and how the checksum was checked. :func:`info` lists each
dataset with its licence, size, label source, revisions and known quirks.

>>> traces = example_traces()
>>> sorted({t.format for t in traces})
['ag2', 'mad-human']
>>> info("mad-full").label_source
'llm'
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal, overload

from mast.errors import DatasetChecksumError, DuplicateLabelsWarning
from mast.traces import hub as _hub
from mast.traces.agentrx import AgentRxLabelWarning, bundled_agentrx_path, load_agentrx
from mast.traces.catalog import (
    _IT_PREFIX,
    _MAD_FULL,
    _MAD_HUMAN,
    _WW_PATTERNS,
    ITBENCH_REVISION,
    MAD_REVISION,
    WHOANDWHEN_REVISION,
    DatasetInfo,
    DatasetLicenseWarning,
    DatasetRevisionWarning,
    Release,
    UnverifiedDatasetWarning,
    info,
)
from mast.traces.hub import Fetched, Pin
from mast.traces.hub_target import Target
from mast.traces.loaders import load_traces
from mast.traces.model import Trace
from mast.traces.readings import apply_reading, verification_name
from mast.traces.trail import TrailLabelWarning, load_trail

__all__ = [
    "ITBENCH_REVISION",
    "MAD_REVISION",
    "WHOANDWHEN_REVISION",
    "AgentRxLabelWarning",
    "DatasetInfo",
    "DatasetLicenseWarning",
    "DatasetRevisionWarning",
    "Release",
    "TrailLabelWarning",
    "UnverifiedDatasetWarning",
    "bundled_agentrx_path",
    "duplicate_label_blocks",
    "example_traces",
    "examples_path",
    "info",
    "load_agentrx",
    "load_itbench_trajectories",
    "load_mad",
    "load_mad_human",
    "load_trail",
    "load_whoandwhen",
]

_EXAMPLES = Path(__file__).resolve().parent / "examples"


# --- the catalogue ---------------------------------------------------------------------------
# Only values found in public sources are recorded; each carries its source. Files whose
# checksum nobody has published stay None and are checked by trust on first use instead.


# --- bundled examples ------------------------------------------------------------------------


def examples_path() -> Path:
    """The folder of real public example traces shipped with mast (see its README)."""
    return _EXAMPLES


def example_traces() -> list[Trace]:
    """Load the bundled example traces: 4 MAD human-labelled records and 3 AG2 runs."""
    return list(load_traces(_EXAMPLES))


# --- MAST-Data ------------------------------------------------------------------------------


@overload
def load_mad(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    stream: Literal[False] = False,
    verification: str = "official",
) -> list[Trace]: ...
@overload
def load_mad(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    stream: Literal[True],
    verification: str = "official",
) -> Iterator[Trace]: ...


def load_mad(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    stream: bool = False,
    verification: str = "official",
) -> list[Trace] | Iterator[Trace]:
    """Read MAST-Data's full file (``MAD_full_dataset.json``) with the o1 judge's labels.

    Without ``path`` the file is downloaded from the Hub at ``revision`` (default
    :data:`MAD_REVISION`, the 2026-08-13 release with 1,642 records) and its SHA-256 checked
    before reading. With ``path`` the local file is read and recognised by its SHA-256; pass
    ``revision`` or ``sha256`` to insist that it is that release. The file is parsed record by
    record; ``stream=True`` returns an iterator so the ~200 MB file never sits in memory whole.
    ``null`` labels stay ``None`` (unknown).

    The o1 labels were made with the official definitions, where 3.2 is *Weak Verification*
    and 3.3 *No or Incorrect Verification*; they load in that convention
    (``verification="official"``, recorded in ``label_sources["o1"].verification``).
    ``verification="paper"`` moves them to mast's (paper) meanings by swapping the two codes
    (:func:`mast.traces.readings.apply_reading`: the nearest code, not an identity).

    >>> traces = load_mad(stream=True)  # doctest: +SKIP
    >>> first = next(traces)  # doctest: +SKIP
    >>> first.labels["o1"]["1.1"], first.metadata["dataset"]["revision"][:7]  # doctest: +SKIP
    (False, '95118ac')
    """
    target = verification_name(verification)
    traces = _single_file(info("mad-full"), _MAD_FULL, path, revision, sha256, "mad-full")
    if target != "official":
        traces = (moved for t in traces for moved in apply_reading([t], target))
    return traces if stream else list(traces)


def load_mad_human(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    verification: str = "paper",
) -> list[Trace]:
    """Read ``MAD_human_labelled_dataset.json``: 3 annotators' labels on final MAST codes.

    Downloads and checks the file like :func:`load_mad` when ``path`` is not given. Each
    annotator's :class:`~mast.traces.model.LabelSource` records the taxonomy version of the record's
    round (``"round1"``, ``"rounds2-3"`` or ``"final"``) and the unmapped draft labels.
    ``verification`` picks the convention of 3.2/3.3 the labels are given in: ``"paper"``
    (mast's, default: the draft labels mapped by their texts, "result verification" -> 3.2,
    "critical verification" -> 3.3) or ``"official"`` (the official definitions file's,
    which is the draft labels read by number: 3.2 and 3.3 swap; see
    :func:`mast.traces.readings.apply_reading`). The older names ``"by-definition"`` and
    ``"by-number"`` still work. Each annotator's label source records the convention.

    >>> human = load_mad_human(examples_path() / "mad_human_sample.json")
    >>> first = human[0]
    >>> first.labels["annotator_1"]["1.3"], first.label_sources["annotator_1"].taxonomy_version
    (False, 'round1')

    Traces whose whole label blocks (all annotators, all modes) are identical give a
    :class:`~mast.errors.DuplicateLabelsWarning` naming the groups: the published file has
    19 records but only 8 distinct blocks (see ``info("mad-human")``).
    """
    target = verification_name(verification)
    read = _single_file(info("mad-human"), _MAD_HUMAN, path, revision, sha256, "mad-human")
    traces = apply_reading(read, target)
    groups = duplicate_label_blocks(traces)
    if groups:
        shown = "; ".join("{" + ", ".join(g) + "}" for g in groups)
        distinct = len(traces) - sum(len(g) - 1 for g in groups)
        warnings.warn(
            f"{len(traces)} traces carry only {distinct} distinct label blocks (identical "
            f"labels from every annotator on every mode): {shown}. Given these traces (or "
            "labels_of(traces, ...)), mast.agreement, agreement_among, mast agree and mast "
            "validate bootstrap over the distinct blocks (resample='auto'; 'traces' to "
            "resample traces); a plain {trace_id: vector} mapping carries no blocks and is "
            "resampled by trace unless given clusters=mast.agree.block_map(traces)",
            DuplicateLabelsWarning,
            stacklevel=2,
        )
    return traces


def duplicate_label_blocks(traces: Sequence[Trace]) -> list[list[str]]:
    """Groups of trace ids (two or more) whose labels are identical for every annotator and
    every mode; traces without labels are left out.

    >>> duplicate_label_blocks(load_mad_human(examples_path() / "mad_human_sample.json"))
    []
    """
    groups: dict[tuple[object, ...], list[str]] = {}
    for trace in traces:
        if not trace.labels:
            continue
        key = tuple(
            (name, tuple(sorted(trace.labels[name].items()))) for name in sorted(trace.labels)
        )
        groups.setdefault(key, []).append(trace.id)
    return [g for g in groups.values() if len(g) > 1]


# --- Who&When -------------------------------------------------------------------------------

WhoAndWhenSubset = Literal["all", "Algorithm-Generated", "Hand-Crafted"]


def load_whoandwhen(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    subset: WhoAndWhenSubset = "all",
) -> list[Trace]:
    """Read the Who&When failure-attribution runs (``mistake_agent`` / ``mistake_step``).

    Without ``path`` the 184 run files are downloaded from ``Kevin355/Who_and_When`` at
    ``revision`` (default :data:`WHOANDWHEN_REVISION`). No checksum of these files has been
    published, so they are checked by trust on first use and an
    :class:`UnverifiedDatasetWarning` says so. ``path`` may be the ``Who&When`` folder, one
    subset's folder, or run files. ``subset`` keeps ``"Algorithm-Generated"`` or
    ``"Hand-Crafted"`` runs only.

    >>> runs = load_whoandwhen(subset="Hand-Crafted")  # doctest: +SKIP
    >>> len(runs), runs[0].metadata["dataset"]["subset"]  # doctest: +SKIP
    (58, 'Hand-Crafted')
    """
    if subset not in ("all", "Algorithm-Generated", "Hand-Crafted"):
        raise ValueError(
            f"subset must be 'all', 'Algorithm-Generated' or 'Hand-Crafted', got {subset!r}"
        )
    dataset = info("whoandwhen")
    if path is not None:
        traces = _local_many(dataset, load_traces(path, format="whoandwhen"), revision)
    else:
        fetched = _hub_many(dataset, _WW_PATTERNS, revision, "the Who&When runs")
        ordered = sorted(fetched, key=lambda f: _natural(f.filename))
        by_path = {str(f.path): f for f in ordered}
        traces = (
            _with_meta(t, _meta(dataset, by_path[_source_file(t)]))
            for t in load_traces([f.path for f in ordered], format="whoandwhen")
        )
    chosen = []
    for trace in traces:
        part = _ww_subset(trace)
        trace.metadata["dataset"]["subset"] = part
        if subset == "all" or part == subset:
            chosen.append(trace)
    return chosen


def _ww_subset(trace: Trace) -> str | None:
    for where in (str(trace.metadata["dataset"].get("file") or ""), _source_file(trace)):
        for part in ("Algorithm-Generated", "Hand-Crafted"):
            if part in PurePosixPath(where.replace("\\", "/")).parts:
                return part
    return None


# --- ITBench trajectories --------------------------------------------------------------------


def load_itbench_trajectories(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    scenarios: Iterable[int | str] | None = None,
) -> list[Trace]:
    """Read ITBench SRE agent runs (Codex CLI session files); licence CC BY-NC 4.0.

    Every call warns with :class:`DatasetLicenseWarning`: the data is for non-commercial use
    only. Without ``path`` the runs under ``ReAct-Agent-Trajectories/OpenAI-GPT-OSS-120B/sre``
    are downloaded from ``ibm-research/ITBench-Trajectories`` at ``revision`` (default
    :data:`ITBENCH_REVISION`); the 105 session files are verified as a set against a
    published digest. ``path`` may be a folder holding ``Scenario-<n>/<run>/`` run folders.
    ``scenarios`` keeps only those scenario numbers.

    >>> runs = load_itbench_trajectories(scenarios=[24])  # doctest: +SKIP
    >>> [t.metadata["dataset"]["run"] for t in runs]  # doctest: +SKIP
    ['1', '2', '3']
    """
    dataset = info("itbench-trajectories")
    warnings.warn(
        "ITBench-Trajectories is licensed CC BY-NC 4.0: non-commercial use only "
        "(https://creativecommons.org/licenses/by-nc/4.0/). Check that your use is allowed.",
        DatasetLicenseWarning,
        stacklevel=2,
    )
    from mast.traces.itbench import load_trial  # the trial-folder loader (sessions + diagnosis)

    wanted = None if scenarios is None else {str(s).removeprefix("Scenario-") for s in scenarios}
    traces: list[Trace] = []
    if path is not None:
        root = Path(path)
        sessions = [root / "session.jsonl"] if (root / "session.jsonl").is_file() else []
        sessions = sessions or sorted(root.rglob("session.jsonl"), key=lambda p: _natural(str(p)))
        if not sessions:
            raise FileNotFoundError(f"no Scenario-<n>/<run>/session.jsonl under {root}")
        local = _local_meta(dataset, None, None, None)
        for session in sessions:
            scenario, run = _scenario_run(session.parent)
            if wanted is None or scenario in wanted:
                meta = {**local(str(session)), "scenario": scenario, "run": run}
                traces += [_with_meta(t, meta) for t in load_trial(session.parent)]
        return traces
    fetched = _hub_many(dataset, (f"{_IT_PREFIX}/*",), revision, "the ITBench runs")
    for entry in sorted(fetched, key=lambda f: _natural(f.filename)):
        if PurePosixPath(entry.filename).name != "session.jsonl":
            continue
        scenario, run = _scenario_run(entry.path.parent)
        if wanted is None or scenario in wanted:
            meta = {**_meta(dataset, entry), "scenario": scenario, "run": run}
            traces += [_with_meta(t, meta) for t in load_trial(entry.path.parent)]
    return traces


def _scenario_run(run_dir: Path) -> tuple[str | None, str]:
    scenario = run_dir.parent.name
    number = scenario.removeprefix("Scenario-") if scenario.startswith("Scenario-") else None
    return number, run_dir.name


# --- shared machinery ------------------------------------------------------------------------


def _revision(dataset: DatasetInfo, revision: str | None) -> str:
    if revision is None:
        return dataset.default_revision
    known = dataset.release(revision) if re.fullmatch(r"[0-9a-fA-F]{7,40}", revision) else None
    return known.revision if known else revision


def _pins(dataset: DatasetInfo) -> dict[str, Pin]:
    return {
        r.revision: Pin(
            files={k: v for k, v in r.files.items() if v is not None},
            inventories=r.inventories,
        )
        for r in dataset.releases
    }


def _target(dataset: DatasetInfo, revision: str, manual: str) -> Target:
    return Target(dataset=dataset.name, repo_id=dataset.repo_id, revision=revision, manual=manual)


def _single_file(
    dataset: DatasetInfo,
    filename: str,
    path: str | Path | None,
    revision: str | None,
    sha256: str | None,
    format: str,
) -> Iterator[Trace]:
    """Traces of a local path (checked against what is known) or of a checked Hub download.

    The file is hashed and checked before the first trace is read, so a wrong file fails at
    the call, even with ``stream=True``. Folders and globs are checked file by file as read.
    """
    if path is not None:
        meta_for = _local_meta(dataset, filename, revision, sha256)
        if Path(path).is_file():
            return _tagged(load_traces(path, format=format), meta_for(str(path)))
        return (_with_meta(t, meta_for(_source_file(t))) for t in load_traces(path, format=format))
    rev = _revision(dataset, revision)
    endpoint = _hub.hub_settings().endpoint
    url = _hub.resolve_url(endpoint, dataset.repo_id, rev, filename)
    known = dataset.release(rev)
    expected = sha256 or (known.files.get(filename) if known else None)
    check = (
        f"check that `sha256sum {filename}` prints {expected}, "
        if expected
        else "(no checksum is published for this revision), "
    )
    manual = (
        f"To get the file by hand: download {url} (a browser, or `curl -L -o {filename} "
        f"'{url}'`), {check}and pass its path: {dataset.loader}({filename!r})."
    )
    fetched = _hub.fetch_file(
        _target(dataset, rev, manual), filename, pins=_pins(dataset), sha256=sha256
    )
    _warn_unverified(dataset, [fetched])
    return _tagged(load_traces(fetched.path, format=format), _meta(dataset, fetched))


def _hub_many(
    dataset: DatasetInfo, patterns: Sequence[str], revision: str | None, describe: str
) -> list[Fetched]:
    rev = _revision(dataset, revision)
    endpoint = _hub.hub_settings().endpoint
    folder = dataset.repo_id.split("/")[-1]
    manual = (
        f"To get the files by hand: `git clone {endpoint}/datasets/{dataset.repo_id}` (with "
        f"git-lfs), then `git -C {folder} checkout {rev}`, and pass the folder: "
        f"{dataset.loader}({folder!r})."
    )
    fetched = _hub.fetch_folder(
        _target(dataset, rev, manual), patterns, pins=_pins(dataset), describe=describe
    )
    _warn_unverified(dataset, fetched)
    return fetched


def _warn_unverified(dataset: DatasetInfo, fetched: Sequence[Fetched]) -> None:
    loose = [f for f in fetched if f.checksum != "verified"]
    if not loose:
        return
    first = sum(f.checksum == "first-use" for f in loose)
    how = (
        f"{first} recorded now, on first download (trust on first use)"
        if first
        else "they match the checksums recorded when first downloaded"
    )
    warnings.warn(
        f"{len(loose)} of {len(fetched)} file(s) of {dataset.name!r} ({dataset.repo_id} at "
        f"{fetched[0].revision[:12]}) are not verified against a published checksum: {how}. "
        "trace.metadata['dataset']['checksum'] records this.",
        UnverifiedDatasetWarning,
        stacklevel=4,
    )


def _meta(dataset: DatasetInfo, fetched: Fetched) -> dict[str, Any]:
    return {
        "name": dataset.name,
        "repo_id": fetched.repo_id,
        "revision": fetched.revision,
        "file": fetched.filename,
        "sha256": fetched.sha256,
        "checksum": fetched.checksum,
        "source": "hub",
    }


def _local_meta(
    dataset: DatasetInfo, filename: str | None, revision: str | None, sha256: str | None
) -> Callable[[str], dict[str, Any]]:
    """Metadata for local files: hash each once, recognise published releases by digest."""
    expected: list[tuple[str, str]] = []
    if sha256:
        expected.append((sha256.lower(), "the sha256 you passed"))
    if revision is not None:
        known = dataset.release(revision)
        published = known.files.get(filename) if known and filename else None
        if known is None or published is None:
            raise ValueError(
                f"mast knows no published checksum of {filename or 'these files'} at revision "
                f"{revision!r} of {dataset.name!r}, so it cannot check a local file against it; "
                "pass sha256=... instead (known revisions: mast.traces.datasets.info())"
            )
        expected.append((published, f"the checksum published for revision {known.revision}"))
    memo: dict[str, dict[str, Any]] = {}

    def meta_for(file: str) -> dict[str, Any]:
        if file in memo:
            return memo[file]
        actual = _hub.sha256_file(file)
        for value, why in expected:
            if value != actual:
                err = DatasetChecksumError(
                    f"{file}: SHA-256 is {actual}, expected {value} ({why}). It is not the "
                    f"file you asked for; mast.traces.datasets.info({dataset.name!r}) lists the "
                    "published releases.",
                    dataset=dataset.name,
                    repo_id=dataset.repo_id,
                    revision=revision,
                    filename=file,
                )
                err.expected, err.actual = value, actual
                raise err
        hits = [
            (rel, name) for rel in dataset.releases for name, s in rel.files.items() if s == actual
        ]
        hits.sort(key=lambda h: h[0].revision != dataset.default_revision)
        release, name = hits[0] if hits else (None, None)
        if (
            release is not None
            and revision is None
            and not any(r.revision == dataset.default_revision for r, _ in hits)
        ):
            warnings.warn(
                f"{file} is {dataset.name!r} from revision {release.revision[:7]} "
                f"({release.date}: {release.note}); the current release is "
                f"{dataset.default_revision[:7]}. Results on it are not comparable with "
                "results on the current file.",
                DatasetRevisionWarning,
                stacklevel=4,
            )
        memo[file] = {
            "name": dataset.name,
            "repo_id": dataset.repo_id,
            "revision": release.revision if release else None,
            "file": name or Path(file).name,
            "sha256": actual,
            "checksum": "verified" if (hits or expected) else "unverified",
            "source": "local",
        }
        return memo[file]

    return meta_for


def _local_many(
    dataset: DatasetInfo, traces: Iterable[Trace], revision: str | None
) -> Iterator[Trace]:
    if revision is not None:
        raise ValueError(
            f"revision= applies to downloads of {dataset.name!r}; for local files mast has no "
            "published checksums to check them against"
        )
    meta_for = _local_meta(dataset, None, None, None)
    for trace in traces:
        yield _with_meta(trace, meta_for(_source_file(trace)))


def _tagged(traces: Iterable[Trace], meta: Mapping[str, Any]) -> Iterator[Trace]:
    for trace in traces:
        yield _with_meta(trace, meta)


def _with_meta(trace: Trace, meta: Mapping[str, Any]) -> Trace:
    trace.metadata["dataset"] = dict(meta)
    return trace


def _source_file(trace: Trace) -> str:
    return (trace.source or "").split("#", 1)[0]


def _natural(text: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]
