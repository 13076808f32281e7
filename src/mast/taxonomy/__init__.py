"""The MAST taxonomy as data: load, validate and look up failure modes.

This module is the one source of mode codes and their order. The final taxonomy lives in
``taxonomy/mast.yaml``; the draft versions used by the MAD human annotation rounds live in
``taxonomy/versions/`` and map each draft mode to a final code by definition (or to none).

>>> tax = load_taxonomy()
>>> tax.codes[:3]
['1.1', '1.2', '1.3']
>>> tax["2.6"].name, tax["2.6"].category
('Reasoning-Action Mismatch', 'FC2')
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mast._resources import data_dir
from mast.errors import TaxonomyError, validation_problems

Stage = Literal["pre-execution", "execution", "post-execution"]

_CODE_PATTERN = r"^\d+\.\d+$"


class _Strict(BaseModel):
    # Taxonomy files are written by people: a misspelt key must fail loudly, not vanish.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Category(_Strict):
    """A group of failure modes, e.g. ``FC1`` Specification Issues."""

    code: str
    name: str
    description: str = ""


class FailureMode(_Strict):
    """One failure mode: its code, name, category and the guidance a judge needs."""

    code: str = Field(pattern=_CODE_PATTERN, description='Short code, e.g. "1.1".')
    id: str = Field(description='Stable identifier, e.g. "FM-1.1".')
    name: str
    category: str = Field(description='Category code, e.g. "FC1".')
    stage: Stage | None = None
    definition: str
    look_for: tuple[str, ...] = Field(default=(), description="Observable signs of the mode.")
    not_this: tuple[str, ...] = Field(
        default=(), description="Boundaries with the modes it is most often confused with."
    )
    aliases: tuple[str, ...] = Field(default=(), description="Other names official files use.")


RuleKind = Literal["tie-break", "co-label", "exclusive"]
"""What a decision rule claims about its modes (checked by :func:`mast.audit_taxonomy`).

