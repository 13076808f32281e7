"""A judge's answer as data: the verdict schema, a parser that never turns unknown into "no",
and grounding of evidence against the trace.

**The JSON verdict** (what :func:`verdict_json_schema` asks providers for; every property is
required and no other is allowed, so it is valid for OpenAI strict structured outputs and
for Anthropic tool input)::

    {
      "summary": "<two or three sentences on what went wrong, or that nothing did>",
      "modes": {
        "1.1": {
          "evidence": [{"step_id": "s3", "quote": "<short exact quote from step s3>"}],
          "rationale": "<why the mode is or is not present, citing steps>",
          "present": true | false | null,      # null = the trace does not allow a decision
          "confidence": 0.0 .. 1.0 | null
        },
        ...                                    # one object per taxonomy code, all required
      },
      "task_completed": true | false | null
    }

Evidence and rationale come before ``present`` so that models that write in schema order
reason before they decide.

**Parsing** (:func:`parse_response`) reads that shape and tolerant variants: JSON wrapped in
prose or code fences, truncated JSON (complete members are kept, the rest is unknown), Python
literals, trailing commas, a list of modes with ``"code"`` keys, top-level ``{"1.1": "yes"}``
maps, keys like ``"1.1 Disobey Task Specification"`` or ``"FM-1.1"``, and answers written as
booleans, ``"yes"``/``"no"`` or 1/0. Without readable JSON it reads the MAST paper's text
format (see :mod:`mast.judge.textformat`). A mode that is missing, ``null``, "unclear" or
answered both ways is ``None``, never ``False``; every such case, every code outside the
taxonomy and every echoed name that belongs to another code is listed in
``Verdict.problems``. Only an answer with nothing readable at all raises
:class:`~mast.errors.VerdictParseError`.

**Grounding** (:func:`ground`) checks each evidence item against the trace: the step id must
exist (``"s3"``; ``"s3-s5"`` is a range whose steps must all exist) and the quote, if any,
must occur in the cited step's text (content, tool name and tool arguments). Quotes and step
text are compared case-insensitively with whitespace collapsed and typographic quotes and
dashes unified; an ellipsis (``...`` or ``…``) inside a quote separates parts that must
occur in order. Ungrounded evidence is flagged (``grounded=False`` with the ``problem``) or,
on request, moved to ``Finding.dropped``; ``Finding.grounded`` is ``False`` when evidence was
cited and none of it held.

>>> v = parse_response("C. 1.3 Step Repetition: **Yes**\\n2.5 Ignored Other Agent's Input: yes")
>>> v.vector["1.3"], v.vector["2.5"], v.vector["3.2"]
(True, True, None)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mast.errors import VerdictParseError
from mast.judge.lenient_json import find_json_values
from mast.judge.textformat import NameIndex, read_text_format
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import FailureVector, Trace

__all__ = [
    "Evidence",
    "Finding",
    "Verdict",
    "VerdictParseError",
    "example_answer",
    "ground",
    "normalize_step_id",
    "parse_response",
    "verdict_json_schema",
]

VerdictFormat = Literal["json", "text", "rules"]


class Evidence(BaseModel):
    """One cited step, optionally with a short quote from it."""

    step_id: str = Field(description='Step id as shown in the prompt, e.g. "s12".')
    quote: str | None = Field(default=None, description="Short exact quote from that step.")
    grounded: bool | None = Field(
        default=None, description="True/False once checked against the trace; None = unchecked."
    )
    problem: str | None = Field(default=None, description="Why the evidence is not grounded.")


class Finding(BaseModel):
    """The judge's answer for one failure mode."""

    code: str
    present: bool | None = Field(description="True/False, or None when unknown.")
    evidence: list[Evidence] = Field(default_factory=list)
    rationale: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    dropped: list[Evidence] = Field(
        default_factory=list,
        description="Ungrounded evidence removed by ground(..., drop_ungrounded=True).",
    )

    @property
    def grounded(self) -> bool | None:
        """True if any cited evidence held, False if evidence was cited and none held,
        None when nothing was cited or checked."""
        checked = [e.grounded for e in (*self.evidence, *self.dropped) if e.grounded is not None]
        if not checked:
            return None
        return any(checked)


