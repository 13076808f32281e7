"""The HTML report of a results file: the public path of :mod:`mast.analysis.report`.

Kept at the top level because the README, the notebooks and SECURITY.md import it from here.
"""

from mast.analysis.report import *  # noqa: F403
from mast.analysis.report import __all__ as __all__
