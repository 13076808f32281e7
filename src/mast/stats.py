"""Agreement statistics on plain label vectors: the public path of :mod:`mast.agree.stats`.

Kept at the top level because the README, the notebooks and SECURITY.md import it from here.
"""

from mast.agree.stats import *  # noqa: F403
from mast.agree.stats import __all__ as __all__