class Verdict(BaseModel):
    """A parsed judge answer: one value per taxonomy code plus what supports it.

    ``vector`` holds every code of the taxonomy (``None`` where unanswered); ``findings``
    holds a :class:`Finding` per code and always agrees with ``vector``.
    """

    vector: FailureVector
    findings: dict[str, Finding] = Field(default_factory=dict)
    task_completed: bool | None = None
    summary: str | None = None
    format: VerdictFormat = Field(
        description='"json" or "text" for parsed answers, "rules" for the heuristic judge.'
    )
    problems: list[str] = Field(
        default_factory=list, description="Everything the parser (and grounding) noticed."
    )
    raw: str = Field(default="", description="The answer exactly as received.")

    @model_validator(mode="after")
    def _findings_match_vector(self) -> Verdict:
        for code, finding in self.findings.items():
            if finding.code != code:
                raise ValueError(f"finding stored under {code!r} has code {finding.code!r}")
            if code not in self.vector:
                raise ValueError(f"finding for {code!r}, which is not a code of the vector")
            if self.vector[code] is not finding.present:
                raise ValueError(
                    f"vector[{code!r}] is {self.vector[code]!r} but the finding says "
                    f"{finding.present!r}; build verdicts with Verdict.from_findings"
                )
        return self

    @classmethod
    def from_findings(
        cls,
        findings: Iterable[Finding],
        *,
        codes: Iterable[str],
        format: VerdictFormat,
        task_completed: bool | None = None,
        summary: str | None = None,
        problems: Iterable[str] = (),
        raw: str = "",
    ) -> Verdict:
        """Build a verdict whose vector is taken from ``findings``; missing codes are None."""
        code_list = list(codes)
        by_code = {f.code: f for f in findings}
        stray = sorted(set(by_code) - set(code_list))
        if stray:
            raise ValueError(f"findings for codes {stray} that are not in {code_list}")
        full = {c: by_code.get(c) or Finding(code=c, present=None) for c in code_list}
        vector = FailureVector({c: f.present for c, f in full.items()}, codes=code_list)
        return cls(
            vector=vector,
            findings=full,
            task_completed=task_completed,
            summary=summary,
            format=format,
            problems=list(problems),
            raw=raw,
        )

    @property
    def answered(self) -> list[str]:
        """Codes with a True/False answer."""
        return [c for c, v in self.vector.items() if v is not None]

    @property
    def unknown(self) -> list[str]:
        """Codes without an answer (``None``)."""
        return self.vector.unknown

    @property
    def ungrounded(self) -> list[str]:
        """Codes judged present whose cited evidence all failed grounding."""
        return [c for c, f in self.findings.items() if f.present is True and f.grounded is False]

    def to_schema_dict(self) -> dict[str, Any]:
        """This verdict in the JSON verdict shape (``parse_response`` reads it back)."""
        return {
            "summary": self.summary or "",
            "modes": {
                code: {
                    "evidence": [
                        {"step_id": e.step_id, "quote": e.quote or ""} for e in f.evidence
                    ],
                    "rationale": f.rationale or "",
                    "present": f.present,
                    "confidence": f.confidence,
                }
                for code, f in self.findings.items()
            },
            "task_completed": self.task_completed,
        }


# --------------------------------------------------------------------------- schema


