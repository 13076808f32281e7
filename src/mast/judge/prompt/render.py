"""Render the judge prompt: static instructions, taxonomy and examples first, the trace last.

The ``system`` text (instructions, the taxonomy's definitions / what to look for / what it is
not, the few-shot examples and the answer format) is identical for every trace, so providers
can cache it; everything specific to the trace, its task included, is in ``user``.

Trace text is handed to jinja2 as data and never rendered as template code, and it is fenced
by a boundary derived from a hash of the fenced text that is checked not to occur in it, so
content cannot close its own fence. The boundary is deterministic, so the same trace always
gives the same prompt hash (and cache key).

>>> from mast.traces.model import Step, Trace
>>> trace = Trace(id="t1", task="Add 2 and 2.", steps=[Step.make(0, "4", agent="solver")])
>>> prompt = render(trace, examples=())
>>> prompt.user.count("[s1] agent=solver"), prompt.system.find("Add 2 and 2.")
(1, -1)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from mast.judge.prompt.answer_format import AnswerMode, check_answer, compact_answer
from mast.judge.prompt.compact import compact_steps
from mast.judge.prompt.excerpts import Excerpt, Reading
from mast.judge.prompt.tokens import TokenCount, count_tokens
from mast.judge.prompt.types import Prompt, WholeExample, WindowInfo, hash_parts
from mast.judge.verdict import example_answer
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Step, StepKind, Trace

__all__ = [
    "example_block",
    "example_tokens",
    "render",
    "render_repair",
    "step_header",
    "step_text",
]

_TEMPLATES = Path(__file__).resolve().parent / "templates"


def step_header(step: Step, *, show_role: bool = True) -> str:
    """The header line that introduces a step in the prompt (fields that are known only).

    ``show_role=False`` leaves the role out: AG2 logs record each message's role from the
    receiving agent's side, so ``agent=assistant role=user`` would read inverted.

    >>> step_header(Step.make(11, "x", agent="Coder", role="assistant", kind="tool_call",
    ...                       tool_name="search"))
    '[s12] agent=Coder role=assistant kind=tool_call tool=search'
    """
    parts = [f"[{step.id}]"]
    if step.agent:
        parts.append(f"agent={_one_line(step.agent)}")
    if step.role and show_role:
        parts.append(f"role={_one_line(step.role)}")
    parts.append(f"kind={StepKind(step.kind).value}")
    if step.tool_name:
        parts.append(f"tool={_one_line(step.tool_name)}")
    return " ".join(parts)


def _one_line(value: str) -> str:
    # Header fields come from the trace: keep them on the header line.
    return " ".join(str(value).split()) or "?"


def step_text(step: Step) -> str:
    """A step's body as shown in the prompt: tool arguments (as JSON), then the content."""
    lines: list[str] = []
    if step.tool_args is not None:
        args = json.dumps(step.tool_args, ensure_ascii=False, sort_keys=True, default=str)
        lines.append(f"arguments: {args}")
    if step.content:
        lines.append(step.content)
    if not lines:
        lines.append("(no content)")
    return "\n".join(lines)


@dataclass(frozen=True)
class _RenderedStep:
    header: str
    body: str


def _render_steps(
    steps: Iterable[Step], *, show_role: bool = True, compact: bool = True
) -> list[_RenderedStep]:
    # Repeats are shown once, as references to the step that shows them (losslessly).
    shown = list(steps)
    if not compact:
        return [_RenderedStep(step_header(s, show_role=show_role), step_text(s)) for s in shown]
    return [
        _RenderedStep(step_header(step, show_role=show_role), rendered.text)
        for step, rendered in zip(shown, compact_steps(shown), strict=True)
    ]


def steps_as_shown(trace: Trace, *, compact: bool = True) -> list[tuple[str, str, str]]:
    """``(step id, header, body)`` of every step, exactly as the judge's prompt shows them
    (the labelling app shows people the same text)."""
    rendered = _render_steps(trace.steps, show_role=_shows_role(trace), compact=compact)
    return [(s.id, r.header, r.body) for s, r in zip(trace.steps, rendered, strict=True)]


# Frameworks whose chat roles do not describe the agent: AG2 logs record a message's role as
# the receiver sees it; ChatDev gives each phase's instructor `user` and assistant
# `assistant`, so one agent flips between the two from phase to phase. Shown, the roles would
# read as an agent changing sides; the agent name says who spoke.
_RELATIVE_ROLES = ("ag2", "autogen", "chatdev")


