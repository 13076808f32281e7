"""Redaction of secrets before a trace is sent: the public path of :mod:`mast.privacy.redact`.

Kept at the top level because the README, the notebooks and SECURITY.md import it from here.
"""

from mast.privacy.redact import *  # noqa: F403
from mast.privacy.redact import __all__ as __all__