def verdict_json_schema(
    taxonomy: Taxonomy | None = None, *, inline: bool = False
) -> dict[str, Any]:
    """The JSON schema of the verdict for ``taxonomy`` (default: bundled MAST).

    Strict-mode compatible: every object lists all its properties as required and sets
    ``additionalProperties: false``; optional answers are nullable instead. The per-mode
    object is shared through ``$defs`` unless ``inline=True`` (for servers whose
    constrained decoding does not resolve ``$ref``).

    >>> schema = verdict_json_schema()
    >>> schema["required"], len(schema["properties"]["modes"]["required"])
    (['summary', 'modes', 'task_completed'], 14)
    """
    tax = taxonomy or load_taxonomy()
    finding: dict[str, Any] = {
        "type": "object",
        "properties": {
            "evidence": {
                "type": "array",
                "description": "Steps that show the mode (empty when it is absent).",
                "items": {
                    "type": "object",
                    "properties": {
                        "step_id": {"type": "string", "description": 'Step id, e.g. "s12".'},
                        "quote": {
                            "type": "string",
                            "description": "A short exact quote from that step (under 200 "
                            "characters), or an empty string.",
                        },
                    },
                    "required": ["step_id", "quote"],
                    "additionalProperties": False,
                },
            },
            "rationale": {
                "type": "string",
                "description": "One to three sentences: why the mode is or is not present.",
            },
            "present": {
                "type": ["boolean", "null"],
                "description": "true if the trace shows this failure mode, false if it does "
                "not, null only if the trace does not allow a decision.",
            },
            "confidence": {
                "type": ["number", "null"],
                "description": "Your confidence in `present`, from 0 to 1.",
            },
        },
        "required": ["evidence", "rationale", "present", "confidence"],
        "additionalProperties": False,
    }
    mode_props: dict[str, Any] = {}
    for mode in tax:
        entry: dict[str, Any] = dict(finding) if inline else {"$ref": "#/$defs/finding"}
        if inline:
            entry["description"] = f"{mode.code} {mode.name}"
        mode_props[mode.code] = entry
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "summary": {
                "type": "string",
                "description": "Two or three sentences on what went wrong in the run.",
            },
            "modes": {
                "type": "object",
                "description": "One entry per failure-mode code: "
                + "; ".join(f"{m.code} {m.name}" for m in tax),
                "properties": mode_props,
                "required": tax.codes,
                "additionalProperties": False,
            },
            "task_completed": {
                "type": ["boolean", "null"],
                "description": "Whether the run achieved its task; null if it cannot be told.",
            },
        },
        "required": ["summary", "modes", "task_completed"],
        "additionalProperties": False,
    }
    if not inline:
        schema["$defs"] = {"finding": finding}
    return schema


def example_answer(
    *,
    labels: Mapping[str, bool],
    evidence: Mapping[str, Sequence[str]] | None = None,
    rationale: str = "",
    taxonomy: Taxonomy | None = None,
    notes: Mapping[str, str] | None = None,
    task_completed: bool | None = None,
) -> dict[str, Any]:
    """The answer a perfect judge gives on a few-shot example, in the JSON verdict shape.

    ``rationale`` becomes the summary, ``notes`` the per-mode rationales, ``evidence`` the
    cited steps (without quotes). Gold labels carry no confidence, so it is ``null``.

    >>> ans = example_answer(labels={"1.3": True, "1.5": False}, evidence={"1.3": ["s4"]},
    ...                      rationale="[s4] repeats [s2].", taxonomy=None)
    >>> ans["modes"]["1.3"]["evidence"], ans["modes"]["1.1"]["present"]
    ([{'step_id': 's4', 'quote': ''}], None)
    """
    tax = taxonomy or load_taxonomy()
    evidence = evidence or {}
    notes = notes or {}
    return {
        "summary": " ".join(rationale.split()),
        "modes": {
            code: {
                "evidence": [{"step_id": s, "quote": ""} for s in evidence.get(code, [])],
                "rationale": notes.get(code, ""),
                "present": labels.get(code),
                "confidence": None,
            }
            for code in tax.codes
        },
        "task_completed": task_completed,
    }


# --------------------------------------------------------------------------- parsing

_CODE_KEY = re.compile(r"^\s*(?:FM[-\s]?)?(\d{1,2}\.\d{1,2})(?![\d])")
_MODE_CONTAINERS = ("modes", "failure_modes", "findings", "labels", "mast", "c", "answers")
_PRESENT_KEYS = ("present", "answer", "value", "detected", "label", "verdict", "result",
                 "exists", "occurred", "failure", "is_present", "present_in_trace")  # fmt: skip
_EVIDENCE_KEYS = ("evidence", "citations", "steps", "step_ids", "evidence_steps")
_RATIONALE_KEYS = ("rationale", "reason", "reasoning", "explanation", "justification")
_CODE_FIELDS = ("code", "mode", "id", "failure_mode", "mode_code", "fm")
_TASK_KEYS = ("task_completed", "task_complete", "completed", "task_success", "success", "b")
_SUMMARY_KEYS = ("summary", "a", "analysis")
_STEP_ID = re.compile(r"^\[?\s*(?:s|step[\s_#-]*)?(\d{1,6})\s*\]?$", re.IGNORECASE)
_STEP_RANGE = re.compile(
    r"^\[?\s*(?:s|step[\s_#-]*)?(\d{1,6})\s*(?:-|–|—|\.\.|to)\s*(?:s|step[\s_#-]*)?(\d{1,6})\s*\]?$",
    re.IGNORECASE,
)
_YES = {"yes", "true", "present", "detected", "y", "1"}
_NO = {"no", "false", "absent", "not present", "not detected", "n", "0"}


