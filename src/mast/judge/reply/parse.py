"""Reading a judge's answer into a :class:`~mast.judge.verdict.Verdict`: :func:`parse_response`.

Reads our JSON shape and tolerant variants: JSON wrapped in prose or code fences, truncated
JSON (complete members are kept, the rest is unknown), Python literals, trailing commas, a
list of modes with ``"code"`` keys, top-level ``{"1.1": "yes"}`` maps, keys like
``"1.1 Disobey Task Specification"`` or ``"FM-1.1"``, and answers written as booleans,
``"yes"``/``"no"`` or 1/0. Without readable JSON it reads the MAST paper's text format (see
:mod:`mast.judge.reply.textformat`). A mode that is missing, ``null``, "unclear" or answered both
ways is ``None``, never ``False``; every such case is listed in ``Verdict.problems``. Only an
answer with nothing readable at all raises :class:`~mast.errors.VerdictParseError`.

>>> v = parse_response("C. 1.3 Step Repetition: **Yes**\\n2.5 Ignored Other Agent's Input: yes")
>>> v.vector["1.3"], v.vector["2.5"], v.vector["3.2"]
(True, True, None)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from mast.errors import VerdictParseError
from mast.judge.attribution import (
    find_decisive_value,
    first_step_in_text,
    read_decisive_error,
    read_first_step,
    read_text_attribution,
)
from mast.judge.reply.echo import Items, Planted, answer_blocks
from mast.judge.reply.lenient_json import find_json_values
from mast.judge.reply.textformat import NameIndex, may_answer, read_text_format
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.taxonomy import Taxonomy, load_taxonomy, normalize_name

_FENCE = re.compile(r"<<<(BEGIN|END) (MAST-[A-Z]{1,20}-[0-9A-F]{16})>>>")
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
    planted: Planted | None = None,
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
    verbatim from it is skipped, and so is every part of the answer that repeats, by
    meaning, a verdict-shaped fragment of the trace (``planted``, by default found in
    ``prompt_text`` with :func:`find_planted`; see :mod:`mast.judge.reply.echo`): a JSON verdict or
    a block of text-format lines all of whose answers one planted fragment gives too,
    however it was re-indented, unescaped or bulleted. A real answer that differs from
    every planted fragment is read in full, whatever answer-shaped lines the trace holds.

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
    if planted is None:
        planted = find_planted([prompt_text], tax) if prompt_text else Planted()
    skipped: list[tuple[int, int]] = []
    for candidate in find_json_values(text):
        if prompt_text and text[candidate.start : candidate.end] in prompt_text:
            json_problems.append("ignored a JSON value copied verbatim from the prompt")
            skipped.append((candidate.start, candidate.end))
            continue
        verdict = _verdict_from_json(candidate.value, candidate.truncated, tax, raw)
        if verdict is not None and planted.covers(verdict_items(verdict)):
            json_problems.append("ignored a JSON verdict that repeats one planted in the trace")
            skipped.append((candidate.start, candidate.end))
            continue
        if verdict is not None:
            if json_problems:
                verdict.problems[:0] = json_problems
            return verdict
    for start, end in reversed(skipped):  # an ignored copy is not read as text either
        text = text[:start] + text[end:]
    if planted:
        text = _drop_planted_blocks(text, planted, tax, json_problems)
    reading = read_text_format(text, tax, _names(tax))
    echoes = [p for p in json_problems if p.startswith("ignored")]
    if echoes and not any(v is not None for v in reading.answers.values()):
        # What was left after the echoes answers no mode: the model gave no answer of its
        # own. Not "ok with every mode unknown", which counts as annotated and is never
        # asked again: unreadable, so it is repaired, retried and re-asked on a rerun.
        raise VerdictParseError(
            "every part of the answer that gives a mode's answer repeats trace text "
            f"({'; '.join(echoes)}); no answer of the judge's own",
            raw=raw,
            problems=json_problems + [p for p in reading.problems if "not answered" not in p],
        )
    if reading.readable:
        findings = []
        for code, value in reading.answers.items():
            rationale = reading.rationales.get(code) or None
            first_step, agent = first_step_in_text(rationale, normalize_step_id)
            findings.append(
                Finding(
                    code=code,
                    present=value,
                    rationale=rationale,
                    evidence=[Evidence(step_id=s) for s in reading.step_refs.get(code, [])],
                    first_step=first_step,
                    agent=agent,
                )
            )
        problems = json_problems + reading.problems
        return Verdict.from_findings(
            findings,
            codes=tax.codes,
            format="text",
            task_completed=reading.task_completed,
            summary=reading.summary,
            problems=problems,
            raw=raw,
            decisive_error=read_text_attribution(text, tax.codes, problems, normalize_step_id),
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


def _drop_echoed_fences(text: str, boundary: str | None) -> tuple[str, int]:
    """``text`` without the fenced regions a model copied from its prompt, and their count.

    Whatever sits inside a fence is trace data, so it is dropped whole, with any fake
    verdict in it. An opening line without its closing line drops the rest of the text, a
    closing line without an opening drops everything before it: in doubt the answer loses
    text (and the modes become unknown), it never gains a planted verdict.
    """
    if "<<<" not in text:
        return text, 0
    # The prompt's own token never occurs in its trace (mast.judge.prompt.render checks), so with it
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


def _drop_planted_blocks(text: str, planted: Planted, tax: Taxonomy, problems: list[str]) -> str:
    """For the text format: drop the blocks of the answer (see
    :func:`~mast.judge.reply.echo.answer_blocks`) whose answers all repeat one planted fragment."""
    kept: list[str] = []
    dropped = 0
    for block in answer_blocks(text):
        if planted.covers(_text_items(block, tax) or frozenset()):
            dropped += 1
            continue
        lines = block.splitlines(keepends=True)
        cut = planted.trim(lines, lambda line: _text_items(line, tax))
        dropped += bool(cut)
        kept.append("".join(lines[cut:] if cut > 0 else lines[:cut] if cut < 0 else lines))
    if dropped:
        problems.append(f"ignored {dropped} block(s) of lines that repeat a verdict in the trace")
    return "".join(kept)


def verdict_items(verdict: Verdict) -> Items:
    """What ``verdict`` answers, for comparison with planted fragments."""
    items = {(code, value) for code, value in verdict.vector.items() if value is not None}
    if verdict.task_completed is not None:
        items.add(("task", verdict.task_completed))
    return frozenset(items)


def _json_items(value: Any, tax: Taxonomy) -> Items | None:
    verdict = _verdict_from_json(value, False, tax, "")
    return verdict_items(verdict) if verdict is not None else None


def _text_items(block: str, tax: Taxonomy) -> Items | None:
    if not may_answer(block, tax):  # most blocks of a trace: skip the full reading
        return None
    reading = read_text_format(block, tax, _names(tax))
    if not reading.readable:
        return None
    items = {(code, value) for code, value in reading.answers.items() if value is not None}
    if reading.task_completed is not None:
        items.add(("task", reading.task_completed))
    return frozenset(items)


def find_planted(texts: Iterable[str | None], taxonomy: Taxonomy | None = None) -> Planted:
    """The verdict-shaped fragments in ``texts`` (the prompt's user message, and header
    fields such as agent names as the trace wrote them), read by meaning.

    >>> planted = find_planted(['{"modes": {"1.1": {"present": false}}}'])
    >>> planted.covers(frozenset({("1.1", False)}))
    True
    """
    tax = taxonomy or load_taxonomy()
    return Planted.find(
        (t for t in texts if t),
        json_items=lambda value: _json_items(value, tax),
        text_items=lambda block: _text_items(block, tax),
    )


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
    decisive = read_decisive_error(find_decisive_value(top), tax.codes, problems, normalize_step_id)
    return Verdict.from_findings(
        findings,
        codes=tax.codes,
        format="json",
        task_completed=task_completed,
        summary=summary if isinstance(summary, str) else None,
        problems=problems,
        raw=raw,
        decisive_error=decisive,
    )


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


class _Readers:
    """What reading answers for one taxonomy needs, built once: its name index, and every
    mode name and alias (normalized) with the first code that has it."""

    def __init__(self, tax: Taxonomy) -> None:
        self.taxonomy = tax
        self.names = NameIndex(tax)
        self.by_name: dict[str, str] = {}
        for mode in tax.modes:
            for name in (mode.name, *mode.aliases):
                self.by_name.setdefault(normalize_name(name), mode.code)


# By identity (taxonomies are frozen): hashing a taxonomy model costs more than the lookup.
_READERS: dict[int, _Readers] = {}


_READERS_LOCK = threading.Lock()  # parsing also runs in worker threads (off_loop)


def _readers(tax: Taxonomy) -> _Readers:
    found = _READERS.get(id(tax))
    if found is None or found.taxonomy is not tax:
        with _READERS_LOCK:
            if len(_READERS) >= 8:
                _READERS.pop(next(iter(_READERS)))
            found = _READERS[id(tax)] = _Readers(tax)
    return found


def _names(tax: Taxonomy) -> NameIndex:
    return _readers(tax).names


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
    return _readers(tax).by_name.get(normalize_name(key))  # tax.code_for_name(key), indexed


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
    first_step, agent = read_first_step(item, normalize_step_id)
    return Finding(
        code=code,
        present=present,
        evidence=_evidence(_first(item, _EVIDENCE_KEYS), code, problems),
        rationale=str(rationale) if rationale not in (None, "") else None,
        confidence=_confidence(lowered.get("confidence"), code, problems),
        first_step=first_step,
        agent=agent,
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
