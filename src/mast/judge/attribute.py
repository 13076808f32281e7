"""Dedicated who/when attribution: the benchmark's three protocols over a judge's model.

The MAST answer already names a decisive error at no extra call (see
:mod:`mast.judge.attribution`). For users who want Who&When's protocols,
:func:`attribute` runs one of them on a failed trace and returns an
:class:`~mast.judge.annotation.Annotation` whose ``decisive_error`` holds the result (its
failure vector is all unknown: these calls do not judge the modes).

======================  ==========================================================
``"all-at-once"``       1 call: the whole trace; the model names agent and step.
``"step-by-step"``      one call per step, each showing the trace up to that step and
                        asking whether it is the decisive error; stops at the first
                        "yes" (k calls when the error is at step k; n when none is found).
``"binary-search"``     ⌈log2 n⌉ calls at most: each shows a prefix s1…s_mid and asks
                        whether the error happened within it, halving the range.
======================  ==========================================================

Calls go through the judge's provider with its settings, redaction and repair requests;
under :func:`mast.annotate_many` (``mast annotate --attribution METHOD``) they are cached,
rate-limited, budgeted and resumable like annotations: :class:`AttributionJudge` is a
:class:`~mast.judge.Judge` whose ``describe()`` names the method, so its records get their
own key in a results file. An unreadable or undecided answer stops the search and leaves
the decisive error unknown (``None``), never a guess.

>>> expected_calls("binary-search", 10), expected_calls("step-by-step", 10, error_at=3)
(4, 3)
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from mast.errors import AuthError, ContextLengthError, ProviderError
from mast.judge.annotation import Annotation, Status
from mast.judge.attribution import DecisiveError
from mast.judge.judge import Judge
from mast.judge.prompt.render import _boundary, _context_lines, _render_steps, _Templates
from mast.judge.prompt.types import Prompt, hash_parts
from mast.judge.providers.usage import Usage
from mast.judge.reply.attribution_grounding import ground_attribution
from mast.judge.reply.lenient_json import find_json_values
from mast.judge.reply.parse import normalize_step_id
from mast.judge.verdict import Verdict
from mast.traces.model import FailureVector, Trace

__all__ = ["METHODS", "AttributionJudge", "Method", "attribute", "expected_calls"]

Method = Literal["all-at-once", "step-by-step", "binary-search"]
METHODS: tuple[Method, ...] = get_args(Method)


def expected_calls(method: Method, n_steps: int, *, error_at: int | None = None) -> int:
    """Provider calls ``method`` makes on a trace of ``n_steps`` steps (repairs aside).

    ``error_at`` (1-based step number of the first "yes") matters for step-by-step only;
    without it, the worst case (``n_steps``) is returned. For binary search the bound
    ⌈log2 n⌉ is returned (one call fewer on some paths when n is not a power of two).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if n_steps <= 0:
        return 0
    if method == "all-at-once":
        return 1
    if method == "step-by-step":
        return min(error_at, n_steps) if error_at is not None else n_steps
    return math.ceil(math.log2(n_steps)) if n_steps > 1 else 0


def attribution_schema() -> dict[str, Any]:
    """The JSON schema of one attribution answer (strict-mode compatible)."""
    nullable_text = {"type": ["string", "null"]}
    return {
        "type": "object",
        "properties": {
            "found": {"type": ["boolean", "null"], "description": "see the answer format"},
            "agent": {**nullable_text, "description": "agent as named in the headers"},
            "step_id": {**nullable_text, "description": 'step id, e.g. "s4"'},
            "reason": {"type": "string", "description": "one line"},
            "quote": {"type": "string", "description": "short exact quote, or empty"},
        },
        "required": ["found", "agent", "step_id", "reason", "quote"],
        "additionalProperties": False,
    }


@dataclass
class _Answer:
    found: bool | None
    agent: str | None = None
    step_id: str | None = None
    reason: str | None = None
    quote: str | None = None


_YES = {"true", "yes", "y", "1"}
_NO = {"false", "no", "n", "0"}


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    word = str(value).strip().strip(".!").lower() if value is not None else ""
    return True if word in _YES else False if word in _NO else None


def _clean(value: Any) -> str | None:
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    text = " ".join(str(value).split())
    return None if text.lower() in ("", "null", "none", "n/a") else text


