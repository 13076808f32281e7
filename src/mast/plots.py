"""Plots of analysis results and agreement reports: the public path of :mod:`mast.analysis.plots`.

Kept at the top level because the README, the notebooks and SECURITY.md import it from here.
"""

from mast.analysis.plots import *  # noqa: F403
from mast.analysis.plots import __all__ as __all__
