"""What a Hugging Face Hub download fetches and from where (used by :mod:`mast.traces.hub`
and by the error messages of :mod:`mast.traces.hub_errors`).

>>> Target("mad", "org/mad", "main", "download it by hand").repo_id
'org/mad'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["HubSettings", "Target"]


@dataclass(frozen=True)
class Target:
    """What to fetch, and the text that tells a person how to get it by hand."""

    dataset: str
    repo_id: str
    revision: str
    manual: str


@dataclass(frozen=True)
class HubSettings:
    """Endpoint, cache folder and offline flag in force now (environment read at call time)."""

    endpoint: str
    cache_dir: Path
    offline: bool
