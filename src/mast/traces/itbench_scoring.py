"""ITBench SRE runs: read ground truth, score an agent's diagnosis, find trial folders.

Whether an ITBench SRE run succeeded is not in its trace: it comes from comparing the
agent's diagnosis (``agent_output.json``: ``entities[]`` named ``namespace/Kind/name`` with a
``contributing_factor`` flag) with the scenario's ground truth, whose root causes are
``groups[]`` with ``root_cause: true``.

Matching rule (documented because scores depend on it):

* a diagnosis entity counts when its ``contributing_factor`` is true (or absent: an entity
  listed without the flag is taken as a claimed cause and noted in ``notes``);
* it matches a group when the kinds are equal (case ignored), the namespaces are equal when
  both are given, and its name fully matches one of the group's ``filter`` regexes (case
  ignored) — or, for a group without filters, equals the group's ``name`` (else its ``id``);
* groups listed together in ``aliases`` are equivalent: matching one matches all;
* ground truth in the entity shape (``spec.entities[]`` with ``kind`` and ``metadata.name``,
  no ``groups``) treats every listed entity as a root cause matched by exact name.

Scores: recall = root causes found / root causes; precision = diagnosed causes that match a
root cause / diagnosed causes (``None`` when the diagnosis names no cause); ITBench-AA score =
0 when any root cause is missed, otherwise the precision. The default success rule is
recall = 1 (``success="recall"``); ``success="exact"`` also asks for precision = 1, and any
callable ``DiagnosisScore -> bool`` works.

>>> gt = load_ground_truth({"groups": [{"id": "cfg", "kind": "ConfigMap",
...     "name": "flagd-config", "namespace": "otel-demo", "root_cause": True}]})
>>> s = score_diagnosis({"entities": [
...     {"name": "otel-demo/ConfigMap/flagd-config", "contributing_factor": True},
...     {"name": "otel-demo/Deployment/cart", "contributing_factor": True}]}, gt)
>>> s.recall, s.precision, s.score
(1.0, 0.5, 0.5)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mast.errors import GroundTruthError
from mast.traces.itbench_layout import ground_truth_near, scenario_of_trial

__all__ = [
    "DiagnosisScore",
    "GroundTruth",
    "GroundTruthGroup",
    "SuccessRule",
    "find_ground_truth",
    "find_runs",
    "is_run_folder",
    "load_ground_truth",
    "read_diagnosis",
    "score_diagnosis",
]

GROUND_TRUTH_NAMES = (
    "ground_truth.yaml",
    "ground_truth.yml",
    "groundtruth.yaml",
    "groundtruth.yml",
    "ground_truth.json",
)
"""Ground-truth file names looked for, in this order, in a trial folder then its incident
folder."""

DIAGNOSIS_NAMES = ("agent_output.json", "agent_response.json")
"""Diagnosis file names, looked for in a trial folder and its ``outputs/`` subfolder."""


class GroundTruthGroup(BaseModel):
    """One group of Kubernetes entities in a ground truth (a root cause or an impacted one)."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    filters: tuple[str, ...] = ()
    root_cause: bool = False

    def matches(self, namespace: str | None, kind: str | None, name: str) -> bool:
        """Whether a diagnosis entity ``namespace/kind/name`` falls in this group."""
        if self.kind and (kind is None or kind.lower() != self.kind.lower()):
            return False
        if self.namespace and namespace and namespace != self.namespace:
            return False
        if self.filters:
            return any(re.fullmatch(f, name, re.IGNORECASE) for f in self.filters)
        return name.lower() == (self.name or self.id).lower()


