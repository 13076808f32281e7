"""Loaders for public MAST datasets: the public path of :mod:`mast.traces.datasets`.

Kept at the top level because the README, the notebooks and SECURITY.md import it from here.
"""

from mast.traces.datasets import *  # noqa: F403
from mast.traces.datasets import __all__ as __all__