def _shows_role(trace: Trace) -> bool:
    names = {(trace.system or "").lower(), (trace.format or "").lower()}
    return not any(name.startswith(_RELATIVE_ROLES) for name in names)


_ROSTER_MAX = 20  # agents named on the roster line; the rest are counted
_ROLE_TEXT_MAX = 80  # characters of an agent's role text on the roster line


def roster_line(trace: Trace) -> str | None:
    """``AGENTS: name (n steps), …`` for the agents of ``trace`` in order of first step.

    An agent's role text is added after a colon when the trace has one
    (``trace.metadata["agent_roles"]``: ``{agent: text}``, shortened to one line).

    >>> from mast.traces.model import Step, Trace
    >>> steps = [Step.make(i, "x", agent=a) for i, a in enumerate(["Coder", "Tester", "Coder"])]
    >>> t = Trace(id="t", steps=steps, metadata={"agent_roles": {"Tester": "runs the tests"}})
    >>> roster_line(t)
    'AGENTS: Coder (2 steps), Tester (1 step: runs the tests)'
    """
    counts: dict[str, int] = {}
    for step in trace.steps:
        if step.agent:
            name = _one_line(step.agent)
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None
    roles = trace.metadata.get("agent_roles")
    roles = roles if isinstance(roles, dict) else {}
    shown = []
    for name, n in list(counts.items())[:_ROSTER_MAX]:
        text = f"{n} step{'s' if n != 1 else ''}"
        role = roles.get(name)
        if isinstance(role, str) and role.strip():
            role = _one_line(role)
            if len(role) > _ROLE_TEXT_MAX:
                role = role[: _ROLE_TEXT_MAX - 1].rstrip() + "…"
            text += f": {role}"
        shown.append(f"{name} ({text})")
    rest = len(counts) - _ROSTER_MAX
    more = f", and {rest} more agent{'s' if rest != 1 else ''}" if rest > 0 else ""
    return "AGENTS: " + ", ".join(shown) + more


def _boundary(payload: Sequence[str], *, salt: str) -> str:
    """A fence token that occurs in none of ``payload``, derived from it deterministically."""
    base = hash_parts(salt, *payload)
    for attempt in range(1000):
        token = f"MAST-{salt}-{hash_parts(base, str(attempt))[:16].upper()}"
        if not any(token in text for text in payload):
            return token
    raise RuntimeError("could not find a fence token absent from the trace")  # pragma: no cover


@dataclass(frozen=True)
class _RenderedExample:
    id: str
    fence: str
    task: str | None
    steps: list[_RenderedStep]
    answer: str


@dataclass(frozen=True)
class _RenderedReading:
    verdict: str
    mode: str
    name: str
    step: str
    quote: str
    why: str


@dataclass(frozen=True)
class _RenderedExcerpt:
    id: str
    fence: str
    task: str | None
    steps: list[_RenderedStep]
    readings: list[_RenderedReading]


# The bundled excerpts are read in the paper's convention of 3.2/3.3. In another convention
# their readings of those two modes would teach the wrong meaning, so they are left out
# (and an excerpt with nothing else to show is not shown at all).
_PAPER_ONLY = ("3.2", "3.3")


def _readings_shown(ex: Excerpt, tax: Taxonomy) -> list[Reading]:
    if tax.verification in (None, "paper"):
        return list(ex.readings)
    return [r for r in ex.readings if r.mode not in _PAPER_ONLY]


_Shown = TypeVar("_Shown")


def shown_examples(examples: Sequence[_Shown], tax: Taxonomy) -> list[_Shown]:
    """The examples the static prompt shows in ``tax``'s convention of 3.2/3.3."""
    return [ex for ex in examples if not isinstance(ex, Excerpt) or _readings_shown(ex, tax)]


def _render_excerpt(ex: Excerpt, tax: Taxonomy) -> _RenderedExcerpt:
    steps = _render_steps(ex.to_steps())
    payload = [ex.task or ""] + [f"{s.header}\n{s.body}" for s in steps]
    readings = [
        _RenderedReading(
            "Shows" if r is ex.shows else "Not",
            r.mode,
            tax[r.mode].name if r.mode in tax else "",
            r.step,
            " ".join(r.quote.split()),
            " ".join(r.why.split()),
        )
        for r in _readings_shown(ex, tax)
    ]
    return _RenderedExcerpt(ex.id, _boundary(payload, salt="EXCERPT"), ex.task, steps, readings)