def normalize_step_id(ref: object) -> str:
    """Canonical step id: ``12``, ``"12"``, ``"S12"``, ``"[s12]"``, ``"step 12"`` → ``"s12"``;
    ranges become ``"s3-s5"``; anything else is returned stripped (grounding flags it).

    >>> normalize_step_id(12), normalize_step_id("[S3]"), normalize_step_id("s3 – s5")
    ('s12', 's3', 's3-s5')
    """
    if isinstance(ref, bool):
        return str(ref)
    if isinstance(ref, int):
        return f"s{ref}"
    text = str(ref).strip()
    single = _STEP_ID.match(text)
    if single:
        return f"s{int(single.group(1))}"
    span = _STEP_RANGE.match(text)
    if span:
        return f"s{int(span.group(1))}-s{int(span.group(2))}"
    return text


def parse_response(
    text: str,
    *,
    taxonomy: Taxonomy | None = None,
    boundary: str | None = None,
    prompt_text: str | None = None,
) -> Verdict:
    """Read a judge's answer (JSON verdict or the MAST text format) into a :class:`Verdict`.

    Raises :class:`~mast.errors.VerdictParseError` (with the raw text) only when nothing at
    all can be read; a partial answer gives ``None`` for the missing modes.

    Trace text the model repeats is never read as its answer, since a trace may carry a
    fake verdict. Text between a fence line ``<<<BEGIN <token>>>>`` and its
    ``<<<END <token>>>>`` (an unclosed one runs to the end, a lone closing line covers
    everything before it) is dropped first. ``boundary`` is the prompt's token (then only
    that token counts); without it any token of mast's ``MAST-<KIND>-<16 hex>`` shape does.
    With ``prompt_text`` (the user message that held the trace), a JSON value copied
    verbatim from it is skipped, and so, for the text format, are runs of lines copied from
    it.

    >>> v = parse_response('{"modes": {"1.1": {"present": "no"}, "3.2": {"present": true}}}')
    >>> v.vector["1.1"], v.vector["3.2"], v.vector["1.2"], v.format
    (False, True, None, 'json')
    """
    tax = taxonomy or load_taxonomy()
    if not isinstance(text, str):
        raise TypeError(f"parse_response expects the answer text (str), got {type(text).__name__}")
    if not text.strip():
        raise VerdictParseError(
            "the answer is empty; expected the JSON verdict or the MAST text format",
            raw=text,
            problems=["empty answer"],
        )
    raw = text
    text, echoed = _drop_echoed_fences(text, boundary)
    json_problems: list[str] = []
    if echoed:
        json_problems.append(f"ignored {echoed} block(s) of trace text repeated in the answer")
        if not text.strip():
            raise VerdictParseError(
                "the answer only repeats the fenced trace; expected the JSON verdict",
                raw=raw,
                problems=json_problems,
            )
    for candidate in find_json_values(text):
        if prompt_text and text[candidate.start : candidate.end] in prompt_text:
            json_problems.append("ignored a JSON value copied verbatim from the prompt")
            continue
        verdict = _verdict_from_json(candidate.value, candidate.truncated, tax, raw)
        if verdict is not None:
            if json_problems:
                verdict.problems[:0] = json_problems
            return verdict
    if prompt_text:
        text = _drop_copied_lines(text, prompt_text, json_problems)
    reading = read_text_format(text, tax, _names(tax))
    if reading.readable:
        findings = [
            Finding(
                code=code,
                present=value,
                rationale=reading.rationales.get(code) or None,
                evidence=[Evidence(step_id=s) for s in reading.step_refs.get(code, [])],
            )
            for code, value in reading.answers.items()
        ]
        return Verdict.from_findings(
            findings,
            codes=tax.codes,
            format="text",
            task_completed=reading.task_completed,
            summary=reading.summary,
            problems=json_problems + reading.problems,
            raw=raw,
        )
    problems = json_problems + [p for p in reading.problems if "not answered" not in p]
    detail = "; ".join(problems[:5]) or "no mode code with a yes/no answer and no JSON verdict"
    raise VerdictParseError(
        f"could not read a verdict from the answer ({len(text)} characters): {detail}. "
        "Expected the JSON verdict (see verdict_json_schema) or the MAST text format "
        "('1.1 <name>: yes|no' per mode).",
        raw=raw,
        problems=problems,
    )