class GroundTruth(BaseModel):
    """A scenario's ground truth, normalized from the wrapped, plain or entity shapes."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    shape: Literal["wrapped", "plain", "entities"] = "plain"
    groups: tuple[GroundTruthGroup, ...]
    aliases: tuple[tuple[str, ...], ...] = ()
    source: str | None = None

    @property
    def root_causes(self) -> list[GroundTruthGroup]:
        """The groups marked ``root_cause: true``."""
        return [g for g in self.groups if g.root_cause]

    def equivalents(self, group_id: str) -> set[str]:
        """The group id and every id listed with it in ``aliases``."""
        out = {group_id}
        for alias_set in self.aliases:
            if group_id in alias_set:
                out.update(alias_set)
        return out


class DiagnosisScore(BaseModel):
    """How well a diagnosis found the ground truth's root causes."""

    model_config = ConfigDict(frozen=True)

    recall: float = Field(description="Root causes found / root causes.")
    precision: float | None = Field(
        description="Diagnosed causes matching a root cause / diagnosed causes; None if none."
    )
    score: float = Field(description="ITBench-AA: 0 if any root cause is missed, else precision.")
    root_causes: list[str] = Field(description="Ground-truth root-cause group ids.")
    found: list[str] = Field(description="Root-cause ids the diagnosis matched.")
    missed: list[str] = Field(description="Root-cause ids the diagnosis did not match.")
    predicted: list[str] = Field(description="Entity names the diagnosis gave as causes.")
    true_positives: list[str] = Field(default_factory=list)
    false_positives: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


SuccessRule = Literal["recall", "exact"] | Callable[[DiagnosisScore], bool]


def _success(rule: SuccessRule) -> tuple[Callable[[DiagnosisScore], bool], str]:
    if rule == "recall":
        return (lambda s: s.recall == 1.0), "recall == 1"
    if rule == "exact":
        return (lambda s: s.recall == 1.0 and s.precision == 1.0), "recall == 1 and precision == 1"
    if callable(rule):
        return rule, getattr(rule, "__name__", "custom rule")
    raise ValueError(f"success must be 'recall', 'exact' or a callable, got {rule!r}")


# --- ground truth -----------------------------------------------------------------------------


def load_ground_truth(source: str | Path | Mapping[str, Any] | GroundTruth) -> GroundTruth:
    """Read ground truth from a YAML/JSON file or an already-parsed mapping.

    Raises :class:`~mast.errors.GroundTruthError` when it cannot be read or names no root
    cause.
    """
    if isinstance(source, GroundTruth):
        return source
    where: str | None = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        where = str(path)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise GroundTruthError(
                f"cannot read ground truth {path}: {exc.strerror or exc}"
            ) from exc
        except yaml.YAMLError as exc:
            raise GroundTruthError(f"{path}: ground truth is not valid YAML ({exc})") from exc
    else:
        raw = source
    if not isinstance(raw, Mapping):
        raise GroundTruthError(
            f"{where or 'ground truth'}: expected a mapping with 'groups' (or 'spec'), "
            f"got {type(raw).__name__}"
        )
    shape: Literal["wrapped", "plain", "entities"] = "plain"
    body: Mapping[str, Any] = raw
    if isinstance(raw.get("spec"), Mapping):
        body, shape = raw["spec"], "wrapped"
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    name = metadata.get("name") or raw.get("id")
    groups = _groups(body, where)
    if not groups and isinstance(body.get("entities"), list):
        groups, shape = _entity_groups(body["entities"]), "entities"
    if not any(g.root_cause for g in groups):
        raise GroundTruthError(
            f"{where or 'ground truth'}: no root cause to score against (expected groups[] "
            "with 'root_cause: true', or spec.entities[])"
        )
    aliases = tuple(
        tuple(str(i) for i in alias_set)
        for alias_set in body.get("aliases") or []
        if isinstance(alias_set, list)
    )
    return GroundTruth(
        name=str(name) if name is not None else None,
        shape=shape,
        groups=tuple(groups),
        aliases=aliases,
        source=where,
    )


