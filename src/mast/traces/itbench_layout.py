"""Where an ITBench trial's ground truth lives, in the layouts ITBench itself writes.

ITBench keeps ground truth apart from the agent's output: ``ground_truth/scenario_N/``
beside the ``agent_outputs/<scenario>/<trial>/`` workspaces, or a snapshot folder with one
``Scenario-N/`` per scenario. The scenario number comes from the workspace path Codex was
given (``config.toml``: ``writable_roots`` and ``[projects."…/agent_outputs/2/1"]``), else
from the folder names (``Scenario-2/1``, ``2/1``).

>>> scenario_of_name("Scenario-12"), scenario_of_name("scenario_3"), scenario_of_name("run-a")
('12', '3', None)
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ground_truth_for_scenario", "scenario_of_name", "scenario_of_trial"]

GROUND_TRUTH_FOLDERS = ("ground_truth", "ground_truths", "groundtruth")
"""Names of the folder holding one sub-folder per scenario, looked for beside the runs."""

_WORKSPACE = re.compile(r"agent_outputs[\\/]+([^\\/\"'\]\s]+)[\\/]+[^\\/\"'\]\s]+")
_SEARCH_UP = 4  # trial, incident, and a few folders above: where ITBench puts ground_truth/


def scenario_of_name(name: str) -> str | None:
    """The scenario number in a folder name (``Scenario-2``, ``scenario_2``, ``2``), or None."""
    match = re.fullmatch(r"(?:[A-Za-z]+[-_]?)?(\d+)", name)
    return match.group(1) if match else None


def scenario_of_trial(folder: Path) -> str | None:
    """The scenario number of a trial folder: from its ``config.toml`` workspace path, else
    from the incident folder's name."""
    config = folder / "config.toml"
    if config.is_file():
        try:
            text = config.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        match = _WORKSPACE.search(text)
        if match and scenario_of_name(match.group(1)):
            return scenario_of_name(match.group(1))
    return scenario_of_name(folder.parent.name)


def _variants(number: str) -> tuple[str, ...]:
    return (
        f"scenario_{number}",
        f"Scenario-{number}",
        f"scenario-{number}",
        f"Scenario_{number}",
        number,
    )


def ground_truth_for_scenario(root: Path, number: str, names: tuple[str, ...]) -> Path | None:
    """The ground-truth file of scenario ``number`` in a folder of scenario folders."""
    for variant in _variants(number):
        for name in names:
            candidate = root / variant / name
            if candidate.is_file():
                return candidate
    return None


def ground_truth_near(folder: Path, number: str, names: tuple[str, ...]) -> Path | None:
    """Scenario ``number``'s ground truth in a ``ground_truth/`` folder beside the trial, its
    incident folder or a few folders above."""
    for place in list(folder.resolve().parents)[:_SEARCH_UP]:
        for sub in GROUND_TRUTH_FOLDERS:
            if (place / sub).is_dir():
                found = ground_truth_for_scenario(place / sub, number, names)
                if found is not None:
                    return found
    return None