# mast's fence lines (see mast.judge.prompts): <<<BEGIN MAST-TRACE-0123456789ABCDEF>>>.
_FENCE = re.compile(r"<<<(BEGIN|END) (MAST-[A-Z]{1,20}-[0-9A-F]{16})>>>")


def _drop_echoed_fences(text: str, boundary: str | None) -> tuple[str, int]:
    """``text`` without the fenced regions a model copied from its prompt, and their count.

    Whatever sits inside a fence is trace data, so it is dropped whole, with any fake
    verdict in it. An opening line without its closing line drops the rest of the text, a
    closing line without an opening drops everything before it: in doubt the answer loses
    text (and the modes become unknown), it never gains a planted verdict.
    """
    if "<<<" not in text:
        return text, 0
    # The prompt's own token never occurs in its trace (mast.judge.prompts checks), so with it
    # known, fake fence lines planted in the trace and copied by the model have no effect.
    fence = re.compile(r"<<<(BEGIN|END) (" + re.escape(boundary) + r")>>>") if boundary else _FENCE
    kept: list[str] = []
    pos = 0
    dropped = 0
    while True:
        marker = fence.search(text, pos)
        if marker is None:
            break
        dropped += 1
        if marker.group(1) == "BEGIN":
            kept.append(text[pos : marker.start()])
            close = text.find(f"<<<END {marker.group(2)}>>>", marker.end())
            if close == -1:
                pos = len(text)
                break
            pos = close + len(marker.group(2)) + len("<<<END >>>")
        else:
            pos = marker.end()
    kept.append(text[pos:])
    return "".join(kept), dropped


def _drop_copied_lines(text: str, prompt_text: str, problems: list[str]) -> str:
    """For the text format: drop runs of answer lines copied from the prompt (a fake
    ``1.1 …: yes`` block planted in the trace and repeated by the model). A run must hold a
    line of 8 or more characters; a lone short line such as "no" is kept, since traces and
    answers share those by chance."""
    prompt_lines = {line.strip() for line in prompt_text.splitlines()}
    lines = text.splitlines()
    copied = [bool(line.strip()) and line.strip() in prompt_lines for line in lines]
    drop = [False] * len(lines)
    start = None
    for i in range(len(lines) + 1):
        inside = i < len(lines) and (copied[i] or (not lines[i].strip() and start is not None))
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            if any(copied[j] and len(lines[j].strip()) >= 8 for j in range(start, i)):
                drop[start:i] = [True] * (i - start)
            start = None
    dropped = sum(1 for i, d in enumerate(drop) if d and lines[i].strip())
    if not dropped:
        return text
    problems.append(f"ignored {dropped} line(s) copied from the prompt")
    return "\n".join(line for line, d in zip(lines, drop, strict=True) if not d)


def _verdict_from_json(value: Any, truncated: bool, tax: Taxonomy, raw: str) -> Verdict | None:
    problems: list[str] = []
    if truncated:
        problems.append("JSON answer is truncated; only its complete parts were read")
    top: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    container: Any = None
    for key, item in top.items():
        if str(key).strip().lower() in _MODE_CONTAINERS and isinstance(item, (Mapping, list)):
            container = item
            break
    if container is None:
        container = value if isinstance(value, list) else top
    entries = _mode_entries(container, tax, problems)
    task = _first(top, _TASK_KEYS)
    summary = _first(top, _SUMMARY_KEYS)
    if not entries and task is None and not isinstance(summary, str):
        return None
    if (
        not entries
        and container is top
        and not any(str(k).strip().lower() in _MODE_CONTAINERS for k in top)
    ):
        # A stray object such as {"summary": ...} alone is not a verdict.
        return None
    by_code: dict[str, list[Finding]] = {}
    for code, item in entries:
        by_code.setdefault(code, []).append(_finding(code, item, problems))
    findings: list[Finding] = []
    for code in tax.codes:
        options = by_code.get(code)
        if not options:
            problems.append(f"{code}: not answered")
            continue
        values = {f.present for f in options if f.present is not None}
        if len(values) > 1:
            problems.append(f"{code}: given twice with different answers; unknown")
            findings.append(options[0].model_copy(update={"present": None}))
        else:
            decided = [f for f in options if f.present is not None]
            findings.append((decided or options)[0])
    task_completed = _to_bool(task, "task_completed", problems) if task is not None else None
    return Verdict.from_findings(
        findings,
        codes=tax.codes,
        format="json",
        task_completed=task_completed,
        summary=summary if isinstance(summary, str) else None,
        problems=problems,
        raw=raw,
    )


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


