"""The redaction corpus of ``fixtures/redaction/``: made-up secrets placed in traces.

``secrets()`` gives one :class:`Case` per entry of ``secrets.yaml`` with its random parts
filled in (seeded by the entry id, so every run sees the same values) and ``lookalikes()``
one per entry of ``lookalikes.yaml``; ``Case.trace()`` puts the text where the entry says
(a message, a tool result, tool arguments plain or as JSON inside a JSON string, an agent
or tool name, the task, the system name, metadata). ``leaks(case, text)`` lists the parts
of a secret still readable in ``text``, raw or JSON-escaped once or twice.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from mast.traces.model import Step, Trace

CORPUS = Path(__file__).parent / "fixtures" / "redaction"
PLACES = ("content", "tool_output", "tool_args", "tool_args_json", "tool_args_json2", "agent",
          "tool_name", "task", "system", "metadata")  # fmt: skip

_AN = string.ascii_letters + string.digits
SETS = {
    "an": _AN,
    "url": _AN + "-_",
    "b64": _AN + "+/",
    "hex": "0123456789abcdef",
    "up": string.ascii_uppercase + string.digits,
    "lo": string.ascii_lowercase + string.digits,
    "d": string.digits,
    "dj": "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)",
    "pw": _AN + "!@#$%^&*()-_+=.?",
}
_RANDOM = re.compile(r"\{r:(\w+):(\d+)\}")
# A secret that travels encoded: base64 of a JSON object or of a NAME=value line holding a
# random value (the random value is the piece to look for; the blob itself must go too).
_ENCODED = re.compile(r"\{b64(json|text):(\w+)\}")


@dataclass
class Case:
    id: str
    where: str
    text: str | None = None
    args: Any = None
    format: str = ""
    kinds: tuple[str, ...] = ()
    secret: str = ""
    pieces: list[str] = field(default_factory=list)  # the random parts of the secret
    keep: list[str] = field(default_factory=list)

    def trace(self) -> Trace:
        """A small trace with this case's text where ``where`` says."""
        text = self.text if self.text is not None else json.dumps(self.args)
        args = self.args if self.args is not None else {"input": self.text}
        steps = [Step.make(0, "Start the job.", agent="planner")]
        fields: dict[str, Any] = {}
        if self.where == "content":
            steps.append(Step.make(1, text, agent="coder"))
        elif self.where == "tool_output":
            steps.append(Step.make(1, text, agent="tools", kind="tool_result", tool_name="shell"))
        elif self.where.startswith("tool_args"):
            if self.where != "tool_args":
                args = {"input": json.dumps(args)}
            if self.where == "tool_args_json2":
                args = {"request": json.dumps({"body": args["input"], "retries": 2})}
            steps.append(
                Step.make(1, "", agent="coder", kind="tool_call", tool_name="run", tool_args=args)
            )
        elif self.where == "agent":
            steps.append(Step.make(1, "Uploading the results.", agent=text))
        elif self.where == "tool_name":
            steps.append(Step.make(1, "", kind="tool_call", tool_name=text, tool_args={}))
        elif self.where in ("task", "system"):
            fields[self.where] = text
        elif self.where == "metadata":
            fields["metadata"] = {"note": text}
        else:
            raise ValueError(f"{self.id}: unknown place {self.where!r}")
        steps.append(Step.make(len(steps), "Done.", agent="planner"))
        return Trace(id=self.id, steps=steps, **fields)


def _rng(case_id: str) -> random.Random:
    return random.Random(int(hashlib.sha256(case_id.encode()).hexdigest()[:16], 16))


def _encoded(match: re.Match[str], rng: random.Random, pieces: list[str] | None) -> str:
    value = "".join(rng.choice(_AN) for _ in range(28))
    if pieces is not None:
        pieces.append(value)
    name = match.group(2)
    if match.group(1) == "json":
        plain = json.dumps({"client_id": "demo-app", name: value, "scope": "read"})
    else:
        plain = f"APP_ENV=prod\n{name}={value}\n"
    return base64.b64encode(plain.encode()).decode()


def _fill(template: str, rng: random.Random, pieces: list[str] | None = None) -> str:
    template = _ENCODED.sub(lambda m: _encoded(m, rng, pieces), template)

    def one(match: re.Match[str]) -> str:
        value = "".join(rng.choice(SETS[match.group(1)]) for _ in range(int(match.group(2))))
        if pieces is not None:
            pieces.append(value)
        return value

    return _RANDOM.sub(one, template)


def _put(template: Any, secret: str, rng: random.Random) -> Any:
    if isinstance(template, str):
        filled = _fill(template.replace("{secret}", "\0"), rng)
        return filled.replace("{{", "{").replace("}}", "}").replace("\0", secret)
    if isinstance(template, dict):
        return {k: _put(v, secret, rng) for k, v in template.items()}
    if isinstance(template, list):
        return [_put(v, secret, rng) for v in template]
    return template


@cache
def secrets(name: str = "secrets.yaml") -> tuple[Case, ...]:
    """The secrets of ``name`` (``secrets.yaml``, or ``holdout.yaml`` for the held-out set)."""
    entries = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))["secrets"]
    cases = []
    for entry in entries:
        rng = _rng(entry["id"])
        pieces: list[str] = []
        secret = _fill(entry["secret"], rng, pieces)
        kinds = entry["kind"] if isinstance(entry["kind"], list) else [entry["kind"]]
        cases.append(
            Case(
                id=entry["id"],
                where=entry["where"],
                text=_put(entry["text"], secret, rng) if "text" in entry else None,
                args=_put(entry["args"], secret, rng) if "args" in entry else None,
                format=entry["format"],
                kinds=tuple(kinds),
                secret=secret,
                pieces=[p for p in pieces if len(p) >= 6],
                keep=[_put(k, secret, rng) for k in entry.get("keep", [])],
            )
        )
    return tuple(cases)


@cache
def lookalikes(name: str = "lookalikes.yaml") -> tuple[Case, ...]:
    """The look-alikes of ``name`` (``lookalikes.yaml``, or ``holdout.yaml``)."""
    entries = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))
    return tuple(
        Case(id=e["id"], where=e["where"], text=e.get("text"), args=e.get("args"))
        for e in entries["lookalikes"]
    )


def _forms(value: str) -> set[str]:
    """``value`` as written, and JSON-escaped once to three times (JSON in a JSON string in
    a prompt in a request body)."""
    forms = [value]
    for _ in range(3):
        forms.append(json.dumps(forms[-1])[1:-1])
    return set(forms)


def leaks(case: Case, text: str) -> list[str]:
    """The parts of ``case``'s secret that can still be read in ``text``."""
    return [p for p in [case.secret, *case.pieces] for form in _forms(p) if form in text]


def kept(case: Case, text: str) -> list[str]:
    """The context strings of ``case`` that are missing from ``text``."""
    return [k for k in case.keep if not any(form in text for form in _forms(k))]