class _Templates:
    """The sandboxed jinja2 environment, built once."""

    _env: SandboxedEnvironment | None = None

    @classmethod
    def env(cls) -> SandboxedEnvironment:
        if cls._env is None:
            cls._env = SandboxedEnvironment(
                loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
                autoescape=False,
                undefined=jinja2.StrictUndefined,
                trim_blocks=True,
                lstrip_blocks=True,
                keep_trailing_newline=False,
                # Shipped templates do not change during a run: no file stat per render.
                auto_reload=False,
            )
        return cls._env

    @classmethod
    def render(cls, name: str, **data: Any) -> str:
        return cls.env().get_template(name).render(**data).strip() + "\n"


def _answer_json(answer: dict[str, Any]) -> str:
    """A verdict as compact JSON: one line per mode, so examples stay short."""
    dump = json.dumps
    modes = ",\n".join(
        f"    {dump(code)}: {dump(entry, ensure_ascii=False)}"
        for code, entry in answer["modes"].items()
    )
    return (
        "{\n"
        f'  "summary": {dump(answer["summary"], ensure_ascii=False)},\n'
        f'  "modes": {{\n{modes}\n  }},\n'
        f'  "decisive_error": {dump(answer.get("decisive_error"), ensure_ascii=False)},\n'
        f'  "task_completed": {dump(answer["task_completed"])}\n'
        "}"
    )


def _example_answer(example: WholeExample, taxonomy: Taxonomy) -> dict[str, Any]:
    """The answer a careful judge gives on ``example``, in the requested JSON shape.

    Evidence cites the steps the example's author listed, with the author's verbatim quote
    where the file gives one (no quote is invented: a step id alone keeps an empty quote, and
    the judge notes such files, see :func:`~mast.judge.prompt.fewshot.unquoted_positives`); a
    mode's rationale is the author's note for it when there is one. Gold labels carry no
    confidence, so none is shown.
    """

    def note(code: str) -> str:
        if example.notes.get(code):
            return example.notes[code]
        present = example.labels.get(code)
        if present is None:
            return ""
        return "Shown by the cited steps." if present else "No sign of it in the excerpt."

    notes = {code: note(code) for code in taxonomy.codes}
    answer = example_answer(
        labels=example.labels,
        evidence={c: steps for c, steps in example.evidence.items() if example.labels.get(c)},
        rationale=example.rationale,
        taxonomy=taxonomy,
        notes=notes,
        task_completed=example.task_completed,
        agents={step.id: step.agent or step.role for step in example.steps},
    )
    # Quotes the author gave (FewShotExample.quotes: code -> step id -> quote).
    quotes: dict[str, dict[str, str]] = getattr(example, "quotes", None) or {}
    for code, entry in answer["modes"].items():
        for item in entry["evidence"]:
            item["quote"] = " ".join(quotes.get(code, {}).get(item["step_id"], "").split())
    decisive = answer.get("decisive_error")
    if decisive:
        step = decisive["step_id"]
        found = [quotes[c][step] for c in decisive["modes"] if step in quotes.get(c, {})]
        decisive["quote"] = " ".join(found[0].split()) if found else ""
    return answer


def render_system(
    *,
    taxonomy: Taxonomy | None = None,
    examples: Sequence[WholeExample | Excerpt] = (),
    answer: AnswerMode = "full",
) -> str:
    """The static part of the prompt: instructions, taxonomy, decision rules, worked
    excerpts and whole-trace examples, answer format (``answer``: the shape the answer
    instructions and example answers are written in, see :mod:`mast.judge.prompt.answer_format`)."""
    tax = taxonomy or load_taxonomy()
    shape = compact_answer if check_answer(answer) == "compact" else dict
    categories = [
        {
            "code": cat.code,
            "name": cat.name,
            "description": " ".join(cat.description.split()),
            "modes": [m for m in tax.modes if m.category == cat.code],
        }
        for cat in tax.categories
    ]
    rendered_examples = []
    examples = shown_examples(examples, tax)
    excerpts = [_render_excerpt(ex, tax) for ex in examples if isinstance(ex, Excerpt)]
    for ex in examples:
        if isinstance(ex, Excerpt):
            continue
        steps = _render_steps(ex.steps)
        payload = [ex.task or ""] + [f"{s.header}\n{s.body}" for s in steps]
        rendered_examples.append(
            _RenderedExample(
                id=ex.id,
                fence=_boundary(payload, salt="EXAMPLE"),
                task=ex.task,
                steps=steps,
                answer=_answer_json(shape(_example_answer(ex, tax))),
            )
        )
    return _Templates.render(
        "system.j2",
        taxonomy=tax,
        categories=[c for c in categories if c["modes"]],
        rules=[
            {"modes": list(rule.modes), "kind": rule.kind, "text": " ".join(rule.rule.split())}
            for rule in tax.decision_rules
        ],
        excerpts=excerpts,
        examples=rendered_examples,
        codes=tax.codes,
        answer=answer,
    )