def read_answer(text: str) -> _Answer | None:
    """One attribution answer: the JSON object, or ``found: yes`` / ``agent:`` /
    ``step:`` / ``reason:`` lines. ``None`` when nothing readable is there."""
    for candidate in find_json_values(text):
        value = candidate.value
        if isinstance(value, dict) and any(k in value for k in ("found", "agent", "step_id")):
            lowered = {str(k).lower(): v for k, v in value.items()}
            step = _clean(lowered.get("step_id", lowered.get("step")))
            return _Answer(
                found=_flag(lowered.get("found")),
                agent=_clean(lowered.get("agent")),
                step_id=normalize_step_id(step) if step else None,
                reason=_clean(lowered.get("reason")),
                quote=_clean(lowered.get("quote")),
            )
    fields = dict(
        (m.group(1).lower(), m.group(2).strip())
        for m in re.finditer(
            r"^\W*(found|agent(?: name)?|step(?:_id| number)?|reason)\W*[:=]\s*(.+)$",
            text,
            re.IGNORECASE | re.MULTILINE,
        )
    )
    if not fields:
        return None
    step = _clean(fields.get("step_id") or fields.get("step") or fields.get("step number"))
    return _Answer(
        found=_flag(fields.get("found")),
        agent=_clean(fields.get("agent") or fields.get("agent name")),
        step_id=normalize_step_id(step) if step else None,
        reason=_clean(fields.get("reason")),
    )


