"""The CPU work of long traces off the event loop: a thread, or a pool of worker processes."""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.judge.offload.<module>` without an import