def example_block(example: WholeExample | Excerpt, *, taxonomy: Taxonomy | None = None) -> str:
    """The text one example or excerpt adds to the static prompt (with its section heading)."""
    tax = taxonomy or load_taxonomy()
    base = render_system(taxonomy=tax)
    text = render_system(taxonomy=tax, examples=[example])
    prefix = 0
    while prefix < min(len(base), len(text)) and base[prefix] == text[prefix]:
        prefix += 1
    suffix = 0
    while suffix < len(base) - prefix and base[-1 - suffix] == text[-1 - suffix]:
        suffix += 1
    return text[prefix : len(text) - suffix]


def example_tokens(
    example: WholeExample | Excerpt,
    *,
    taxonomy: Taxonomy | None = None,
    model: str | None = None,
) -> TokenCount:
    """Prompt tokens one example or excerpt adds to the static prompt, as rendered.

    Counted with tiktoken when available (see :func:`mast.judge.prompt.tokens.count_tokens`), else
    estimated; the section heading it would share with other examples is included.
    """
    return count_tokens(example_block(example, taxonomy=taxonomy), model=model)


def _context_lines(trace: Trace) -> list[str]:
    lines = []
    if trace.system:
        lines.append(f"SYSTEM: {_one_line(trace.system)}")
    if trace.benchmark:
        lines.append(f"BENCHMARK: {_one_line(trace.benchmark)}")
    roster = roster_line(trace)
    if roster:
        lines.append(roster)
    if not trace.segmented:
        lines.append("NOTE: this log could not be split into steps; it is shown as one step.")
    return lines


def render(
    trace: Trace,
    *,
    taxonomy: Taxonomy | None = None,
    examples: Sequence[WholeExample | Excerpt] = (),
    steps: Sequence[Step] | None = None,
    carry_over: str | None = None,
    window: WindowInfo | None = None,
    system: str | None = None,
    compact: bool = True,
    answer: AnswerMode = "full",
) -> Prompt:
    """Render the judge prompt for ``trace`` (or for ``steps`` of it, when windowing).

    ``carry_over`` is a short note on what earlier windows found, ``window`` says which part
    this is. ``system`` reuses an already rendered static part (it must come from
    :func:`render_system` with the same taxonomy and examples). The trace's outcome and
    labels are never shown to the judge. ``compact=False`` shows every step in full
    instead of referring repeats back to an earlier step (see :mod:`mast.judge.prompt.compact`).
    ``answer`` is the answer shape the static part asks for (when it is rendered here).
    """
    tax = taxonomy or load_taxonomy()
    system_text = (
        system
        if system is not None
        else render_system(taxonomy=tax, examples=examples, answer=answer)
    )
    shown = list(trace.steps if steps is None else steps)
    rendered = _render_steps(shown, show_role=_shows_role(trace), compact=compact)
    context = _context_lines(trace)
    payload = [trace.task or "", carry_over or "", *context] + [
        f"{s.header}\n{s.body}" for s in rendered
    ]
    fence = _boundary(payload, salt="TRACE")
    user = _Templates.render(
        "user.j2",
        fence=fence,
        task=trace.task,
        context=context,
        steps=rendered,
        carry_over=carry_over,
        window=window,
    )
    return Prompt(
        system=system_text,
        user=user,
        static_prefix_hash=hash_parts(system_text),
        example_ids=tuple(ex.id for ex in examples),
        boundary=fence,
        step_ids=tuple(s.id for s in shown),
        shown_steps=tuple(s.body for s in rendered) if compact else (),
    )


def render_repair(problem: str, *, taxonomy: Taxonomy | None = None) -> str:
    """The short follow-up that asks again for the JSON answer only."""
    tax = taxonomy or load_taxonomy()
    return _Templates.render("repair.j2", problem=_one_line(problem)[:300], codes=tax.codes)
