"""Many traces: :func:`~mast.bulk.runner.annotate_many` with concurrency, rate limits,
retries, budget, response cache, batch APIs, and the results store (the only code that knows
the on-disk format).
"""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.bulk.<module>` without an import
