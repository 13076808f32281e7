"""Small made-up traces for the bulk tests: ``n`` two-step sums with distinct ids."""

from __future__ import annotations

from mast.traces.model import Step, Trace


def synthetic(n: int, prefix: str = "t") -> list[Trace]:
    return [
        Trace(
            id=f"{prefix}{i}",
            task=f"Task number {i}: add two numbers.",
            steps=[
                Step.make(0, f"Please add {i} and {i + 1}.", agent="user"),
                Step.make(1, f"The sum is {2 * i + 1}.", agent="solver"),
            ],
        )
        for i in range(n)
    ]
