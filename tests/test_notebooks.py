"""The research notebooks run from a clean checkout, offline, without errors or warnings,
and are committed without outputs (so they cannot rot unnoticed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["quickstart", "agreement", "failure_analysis"]
SRC = Path(__file__).resolve().parent.parent / "src"


def _read(name: str) -> object:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_without_outputs(name: str) -> None:
    book = _read(name)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    book = _read(name)
    # The kernel is a child process: make the checkout's mast importable there and keep it
    # offline (no Hugging Face downloads, no provider keys).
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
    assert images >= 1, f"{name}: no figure was displayed"