class AttributionJudge(Judge):
    """A judge that finds a failed trace's decisive error with one dedicated ``method``.

    Built from a configured LLM :class:`~mast.judge.Judge` (same provider, model, sampling,
    redaction, prices); pass it to :func:`mast.annotate_many` like a judge.
    """

    def __init__(self, judge: Judge, method: Method) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if judge.provider is None or judge.call_config is None:
            raise ValueError(
                "attribution methods need an LLM judge (e.g. Judge('openai/gpt-4.1')); the "
                "heuristic judge makes no calls"
            )
        # Share the configured judge's provider, redactor, prices and settings; only the
        # answer shape differs.
        self.__dict__.update(judge.__dict__)
        self.method: Method = method
        self._config = replace(
            judge.call_config, json_schema=attribution_schema(), schema_name="mast_attribution"
        )
        self._attribution_system = _Templates.render("attribution_system.j2", method=method)

    def __repr__(self) -> str:
        return f"AttributionJudge({self.model!r}, method={self.method!r})"

    def describe(self) -> dict[str, Any]:
        """The base judge's settings plus the attribution method (so records key apart)."""
        info = super().describe()
        info["attribution"] = self.method
        info.pop("fewshot", None)  # no few-shot examples are shown to these calls
        return info

    # ------------------------------------------------------------------ prompts
    def _prompt(self, trace: Trace, upto: int) -> Prompt:
        shown = trace.steps[:upto]
        rendered = _render_steps(shown)
        context = _context_lines(trace)
        payload = [trace.task or "", *context] + [f"{s.header}\n{s.body}" for s in rendered]
        fence = _boundary(payload, salt="TRACE")
        last = shown[-1] if shown else None
        user = _Templates.render(
            "attribution_user.j2",
            method=self.method,
            fence=fence,
            task=trace.task,
            context=context,
            steps=rendered,
            last=last.id if last else "none",
            last_agent=(last.agent or last.role or "unknown") if last else "unknown",
            total=len(trace.steps),
        )
        return Prompt(
            system=self._attribution_system,
            user=user,
            static_prefix_hash=hash_parts(self._attribution_system),
            example_ids=(),
            boundary=fence,
            step_ids=tuple(s.id for s in shown),
        )

    async def _ask(self, prompt: Prompt, state: _State) -> _Answer | None:
        """One question with bounded repair requests; None = unreadable or call failed."""
        turns: list[tuple[Any, str]] = []
        for attempt in range(self.repair_attempts + 1):
            try:
                completion = await self._call(prompt.with_turns(*turns))
            except (AuthError, ContextLengthError):
                raise
            except ProviderError as exc:
                state.error = self._redactor.redact(str(exc)).text
                state.status = "error"
                return None
            state.calls += 1
            state.usage = state.usage + completion.usage
            state.raws.append(completion.text)
            state.hashes.append(prompt.with_turns(*turns).prompt_hash)
            answer = read_answer(completion.text)
            if answer is not None:
                return answer
            if attempt < self.repair_attempts:
                state.problems.append(
                    f"attribution answer unreadable; repair request {attempt + 1}"
                )
                turns = [
                    ("assistant", completion.text or "(empty)"),
                    (
                        "user",
                        "Reply again with only the JSON object described in the answer "
                        'format: {"found": …, "agent": …, "step_id": …, "reason": …, "quote": …}.',
                    ),
                ]
        state.status = "parse_error"
        state.error = "attribution answer unreadable after repair request(s)"
        return None

    # ------------------------------------------------------------------ methods
    async def _aannotate(self, trace: Trace) -> Annotation:
        start = time.perf_counter()
        state = _State()
        n = len(trace.steps)
        error: DecisiveError | None = None
        try:
            if n == 0:
                state.problems.append("the trace has no steps: nothing to attribute")
            elif self.method == "all-at-once":
                error = await self._all_at_once(trace, state)
            elif self.method == "step-by-step":
                error = await self._step_by_step(trace, state)
            else:
                error = await self._binary_search(trace, state)
        except ContextLengthError as exc:
            # The attribution protocols show one unsplit trace (or prefix) per call.
            state.status, error = "error", None
            state.error = (
                f"the trace is too long for one {self.method} call ({exc}); attribution "
                "methods do not split traces: use a model with a larger context"
            )
        if error is not None:
            error = error.model_copy(update={"method": self.method, "calls": state.calls})
            checked = ground_attribution(
                Verdict.from_findings([], codes=[], format="json", decisive_error=error), trace
            )
            error = checked.decisive_error
            state.problems += [p for p in checked.problems]
        judge = self.describe()
        judge["prompt_hash"] = hash_parts(*state.hashes) if state.hashes else None
        judge["calls"] = state.calls
        cost, cost_note = self._cost(state.usage)
        return Annotation(
            trace_id=trace.id,
            status=state.status,
            error=state.error,
            taxonomy=self.taxonomy.label,
            vector=FailureVector(codes=self.taxonomy.codes),
            decisive_error=error,
            summary=error.reason if error else None,
            judge=judge,
            usage=state.usage,
            cost_usd=cost,
            latency_s=time.perf_counter() - start,
            windows=1,
            problems=state.problems + cost_note,
            raw="\n\n--- next call ---\n\n".join(state.raws) or None,
        )

    def _agent_of(self, trace: Trace, step_id: str | None) -> str | None:
        for step in trace.steps:
            if step.id == step_id:
                return step.agent or step.role
        return None

    async def _all_at_once(self, trace: Trace, state: _State) -> DecisiveError | None:
        answer = await self._ask(self._prompt(trace, len(trace.steps)), state)
        if answer is None:
            return None
        if answer.found is not True:
            state.problems.append(
                "the model named no decisive error"
                if answer.found is False
                else "the model could not decide on a decisive error; unknown"
            )
            return None
        return DecisiveError(
            agent=answer.agent or self._agent_of(trace, answer.step_id),
            step_id=answer.step_id,
            reason=answer.reason,
            quote=answer.quote,
        )

    async def _step_by_step(self, trace: Trace, state: _State) -> DecisiveError | None:
        for index, step in enumerate(trace.steps, start=1):
            answer = await self._ask(self._prompt(trace, index), state)
            if answer is None:
                state.problems.append(f"stopped at {step.id}: no readable answer")
                return None
            if answer.found is None:
                state.problems.append(f"stopped at {step.id}: the model could not decide")
                return None
            if answer.found:
                return DecisiveError(
                    agent=step.agent or step.role or answer.agent,
                    step_id=step.id,
                    reason=answer.reason,
                    quote=answer.quote,
                )
        state.problems.append("no step was judged to be the decisive error")
        return None

    async def _binary_search(self, trace: Trace, state: _State) -> DecisiveError | None:
        lo, hi = 0, len(trace.steps) - 1
        reason: str | None = None
        quote: str | None = None
        while lo < hi:
            mid = (lo + hi) // 2
            answer = await self._ask(self._prompt(trace, mid + 1), state)
            shown = f"s1–{trace.steps[mid].id}"
            if answer is None:
                state.problems.append(f"stopped at prefix {shown}: no readable answer")
                return None
            if answer.found is None:
                state.problems.append(f"stopped at prefix {shown}: the model could not decide")
                return None
            if answer.found:
                hi = mid
                reason, quote = answer.reason, answer.quote
            else:
                lo = mid + 1
        step = trace.steps[lo]
        return DecisiveError(
            agent=step.agent or step.role,
            step_id=step.id,
            reason=reason,
            # A quote chosen while looking at a longer prefix may belong to another step.
            quote=quote if quote and _in_step(quote, step) else None,
        )


def _in_step(quote: str, step: Any) -> bool:
    from mast.judge.reply.grounding import _norm, _quote_found, _step_text

    return _quote_found(quote, _norm(_step_text(step)))


@dataclass
class _State:
    """What one trace's calls have produced so far."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage.zero)
    status: Status = "ok"
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    raws: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)


def attribute(trace: Trace, judge: Judge, method: Method = "all-at-once") -> Annotation:
    """Find ``trace``'s decisive error with ``method`` (see the module docstring).

    Returns an :class:`~mast.judge.annotation.Annotation` with ``decisive_error`` set (or
    ``None`` when the method found none or could not decide; ``problems`` says which),
    the usage and cost of all its calls, and an all-unknown failure vector.

    >>> ann = attribute(trace, Judge("openai/gpt-4.1"), "binary-search")  # doctest: +SKIP
    >>> err = ann.decisive_error  # doctest: +SKIP
    >>> err.agent, err.step_id, err.calls  # doctest: +SKIP
    ('WebSurfer', 's5', 4)
    """
    return AttributionJudge(judge, method).annotate(trace)
