"""Every docstring example in ``src/mast`` runs and gives what it shows (offline).

Run here rather than with ``--doctest-modules`` so that the suite's fixtures apply (each
test's own response cache, never ``~/.cache/mast``).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import mast

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(mast.__path__, "mast.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():  # as in a user's session: warnings are shown, not raised
        warnings.simplefilter("default")
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


def test_the_examples_are_many() -> None:
    found = sum(
        len([t for t in doctest.DocTestFinder().find(importlib.import_module(n), n) if t.examples])
        for n in MODULES
    )
    assert found >= 150
