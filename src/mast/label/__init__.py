"""Human labels in the loop: a queue of traces to label (:mod:`mast.label.queue`), which traces
to pick (:mod:`mast.label.sampling`), and a local web app to label them blind
(:mod:`mast.label.app`). Labels come out in the table shape ``mast agree`` reads.
"""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.label.<module>` without an import
