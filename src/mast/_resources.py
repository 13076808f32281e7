"""Where the data folders (taxonomy/, fewshot/, examples/) are, installed or in a checkout.

In a wheel they ship inside the package as ``mast/_data/<name>``; in a source checkout
(``pip install -e .``) they stay at the repository top level where people edit them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """Return the folder of bundled data ``name`` ("taxonomy", "fewshot", …)."""
    installed = _PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"mast's bundled {name!r} folder is missing: looked in {installed} and {checkout}. "
        "Reinstall the package (pip install --force-reinstall mast-annotator)."
    )