@lru_cache(maxsize=8)
def _names(tax: Taxonomy) -> NameIndex:
    return NameIndex(tax)


def _mode_entries(container: Any, tax: Taxonomy, problems: list[str]) -> list[tuple[str, Any]]:
    names = _names(tax)
    out: list[tuple[str, Any]] = []
    if isinstance(container, Mapping):
        items: list[tuple[str | None, Any]] = [(str(k), v) for k, v in container.items()]
    elif isinstance(container, list):
        items = []
        for element in container:
            if isinstance(element, Mapping):
                ident = _first(element, _CODE_FIELDS)
                items.append((str(ident) if ident is not None else None, element))
    else:
        return out
    for key, item in items:
        if key is None:
            problems.append("a mode entry without a code was ignored")
            continue
        code = _code_of(key, tax, names)
        if code is None:
            # Stray codes (the official example's 1.6, 2.7) are reported; other keys
            # (summary, task_completed, notes) are simply not modes.
            if _CODE_KEY.match(key):
                problems.append(f"{key.strip()}: not a code of this taxonomy; ignored")
            continue
        out.append((code, item))
    return out


def _code_of(key: str, tax: Taxonomy, names: NameIndex) -> str | None:
    match = _CODE_KEY.match(key)
    if match:
        return match.group(1) if match.group(1) in tax else None
    owners = names.codes_for(key)
    if len(owners) == 1:
        return next(iter(owners))
    return tax.code_for_name(key)


def _finding(code: str, item: Any, problems: list[str]) -> Finding:
    if not isinstance(item, Mapping):
        return Finding(code=code, present=_to_bool(item, code, problems))
    raw_present: Any = None
    found_key = False
    lowered = {str(k).strip().lower(): v for k, v in item.items()}
    for key in _PRESENT_KEYS:
        if key in lowered:
            raw_present, found_key = lowered[key], True
            break
    if not found_key:
        problems.append(f"{code}: no 'present' field; unknown")
    present = _to_bool(raw_present, code, problems) if found_key else None
    rationale = _first(item, _RATIONALE_KEYS)
    return Finding(
        code=code,
        present=present,
        evidence=_evidence(_first(item, _EVIDENCE_KEYS), code, problems),
        rationale=str(rationale) if rationale not in (None, "") else None,
        confidence=_confidence(lowered.get("confidence"), code, problems),
    )


def _to_bool(value: Any, what: str, problems: list[str]) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = " ".join(value.strip().lower().rstrip(".!").split())
        if word in _YES:
            return True
        if word in _NO:
            return False
        if word in ("", "null", "none", "unknown", "n/a"):
            return None
    problems.append(f"{what}: answer {value!r} is neither yes nor no; unknown")
    return None


def _confidence(value: Any, code: str, problems: list[str]) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
        except ValueError:
            problems.append(f"{code}: confidence {value!r} is not a number; ignored")
            return None
    if isinstance(value, (int, float)):
        if 0 <= value <= 1:
            return float(value)
        if 1 < value <= 100:  # a percentage
            return float(value) / 100
    problems.append(f"{code}: confidence {value!r} is outside 0..1; ignored")
    return None


def _evidence(value: Any, code: str, problems: list[str]) -> list[Evidence]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out: list[Evidence] = []
    for item in items:
        if isinstance(item, Mapping):
            ref = _first(item, ("step_id", "step", "id", "step_ids"))
            quote = _first(item, ("quote", "text", "excerpt"))
            if ref is None or isinstance(ref, (Mapping, list)):
                problems.append(f"{code}: evidence without a step id ignored")
                continue
            out.append(
                Evidence(
                    step_id=normalize_step_id(ref),
                    quote=str(quote) if quote not in (None, "") else None,
                )
            )
        elif isinstance(item, (str, int)) and not isinstance(item, bool):
            text = str(item).strip()
            head = re.match(r"^\[?\s*(s\d{1,6}(?:\s*[-–]\s*s?\d{1,6})?|\d{1,6})\s*\]?[:\s-]*", text)
            if not head:
                problems.append(f"{code}: evidence {text[:40]!r} names no step; ignored")
                continue
            quote = text[head.end() :].strip().strip("\"'") or None
            out.append(Evidence(step_id=normalize_step_id(head.group(1)), quote=quote))
    return out


# --------------------------------------------------------------------------- grounding

