"""Secrets kept out of trace text, answers and logs: redaction, its patterns, scrubbing."""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.privacy.<module>` without an import
