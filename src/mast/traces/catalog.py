"""The catalogue of public MAST datasets: what each is, where it lives (pinned revision and
checksums), its licence, and :func:`info` to read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, overload

from mast.traces.hub import Inventory


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
    label_blocks: int | None = None
    """Distinct label blocks (all annotators x all modes) at the default revision, when
    fewer than the records: records with identical blocks are not independent evidence."""

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
        if self.label_blocks is not None:
            lines.append(f"  label blocks: {self.label_blocks} distinct (see the quirks)")
        for rel in self.releases:
            checked = "published checksums" if rel.verifiable else "no published checksum"
            when = rel.date or "date unknown"
            lines.append(f"  revision {rel.revision[:12]} ({when}, {checked}): {rel.note}")
        lines.extend(f"  quirk: {q}" for q in self.quirks)
        return "\n".join(lines)


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
            # 8 of 19: counted on the file at 95118ac by the session that filed mast issue 17;
            # the groups {5, 6, 7} and {16, 17} are checked on the verbatim records in
            # tests/fixtures (tests/traces/test_datasets.py).
            "the 19 records carry only 8 distinct label blocks (3 annotators x 14 modes after "
            "mapping): within a round, traces of different systems have identical labels, e.g. "
            "trace_ids 0, 1, 2 (AppWorld, HyperAgent, AG2), 5, 6, 7 (AppWorld, HyperAgent, "
            "AG2) and 16, 17 (MetaGPT, Magentic-One); load_mad_human warns with the groups and "
            "agreement reports bootstrap over the distinct blocks",
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
        label_blocks=8,
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
