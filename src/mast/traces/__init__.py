"""Traces in: the :class:`~mast.traces.model.Trace` model, one loader per file format
(:mod:`mast.traces.loaders`), framework-log segmenters (:mod:`mast.traces.segment`), ITBench
scoring and the public datasets. Nothing here knows about judges or agreement.
"""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.traces.<module>` without an import
