"""The few-shot pool: short excerpts of real runs, each read for one failure mode.

An excerpt shows a few steps of a run and a reading: the one root mode it shows (``shows``,
or none) and near misses (``not``): modes a reader could confuse it with, and why it is not
them. Every reading cites a step of the excerpt and quotes it verbatim. The bundled pool
(``fewshot/excerpts.yaml``) is written from Who&When runs, which are not in MAST-Data's
human-labelled file, and covers every MAST mode with a positive and a near miss.

>>> pool = load_pool()
>>> missing = [c for c, (pos, near) in coverage(pool).items() if not pos or not near]
>>> missing
[]
>>> [ex.id for ex in select_excerpts(pool, count=0)]
[]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mast._resources import data_dir
from mast.errors import FewShotError, validation_problems
from mast.judge.prompt.tokens import estimate_tokens
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Step

__all__ = [
    "DATASETS",
    "Excerpt",
    "ExcerptStep",
    "Reading",
    "Review",
    "Source",
    "coverage",
    "is_pool_file",
    "load_pool",
    "pool_table",
    "select_excerpts",
]

POOL_FILE = "excerpts.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


DATASETS = ("whoandwhen", "ag2", "mad-full", "agentrx")
"""Datasets excerpts are cut from (see ``fewshot/README.md``, "Addressing")."""

# Who&When Hand-Crafted runs that AgentRx ships too, as Magentic-One GAIA runs (the AgentRx
# trajectory id is the run's GAIA question id; every message is identical, checked against
# AgentRx @ f228165). An excerpt of one of them is also an excerpt of AgentRx, so leaving
# AgentRx out (when it is the evaluation set) leaves it out as well.
AGENTRX_COPIES = {
    "Hand-Crafted/21.json": "840bfca7-4f7b-481a-8794-c560c340185d",
    "Hand-Crafted/27.json": "5d0080cb-90d7-4712-bc33-848150e917d3",
    "Hand-Crafted/30.json": "2ddae3b7a208e3c25f14d82d7a1faaaa1832fbf950b4dac345e755c4c361f294",
    "Hand-Crafted/33.json": "72e110e7-464c-453c-a309-90a95aed6538",
    "Hand-Crafted/51.json": "1f975693-876d-457b-a649-393859e79bf3",
    "Hand-Crafted/57.json": "3af8028c2a59e28ca88baff0e6d91f2a9f170c5ef91003f1c8406755a2760ad4",
}


class Source(_Strict):
    """Where an excerpt comes from, precisely enough to rebuild every shown step.

    ``path`` is the file inside the dataset's folder, ``run`` picks one run inside a file that
    holds several (AgentRx τ-bench ``runs.json``: the ``task_id``; MAST-Data full records: the
    ``trace_id``), and ``history`` lists the 0-based indices of the messages shown, in order.
    Step ``s<n>`` of the excerpt is message ``n - 1`` of the run.
    """

    dataset: Literal["whoandwhen", "ag2", "mad-full", "agentrx"]
    path: str = Field(min_length=1)
    run: int | None = None
    history: tuple[int, ...] = Field(min_length=1)

    @property
    def system(self) -> str:
        """The multi-agent system that made the run (from the dataset and its folder)."""
        folder = self.path.split("/")[0]
        if self.dataset == "whoandwhen":
            return {"Hand-Crafted": "Magentic-One", "Algorithm-Generated": "CaptainAgent"}.get(
                folder, folder
            )
        if self.dataset == "agentrx":
            return {"tau_retail": "tau-bench retail agent", "magentic_one": "Magentic-One"}.get(
                folder, folder
            )
        return {"ag2": "AG2 MathChat", "mad-full": "ChatDev"}[self.dataset]

    @property
    def datasets(self) -> tuple[str, ...]:
        """Every dataset that holds this run: ``dataset``, and ``agentrx`` for the Who&When
        Hand-Crafted runs AgentRx ships too (:data:`AGENTRX_COPIES`)."""
        if self.dataset == "whoandwhen" and self.path in AGENTRX_COPIES:
            return (self.dataset, "agentrx")
        return (self.dataset,)

    def label(self) -> str:
        """The run the excerpt comes from, as one string (``dataset:path[#run]``)."""
        return f"{self.dataset}:{self.path}" + (f"#{self.run}" if self.run is not None else "")


class Review(_Strict):
    """A second reader's verdict on an excerpt's readings (someone who did not write them)."""

    reader: str = Field(min_length=1)
    verdict: Literal["correct", "arguable", "wrong"]
    note: str = Field(min_length=1)


class ExcerptStep(_Strict):
    """One step of an excerpt, with the id it has in the full run (``s<n>``)."""

    id: str = Field(pattern=r"^s\d+$")
    agent: str | None = None
    role: str | None = None
    content: str


class Reading(_Strict):
    """A judgement about one mode: the step it rests on, a verbatim quote, and why."""

    mode: str
    step: str
    quote: str = Field(min_length=1)
    why: str = Field(min_length=1)
    # What the quote is about, when the whole quote is too long to recur: a cut must not hide
    # a step between the cited ones that mentions it (default: the quote itself).
    entity: str | None = None


class Excerpt(_Strict):
    """A few steps of a real run and how they read for one mode and its near misses."""

    id: str
    source: Source
    task: str | None = None
    steps: tuple[ExcerptStep, ...] = Field(min_length=1)
    shows: Reading | None = None
    near_misses: tuple[Reading, ...] = Field(default=(), alias="not")
    review: Review | None = None

    @model_validator(mode="after")
    def _check(self) -> Excerpt:
        ids = [s.id for s in self.steps]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate step ids in {ids}")
        expected = [f"s{i + 1}" for i in self.source.history]
        if ids != expected:
            raise ValueError(
                f"step ids {ids} do not match source.history {list(self.source.history)} "
                f"(step s<n> is message n - 1 of the run: expected {expected})"
            )
        if self.shows is None and not self.near_misses:
            raise ValueError("an excerpt needs a `shows` reading, a `not` reading, or both")
        by_id = {s.id: s.content for s in self.steps}
        modes = [r.mode for r in self.readings]
        if len(set(modes)) != len(modes):
            raise ValueError(f"mode listed twice in the readings: {modes}")
        for reading in self.readings:
            if reading.step not in by_id:
                raise ValueError(
                    f"reading for {reading.mode} cites {reading.step}, not in the excerpt"
                )
            if reading.entity is not None and reading.entity not in reading.quote:
                raise ValueError(
                    f"reading for {reading.mode}: entity {reading.entity!r} is not in its quote"
                )
            if reading.quote not in by_id[reading.step]:
                raise ValueError(
                    f"reading for {reading.mode}: quote {reading.quote!r} is not in step "
                    f"{reading.step} (quotes must be copied verbatim)"
                )
        return self

    @property
    def run(self) -> str:
        """The run the excerpt was cut from (``dataset:path[#run]``)."""
        return self.source.label()

    @property
    def dataset(self) -> str:
        """The dataset the excerpt was cut from."""
        return self.source.dataset

    @property
    def datasets(self) -> tuple[str, ...]:
        """Every dataset that holds the excerpt's run (see :attr:`Source.datasets`)."""
        return self.source.datasets

    @property
    def readings(self) -> tuple[Reading, ...]:
        """``shows`` (when set) followed by the near misses."""
        return ((self.shows,) if self.shows else ()) + self.near_misses

    @property
    def modes(self) -> set[str]:
        """Every mode this excerpt speaks about."""
        return {r.mode for r in self.readings}

    def to_steps(self) -> list[Step]:
        """The excerpt's steps as :class:`~mast.traces.model.Step` objects (ids kept)."""
        return [
            Step(id=s.id, index=int(s.id[1:]) - 1, content=s.content, agent=s.agent, role=s.role)
            for s in self.steps
        ]

    def text(self) -> str:
        """All text the excerpt contributes to a prompt (for token estimates and leak checks)."""
        parts = [self.task or ""]
        parts += [f"[{s.id}] agent={s.agent or ''}\n{s.content}" for s in self.steps]
        parts += [f"{r.mode} [{r.step}] {r.quote} {r.why}" for r in self.readings]
        return "\n".join(parts)


def is_pool_file(path: Path) -> bool:
    """Whether ``path`` is an excerpt pool (a YAML file with a top-level ``excerpts`` list)."""
    if path.suffix.lower() not in (".yaml", ".yml"):
        return False
    try:
        head = path.read_text(encoding="utf-8")[:20000]
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.startswith("excerpts:") for line in head.splitlines())


def load_pool(path: str | Path | None = None, *, taxonomy: Taxonomy | None = None) -> list[Excerpt]:
    """Load an excerpt pool (default: the bundled ``fewshot/excerpts.yaml``).

    Readings must name codes of ``taxonomy`` (default: bundled MAST); errors raise
    :class:`~mast.errors.FewShotError` naming the file and the excerpt.
    """
    tax = taxonomy or load_taxonomy()
    file = Path(path) if path is not None else data_dir("fewshot") / POOL_FILE
    try:
        data: Any = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FewShotError(f"{file}: cannot read the excerpt pool ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("excerpts"), list):
        raise FewShotError(f"{file}: expected a mapping with a list under 'excerpts'")
    pool: list[Excerpt] = []
    seen: set[str] = set()
    for number, raw in enumerate(data["excerpts"], 1):
        where = raw.get("id", f"#{number}") if isinstance(raw, dict) else f"#{number}"
        try:
            excerpt = Excerpt.model_validate(raw)
        except ValidationError as exc:
            raise FewShotError(f"{file}: excerpt {where}: {validation_problems(exc)}") from exc
        unknown = sorted(excerpt.modes - set(tax.codes))
        if unknown:
            raise FewShotError(f"{file}: excerpt {where}: codes {unknown} are not in {tax.label}")
        if excerpt.id in seen:
            raise FewShotError(f"{file}: excerpt id {excerpt.id!r} is used twice")
        seen.add(excerpt.id)
        pool.append(excerpt)
    return pool


def coverage(
    pool: Sequence[Excerpt], taxonomy: Taxonomy | None = None
) -> dict[str, tuple[list[str], list[str]]]:
    """Per mode code: ids of excerpts that show it, and ids that are near misses for it."""
    tax = taxonomy or load_taxonomy()
    out: dict[str, tuple[list[str], list[str]]] = {c: ([], []) for c in tax.codes}
    for ex in pool:
        if ex.shows is not None and ex.shows.mode in out:
            out[ex.shows.mode][0].append(ex.id)
        for near in ex.near_misses:
            if near.mode in out:
                out[near.mode][1].append(ex.id)
    return out


def pool_table(pool: Sequence[Excerpt], taxonomy: Taxonomy | None = None) -> str:
    """The pool as one table: per mode, its positives and near misses, systems and reviews.

    Ends with a line per mode that has fewer than two positives from two systems or no near
    miss, and the systems of the whole pool.

    >>> pool_table(load_pool()).splitlines()[0].split()
    ['mode', 'kind', 'excerpt', 'system', 'review']
    """
    tax = taxonomy or load_taxonomy()
    by_id = {ex.id: ex for ex in pool}
    rows = [("mode", "kind", "excerpt", "system", "review")]
    short = []
    for code, (positives, near_misses) in coverage(pool, tax).items():
        for kind, ids in (("shows", positives), ("not", near_misses)):
            for i in ids:
                review = by_id[i].review
                verdict = f"{review.verdict} ({review.reader})" if review else "-"
                rows.append((code, kind, i, by_id[i].source.system, verdict))
        systems = {by_id[i].source.system for i in positives}
        if len(positives) < 2 or len(systems) < 2 or not near_misses:
            short.append(
                f"{code}: {len(positives)} positive(s) from {len(systems)} system(s), "
                f"{len(near_misses)} near miss(es)"
            )
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    lines = ["  ".join(r[c].ljust(widths[c]) for c in range(4)) + "  " + r[4] for r in rows]
    every = sorted({ex.source.system for ex in pool})
    lines.append("")
    lines.append(f"{len(pool)} excerpts from {len(every)} systems: {', '.join(every)}")
    unreviewed = [ex.id for ex in pool if ex.review is None]
    lines.append(f"without a review: {len(unreviewed)}")
    lines += [f"short: {x}" for x in short] or [
        "every mode: >= 2 positives from >= 2 systems, >= 1 near miss"
    ]
    return "\n".join(lines)


def select_excerpts(
    pool: Sequence[Excerpt],
    *,
    count: int | None = None,
    token_budget: int | None = None,
    cost: dict[str, int] | None = None,
) -> list[Excerpt]:
    """Pick excerpts so that as many modes as possible get a positive and a near miss.

    Greedy: each round takes the excerpt that covers the most still-missing (mode, kind)
    slots per token, positives before near misses; ties break on id. ``count`` caps the
    number (``0`` gives none), ``token_budget`` the summed token cost (``cost``: id ->
    tokens, default :func:`~mast.judge.prompt.tokens.estimate_tokens` of :meth:`Excerpt.text`).
    The result keeps the pool's order, so the prompt is stable.
    """
    if count is not None and count < 0:
        raise ValueError(f"count must be >= 0 or None, got {count}")
    costs = cost or {ex.id: estimate_tokens(ex.text()) for ex in pool}
    missing: set[tuple[str, str]] = set()
    for ex in pool:
        missing |= _slots(ex)
    chosen: list[Excerpt] = []
    spent = 0
    rest = list(pool)
    limit = len(rest) if count is None else min(count, len(rest))
    while rest and len(chosen) < limit and missing:
        fitting = [
            ex for ex in rest if token_budget is None or spent + costs[ex.id] <= token_budget
        ]
        if not fitting:
            break

        best = min(fitting, key=lambda ex: _gain(ex, missing, costs[ex.id]))
        if not _slots(best) & missing:
            break
        chosen.append(best)
        rest.remove(best)
        missing -= _slots(best)
        spent += costs[best.id]
    order = {ex.id: i for i, ex in enumerate(pool)}
    return sorted(chosen, key=lambda ex: order[ex.id])


def _gain(ex: Excerpt, missing: set[tuple[str, str]], tokens: int) -> tuple[float, str]:
    # Positives count double: a mode without any positive example is the bigger gap.
    weight = sum(2 if kind == "shows" else 1 for _, kind in _slots(ex) & missing)
    return (-weight / max(1, tokens), ex.id)


def _slots(ex: Excerpt) -> set[tuple[str, str]]:
    slots = {(r.mode, "not") for r in ex.near_misses}
    if ex.shows is not None:
        slots.add((ex.shows.mode, "shows"))
    return slots
