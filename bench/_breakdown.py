"""Tokens per part of the requests mast sends and of the answers it reads (cost benchmark).

A request body (what ``OpenAIProvider.request_body`` built) is split the way the bench
server bills it (``_server.prompt_text``: the structured-output schema first, then each
message as ``role\\ncontent\\n``; characters / 4, plus 4 tokens per message):

* answer schema — ``response_format``;
* the system message, cut at the headings the judge's template writes (``judge/prompt/
  templates/system.j2``): instructions (up to "# Failure modes"), taxonomy + rules (the
  modes with what to look for and what they are not, and "# Telling confusable modes
  apart"), worked excerpts (or examples), answer format (from the last "# Answer format");
* trace — the user message (the fenced trace with its task and context lines);
* later turns (a repair request and the answer it repairs), and message framing.

The answer is split by its lines (the verdict JSON's layout): summary, present modes (with
evidence, rationale, first step, agent), absent modes (``false``), decisive mistake, and the
JSON around them. Usage is what the server returned for the same request (its bill).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

CHARS_PER_TOKEN = 4  # the bench server's rule (_server.py)
MESSAGE_TOKENS = 4

_HEADINGS = (
    ("taxonomy + rules", "\n# Failure modes\n"),
    ("worked excerpts", "\n# Worked excerpts\n"),
    ("worked examples", "\n# Worked examples\n"),
)
_ANSWER_FORMAT = "\n# Answer format\n"
_MODE_LINE = re.compile(r'^\s*"\d{1,2}\.\d{1,2}":\s*(.)')


def system_parts(system: str) -> dict[str, int]:
    """Characters of each part of the judge's system text."""
    cuts = [("instructions", 0)]
    for name, heading in _HEADINGS:
        at = system.find(heading)
        if at >= 0:
            cuts.append((name, at + 1))
    end = system.rfind(_ANSWER_FORMAT)
    tail = end + 1 if end >= 0 else len(system)
    cuts = [(name, at) for name, at in cuts if at < tail] + [("answer format", tail)]
    cuts.sort(key=lambda item: item[1])
    out: dict[str, int] = {}
    for (name, start), (_, stop) in zip(cuts, [*cuts[1:], ("", len(system))], strict=True):
        out[name] = out.get(name, 0) + stop - start
    return out


def answer_parts(text: str) -> dict[str, int]:
    """Characters of each part of a verdict answer (by line)."""
    out = {"summary": 0, "present modes": 0, "absent modes": 0, "decisive mistake": 0}
    out["JSON structure"] = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        mode = _MODE_LINE.match(line)
        if stripped.startswith('"summary"'):
            out["summary"] += len(line)
        elif stripped.startswith('"decisive_error"'):
            out["decisive mistake"] += len(line)
        elif mode is not None:
            out["present modes" if mode.group(1) == "{" else "absent modes"] += len(line)
        else:
            out["JSON structure"] += len(line)
    return out


def request_parts(body: Mapping[str, Any], answer: str, usage: Any) -> dict[str, Any]:
    """Characters per part of one request and its answer, with the server's bill."""
    messages = list(body.get("messages") or [])
    prompt: dict[str, int] = {}
    schema = body.get("response_format")
    prompt["answer schema"] = len(json.dumps(schema, sort_keys=True)) if schema else 0
    framing = 0
    later = 0
    for i, message in enumerate(messages):
        content = str(message.get("content") or "")
        framing += len(str(message.get("role"))) + 2  # "role\n" … "\n"
        if message.get("role") == "system":
            for name, chars in system_parts(content).items():
                prompt[name] = prompt.get(name, 0) + chars
        elif i == 1:
            prompt["trace"] = prompt.get("trace", 0) + len(content)
        else:
            later += len(content)
    prompt["repair turns"] = later
    static = prompt["answer schema"] + sum(
        len(str(m.get("content") or "")) + len(str(m.get("role"))) + 2
        for m in messages
        if m.get("role") == "system"
    )
    return {
        "prompt_chars": prompt,
        "framing_chars": framing,
        "messages": len(messages),
        "static_chars": static,
        "system_messages": sum(1 for m in messages if m.get("role") == "system"),
        "answer_chars": answer_parts(answer),
        "billed": {
            "input": getattr(usage, "input_tokens", None),
            "cached": getattr(usage, "cached_input_tokens", None),
            "output": getattr(usage, "output_tokens", None),
        },
    }


def per_trace(requests: list[dict[str, Any]], traces: int) -> dict[str, Any]:
    """Tokens per trace of each part over ``requests`` (the server's rule), with the billed
    totals of the same requests beside them."""
    n = max(1, traces)
    prompt: dict[str, float] = {}
    answer: dict[str, float] = {}
    framing = 0.0
    billed = {"input": 0, "cached": 0, "output": 0}
    static = 0.0
    for r in requests:
        for k, chars in r["prompt_chars"].items():
            prompt[k] = prompt.get(k, 0.0) + chars / CHARS_PER_TOKEN
        for k, chars in r["answer_chars"].items():
            answer[k] = answer.get(k, 0.0) + chars / CHARS_PER_TOKEN
        framing += r["framing_chars"] / CHARS_PER_TOKEN + MESSAGE_TOKENS * r["messages"]
        static += r["static_chars"] / CHARS_PER_TOKEN + MESSAGE_TOKENS * r["system_messages"]
        for k in billed:
            billed[k] += r["billed"][k] or 0
    prompt["message framing"] = framing
    prompt = {k: v / n for k, v in prompt.items() if v}
    answer = {k: v / n for k, v in answer.items() if v}
    return {
        "requests": len(requests),
        "prompt": prompt,
        "answer": answer,
        "input_tokens": sum(prompt.values()),
        "output_tokens": sum(answer.values()),
        "billed_input": billed["input"] / n,
        "billed_cached": billed["cached"] / n,
        "billed_output": billed["output"] / n,
        # Per request (the prefix Anthropic's cache_control marks): schema + system message.
        "static_tokens": static / max(1, len(requests)),
    }
