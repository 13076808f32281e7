"""What the judge sends: the prompt type, rendering, templates, few-shot examples, token counts."""

from mast._lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # `mast.judge.prompt.<module>` without an import
