"""The wheel carries taxonomy/ and fewshot/; README and CI agree; the public API is complete."""

from __future__ import annotations

import re
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import mast

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_loads_its_data(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)]
    built = subprocess.run([*command, str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr + built.stdout
    (wheel,) = dist.glob("mast_annotator-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    # The fresh venv gets our dependencies (not mast itself) from this interpreter's
    # site-packages through a .pth line, so the test needs no network.
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    Path(purelib, "outer_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    script = (
        "import mast, pathlib\n"
        "from mast._resources import data_dir\n"
        "assert 'site-packages' in mast.__file__, mast.__file__\n"
        "assert pathlib.Path(data_dir('taxonomy')).parent.name == '_data', data_dir('taxonomy')\n"
        "assert data_dir('fewshot').is_dir()\n"
        "tax = mast.load_taxonomy()\n"
        "print(len(tax), tax['2.6'].name, len(mast.load_label_version('round1').modes))\n"
        "print(len(mast.traces.datasets.example_traces()))\n"
    )
    result = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["14 Reasoning-Action Mismatch 18", "7"]
    # `mast report` needs no extra: matplotlib is a plain dependency of the wheel ...
    metadata = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.requires('mast-annotator'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'matplotlib>=3.7'" in metadata  # without an "; extra == …" marker
    # ... and the installed command writes a report.
    results = tmp_path / "results.jsonl"
    subprocess.run(
        [str(env_dir / "bin" / "mast"), "annotate", "--model", "heuristic", "--out", str(results)]
        + [str(p) for p in sorted((ROOT / "src/mast/traces/examples").glob("ag2_*.json"))],
        capture_output=True,
        check=True,
        cwd=tmp_path,
    )
    made = subprocess.run(
        [str(env_dir / "bin" / "mast"), "report", str(results), "--out", "r.html"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    assert 'id="mast-data"' in (tmp_path / "r.html").read_text(encoding="utf-8")


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_readme_opens_with_two_commands_and_ci_runs_the_second_verbatim() -> None:
    commands = _readme_commands()
    assert len(commands) >= 2
    install_and_run, run_tests = commands[0], commands[1]
    assert "pip install ." in install_and_run and "mast " in install_and_run
    assert "pytest" in run_tests
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert run_tests in ci


def test_public_api_all_is_sorted_and_complete() -> None:
    names = mast.__all__
    assert names == sorted(names)
    public = {n for n in dir(mast) if not n.startswith("_")} - {"annotations"}
    submodules = {n for n in public if type(getattr(mast, n)).__name__ == "module"}
    assert public - submodules <= set(names), sorted(public - submodules - set(names))
    for name in names:
        assert hasattr(mast, name), name
