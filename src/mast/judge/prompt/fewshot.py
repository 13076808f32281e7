"""Whole-trace few-shot examples as data: load them from files and pick a balanced few.

An example is one YAML or JSON file: a short excerpt of a real trace (its steps, with the
step ids the excerpt uses), the gold label of every taxonomy code, and a short rationale
that cites steps as ``[s3]``. People write these files, so unknown keys, missing codes, and
citations of steps the excerpt does not have are errors that name the file.

``evidence`` maps a present code to what shows it: ``{step: s4, quote: "..."}`` items (the
quote copied verbatim from that step; a quote not in its step is an error naming the file,
the code and the step), or bare step ids (``s4``). The example's answer in the prompt
carries the quotes. A positive with step ids only teaches the judge evidence that the
evidence policy does not count as grounded (it needs a quote found in a cited step), so the
judge notes every such file (:func:`unquoted_positives`).

mast bundles no whole-trace examples: its default few-shot material is the excerpt pool of
:mod:`mast.judge.prompt.excerpts`, written from runs outside any evaluation set. Pass your own
files with ``Judge(..., fewshot="my-examples/")``. A set of whole-trace examples should
mark about as many modes present as real traces do (:func:`positive_rate` between 10% and
30%); the judge notes when it does not.

>>> import tempfile, pathlib, yaml
>>> codes = load_taxonomy().codes
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "one.yaml").write_text(yaml.safe_dump({
...     "id": "one", "source": "made up", "attribution": "mast docs",
...     "steps": [{"content": "2 + 2 = 5", "agent": "solver"}],
...     "labels": {c: c == "3.2" for c in codes}, "rationale": "[s1] is never checked."}))
>>> examples = load_examples(folder)
>>> [ex.id for ex in examples], round(positive_rate(examples), 3)
(['one'], 0.071)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from mast.errors import FewShotError, validation_problems
from mast.judge.prompt.excerpts import is_pool_file
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Step, Trace

__all__ = [
    "FewShotExample",
    "estimate_example_tokens",
    "load_examples",
    "positive_rate",
    "select_examples",
    "unquoted_positives",
]

POSITIVE_RATE_RANGE = (0.10, 0.30)
"""Share of present labels a whole-trace example set should have (human majority: ~20%)."""

_SUFFIXES = (".yaml", ".yml", ".json")
_CITATION = re.compile(r"\[(s\d+)\]")
_STEP_ID = re.compile(r"^s(\d+)$")


def _squash(text: str) -> str:
    # Whitespace runs count as one space: YAML folds long lines.
    return " ".join(text.split())


class FewShotExample(BaseModel):
    """One worked example for the judge prompt: excerpt, gold labels, rationale."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Short unique name, e.g. 'ag2-gsmplus-ribbon'.")
    source: str = Field(description="Dataset and record the excerpt comes from.")
    attribution: str = Field(description="Authors, licence, and what was changed.")
    task: str | None = Field(default=None, description="The task the traced run was given.")
    steps: list[Step] = Field(description="A short excerpt, with the ids the excerpt uses.")
    labels: dict[str, bool] = Field(description="Gold label of every taxonomy code.")
    rationale: str = Field(description="Why, in a few sentences citing steps as [s3].")
    evidence: dict[str, list[str]] = Field(
        default_factory=dict, description="Code -> ids of the steps that show it."
    )
    quotes: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Code -> {step id: quote copied verbatim from that step}; files give "
        "them as evidence items {step, quote}.",
    )
    notes: dict[str, str] = Field(
        default_factory=dict, description="Optional one-sentence reason per code."
    )
    task_completed: bool | None = Field(
        default=None, description="Whether the run achieved its task, when known."
    )
    # The file the example was read from (set by load_examples), for messages that name it.
    _file: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _split_evidence(cls, data: Any) -> Any:
        # A file's evidence items are step ids or {step, quote} (step_id also accepted, as in
        # the answer format): the ids go to `evidence`, the quotes to `quotes`.
        if not isinstance(data, dict) or not isinstance(data.get("evidence"), dict):
            return data
        evidence: dict[Any, Any] = {}
        quotes: dict[str, dict[str, str]] = {
            str(c): dict(q) for c, q in (data.get("quotes") or {}).items() if isinstance(q, dict)
        }
        for code, items in data["evidence"].items():
            if not isinstance(items, list):
                evidence[code] = items  # the field's own validation reports the type
                continue
            ids: list[Any] = []
            for item in items:
                if isinstance(item, dict):
                    unknown = sorted(set(item) - {"step", "step_id", "quote"})
                    step = item.get("step", item.get("step_id"))
                    if unknown or not isinstance(step, str):
                        raise ValueError(
                            f"evidence for {code}: {item!r} is not a step id or "
                            "{step: s4, quote: '...'}"
                        )
                    ids.append(step)
                    if item.get("quote") is not None:
                        quotes.setdefault(str(code), {})[step] = str(item["quote"])
                else:
                    ids.append(item)
            evidence[code] = ids
        return {**data, "evidence": evidence, "quotes": quotes}

    @model_validator(mode="before")
    @classmethod
    def _fill_step_positions(cls, data: Any) -> Any:
        # Authors write `- {id: s4, agent: …, content: …}`; index follows from the id
        # (or from the position when the id is left out too).
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            return data
        steps = []
        for position, step in enumerate(data["steps"]):
            if isinstance(step, dict):
                step = dict(step)
                step.setdefault("id", f"s{position + 1}")
                number = _STEP_ID.match(str(step["id"]))
                step.setdefault("index", int(number.group(1)) - 1 if number else position)
            steps.append(step)
        return {**data, "steps": steps}

    @model_validator(mode="after")
    def _check_references(self) -> FewShotExample:
        if not self.steps:
            raise ValueError("an example needs at least one step")
        ids = [s.id for s in self.steps]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate step ids {dupes}")
        known = set(ids)
        for code, refs in self.evidence.items():
            if code not in self.labels:
                raise ValueError(f"evidence for {code!r}, which has no label")
            if not self.labels[code]:
                raise ValueError(f"evidence for {code!r}, which is labelled false")
            missing = [r for r in refs if r not in known]
            if missing:
                raise ValueError(f"evidence for {code} cites steps {missing} not in the excerpt")
        content = {s.id: _squash(s.content) for s in self.steps}
        for code, quoted in self.quotes.items():
            for step, quote in quoted.items():
                if step not in self.evidence.get(code, []):
                    raise ValueError(
                        f"a quote for {code} at {step}, which its evidence does not cite"
                    )
                if not quote.strip():
                    raise ValueError(f"evidence for {code} at {step}: the quote is empty")
                if _squash(quote) not in content[step]:
                    raise ValueError(
                        f"evidence for {code} at {step}: the quote {quote!r} is not in step "
                        f"{step} (copy it verbatim from the step)"
                    )
        for code in self.notes:
            if code not in self.labels:
                raise ValueError(f"a note for {code!r}, which has no label")
        texts = [self.rationale, *self.notes.values()]
        cited = sorted({c for t in texts for c in _CITATION.findall(t)} - known)
        if cited:
            raise ValueError(f"the rationale cites steps {cited} that are not in the excerpt")
        return self

    @property
    def positives(self) -> list[str]:
        """Codes labelled present."""
        return [c for c, v in self.labels.items() if v]

    @property
    def unquoted(self) -> list[str]:
        """Codes labelled present whose evidence carries no quote (step ids only, or none)."""
        quoted = {c for c, q in self.quotes.items() if any(v.strip() for v in q.values())}
        return [c for c in self.positives if c not in quoted]

    @property
    def file(self) -> Path | None:
        """The file the example was read from (``None`` when built in Python)."""
        return self._file

    def to_trace(self) -> Trace:
        """The excerpt as a :class:`~mast.traces.model.Trace` (labels are not attached)."""
        return Trace(id=self.id, task=self.task, steps=list(self.steps), source=self.source)


