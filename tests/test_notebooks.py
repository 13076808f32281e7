"""The research notebooks run from a clean checkout, offline, without errors or warnings.

They are committed with their outputs (readers on GitHub see results without running
anything; ``python scripts/run_notebooks.py`` refreshes them), and the suite executes each
one again, so a notebook that no longer runs fails here instead of showing stale output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["quickstart", "agreement", "failure_analysis", "judge_with_base_url"]
SRC = Path(__file__).resolve().parent.parent / "src"


def _read(name: str) -> object:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_every_notebook_is_listed() -> None:
    assert sorted(NAMES) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_with_outputs_of_one_clean_run(name: str) -> None:
    book = _read(name)
    nbformat.validate(book)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    # Executed top to bottom in one kernel (counts 1, 2, 3 …), not cell by cell by hand.
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), name
    outputs = [output for cell in code for output in cell.outputs]
    assert outputs, f"{name}: committed without outputs (run scripts/run_notebooks.py)"
    for output in outputs:
        assert output.get("output_type") != "error", f"{name}: committed with an error"
        assert output.get("name") != "stderr", f"{name}: committed with stderr output"


def test_agreement_notebook_shows_the_baselines_beside_the_pooled_kappa() -> None:
    # Issue 32: the committed report repr and summary carry macro kappa and both baselines.
    book = _read("agreement")
    texts = [
        "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
        for cell in book.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    ]
    shown = "\n".join(texts)
    assert "<AgreementReport" in shown and "macro kappa" in shown
    assert "constant judge" in shown and "chance judge" in shown
    assert "constant baseline" in shown and "chance baseline" in shown  # report.summary


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    book = _read(name)
    # The kernel is a child process: make the checkout's mast importable there and keep it
    # offline (no Hugging Face downloads, no provider keys). Its response cache goes to a
    # temporary folder, not the user's ~/.cache/mast (annotate_many caches by default).
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    # The kernel listens on the loopback interface only (jupyter_client's default).
    client = nbclient.NotebookClient(
        book, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    images = 0
    for cell in book.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                # A warning in a notebook is a bug in the notebook or in mast: fail on it.
                pytest.fail(f"{name}: stderr output in cell {cell.source[:60]!r}: {output.text}")
            images += "image/png" in output.get("data", {})
    if name != "judge_with_base_url":  # the base_url notebook shows requests, not figures
        assert images >= 1, f"{name}: no figure was displayed"
