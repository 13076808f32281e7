"""Run outcomes, read once per source format, whichever loader reads the run.

One run can reach mast through several loaders: an AG2 run as its own JSON file (``ag2``) or
as the ``trace`` string of a MAD record (``mad-human``, ``mad-full``), an AppWorld log as a
text file or inside a MAD record.  Each format's outcome is read here, by one function, so
the run gets the same outcome whichever way it was loaded, and the trace records the field
it came from in ``metadata["outcome_field"]`` (absent when the files say nothing: the
outcome is then ``unknown``, never a guess).

>>> reading = ag2({"other_data": {"correct": False}})
>>> reading.outcome.value, reading.field
('failure', 'other_data.correct')
>>> appworld(None).outcome.value, appworld(None).field
('unknown', None)
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from mast.traces.model import Outcome, to_bool

__all__ = ["OUTCOME_FIELD", "UNKNOWN", "OutcomeReading", "ag2", "appworld", "flag", "whoandwhen"]

OUTCOME_FIELD = "outcome_field"
"""Metadata key naming the source field an outcome was read from."""


@dataclass(frozen=True)
class OutcomeReading:
    """An outcome and the source field it was read from (``None``: nothing was read)."""

    outcome: Outcome
    field: str | None = None

    def record(self, metadata: MutableMapping[str, Any]) -> Outcome:
        """Note the field in ``metadata`` (when one was read) and return the outcome."""
        if self.field is not None:
            metadata[OUTCOME_FIELD] = self.field
        return self.outcome


UNKNOWN = OutcomeReading(Outcome.UNKNOWN)


def flag(value: object, field: str) -> OutcomeReading:
    """A yes/no field: true is a success, false a failure, anything else unknown."""
    correct = to_bool(value)
    if correct is None:
        return UNKNOWN
    return OutcomeReading(Outcome.SUCCESS if correct else Outcome.FAILURE, field)


def ag2(record: Mapping[str, Any]) -> OutcomeReading:
    """An AG2 run record: ``other_data.correct`` (the MathChat benchmark's check)."""
    other = record.get("other_data")
    if not isinstance(other, Mapping):
        return UNKNOWN
    return flag(other.get("correct"), "other_data.correct")


def appworld(success: object) -> OutcomeReading:
    """An AppWorld log's closing evaluation: ``{"success": bool}`` (``evaluation_success``)."""
    return flag(success, "evaluation_success") if isinstance(success, bool) else UNKNOWN


def whoandwhen(record: Mapping[str, Any]) -> OutcomeReading:
    """A Who&When run: ``is_correct``; a named ``mistake_agent`` also marks a failure (the
    dataset collects failed runs and names who failed them)."""
    correct = flag(record.get("is_correct"), "is_correct")
    if correct.outcome is Outcome.FAILURE:
        return correct
    if record.get("mistake_agent"):
        return OutcomeReading(Outcome.FAILURE, "mistake_agent")
    return correct
