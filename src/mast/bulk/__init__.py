"""Many traces: :func:`~mast.bulk.runner.annotate_many` with concurrency, rate limits,
retries, budget, response cache, batch APIs, and the results store (the only code that knows
the on-disk format).
"""
