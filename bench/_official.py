"""The official annotator's side: its own virtual environment, or the re-implementation.

``bench/.venv-official`` gets ``pip install agentdash==0.1.0`` on first use (its only
dependency is the ``openai`` client). If that fails, or with ``--no-official``, the
benchmark uses ``bench/baseline_annotator.py`` with this Python and labels every number
"baseline (re-implementation)".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import BENCH, Child, clean_env, run_child

VENV = BENCH / ".venv-official"
PACKAGE = "agentdash==0.1.0"
DRIVER = BENCH / "official_driver.py"


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _versions(python: Path) -> dict[str, str] | None:
    code = (
        "import json, importlib.metadata as m;"
        "print(json.dumps({p: m.version(p) for p in ('agentdash', 'openai')}))"
    )
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=clean_env(), check=False
    )
    return json.loads(proc.stdout) if proc.returncode == 0 else None


@dataclass
class Official:
    """Which implementation stands for the official annotator, and how to run it."""

    impl: str = "baseline"  # "agentdash" or "baseline"
    python: str = sys.executable
    versions: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    @property
    def label(self) -> str:
        if self.impl == "agentdash":
            return f"official (agentdash {self.versions.get('agentdash', '?')})"
        return "baseline (re-implementation)"

    @classmethod
    def resolve(cls, *, use_official: bool, log: Any = print) -> Official:
        if not use_official:
            return cls(reason="--no-official: the re-implementation stands in")
        python = _venv_python()
        versions = _versions(python) if python.exists() else None
        if versions is None:
            log(f"installing {PACKAGE} into {VENV} (first run only) …")
            try:
                subprocess.run(
                    [sys.executable, "-m", "venv", "--clear", str(VENV)],
                    check=True,
                    capture_output=True,
                )
                subprocess.run(
                    [str(python), "-m", "pip", "install", "--quiet", PACKAGE],
                    check=True,
                    capture_output=True,
                    timeout=900,
                    env=clean_env(),
                )
            except (subprocess.SubprocessError, OSError) as exc:
                detail = getattr(exc, "stderr", b"") or b""
                reason = f"{PACKAGE} could not be installed ({exc}; {detail[-300:]!r})"
                log(reason + "; using the re-implementation")
                return cls(reason=reason)
            versions = _versions(python)
            if versions is None:
                return cls(reason=f"{PACKAGE} installed but does not import")
        return cls(impl="agentdash", python=str(python), versions=versions)

    def annotate(
        self, data: Path, *, base_url: str, model: str, examples: Path | None = None
    ) -> Child:
        """Annotate every trace in ``data`` one by one, as the official README does."""
        cmd = [self.python, str(DRIVER), "annotate", "--impl", self.impl]
        cmd += ["--data", str(data), "--model", model]
        if examples is not None:
            cmd += ["--examples", str(examples)]
        # The official annotator builds OpenAI(api_key=...) without a base URL; the
        # client takes the server from OPENAI_BASE_URL.
        return run_child(cmd, env=clean_env(OPENAI_BASE_URL=base_url))

    def parse(self, files: list[Path]) -> dict[str, Any]:
        cmd = [self.python, str(DRIVER), "parse", "--impl", self.impl, *map(str, files)]
        result: dict[str, Any] = run_child(cmd).result
        return result
