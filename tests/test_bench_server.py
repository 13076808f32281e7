"""The benchmark's fake model answers in the shape the request's schema asks for, so the cost
benchmark bills our output as a constrained model would write it (issue 21)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from mast.judge.prompt.answer_format import answer_schema
from mast.judge.providers.schema_choice import inline_schema

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
_server = pytest.importorskip("_server")

TRACE = "\n".join(
    f"[s{i}] agent=Agent{i % 2} role=user kind=message\nstep {i} says something worth quoting"
    for i in range(1, 9)
)
LOG = "[s1] kind=log\nTraceback (most recent call last): the sandbox did not start"


@pytest.mark.parametrize("inline", [False, True])
def test_compact_answers_fill_the_schema(inline: bool) -> None:
    schema = answer_schema(answer="compact")
    schema = inline_schema(schema) if inline else schema
    answers = [json.loads(_server.mast_answer(f"{TRACE}\n{n}", compact=True, schema=schema))
               for n in range(30)]  # fmt: skip
    for answer in answers:
        jsonschema.validate(answer, schema)  # every key a strict schema requires
        shown = {c: m for c, m in answer["modes"].items() if m}
        if shown:
            error = answer["decisive_error"]
            assert error["step_id"] == min(
                (m["first_step"] for m in shown.values()), key=lambda s: int(s[1:])
            )
            assert all(m["agent"] == f"Agent{int(m['first_step'][1:]) % 2}" for m in shown.values())
        # The compact schema asks for one sentence; so the fake writes one.
        assert answer["summary"].count(". ") == 0
        assert all(m["rationale"].count(". ") == 0 for m in shown.values())
    assert any(answer["decisive_error"] for answer in answers)


def test_a_one_step_log_is_cited_too() -> None:
    answers = [json.loads(_server.mast_answer(f"{LOG}{n}", compact=True,
                                              schema=answer_schema(answer="compact")))
               for n in range(30)]  # fmt: skip
    cited = [m for a in answers for m in a["modes"].values() if m]
    assert cited and all(m["evidence"][0]["step_id"] == "s1" for m in cited)


def test_without_a_schema_the_old_shape_stays() -> None:
    answer = json.loads(_server.mast_answer(TRACE, compact=False))
    assert "decisive_error" not in answer
    assert all(set(m) == {"evidence", "rationale", "present", "confidence"}
               for m in answer["modes"].values())  # fmt: skip
