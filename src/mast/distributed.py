"""``mast.distributed``: annotate on a Ray cluster (see :mod:`mast.bulk.distributed`).

Needs ``pip install 'mast-annotator[ray]'``; importing this module does not import Ray.

>>> import mast.distributed
>>> callable(mast.distributed.annotate)
True
"""

from mast.bulk.distributed import DistributedRun, annotate, worker_name

__all__ = ["DistributedRun", "annotate", "worker_name"]