_QUOTE_CHARS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u2013": "-", "\u2014": "-", "\u00a0": " "})  # fmt: skip
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.+|…|\[\s*(?:\.\.\.|…)\s*\])\s*")


def _norm(text: str) -> str:
    return " ".join(text.translate(_QUOTE_CHARS).casefold().split())


def _step_text(trace_step: Any) -> str:
    parts = [trace_step.content or ""]
    if trace_step.tool_name:
        parts.append(str(trace_step.tool_name))
    if trace_step.tool_args not in (None, "", {}, []):
        args = trace_step.tool_args
        parts.append(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
    return "\n".join(parts)


def _expand(ref: str, ids: Mapping[str, int]) -> list[str] | None:
    if ref in ids:
        return [ref]
    span = re.fullmatch(r"s(\d+)-s(\d+)", ref)
    if span:
        lo, hi = sorted((int(span.group(1)), int(span.group(2))))
        refs = [f"s{n}" for n in range(lo, hi + 1)]
        if all(r in ids for r in refs):
            return refs
    return None


def _quote_found(quote: str, haystack: str) -> bool:
    parts = [p for p in (_norm(x).strip(" \"'") for x in _ELLIPSIS.split(quote)) if p]
    if not parts:
        return True
    pos = 0
    for part in parts:
        found = haystack.find(part, pos)
        if found == -1:
            return False
        pos = found + len(part)
    return True


def ground(verdict: Verdict, trace: Trace, *, drop_ungrounded: bool = False) -> Verdict:
    """Check every evidence item of ``verdict`` against ``trace`` (see the module docstring).

    Returns a new verdict; the input is not changed. Grounding never changes ``present``:
    a positive finding whose evidence all failed stays positive, is listed in
    :attr:`Verdict.ungrounded` and noted in ``problems``, so the caller decides.

    >>> from mast.traces.model import Step
    >>> t = Trace(id="t", steps=[Step.make(0, "Continue.  Please keep solving")])
    >>> ev = '[{"step_id": "s1", "quote": "continue. please KEEP"}, {"step_id": "s9"}]'
    >>> v = parse_response('{"modes": {"1.5": {"present": true, "evidence": %s}}}' % ev)
    >>> [e.grounded for e in ground(v, t).findings["1.5"].evidence]
    [True, False]
    """
    ids = {s.id: i for i, s in enumerate(trace.steps)}
    texts: dict[str, str] = {}

    def text_of(step_id: str) -> str:
        if step_id not in texts:
            texts[step_id] = _norm(_step_text(trace.steps[ids[step_id]]))
        return texts[step_id]

    problems = list(verdict.problems)
    findings: dict[str, Finding] = {}
    for code, finding in verdict.findings.items():
        kept: list[Evidence] = []
        dropped = [e for e in finding.dropped]
        for item in finding.evidence:
            checked = _check(item, ids, text_of, trace)
            if checked.grounded is False and drop_ungrounded:
                dropped.append(checked)
            else:
                kept.append(checked)
        updated = finding.model_copy(update={"evidence": kept, "dropped": dropped})
        findings[code] = updated
        bad = [e for e in (*kept, *dropped) if e.grounded is False]
        for item in bad:
            note = f"grounding: {code} cites {item.step_id}: {item.problem}"
            if note not in problems:
                problems.append(note)
        if updated.present is True and updated.grounded is False:
            note = f"grounding: {code} is judged present but none of its evidence is grounded"
            if note not in problems:
                problems.append(note)
    return verdict.model_copy(update={"findings": findings, "problems": problems})


def _check(item: Evidence, ids: Mapping[str, int], text_of: Any, trace: Trace) -> Evidence:
    ref = normalize_step_id(item.step_id)
    refs = _expand(ref, ids)
    if refs is None:
        span = f"s1–s{len(trace.steps)}" if trace.steps else "none"
        return item.model_copy(
            update={
                "step_id": ref,
                "grounded": False,
                "problem": f"no step {ref!r} in trace {trace.id!r} (its steps are {span})",
            }
        )
    if item.quote and item.quote.strip():
        haystack = "\n".join(text_of(r) for r in refs)
        if not _quote_found(item.quote, haystack):
            return item.model_copy(
                update={
                    "step_id": ref,
                    "grounded": False,
                    "problem": f"quote not found in {ref}: {item.quote[:80]!r}",
                }
            )
    return item.model_copy(update={"step_id": ref, "grounded": True, "problem": None})
