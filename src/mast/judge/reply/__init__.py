"""What the judge reads back: JSON and text answers, echoes, grounding of evidence."""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.judge.reply.<module>` without an import