def _groups(body: Mapping[str, Any], where: str | None) -> list[GroundTruthGroup]:
    out = []
    for i, group in enumerate(body.get("groups") or []):
        if not isinstance(group, Mapping) or "id" not in group:
            raise GroundTruthError(f"{where or 'ground truth'}: groups[{i}] has no 'id'")
        filters = group.get("filter") or ()
        if isinstance(filters, str):
            filters = (filters,)
        for pattern in filters:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise GroundTruthError(
                    f"{where or 'ground truth'}: group {group['id']!r} has an invalid filter "
                    f"regex {pattern!r} ({exc})"
                ) from exc
        out.append(
            GroundTruthGroup(
                id=str(group["id"]),
                kind=_opt(group.get("kind")),
                namespace=_opt(group.get("namespace")),
                name=_opt(group.get("name")),
                filters=tuple(str(f) for f in filters),
                root_cause=group.get("root_cause") is True,
            )
        )
    return out


def _entity_groups(entities: list[Any]) -> list[GroundTruthGroup]:
    out = []
    for entity in entities:
        if not isinstance(entity, Mapping):
            continue
        meta = entity.get("metadata") if isinstance(entity.get("metadata"), Mapping) else entity
        assert isinstance(meta, Mapping)
        name, namespace, kind = meta.get("name"), meta.get("namespace"), entity.get("kind")
        if not name:
            continue
        out.append(
            GroundTruthGroup(
                id="/".join(str(p) for p in (namespace, kind, name) if p),
                kind=_opt(kind),
                namespace=_opt(namespace),
                name=str(name),
                root_cause=True,
            )
        )
    return out


