"""The two answer shapes a judge can ask for: ``"full"`` and ``"compact"``.

In the **full** answer every mode is an object with evidence, a rationale, ``present``,
``confidence``, ``first_step`` and ``agent`` (see :func:`mast.judge.verdict.verdict_json_schema`).
Most modes of most traces are absent, so most of that output is ``"evidence": [],
"rationale": "No sign of it."``: paid-for output tokens that carry one bit.

In the **compact** answer a mode is ``false`` (absent: one token), ``null`` (the trace does
not allow a decision) or the full object (present: evidence, rationale and who/when as in
the full answer). ``summary``, ``decisive_error`` and ``task_completed`` stay as they are.
The reader (:func:`mast.judge.reply.parse.parse_response`) reads both shapes: ``false`` is False,
``null`` and a missing code are None (unknown, never False), an object is read as in the
full answer. What is lost is the rationale for absent modes.

>>> schema = answer_schema(answer="compact")
>>> schema["properties"]["modes"]["properties"]["1.1"], len(schema["$defs"]["mode"]["anyOf"])
({'$ref': '#/$defs/mode'}, 3)
>>> compact_answer({"summary": "", "modes": {"1.1": {"present": False}, "1.2": {"present": None}},
...                 "decisive_error": None, "task_completed": True})["modes"]
{'1.1': False, '1.2': None}
"""

from __future__ import annotations

import copy
from typing import Any, Literal, cast, get_args

from mast.judge.verdict import verdict_json_schema
from mast.taxonomy import Taxonomy, load_taxonomy

__all__ = [
    "ANSWER_MODES",
    "AnswerMode",
    "answer_schema",
    "answer_settings",
    "check_answer",
    "compact_answer",
]

AnswerMode = Literal["full", "compact"]
ANSWER_MODES: tuple[str, ...] = get_args(AnswerMode)


def check_answer(answer: str) -> AnswerMode:
    """``answer`` if it names an answer mode, else a ValueError that lists them.

    >>> check_answer("compact")
    'compact'
    """
    if answer not in ANSWER_MODES:
        raise ValueError(f"answer must be one of {', '.join(ANSWER_MODES)}; got {answer!r}")
    return cast(AnswerMode, answer)


def answer_settings(answer: AnswerMode) -> dict[str, str]:
    """What a judge records about its answer mode (part of the resume key and cache key).

    The full mode records nothing, so records written before compact answers existed
    still resume; the compact mode is recorded, so the two never mix.

    >>> answer_settings("full"), answer_settings("compact")
    ({}, {'answer': 'compact'})
    """
    return {} if answer == "full" else {"answer": answer}


def answer_schema(
    taxonomy: Taxonomy | None = None, answer: AnswerMode = "full", *, inline: bool = False
) -> dict[str, Any]:
    """The JSON schema of the answer in mode ``answer`` (``inline`` as in
    :func:`~mast.judge.verdict.verdict_json_schema`).

    Compact: each mode is ``anyOf`` false / null / the full per-mode object. Every object
    still lists all its properties as required with ``additionalProperties: false``, and
    ``anyOf`` sits below the root, so the schema is valid for OpenAI strict structured
    outputs and for Anthropic tool input and JSON output.

    >>> full, compact = answer_schema(), answer_schema(answer="compact")
    >>> full["properties"]["modes"]["required"] == compact["properties"]["modes"]["required"]
    True
    """
    tax = taxonomy or load_taxonomy()
    schema = verdict_json_schema(tax, inline=inline)
    if check_answer(answer) == "full":
        return schema
    modes = schema["properties"]["modes"]
    modes["description"] = (
        "One entry per failure-mode code: false if the mode is absent, null if the trace "
        "does not allow a decision, else an object with its evidence (present: true). Codes: "
        + "; ".join(f"{m.code} {m.name}" for m in tax)
    )
    # Output costs several times input: the compact answer asks for one sentence where the
    # full one asks for two or three (the quotes in the evidence carry the detail).
    schema["properties"]["summary"]["description"] = (
        "One sentence on what went wrong in the run, or that nothing did."
    )
    rationale = {
        "type": "string",
        "description": "One sentence: why the trace shows the mode (the evidence quotes carry "
        "the detail).",
    }
    findings = modes["properties"].values() if inline else [schema["$defs"]["finding"]]
    for finding in findings:
        finding["properties"] = {**finding["properties"], "rationale": rationale}
    absent: list[dict[str, Any]] = [{"type": "boolean", "enum": [False]}, {"type": "null"}]
    if inline:
        for code, entry in list(modes["properties"].items()):
            finding = copy.deepcopy({k: v for k, v in entry.items() if k != "description"})
            modes["properties"][code] = {
                "anyOf": [*copy.deepcopy(absent), finding],
                "description": entry["description"],
            }
        return schema
    # One shared definition keeps the schema (sent with every request) as small as the full one.
    schema["$defs"]["finding"]["description"] = "A mode the trace shows (present: true)."
    schema["$defs"]["mode"] = {"anyOf": [*absent, {"$ref": "#/$defs/finding"}]}
    for code in modes["properties"]:
        modes["properties"][code] = {"$ref": "#/$defs/mode"}
    return schema


def compact_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A full-shape answer (as :func:`~mast.judge.verdict.example_answer` gives) in the
    compact shape: absent modes become ``false``, unknown ones ``null``, present ones keep
    their object."""

    def entry(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        present = value.get("present")
        return value if present is True else present

    return {**answer, "modes": {code: entry(v) for code, v in answer["modes"].items()}}