def estimate_example_tokens(example: FewShotExample, *, model: str | None = None) -> int:
    """Prompt tokens the example adds, counted on its rendered block.

    Uses tiktoken when it is installed with its encoding on disk, else the calibrated
    estimate of :func:`mast.judge.prompt.tokens.estimate_tokens` (within about 10% of
    ``o200k_base``). See :func:`mast.judge.prompt.render.example_tokens`.
    """
    from mast.judge.prompt.render import example_tokens  # jinja2 loads only when counting

    return example_tokens(example, model=model).tokens


def unquoted_positives(examples: Sequence[FewShotExample]) -> list[str]:
    """One note per example that labels a mode present without quoting it.

    Such an example shows the judge an answer whose evidence is a bare step id, which the
    evidence policy does not count as grounded (a positive needs a quote found in a cited
    step), so it teaches ungrounded evidence. The note names the file when there is one.

    >>> codes = load_taxonomy().codes
    >>> ex = FewShotExample(id="e", source="s", attribution="a", rationale="r",
    ...                     steps=[{"content": "2 + 2 = 5"}], evidence={"3.2": ["s1"]},
    ...                     labels={c: c == "3.2" for c in codes})
    >>> unquoted_positives([ex])[0].startswith("few-shot example e: 3.2 is labelled present")
    True
    """
    out: list[str] = []
    for ex in examples:
        codes = ex.unquoted
        if codes:
            where = f"{ex.file} (example {ex.id})" if ex.file is not None else f"example {ex.id}"
            out.append(
                f"few-shot {where}: {', '.join(codes)} {'is' if len(codes) == 1 else 'are'} "
                "labelled present with step ids only, so the example teaches ungrounded "
                "evidence (the evidence policy needs a quote found in a cited step); give "
                "each positive evidence as {step: s4, quote: '...'}"
            )
    return out


def positive_rate(examples: Sequence[FewShotExample]) -> float:
    """Share of ``True`` among the examples' labels (``nan`` for no labels).

    >>> positive_rate([])
    nan
    """
    values = [v for ex in examples for v in ex.labels.values()]
    return sum(values) / len(values) if values else math.nan


