"""Public datasets on demand, pinned to a revision and checked, plus mast's bundled examples.

``load_mad()`` reads MAST-Data's full file (traces labelled by an o1 judge, stored as annotator
``"o1"``); ``load_mad_human()`` reads the small human-labelled file, mapping each annotator's
labels from its round's taxonomy version onto the final codes (annotators ``"annotator_1"`` …
``"annotator_3"``; draft modes without a final counterpart stay visible in
``trace.label_sources[annotator].unmapped``). ``load_whoandwhen()`` and
``load_itbench_trajectories()`` read two other public sets of failed agent runs.

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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, overload

from mast.errors import DatasetChecksumError
from mast.traces import hub as _hub
from mast.traces.hub import Fetched, Inventory, Pin, Target
from mast.traces.loaders import load_traces
from mast.traces.model import Trace

__all__ = [
    "ITBENCH_REVISION",
    "MAD_REVISION",
    "WHOANDWHEN_REVISION",
    "DatasetInfo",
    "DatasetLicenseWarning",
    "DatasetRevisionWarning",
    "Release",
    "UnverifiedDatasetWarning",
    "example_traces",
    "examples_path",
    "info",
    "load_itbench_trajectories",
    "load_mad",
    "load_mad_human",
    "load_whoandwhen",
]

_EXAMPLES = Path(__file__).resolve().parent / "examples"


class DatasetLicenseWarning(UserWarning):
    """The dataset being loaded has a licence that restricts use (e.g. non-commercial)."""


class UnverifiedDatasetWarning(UserWarning):
    """The files were not verified against a published checksum (trust on first use only)."""


class DatasetRevisionWarning(UserWarning):
    """A file is from a superseded revision of its dataset."""


@dataclass(frozen=True)
class Release:
    """One revision (commit) of a dataset's Hub repository, as mast knows it.

    ``files`` maps each file's path in the repository to its published SHA-256, or ``None``
    when no checksum has been published. ``inventories`` are digests over sets of files.
    """

    revision: str
    date: str | None
    records: int | None
    files: Mapping[str, str | None] = field(default_factory=dict)
    inventories: tuple[Inventory, ...] = ()
    note: str = ""

    @property
    def verifiable(self) -> bool:
        """Whether mast can check this revision against a published checksum."""
        return any(self.files.values()) or bool(self.inventories)


@dataclass(frozen=True)
class DatasetInfo:
    """What mast knows about one public dataset: where it lives, its terms, size and quirks."""

    name: str
    title: str
    repo_id: str
    loader: str
    files: tuple[str, ...]
    licence: str
    size: str
    label_source: Literal["human", "llm"]
    labels: str
    quirks: tuple[str, ...]
    releases: tuple[Release, ...]
    default_revision: str
    url: str

    def release(self, revision: str) -> Release | None:
        """The known release with this commit hash (or unique prefix of at least 7 digits)."""
        hits = [r for r in self.releases if r.revision.startswith(revision.lower())]
        return hits[0] if len(hits) == 1 and len(revision) >= 7 else None

    def __str__(self) -> str:
        lines = [
            f"{self.name}: {self.title}",
            f"  loader:       {self.loader}",
            f"  hub:          {self.repo_id} (default revision {self.default_revision})",
            f"  licence:      {self.licence}",
            f"  size:         {self.size}",
            f"  labels:       {self.label_source}: {self.labels}",
        ]
        for rel in self.releases:
            checked = "published checksums" if rel.verifiable else "no published checksum"
            when = rel.date or "date unknown"
            lines.append(f"  revision {rel.revision[:12]} ({when}, {checked}): {rel.note}")
        lines.extend(f"  quirk: {q}" for q in self.quirks)
        return "\n".join(lines)


# --- the catalogue ---------------------------------------------------------------------------
# Only values found in public sources are recorded; each carries its source. Files whose
# checksum nobody has published stay None and are checked by trust on first use instead.

_MAD_REPO = "mcemri/MAST-Data"  # the earlier name "mcemri/MAD" resolves to the same repository
_MAD_FULL = "MAD_full_dataset.json"
_MAD_HUMAN = "MAD_human_labelled_dataset.json"

# 95118ac (2026-08-13, 1,642 rows): revision, full and human SHA-256 from a public course
# project's download script (MAST 04 / DAT-28 "download_mast.py", EXPECTED_HF_CHECKSUMS, code
# index id 69018246358); the full-file digest also from an independent cohort-sampling module
# pinned to mcemri/MAST-Data (id 70243895743) and its README (id 70301320260); the human digest
# also from a research note pinning the same revision (id 70816364982). Date and row counts
# from a published census note (id 62530309310): "The published revision is 95118ac
# (2026-08-13) with 1,642".
MAD_REVISION = "95118ac951421753cf1deb87ddea3b01e693c41b"
# 5a82e32 (2026-06-02, 1,242 rows): full SHA-256 and size 63,463,757 bytes from a published
# pilot protocol (id 58363120805) and an audit (id 58432003594), both at this revision; human
# SHA-256 (same bytes as at 95118ac) from an audit table at this revision (id 57681837424).
MAD_OLD_REVISION = "5a82e32347f70a701a3c68637de12f8a0be3de3c"
_MAD_FULL_SHA = "d636ac63dfc1c6af2d312e862f4b7d383b62d3898d431ccd0e7a79d21d85406f"
_MAD_FULL_OLD_SHA = "a182daadb8ded015efc889db8bde29e5e4dd478e0dcc5516f6727a1bbc43eaec"
_MAD_HUMAN_SHA = "30a0c4075078e9a1b8c39bc608d2b5156cc64c6bda1f6fd262786eb81ff4a286"

# Who&When: revision pinned by several public evaluation projects (e.g. a corpus-revision
# table, id 60436760197, and reports reading its cache snapshot, id 56661736331). No SHA-256
# of its files was found in any source: checked by trust on first use.
WHOANDWHEN_REVISION = "59b9fcba1aaed7bbf206b5f4d3c68b8face2f49c"
_WW_REPO = "Kevin355/Who_and_When"
_WW_PATTERNS = ("Who&When/Algorithm-Generated/*.json", "Who&When/Hand-Crafted/*.json")

# ITBench-Trajectories: revision, path prefix, licence, file count, byte count and the digest
# over the session files from a public normalizer (Cisco, Apache-2.0; id 68728614981:
# SOURCE_REVISION, SOURCE_PREFIX, SOURCE_FILES=105, SOURCE_BYTES=21_697_208,
# SOURCE_INVENTORY_SHA256); revision also cited in an ITBench reconnaissance note
# (id 58667284515), which reports Scenario 80 run 2 lacks its output and judge files.
ITBENCH_REVISION = "c3093ee33b4f16a8eed97ade1266d0d7e88b2dec"
_IT_REPO = "ibm-research/ITBench-Trajectories"
_IT_PREFIX = "ReAct-Agent-Trajectories/OpenAI-GPT-OSS-120B/sre"
_IT_INVENTORY = Inventory(
    pattern=f"{_IT_PREFIX}/Scenario-*/*/session.jsonl",
    count=105,
    total_bytes=21_697_208,
    sha256="aa8ab12d26cac3eb247af9c8aa1ebe1b7933adae41273ea62e8e1267a72aafae",
    source="SHA-256 over '<sha256>  <path>' lines of the 105 session.jsonl files",
)

_MAD_QUIRKS_SHARED = (
    "records 17 and 18 of the human file have mas_name and benchmark_name swapped "
    "(mast puts them back and notes it in trace.metadata['quirks'])",
)
_CATALOG: dict[str, DatasetInfo] = {
    "mad-full": DatasetInfo(
        name="mad-full",
        title="MAST-Data full dataset (MAD_full_dataset.json)",
        repo_id=_MAD_REPO,
        loader="mast.traces.datasets.load_mad",
        files=(_MAD_FULL,),
        licence="CC-BY-4.0",
        size="about 200 MB, 1,642 records (revision 95118ac)",
        label_source="llm",
        labels='14 MAST modes per trace from an o1 judge (annotator "o1"), not from humans',
        quirks=(
            "labels come from an o1 LLM judge; only the human-labelled file has human labels",
            "trace_id is not unique: the unique key is (trace.key, trace_id)",
            "4 records have all 14 labels null: read as unknown (None), never as 'no'",
            "the file was rebuilt on 2026-08-13 (95118ac, 1,642 rows); the earlier revision "
            "5a82e32 (2026-06-02) has 1,242 rows and different labels (mode 2.5 has no "
            "positive there): always record which revision results were computed on",
        ),
        releases=(
            Release(
                MAD_REVISION,
                "2026-08-13",
                1642,
                {_MAD_FULL: _MAD_FULL_SHA},
                note="current release, 1,642 records",
            ),
            Release(
                MAD_OLD_REVISION,
                "2026-06-02",
                1242,
                {_MAD_FULL: _MAD_FULL_OLD_SHA},
                note="superseded: 1,242 records (63,463,757 bytes), labels differ",
            ),
        ),
        default_revision=MAD_REVISION,
        url="https://huggingface.co/datasets/mcemri/MAST-Data",
    ),
    "mad-human": DatasetInfo(
        name="mad-human",
        title="MAST-Data human-labelled dataset (MAD_human_labelled_dataset.json)",
        repo_id=_MAD_REPO,
        loader="mast.traces.datasets.load_mad_human",
        files=(_MAD_HUMAN,),
        licence="CC-BY-4.0",
        size="about 2.7 MB, 19 records",
        label_source="human",
        labels="3 annotators per trace (annotator_1..3), mapped onto the final 14 codes",
        quirks=(
            "three taxonomy versions: Round 1 (18 modes), Rounds 2-3 (17), final "
            "('Generlazability', 14); mast maps labels by definition, not by number",
            "Round 1 lists 4.3 before 4.2",
            "NaN tokens (invalid JSON) stand for missing labels: read as unknown (None)",
            "label strings have trailing spaces and typos ('Information Witholding')",
            *_MAD_QUIRKS_SHARED,
            "the same file (same SHA-256) is in revisions 95118ac and 5a82e32",
        ),
        releases=(
            Release(
                MAD_REVISION, "2026-08-13", 19, {_MAD_HUMAN: _MAD_HUMAN_SHA}, note="19 records"
            ),
            Release(
                MAD_OLD_REVISION,
                "2026-06-02",
                19,
                {_MAD_HUMAN: _MAD_HUMAN_SHA},
                note="same file as 95118ac",
            ),
        ),
        default_revision=MAD_REVISION,
        url="https://huggingface.co/datasets/mcemri/MAST-Data",
    ),
    "whoandwhen": DatasetInfo(
        name="whoandwhen",
        title="Who&When failure-attribution runs (Zhang et al., ICML 2025)",
        repo_id=_WW_REPO,
        loader="mast.traces.datasets.load_whoandwhen",
        files=_WW_PATTERNS,
        licence=(
            "not declared on the dataset card; the code repository "
            "(mingyin1/Agents_Failure_Attribution) is MIT"
        ),
        size="184 failed runs (126 Algorithm-Generated, 58 Hand-Crafted), about 2 MB",
        label_source="human",
        labels=(
            "the failure-responsible agent (mistake_agent), the decisive step (mistake_step) "
            "and a reason, by human annotators; no MAST labels"
        ),
        quirks=(
            "no MAST failure-mode labels: use it for failure attribution or as unlabelled runs",
            "mistake_step is a 0-based index into history, stored as a string "
            "(mast adds metadata['mistake_step_id'])",
            "Hand-Crafted runs are Magentic-One; Algorithm-Generated runs are CaptainAgent teams",
            "no checksum of its files has been published: checked by trust on first use",
        ),
        releases=(
            Release(
                WHOANDWHEN_REVISION,
                None,
                184,
                dict.fromkeys(_WW_PATTERNS),
                note="184 runs as JSON under Who&When/ (parquet copies beside them)",
            ),
        ),
        default_revision=WHOANDWHEN_REVISION,
        url="https://huggingface.co/datasets/Kevin355/Who_and_When",
    ),
    "itbench-trajectories": DatasetInfo(
        name="itbench-trajectories",
        title="ITBench SRE agent trajectories (GPT-OSS-120B, Codex sessions)",
        repo_id=_IT_REPO,
        loader="mast.traces.datasets.load_itbench_trajectories",
        files=(f"{_IT_PREFIX}/Scenario-<n>/<run>/session.jsonl (+ agent and judge output)",),
        licence="CC-BY-NC-4.0 (non-commercial use only)",
        size="105 runs (35 scenarios x 3); session files 21,697,208 bytes",
        label_source="llm",
        labels="ITBench's LLM judge scores each run's root-cause diagnosis; no MAST labels",
        quirks=(
            "non-commercial licence (CC BY-NC 4.0): mast warns when loading it",
            "reference runs of one agent, not expert solutions; some diagnoses are wrong",
            "Scenario 80 run 2 has no agent_output.json or judge_output.json",
            "ground truth is not in this dataset (it ships with ITBench-Lite / ITBench-AA)",
            "session files are verified as a set against a published inventory digest; the "
            "output and judge files by trust on first use",
        ),
        releases=(
            Release(
                ITBENCH_REVISION,
                None,
                105,
                {},
                inventories=(_IT_INVENTORY,),
                note="105 GPT-OSS-120B runs under " + _IT_PREFIX,
            ),
        ),
        default_revision=ITBENCH_REVISION,
        url="https://huggingface.co/datasets/ibm-research/ITBench-Trajectories",
    ),
}


@overload
def info(name: None = None) -> list[DatasetInfo]: ...
@overload
def info(name: str) -> DatasetInfo: ...


def info(name: str | None = None) -> list[DatasetInfo] | DatasetInfo:
    """Describe the public datasets mast can load (or one of them, by name).

    >>> [d.name for d in info()]
    ['mad-full', 'mad-human', 'whoandwhen', 'itbench-trajectories']
    >>> info("itbench-trajectories").licence
    'CC-BY-NC-4.0 (non-commercial use only)'
    """
    if name is None:
        return list(_CATALOG.values())
    try:
        return _CATALOG[name]
    except KeyError:
        raise KeyError(f"no dataset {name!r}; known: {sorted(_CATALOG)}") from None


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
) -> list[Trace]: ...
@overload
def load_mad(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    stream: Literal[True],
) -> Iterator[Trace]: ...


def load_mad(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    stream: bool = False,
) -> list[Trace] | Iterator[Trace]:
    """Read MAST-Data's full file (``MAD_full_dataset.json``) with the o1 judge's labels.

    Without ``path`` the file is downloaded from the Hub at ``revision`` (default
    :data:`MAD_REVISION`, the 2026-08-13 release with 1,642 records) and its SHA-256 checked
    before reading. With ``path`` the local file is read and recognised by its SHA-256; pass
    ``revision`` or ``sha256`` to insist that it is that release. The file is parsed record by
    record; ``stream=True`` returns an iterator so the ~200 MB file never sits in memory whole.
    ``null`` labels stay ``None`` (unknown).

    >>> traces = load_mad(stream=True)  # doctest: +SKIP
    >>> first = next(traces)  # doctest: +SKIP
    >>> first.labels["o1"]["1.1"], first.metadata["dataset"]["revision"][:7]  # doctest: +SKIP
    (False, '95118ac')
    """
    traces = _single_file(info("mad-full"), _MAD_FULL, path, revision, sha256, "mad-full")
    return traces if stream else list(traces)


def load_mad_human(
    path: str | Path | None = None,
    *,
    revision: str | None = None,
    sha256: str | None = None,
) -> list[Trace]:
    """Read ``MAD_human_labelled_dataset.json``: 3 annotators' labels on final MAST codes.

    Downloads and checks the file like :func:`load_mad` when ``path`` is not given. Each
    annotator's :class:`~mast.traces.model.LabelSource` records the taxonomy version of the record's
    round (``"round1"``, ``"rounds2-3"`` or ``"final"``) and the unmapped draft labels.

    >>> human = load_mad_human(examples_path() / "mad_human_sample.json")
    >>> first = human[0]
    >>> first.labels["annotator_1"]["1.3"], first.label_sources["annotator_1"].taxonomy_version
    (False, 'round1')
    """
    return list(_single_file(info("mad-human"), _MAD_HUMAN, path, revision, sha256, "mad-human"))


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
    from mast.traces.itbench import load_run  # the trial-folder loader (sessions + diagnosis)

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
                traces.append(_with_meta(load_run(session.parent), meta))
        return traces
    fetched = _hub_many(dataset, (f"{_IT_PREFIX}/*",), revision, "the ITBench runs")
    for entry in sorted(fetched, key=lambda f: _natural(f.filename)):
        if PurePosixPath(entry.filename).name != "session.jsonl":
            continue
        scenario, run = _scenario_run(entry.path.parent)
        if wanted is None or scenario in wanted:
            meta = {**_meta(dataset, entry), "scenario": scenario, "run": run}
            traces.append(_with_meta(load_run(entry.path.parent), meta))
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
