"""Submodules of a package loaded on first attribute access.

``import mast`` loads almost nothing (see :mod:`mast`); with this, a path such as
``mast.traces.datasets.example_traces()`` still works right after it, as it did when
``import mast`` loaded everything: the first access imports ``mast.traces.datasets``.

>>> getattr_ = submodule_getattr("json")
>>> getattr_("decoder").__name__
'json.decoder'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def submodule_getattr(package: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports ``package.<name>`` on demand."""

    def __getattr__(name: str) -> object:
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise  # the submodule exists but needs something that is missing
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