def load_examples(
    path: str | Path | None = None, *, taxonomy: Taxonomy | None = None
) -> list[FewShotExample]:
    """Load whole-trace few-shot examples: one file, or every file in a folder.

    Files are ``*.yaml``/``*.yml``/``*.json``, one example each, read in name order (an
    excerpt pool file in the folder, one with a top-level ``excerpts`` list, is skipped).
    Every example must label exactly the codes of ``taxonomy`` (default: bundled MAST);
    ids must be unique. Errors raise :class:`~mast.errors.FewShotError` naming the file.
    mast bundles no whole-trace examples, so ``path`` is needed.
    """
    tax = taxonomy or load_taxonomy()
    if path is None:
        raise FewShotError(
            "mast bundles no whole-trace few-shot examples (its examples are the excerpt pool "
            "in fewshot/excerpts.yaml, see mast.judge.prompt.excerpts.load_pool): pass the path of "
            "your example files"
        )
    root = Path(path)
    if root.is_dir():
        files = sorted(
            p
            for p in root.iterdir()
            if p.suffix.lower() in _SUFFIXES and p.is_file() and not is_pool_file(p)
        )
        if not files:
            raise FewShotError(
                f"{root}: no few-shot example files (*.yaml, *.yml, *.json) in this folder"
            )
    elif root.is_file():
        files = [root]
    else:
        raise FewShotError(f"{root}: no such file or folder of few-shot examples")
    examples: list[FewShotExample] = []
    seen: dict[str, Path] = {}
    for file in files:
        example = _load_file(file, tax)
        if example.id in seen:
            raise FewShotError(
                f"{file}: example id {example.id!r} is already used by {seen[example.id]}; "
                "give every example its own id"
            )
        seen[example.id] = file
        examples.append(example)
    return examples


def _load_file(file: Path, tax: Taxonomy) -> FewShotExample:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FewShotError(f"{file}: cannot read the file ({exc})") from exc
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if file.suffix.lower() == ".json" else "YAML"
        raise FewShotError(f"{file}: not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise FewShotError(
            f"{file}: expected one example (a mapping with id, source, steps, labels, …), "
            f"got {type(data).__name__}"
        )
    labels = data.get("labels")
    if isinstance(labels, dict):
        numeric = [k for k in labels if not isinstance(k, str)]
        if numeric:
            raise FewShotError(
                f"{file}: label keys {numeric} are numbers; quote them as strings "
                "(YAML reads 1.1 as a number and 1.10 as 1.1), e.g. '\"1.1\": false'"
            )
    try:
        example = FewShotExample.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise FewShotError(f"{file}: invalid few-shot example: {problems}") from exc
    example._file = file
    missing = [c for c in tax.codes if c not in example.labels]
    extra = sorted(set(example.labels) - set(tax.codes))
    if missing or extra:
        raise FewShotError(
            f"{file}: labels must give every code of {tax.label} exactly once; "
            f"missing {missing}, not in the taxonomy {extra}"
        )
    return example


def select_examples(
    examples: Sequence[FewShotExample],
    *,
    count: int | None = None,
    token_budget: int | None = None,
) -> list[FewShotExample]:
    """Pick examples: first those covering positives of the most modes not yet covered,
    then the ones with the fewest positives (so clean runs are shown too).

    ``count`` caps how many (``0`` → zero-shot, ``None`` → no cap); ``token_budget`` caps
    their summed :func:`estimate_example_tokens` (an example that does not fit is skipped
    and smaller ones are still tried). Ties break on size, then id, so the choice is
    deterministic.

    >>> codes = load_taxonomy().codes
    >>> exs = [FewShotExample(id=f"e{i}", source="s", attribution="a",
    ...                       steps=[{"content": "x"}], rationale="r",
    ...                       labels={c: c == codes[i] for c in codes}) for i in range(3)]
    >>> len(select_examples(exs, count=2)), select_examples(exs, token_budget=10)
    (2, [])
    """
    if count is not None and count < 0:
        raise ValueError(f"count must be >= 0 or None, got {count}")
    if token_budget is not None and token_budget < 0:
        raise ValueError(f"token_budget must be >= 0 or None, got {token_budget}")
    pool = list(examples)
    cost = {id(ex): estimate_example_tokens(ex) for ex in pool}
    chosen: list[FewShotExample] = []
    covered: set[str] = set()
    spent = 0
    limit = len(pool) if count is None else min(count, len(pool))
    while len(chosen) < limit:
        fitting = [
            ex for ex in pool if token_budget is None or spent + cost[id(ex)] <= token_budget
        ]
        if not fitting:
            break
        best = min(fitting, key=lambda ex: _rank(ex, covered, cost[id(ex)]))
        chosen.append(best)
        pool.remove(best)
        covered |= set(best.positives)
        spent += cost[id(best)]
    return chosen


def _rank(example: FewShotExample, covered: set[str], tokens: int) -> tuple[int, int, int, str]:
    gain = len(set(example.positives) - covered)
    if gain:
        return (0, -gain, tokens, example.id)
    # Nothing new to cover: prefer examples with few positives, i.e. mostly clean runs.
    return (1, len(example.positives), tokens, example.id)
