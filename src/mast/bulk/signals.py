"""What the bulk runner passes between its parts: the stop signal, the deferral of a call to
a batch, the record of one trace's provider calls, and who pays for a shared answer.

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

    trace_id: str = ""
    charge_keys: list[str] = field(default_factory=list)
    cost: float | None = 0.0
    any_call: bool = False
    all_cached: bool = True
    last_error: ProviderError | None = None
    shared_with: list[str] = field(default_factory=list)
    """Traces whose records pay for answers this one used."""
    fresh: bool = False
    """Ask the provider, not the cache (``retry_failed`` on an answer that stays unreadable)."""
    cache_hits: int = 0

    def add_cost(self, cost: float | None) -> None:
        self.cost = None if cost is None or self.cost is None else self.cost + cost


class Payers:
    """Which trace's record carries the cost of each answer paid in this run (by key).

    Traces with the same text render the same prompt, so the runner sends it once (a
    request in flight is shared, a stored answer is a cache hit). The money is charged
    once, to the first record that uses the answer; every other record of the run is
    charged nothing for it and names the paying trace in ``shared_with``, whether it
    waited for the call or found the answer in the cache before or after the payer's
    record was written.

    >>> payers = Payers()
    >>> payers.pay("key", "a")
    >>> calls = _Calls(trace_id="b")
    >>> payers.shared("key", calls), calls.shared_with
    (True, ['a'])
    """

    def __init__(self) -> None:
        self._by_key: dict[str, str] = {}

    def pay(self, key: str, trace_id: str) -> None:
        """``trace_id``'s record pays for the answer ``key`` (called once it is paid: a
        call that failed makes nobody its payer)."""
        self._by_key[key] = trace_id

    def shared(self, key: str, calls: _Calls) -> bool:
        """Whether another trace of this run pays for the answer ``key``; if so it is
        noted in ``calls`` (its record says ``shared_with`` and is charged nothing)."""
        payer = self._by_key.get(key)
        if payer is None or payer == calls.trace_id:
            return False
        if payer not in calls.shared_with:
            calls.shared_with.append(payer)
        return True
