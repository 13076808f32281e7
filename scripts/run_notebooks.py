"""Execute the notebooks in place so they are committed with their outputs.

    python scripts/run_notebooks.py              # all of notebooks/*.ipynb
    python scripts/run_notebooks.py quickstart   # one

Runs offline like the test suite (tests/test_notebooks.py): the checkout's src/ on the path,
no Hugging Face downloads, no provider keys. A cell that raises or writes to stderr stops it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def run(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    for cell in book.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                raise SystemExit(f"{path.name}: stderr in cell {cell.source[:60]!r}: {output.text}")
    nbformat.write(book, path)
    print(f"executed {path.relative_to(ROOT)}")


def main(names: list[str]) -> None:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    )
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        os.environ.pop(key, None)
    paths = [NOTEBOOKS / f"{n}.ipynb" for n in names] or sorted(NOTEBOOKS.glob("*.ipynb"))
    for path in paths:
        run(path)


if __name__ == "__main__":
    main(sys.argv[1:])