``"tie-break"``: one event fits both definitions and the rule picks one reading; different
events in one trace get both modes. ``"co-label"``: one event can be both, and the rule says
when. ``"exclusive"``: the modes are never both true of one trace, a claim labels can refute.
"""


class DecisionRule(_Strict):
    """How to tell two (or more) easily confused modes apart, shown to the judge."""

    modes: tuple[str, ...] = Field(min_length=2, description='Codes, e.g. ["3.2", "3.3"].')
    kind: RuleKind = Field(
        default="tie-break",
        description="tie-break (one event, two readings), co-label or exclusive.",
    )
    rule: str


class Convention(_Strict):
    """Another reading of some modes: replacement modes and rules, e.g. official 3.2/3.3."""

    description: str = ""
    modes: tuple[FailureMode, ...] = Field(
        default=(), description="Modes replaced in this convention (matched by code)."
    )
    decision_rules: tuple[DecisionRule, ...] = Field(
        default=(),
        description="Rules replaced in this convention (matched by their modes), or added.",
    )
    remove_rules: tuple[tuple[str, ...], ...] = Field(
        default=(), description="Rules (by their modes) that do not apply in this convention."
    )


class Taxonomy(_Strict):
    """A validated set of failure modes in canonical order.

    >>> tax = load_taxonomy()
    >>> len(tax), tax.codes[-1], tax["3.2"].name
    (14, '3.3', 'No or Incomplete Verification')
    """

    name: str
    version: str
    source: str = ""
    categories: tuple[Category, ...]
    stages: tuple[str, ...] = ("pre-execution", "execution", "post-execution")
    modes: tuple[FailureMode, ...]
    decision_rules: tuple[DecisionRule, ...] = Field(
        default=(), description="Rules for confusable pairs of modes, shown to the judge."
    )
    verification: str | None = Field(
        default=None,
        description='Name of the convention the modes follow, e.g. "paper" (MAST 3.2/3.3).',
    )
    conventions: dict[str, Convention] = Field(
        default_factory=dict,
        description="Other conventions: modes and rules to swap in, by convention name.",
    )

    @model_validator(mode="after")
    def _check_consistency(self) -> Taxonomy:
        codes = [m.code for m in self.modes]
        dupes = sorted({c for c in codes if codes.count(c) > 1})
        if dupes:
            raise ValueError(f"duplicate mode codes {dupes}; every code must appear once")
        if not self.modes:
            raise ValueError("a taxonomy needs at least one mode")
        known = {c.code for c in self.categories}
        for mode in self.modes:
            if mode.category not in known:
                raise ValueError(
                    f"mode {mode.code} has category {mode.category!r}, "
                    f"which is not one of the declared categories {sorted(known)}"
                )
            if mode.stage is not None and mode.stage not in self.stages:
                raise ValueError(f"mode {mode.code} has unknown stage {mode.stage!r}")
        for rule in self.decision_rules:
            unknown = [c for c in rule.modes if c not in codes]
            if unknown:
                raise ValueError(
                    f"decision rule for {list(rule.modes)} names unknown codes {unknown}"
                )
        for name, conv in self.conventions.items():
            if name == self.verification:
                raise ValueError(f"convention {name!r} is the one the modes already follow")
            for mode in conv.modes:
                if mode.code not in codes:
                    raise ValueError(f"convention {name!r} replaces unknown mode {mode.code}")
            for rule in conv.decision_rules:
                unknown = [c for c in rule.modes if c not in codes]
                if unknown:
                    raise ValueError(
                        f"convention {name!r}: rule for {list(rule.modes)} names unknown "
                        f"codes {unknown}"
                    )
        return self

    def in_convention(self, verification: str) -> Taxonomy:
        """This taxonomy with the modes and rules of convention ``verification`` swapped in.

        The convention the file follows (``verification:``) returns the taxonomy itself.

        >>> tax = load_taxonomy()
        >>> tax.in_convention("official")["3.2"].name
        'Weak Verification'
        >>> tax.in_convention("official").in_convention("paper")["3.2"].name
        'No or Incomplete Verification'
        """
        if verification == self.verification:
            return self
        if verification not in self.conventions:
            known = [c for c in (self.verification, *self.conventions) if c]
            raise TaxonomyError(
                f"taxonomy {self.label} has no 3.2/3.3 convention {verification!r}: "
                + (
                    f"use one of {known}"
                    if known
                    else "it declares none (add `verification:` and `conventions:` to its file)"
                )
            )
        conv = self.conventions[verification]
        new_modes = {m.code: m for m in conv.modes}
        new_rules = {frozenset(r.modes): r for r in conv.decision_rules}
        removed = {frozenset(m) for m in conv.remove_rules}
        ours = {frozenset(r.modes) for r in self.decision_rules}
        added = [r for k, r in new_rules.items() if k not in ours]
        rules: list[DecisionRule] = []
        for rule in self.decision_rules:
            key = frozenset(rule.modes)
            if key in removed:
                if added:  # an added rule takes the place of a removed one
                    rules.append(added.pop(0))
                continue
            rules.append(new_rules.get(key, rule))
        rules += added
        # The convention left behind becomes one the result can switch back to.
        back = Convention(
            description=f"the modes as the taxonomy file writes them ({self.verification})",
            modes=tuple(m for m in self.modes if m.code in new_modes),
            decision_rules=tuple(
                r for r in self.decision_rules if frozenset(r.modes) in set(new_rules) | removed
            ),
            remove_rules=tuple(tuple(sorted(k)) for k in new_rules if k not in ours),
        )
        others = {k: v for k, v in self.conventions.items() if k != verification}
        if self.verification is not None:
            others[self.verification] = back
        return self.model_copy(
            update={
                "modes": tuple(new_modes.get(m.code, m) for m in self.modes),
                "decision_rules": tuple(rules),
                "verification": verification,
                "conventions": others,
            }
        )

    @property
    def codes(self) -> list[str]:
        """Mode codes in canonical order."""
        return [m.code for m in self.modes]

    @property
    def label(self) -> str:
        """``"<name> <version>"``, recorded in annotations."""
        return f"{self.name} {self.version}"

    def __getitem__(self, code: str) -> FailureMode:
        for mode in self.modes:
            if mode.code == code:
                return mode
        raise KeyError(f"no failure mode {code!r} in {self.label}; known codes: {self.codes}")

    def __contains__(self, code: object) -> bool:
        return any(m.code == code for m in self.modes)

    def __iter__(self) -> Iterator[FailureMode]:  # type: ignore[override]
        return iter(self.modes)

    def __len__(self) -> int:
        return len(self.modes)

    def category(self, code: str) -> Category:
        """The category with this code (``"FC1"``), or the category of a mode (``"1.1"``)."""
        if code in self:
            code = self[code].category
        for cat in self.categories:
            if cat.code == code:
                return cat
        raise KeyError(f"no category {code!r} in {self.label}")

    def in_category(self, category: str) -> list[str]:
        """Codes of the modes in ``category`` (e.g. ``"FC3"``), in canonical order."""
        return [m.code for m in self.modes if m.category == category]

    def code_for_name(self, name: str) -> str | None:
        """The code whose name or alias matches ``name`` (case and spacing ignored)."""
        wanted = normalize_name(name)
        for mode in self.modes:
            if wanted in {normalize_name(n) for n in (mode.name, *mode.aliases)}:
                return mode.code
        return None


def normalize_name(name: str) -> str:
    """Fold case, punctuation and spacing so that spelling variants of a name compare equal."""
    return re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()


def _read_yaml(path: Path, what: str) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaxonomyError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaxonomyError(f"{path}: not valid YAML ({exc}); fix the file's syntax") from exc


def _validation_message(path: Path, exc: ValidationError) -> str:
    return f"{path}: invalid taxonomy data: {validation_problems(exc)}"


def load_taxonomy(path: str | Path | None = None, *, verification: str | None = None) -> Taxonomy:
    """Load and validate a taxonomy; with no path, the bundled final MAST taxonomy.

    ``verification`` picks the convention of 3.2/3.3: ``"paper"`` (the default for MAST:
    3.2 No or Incomplete Verification, 3.3 Incorrect Verification) or ``"official"`` (the
    official definitions file's: 3.2 Weak Verification, 3.3 No or Incorrect Verification).
    ``None`` keeps the convention the file follows; a taxonomy without that convention
    raises :class:`~mast.errors.TaxonomyError`.

    Custom or adapted taxonomies (e.g. for SRE agents) use the same YAML shape as
    ``taxonomy/mast.yaml``; unknown keys, duplicate codes and undeclared categories raise
    :class:`~mast.errors.TaxonomyError`.

    A bundled taxonomy can be named instead of given as a path: a string made only of
    letters, digits, ``-`` and ``_`` that is not an existing file is looked up as
    ``taxonomy/<name>.yaml`` among the bundled ones (see :func:`bundled_taxonomies`), so
    ``load_taxonomy("sre")`` gives the SRE flavour. Anything else is read as a file path.

    >>> load_taxonomy().codes == ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2",
    ...                           "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3"]
    True
    >>> load_taxonomy("sre").name
    'MAST-SRE'
    >>> load_taxonomy(verification="official")["3.3"].name
    'No or Incorrect Verification'
    """
    tax = _load_any(path)
    return tax if verification is None else tax.in_convention(verification)


def _load_any(path: str | Path | None) -> Taxonomy:
    if path is None:
        return _bundled_taxonomy()
    if isinstance(path, str) and _BUNDLED_NAME.fullmatch(path) and not Path(path).exists():
        if path not in bundled_taxonomies():
            raise TaxonomyError(
                f"no bundled taxonomy {path!r} and no file of that name: use one of "
                f"{bundled_taxonomies()} or the path of a YAML file shaped like "
                "taxonomy/mast.yaml"
            )
        return _bundled_named(path)
    return _load_taxonomy_file(Path(path))


_BUNDLED_NAME = re.compile(r"[A-Za-z0-9_-]+")


def bundled_taxonomies() -> list[str]:
    """Names accepted by ``load_taxonomy(name)``: the bundled ``taxonomy/*.yaml`` files.

    >>> {"mast", "sre"} <= set(bundled_taxonomies())
    True
    """
    return sorted(p.stem for p in data_dir("taxonomy").glob("*.yaml"))


@cache
def _bundled_named(name: str) -> Taxonomy:
    if name == "mast":
        return _bundled_taxonomy()
    return _load_taxonomy_file(data_dir("taxonomy") / f"{name}.yaml")


@cache
def _bundled_taxonomy() -> Taxonomy:
    return _load_taxonomy_file(data_dir("taxonomy") / "mast.yaml")


def _load_taxonomy_file(path: Path) -> Taxonomy:
    raw = _read_yaml(path, "taxonomy")
    try:
        return Taxonomy.model_validate(raw)
    except ValidationError as exc:
        raise TaxonomyError(_validation_message(path, exc)) from exc


Reading = Literal["by-definition", "by-number"]
"""How draft labels are mapped when sources disagree: by their texts (default) or numbers."""


class DraftMode(_Strict):
    """A mode of an earlier (draft) taxonomy version and the final code it maps to."""

    code: str = Field(description="The code the draft version gave it (not stable across rounds).")
    name: str
    maps_to: str | None = Field(description="Final code with the same definition, or null.")
    aliases: tuple[str, ...] = ()
    readings: dict[str, str | None] = Field(
        default_factory=dict,
        description='Other readings of this label, e.g. {"by-number": "3.3"}.',
    )
    reason: str = Field(default="", description="Why maps_to is what it is (quoting the source).")

    def code_for(self, reading: str = "by-definition") -> str | None:
        """The final code under ``reading`` (``maps_to`` unless the mode lists that reading)."""
        return self.readings.get(reading, self.maps_to)


class LabelVersion(_Strict):
    """A taxonomy version used to label data, with its mapping onto the final codes.

    >>> v = load_label_version("round1")
    >>> v.match("2.2 Step repetition").maps_to
    '1.3'
    """

    name: str
    version: str
    rounds: tuple[str, ...] = ()
    maps_to_taxonomy: str = ""
    modes: tuple[DraftMode, ...]

    @property
    def unmapped(self) -> list[DraftMode]:
        """Draft modes with no final counterpart."""
        return [m for m in self.modes if m.maps_to is None]

    def reading_map(self, reading: str) -> dict[str, str]:
        """Final code by definition -> final code under ``reading``, for labels that differ.

        >>> load_label_version("rounds2-3").reading_map("by-number")
        {'3.3': '3.2', '3.2': '3.3'}
        """
        out: dict[str, str] = {}
        for mode in self.modes:
            other = mode.code_for(reading)
            if mode.maps_to is not None and other is not None and other != mode.maps_to:
                out[mode.maps_to] = other
        return out

    def match(self, label: str, *, cutoff: float = 0.85) -> DraftMode | None:
        """Find the draft mode a label string names, by name (never by its number alone).

        ``label`` may be a bare name or ``"<code> <name>\\n<definition>"`` as in the MAD
        human file. Case, spacing and punctuation are ignored and small typos are tolerated
        (difflib similarity ≥ ``cutoff``). Returns ``None`` when nothing matches.
        """
        name = _label_name(label)
        wanted = normalize_name(name)
        by_name: dict[str, DraftMode] = {}
        for mode in self.modes:
            for candidate in (mode.name, *mode.aliases):
                by_name[normalize_name(candidate)] = mode
        if wanted in by_name:
            return by_name[wanted]
        close = difflib.get_close_matches(wanted, list(by_name), n=1, cutoff=cutoff)
        return by_name[close[0]] if close else None


def _label_name(label: str) -> str:
    # MAD label strings look like "2.2 Step repetition\n\n<definition>" or
    # "1.4 Fail to elicit clarification\n(between agents)\n…": the name is the first line
    # without its leading code.
    first_line = label.strip().splitlines()[0] if label.strip() else ""
    return re.sub(r"^\s*\d+(\.\d+)?\s*", "", first_line).strip()


_BUNDLED_VERSIONS = ("round1", "rounds2-3", "final", "ag2-open-coding")


def load_label_version(name_or_path: str | Path) -> LabelVersion:
    """Load a labelling version: ``"round1"``, ``"rounds2-3"``, ``"final"`` or a YAML path."""
    if isinstance(name_or_path, str) and name_or_path in _BUNDLED_VERSIONS:
        return _bundled_version(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise TaxonomyError(
            f"no label version {str(name_or_path)!r}: use one of {list(_BUNDLED_VERSIONS)} "
            "or the path of a YAML file shaped like taxonomy/versions/round1.yaml"
        )
    return _load_version_file(path)


@cache
def _bundled_version(name: str) -> LabelVersion:
    return _load_version_file(data_dir("taxonomy") / "versions" / f"{name}.yaml")


def _load_version_file(path: Path) -> LabelVersion:
    raw = _read_yaml(path, "label version")
    try:
        version = LabelVersion.model_validate(raw)
    except ValidationError as exc:
        raise TaxonomyError(_validation_message(path, exc)) from exc
    final = _bundled_taxonomy()
    named = [m.maps_to for m in version.modes] + [
        code for m in version.modes for code in m.readings.values()
    ]
    bad = [code for code in named if code is not None and code not in final]
    if bad:
        raise TaxonomyError(f"{path}: maps_to codes {bad} are not codes of {final.label}")
    return version


def label_versions() -> list[LabelVersion]:
    """The bundled labelling versions (Round 1, Rounds 2–3, final)."""
    return [_bundled_version(n) for n in _BUNDLED_VERSIONS]


def version_for_round(round_name: str) -> LabelVersion | None:
    """The bundled labelling version a MAD human-file ``round`` value uses, if known."""
    wanted = normalize_name(round_name)
    for version in label_versions():
        if wanted in {normalize_name(r) for r in version.rounds}:
            return version
    return None