def _opt(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


# --- diagnosis --------------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def read_diagnosis(path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
    """Read an ``agent_output.json``: ``(diagnosis, None)`` or ``(None, problem)``.

    Accepts the quirks real runs produce: a JSON string holding the JSON, and JSON wrapped
    in a markdown code fence.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        return None, f"cannot read diagnosis {path.name}: {exc.strerror or exc}"
    value: Any = None
    for candidate in (text, *(m.group(1) for m in _FENCE.finditer(text))):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        break
    else:
        return None, f"diagnosis {path.name} is not valid JSON"
    if isinstance(value, str):  # the agent wrote its JSON as a string, often fenced
        inner = _FENCE.search(value)
        try:
            value = json.loads(inner.group(1) if inner else value)
        except ValueError:
            return None, f"diagnosis {path.name} is a string that does not hold JSON"
    if not isinstance(value, Mapping) or not isinstance(value.get("entities"), list):
        return None, f"diagnosis {path.name} has no 'entities' list"
    return dict(value), None


def _entity(value: Mapping[str, Any]) -> tuple[str | None, str | None, str, str]:
    """(namespace, kind, name, label) of a diagnosis entity ``namespace/Kind/name``."""
    raw = str(value.get("name") or value.get("id") or "").strip()
    label = raw
    # Agents add notes after the name ("cart (pod cart-7d9f)"): keep the first word.
    raw = raw.split()[0] if raw.split() else raw
    parts = [p for p in raw.split("/") if p]
    namespace = kind = None
    if len(parts) >= 3:
        namespace, kind, name = parts[0], parts[1], "/".join(parts[2:])
    elif len(parts) == 2:
        kind, name = parts
    else:
        name = parts[0] if parts else ""
    kind = _opt(value.get("kind")) or kind
    namespace = _opt(value.get("namespace")) or namespace
    return namespace, kind, name, label


def score_diagnosis(
    diagnosis: Mapping[str, Any] | str | Path,
    ground_truth: GroundTruth | Mapping[str, Any] | str | Path,
) -> DiagnosisScore:
    """Score one diagnosis against ground truth (see the module docstring for the rule).

    ``diagnosis`` is the parsed ``agent_output.json`` or its path.
    """
    gt = load_ground_truth(ground_truth)
    if isinstance(diagnosis, (str, Path)):
        parsed, problem = read_diagnosis(diagnosis)
        if parsed is None:
            raise GroundTruthError(f"cannot score: {problem}")
        diagnosis = parsed
    entities = diagnosis.get("entities")
    if not isinstance(entities, list):
        raise GroundTruthError("diagnosis has no 'entities' list")
    roots = [g.id for g in gt.root_causes]
    notes: list[str] = []
    predicted: list[str] = []
    true_positives: list[str] = []
    false_positives: list[str] = []
    found: set[str] = set()
    for entity in entities:
        if not isinstance(entity, Mapping):
            notes.append(f"ignored an entity that is not an object: {entity!r:.60}")
            continue
        flag = entity.get("contributing_factor")
        namespace, kind, name, label = _entity(entity)
        if flag is False or (isinstance(flag, str) and flag.strip().lower() == "false"):
            continue
        if flag is None:
            notes.append(f"entity {label!r} has no contributing_factor; taken as a cause")
        predicted.append(label)
        matched: set[str] = set()
        for group in gt.groups:
            if group.matches(namespace, kind, name):
                matched |= gt.equivalents(group.id)
        hits = matched & set(roots)
        if hits:
            found |= hits
            true_positives.append(label)
        else:
            false_positives.append(label)
        if kind is None:
            notes.append(f"entity {label!r} has no Kind; it cannot match a group")
    recall = len(found) / len(roots)
    precision = len(true_positives) / len(predicted) if predicted else None
    score = 0.0 if recall < 1.0 else (precision or 0.0)
    return DiagnosisScore(
        recall=recall,
        precision=precision,
        score=score,
        root_causes=roots,
        found=sorted(found),
        missed=[r for r in roots if r not in found],
        predicted=predicted,
        true_positives=true_positives,
        false_positives=false_positives,
        notes=notes,
    )


# --- run folders ------------------------------------------------------------------------------


def find_ground_truth(folder: str | Path) -> Path | None:
    """The ground-truth file of a trial folder: in it, else in its incident (parent) folder,
    else ITBench's own layout: ``ground_truth/scenario_N/`` beside the runs, ``N`` read from
    the trial's ``config.toml`` workspace path or its folder names (see
    :mod:`mast.traces.itbench_layout`)."""
    folder = Path(folder)
    for place in (folder, folder.parent):
        for name in GROUND_TRUTH_NAMES:
            if (place / name).is_file():
                return place / name
    number = scenario_of_trial(folder)
    return None if number is None else ground_truth_near(folder, number, GROUND_TRUTH_NAMES)


def diagnosis_file(folder: str | Path) -> Path | None:
    """The ``agent_output.json`` (or ``agent_response.json``) of a trial folder, if any."""
    folder = Path(folder)
    for place in (folder, folder / "outputs"):
        for name in DIAGNOSIS_NAMES:
            if (place / name).is_file():
                return place / name
    return None


def _has_session_file(folder: Path) -> bool:
    if (folder / "session.jsonl").is_file() or any(folder.glob("rollout-*.jsonl")):
        return True
    sessions = folder / "sessions"
    return sessions.is_dir() and any(sessions.rglob("rollout-*.jsonl"))


def is_run_folder(path: str | Path) -> bool:
    """Whether ``path`` is an ITBench trial folder (``<incident>/<trial>/``).

    Rule: a folder is a trial folder when it holds a diagnosis file (``agent_output.json`` or
    ``agent_response.json``, directly or in ``outputs/``), or when it holds a Codex session
    file (``session.jsonl``, ``rollout-*.jsonl``, or ``sessions/**/rollout-*.jsonl``) and a
    ground-truth file sits in it or in its parent folder.
    """
    folder = Path(path)
    if not folder.is_dir():
        return False
    if diagnosis_file(folder) is not None:
        return True
    return _has_session_file(folder) and find_ground_truth(folder) is not None


def find_runs(root: str | Path) -> list[Path]:
    """Every trial folder at or below ``root`` (hidden folders skipped), sorted."""
    root = Path(root)
    if is_run_folder(root):
        return [root]
    out: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        out.extend(find_runs(child))
    return out
