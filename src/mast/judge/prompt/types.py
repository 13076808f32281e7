"""The prompt as data: what :mod:`~mast.judge.prompt.render` builds and a provider sends.

It sits below both, so a provider needs the type, not the renderer.

>>> p = Prompt(system="s", user="u", static_prefix_hash="h", example_ids=(), boundary="b",
...            step_ids=())
>>> p.text_length, p.with_turns(("assistant", "x")).text_length
(2, 3)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from mast.traces.model import Step

__all__ = [
    "CHARS_PER_TOKEN",
    "Prompt",
    "Role",
    "WholeExample",
    "WindowInfo",
    "estimate_tokens",
    "hash_parts",
]

CHARS_PER_TOKEN = 4.0
"""Characters per token assumed by :func:`estimate_tokens`.

English prose and code average about 4 characters per token with the OpenAI and Anthropic
tokenizers; dense JSON or non-Latin text has fewer. The judge refines the ratio from the
token counts the provider reports, so nothing is downloaded at run time.
"""

Role = Literal["user", "assistant"]


def estimate_tokens(text: str, *, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """A tokenizer-free token estimate: ``ceil(len(text) / chars_per_token)``.

    >>> estimate_tokens("x" * 400)
    100
    """
    return math.ceil(len(text) / chars_per_token)


def hash_parts(*parts: str) -> str:
    """SHA-256 of ``parts``, each length-prefixed.

    >>> hash_parts("ab", "c") != hash_parts("a", "bc")
    True
    """
    if parts and len(parts[0]) >= _LONG_HEAD:
        # Every prompt of a judge starts with the same long system text: its part of the
        # hash is computed once and copied.
        head = _HEADS.get(parts[0])
        if head is None:
            head = hashlib.sha256()
            _feed(head, parts[0])
            if len(_HEADS) >= 16:
                _HEADS.clear()
            _HEADS[parts[0]] = head
        digest = head.copy()
        parts = parts[1:]
    else:
        digest = hashlib.sha256()
    for part in parts:
        _feed(digest, part)
    return digest.hexdigest()


def _feed(digest: Any, part: str) -> None:
    data = part.encode("utf-8")
    # Length-prefix each part so that ("ab", "c") and ("a", "bc") hash differently.
    digest.update(len(data).to_bytes(8, "big"))
    digest.update(data)


_LONG_HEAD = 4096
_HEADS: dict[str, Any] = {}  # a long first part -> the hash state after it (never updated)


@dataclass(frozen=True)
class WindowInfo:
    """Where a window of a long trace sits: part ``index`` of ``count`` (1-based)."""

    index: int
    count: int
    first: str
    last: str
    total: int


@dataclass(frozen=True)
class Prompt:
    """A rendered judge prompt.

    ``system`` is static (the same for every trace with the same taxonomy and examples);
    ``user`` holds the trace. ``turns`` are extra messages after ``user`` (a repair
    request re-sends the conversation with the unreadable answer and a short request).
    """

    system: str
    user: str
    static_prefix_hash: str
    example_ids: tuple[str, ...]
    boundary: str
    step_ids: tuple[str, ...]
    turns: tuple[tuple[Role, str], ...] = ()
    prompt_hash: str = field(default="", compare=False)
    shown_steps: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """The text under each step's header (``step_ids`` order) as the compact rendering
    shows it; empty when the steps are shown in full. Grounding checks quotes of compacted
    text against it instead of compacting the trace again."""

    def __post_init__(self) -> None:
        turns = json.dumps(list(self.turns), ensure_ascii=False)
        object.__setattr__(self, "prompt_hash", hash_parts(self.system, self.user, turns))

    @property
    def text_length(self) -> int:
        """Characters in all messages."""
        return len(self.system) + len(self.user) + sum(len(t) for _, t in self.turns)

    def estimated_tokens(self, *, chars_per_token: float = CHARS_PER_TOKEN) -> int:
        """Estimated prompt tokens (see :func:`estimate_tokens`), plus a little per message."""
        return math.ceil(self.text_length / chars_per_token) + 8 * (2 + len(self.turns))

    def with_turns(self, *turns: tuple[Role, str]) -> Prompt:
        """This prompt followed by more messages (same cached prefix, new prompt hash)."""
        return replace(self, turns=self.turns + tuple(turns))


class WholeExample(Protocol):
    """What the renderer reads of a whole-trace worked example
    (:class:`~mast.judge.prompt.fewshot.FewShotExample` is one): the renderer needs only
    these fields, and the loader of examples counts their tokens with the renderer."""

    @property
    def id(self) -> str: ...
    @property
    def task(self) -> str | None: ...
    @property
    def steps(self) -> Sequence[Step]: ...
    @property
    def labels(self) -> dict[str, bool]: ...
    @property
    def rationale(self) -> str: ...
    @property
    def evidence(self) -> dict[str, list[str]]: ...
    @property
    def notes(self) -> dict[str, str]: ...
    @property
    def task_completed(self) -> bool | None: ...
