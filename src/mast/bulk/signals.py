"""What the bulk runner passes between its parts: the stop signal, the deferral of a call to
a batch, and the record of one trace's provider calls.

>>> calls = _Calls()
>>> calls.add_cost(0.5); calls.add_cost(None); calls.cost is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mast.errors import ProviderError


class _Deferred(Exception):
    """Batch mode: this call's answer will come from a batch job (not an error)."""


class _Stop(Exception):
    """Stop the whole run (budget); raised through the judge, which lets it pass."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _Calls:
    """The provider calls made for one trace."""

    charge_keys: list[str] = field(default_factory=list)
    cost: float | None = 0.0
    any_call: bool = False
    all_cached: bool = True
    last_error: ProviderError | None = None

    def add_cost(self, cost: float | None) -> None:
        self.cost = None if cost is None or self.cost is None else self.cost + cost
