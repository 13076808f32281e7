"""Unwrap MAD trace strings that are serialized records rather than raw logs.

Some MAD traces are a whole run record (``instance_id``, ``problem_statement``,
``other_data``, ``trajectory``, ``note``) serialized as JSON, as a Python ``repr`` or as a
YAML-like dump; some are a bare run of ``{'content': …, 'role': …, 'name': …}`` dicts; some
MetaGPT runs are ``{"run_id", "prompt", "content": "<log>", "cost", …}`` records.
:func:`unwrap` returns the trajectory (chat messages or log text) and the task, and names
the wrapper fields it leaves out: ``note`` holds human labels, ``other_data`` the reference
answer or patch, so neither may reach a judge.

>>> u = unwrap('{"problem_statement": ["2+2?"], "trajectory": ["a - INFO - b"], "note": "x"}')
>>> u.shape, u.task, u.log, u.excluded
('json', '2+2?', 'a - INFO - b', ['note'])
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mast.traces import outcomes
from mast.traces.segment._common import dedent, split_entries

RAW = "__raw__"  # key of a message-list item that is unparsed text to keep as a log step


@dataclass
class Unwrapped:
    """A trajectory found inside a serialized record."""

    shape: str  # "json", "python-repr" or "yaml"
    messages: list[dict[str, Any]] | None = None
    log: str | None = None
    task: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    outcome: outcomes.OutcomeReading = outcomes.UNKNOWN
    """The run's outcome as the record states it (AG2: ``other_data.correct``)."""


def unwrap(text: str) -> Unwrapped | None:
    """The trajectory inside ``text``, or ``None`` when ``text`` is a plain log."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        else:
            found = _from_value(value, "json")
            if found is not None:
                return found
        if head == "{" and _looks_like_repr(text):
            return _from_repr(text)
        return None
    return _from_yaml(text)


def _text_of(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and ("content" in value or "tool_calls" in value)
        and ("role" in value or "name" in value)
    )


def _from_value(value: Any, shape: str) -> Unwrapped | None:
    if _is_message(value):
        return Unwrapped(shape=shape, messages=[dict(value)])
    if isinstance(value, list) and value and all(_is_message(v) for v in value):
        return Unwrapped(shape=shape, messages=[dict(v) for v in value])
    if isinstance(value, Mapping) and "trajectory" not in value:
        return _from_run_record(value, shape)
    if not isinstance(value, Mapping):
        return None
    out = Unwrapped(shape=shape)
    statement = value.get("problem_statement")
    if statement is not None:
        out.task = _text_of(statement).replace("\r\n", "\n").replace("\r", "").strip() or None
    if isinstance(value.get("instance_id"), (str, int)):
        out.fields["instance_id"] = value["instance_id"]
    out.excluded = [k for k in value if k not in ("trajectory", "problem_statement", "instance_id")]
    out.outcome = outcomes.ag2(value)  # read as the ag2 loader reads it, never on its own
    trajectory = value["trajectory"]
    if isinstance(trajectory, list) and trajectory and all(_is_message(v) for v in trajectory):
        out.messages = [dict(v) for v in trajectory]
    elif isinstance(trajectory, list) and all(isinstance(v, str) for v in trajectory):
        out.log = "\n".join(trajectory)
    elif isinstance(trajectory, str):
        out.log = trajectory
    else:
        return None
    return out


def _from_run_record(value: Mapping[str, Any], shape: str) -> Unwrapped | None:
    """MetaGPT's run record: the log under ``content``, the task under ``prompt``."""
    if not (isinstance(value.get("content"), str) and "prompt" in value):
        return None
    prompt = value.get("prompt")
    out = Unwrapped(shape=shape, log=value["content"])
    out.task = prompt.strip() or None if isinstance(prompt, str) else None
    if isinstance(value.get("run_id"), (str, int)):
        out.fields["run_id"] = value["run_id"]
    out.excluded = [k for k in value if k not in ("content", "prompt", "run_id")]
    return out


# --- Python repr -------------------------------------------------------------------------------

_REPR_HINT = re.compile(r"\{\s*'(?:content|role|name|instance_id|problem_statement|trajectory)'")
# Python string literals as repr() writes them (no raw newlines inside) and braces.
_REPR_TOKENS = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|[{}]""")
_FILLER = re.compile(r"[\s\[\],]*")


def _looks_like_repr(text: str) -> bool:
    return _REPR_HINT.match(text.lstrip()[:200]) is not None


def _from_repr(text: str) -> Unwrapped | None:
    """Adjacent Python dict literals (one per message, or one whole record)."""
    items: list[dict[str, Any]] = []
    depth, start, last = 0, 0, 0
    for tok in _REPR_TOKENS.finditer(text):
        if tok.group() == "{":
            if depth == 0:
                start = tok.start()
            depth += 1
        elif tok.group() == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                _keep_raw(items, text[last:start])
                items.append(_literal(text[start : tok.end()]))
                last = tok.end()
    _keep_raw(items, text[last:])
    values = [i for i in items if RAW not in i]
    if len(values) == 1 and "trajectory" in values[0] and len(items) == 1:
        return _from_value(values[0], "python-repr")
    if values and all(_is_message(v) for v in values):
        return Unwrapped(shape="python-repr", messages=items)
    return None


def _keep_raw(items: list[dict[str, Any]], text: str) -> None:
    if not _FILLER.fullmatch(text):
        items.append({RAW: text})


def _literal(block: str) -> dict[str, Any]:
    try:
        value = ast.literal_eval(block)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {RAW: block}  # unreadable: kept as text, never dropped
    return value if isinstance(value, dict) else {RAW: block}


# --- YAML-like dump --------------------------------------------------------------------------

_WRAPPER_KEYS = ("instance_id", "problem_statement", "other_data", "trajectory", "note")
_YAML_KEY = re.compile(
    r"^(?P<key>" + "|".join(_WRAPPER_KEYS) + r")[ \t]*:[ \t]*(?P<inline>[^\n]*)$", re.M
)


def _from_yaml(text: str) -> Unwrapped | None:
    """``key:`` sections at column 0, values indented below (or inline after the colon)."""
    if not _YAML_KEY.match(text.lstrip("\r\n")):
        return None  # cheap exit for the plain logs that most traces are
    preamble, sections = split_entries(text, _YAML_KEY)
    if preamble.strip() or not sections:
        return None
    out = Unwrapped(shape="yaml")
    log: str | None = None
    for m, a, b in sections:
        key, inline = m.group("key"), m.group("inline")
        if key == "trajectory":
            log = (inline + "\n" if inline.strip() else "") + text[a:b]
        elif key == "problem_statement":
            out.task = _yaml_scalar(inline, text[a:b]) or None
        elif key == "instance_id":
            out.fields["instance_id"] = _yaml_scalar(inline, text[a:b])
        else:
            out.excluded.append(key)
    if log is None:
        return None
    out.log = dedent(log)  # the dump indents the trajectory under its key
    return out


_LIST_ITEM = re.compile(r"^- ?", re.M)


def _yaml_scalar(inline: str, body: str) -> str:
    value = inline.strip() or dedent(body)
    lines = value.splitlines()
    if lines and all(line.startswith("- ") or line == "-" for line in lines):
        value = _LIST_ITEM.sub("", value)  # a YAML list of lines
    return value.strip().strip("'\"").strip()
