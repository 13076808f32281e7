"""Annotating a trace too long for one prompt: window by window, then merged."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from mast.errors import (
    ContextLengthError,
)
from mast.judge.annotation import Annotation
from mast.judge.budget import (
    _MAX_CONTEXT_RETRIES,
)
from mast.judge.offload.loop import off_loop
from mast.judge.prompt.render import render
from mast.judge.prompt.types import Prompt, WindowInfo
from mast.judge.providers import Completion
from mast.judge.providers.usage import Usage
from mast.judge.records import _Context, _Outcome
from mast.judge.reply.attribution_grounding import merge_window_attribution
from mast.judge.verdict import Verdict
from mast.judge.windows import (
    CARRY_OVER_MAX_CHARS,
    FINAL_NOTE_MAX_CHARS,
    WindowResult,
    carry_over,
    cited_steps,
    final_pass_note,
    merge,
    mode_kinds,
    plan_windows,
)
from mast.taxonomy import Taxonomy
from mast.traces.model import Trace


class _Judge(Protocol):
    """What windowing needs of the :class:`~mast.judge.judge.Judge` that runs it (the judge
    imports this module, so it is named by what it does, not by its class)."""

    taxonomy: Taxonomy
    context_tokens: int
    _chars_per_token: float

    def describe(self) -> dict[str, Any]: ...
    def _step_costs(self, trace: Trace) -> list[int]: ...
    async def _attempt(self, prompt: Prompt, trace: Trace) -> _Outcome: ...
    def _cost(self, usage: Usage) -> tuple[float | None, list[str]]: ...
    def _failed(
        self, trace: Trace, ctx: _Context, start: float, error: str, problems: list[str]
    ) -> Annotation: ...


def _combined_hash(hashes: Sequence[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


async def annotate_in_windows(
    judge: _Judge,
    trace: Trace,
    ctx: _Context,
    start: float,
    *,
    budget: int,
    retries: int,
    reason: str | None,
    shrink: float | None = None,
) -> Annotation:
    """Annotate ``trace`` window by window. ``shrink`` (after the provider said "too
    long") makes windows that share of what the estimate allowed, or of the whole trace
    when it was meant to fit in one piece."""
    problems: list[str] = []
    if reason:
        problems.append(f"the provider rejected the whole trace as too long ({reason})")
    total = len(trace.steps)
    # The fixed part: static prefix, instructions, task, and a maximal carry-over note.
    probe = render(
        trace,
        taxonomy=judge.taxonomy,
        examples=ctx.examples,
        system=ctx.system,
        steps=[],
        carry_over="x" * CARRY_OVER_MAX_CHARS,
        window=WindowInfo(index=99, count=99, first="s99999", last="s99999", total=total),
    )
    fixed = probe.estimated_tokens(chars_per_token=judge._chars_per_token)
    capacity = budget - fixed
    if capacity < 256 or total == 0:
        return judge._failed(
            trace,
            ctx,
            start,
            f"the prompt without any trace step needs ≈{fixed} tokens but the budget is "
            f"≈{budget} (context_tokens={judge.context_tokens}): use fewer few-shot "
            "examples, a shorter task text or a larger context_tokens",
            problems,
        )
    costs = judge._step_costs(trace)
    if shrink is not None:
        capacity = max(1, int(min(capacity, sum(costs)) * shrink))
    spans = plan_windows(costs, capacity)
    for a, b in spans:
        if b - a == 1 and costs[a] > capacity:
            problems.append(
                f"step {trace.steps[a].id} alone (≈{costs[a]} tokens) exceeds the window "
                f"budget (≈{capacity} tokens); sent whole in its own window, not cut"
            )
    problems.append(
        f"trace annotated in {len(spans)} windows of whole steps "
        f"(estimated ≈{sum(costs) + fixed} prompt tokens, budget ≈{budget})"
    )
    results: list[WindowResult] = []
    usage = Usage.zero()
    raws: list[str] = []
    prompts: list[Prompt] = []
    completions: list[Completion] = []
    for index, (a, b) in enumerate(spans, start=1):
        steps = trace.steps[a:b]
        info = WindowInfo(
            index=index, count=len(spans), first=steps[0].id, last=steps[-1].id, total=total
        )
        prompt = await off_loop(
            sum(len(s.content) for s in steps),  # a long window renders in a worker thread
            render,
            trace,
            taxonomy=judge.taxonomy,
            examples=ctx.examples,
            system=ctx.system,
            steps=steps,
            carry_over=carry_over(results),
            window=info,
        )
        prompts.append(prompt)
        try:
            outcome = await judge._attempt(prompt, trace)
        except ContextLengthError as exc:
            if retries < _MAX_CONTEXT_RETRIES and len(spans) < total:
                return await annotate_in_windows(
                    judge,
                    trace,
                    ctx,
                    start,
                    budget=budget,
                    retries=retries + 1,
                    reason=str(exc),
                    shrink=(shrink or 1.0) * 0.5,
                )
            outcome = _Outcome(status="error", error=str(exc))
        usage = usage + outcome.usage
        completions += outcome.completions
        problems += [f"part {index}/{len(spans)}: {p}" for p in outcome.problems]
        if outcome.raw is not None:
            raws.append(f"=== part {index}/{len(spans)} ({info.first}–{info.last}) ===\n")
            raws[-1] += outcome.raw
        results.append(
            WindowResult(
                info=info, status=outcome.status, verdict=outcome.verdict, error=outcome.error
            )
        )
    kinds = mode_kinds(judge.taxonomy.codes, judge.taxonomy.name)
    final_hash: str | None = None
    cross = [c for c, k in kinds.items() if k == "cross"]
    final: Verdict | None = None
    if len(spans) > 1 and cross:
        final_prompt, outcome = await _final_pass(judge, trace, ctx, results, cross, capacity)
        if final_prompt is None:
            problems.append(
                f"no final pass over the parts for {', '.join(cross)}: no part cited a "
                "grounded step; those modes merge like the others"
            )
        else:
            final_hash = final_prompt.prompt_hash
            usage = usage + outcome.usage
            completions += outcome.completions
            problems += [f"final pass: {p}" for p in outcome.problems]
            if outcome.raw is not None:
                raws.append(
                    f"=== final pass over the parts ({', '.join(cross)}) ===\n{outcome.raw}"
                )
            if outcome.verdict is None:
                problems.append(f"final pass failed ({outcome.error}); the parts' answers decide")
            final = outcome.verdict
    merged = merge(results, judge.taxonomy.codes, kinds=kinds, final=final)
    read = [r.verdict for r in results if r.verdict is not None]
    findings, decisive = merge_window_attribution(read, merged.findings, trace)
    described = judge.describe()
    described["fewshot"] = [ex.id for ex in ctx.examples]
    described["static_prefix_hash"] = prompts[0].static_prefix_hash
    described["prompt_hash"] = _combined_hash([p.prompt_hash for p in prompts])
    described["window_prompt_hashes"] = [p.prompt_hash for p in prompts]
    described["window_spans"] = [[r.info.first, r.info.last] for r in results]
    described["final_pass_prompt_hash"] = final_hash
    described["response_ids"] = [c.response_id for c in completions]
    if completions:
        described["response_model"] = completions[-1].model
    cost, cost_note = judge._cost(usage)
    return Annotation(
        trace_id=trace.id,
        status=merged.status,
        error=merged.error,
        taxonomy=judge.taxonomy.label,
        vector=merged.vector,
        findings=findings,
        task_completed=merged.task_completed,
        summary=merged.summary,
        decisive_error=decisive,
        judge=described,
        usage=usage,
        cost_usd=cost,
        latency_s=time.perf_counter() - start,
        windows=len(spans),
        problems=ctx.notes + problems + merged.problems + cost_note,
        raw="\n\n".join(raws) or None,
    )


async def _final_pass(
    judge: _Judge,
    trace: Trace,
    ctx: _Context,
    results: Sequence[WindowResult],
    cross: Sequence[str],
    capacity: int,
) -> tuple[Prompt | None, _Outcome]:
    """One more request: the steps the parts cited, with every part's summary and findings,
    for the modes that can span parts. (None, …) when no part cited a grounded step."""
    wanted = set(cited_steps(results, cross))
    costs = judge._step_costs(trace)
    # The final note may be longer than the carry-over note the capacity was measured with.
    room = capacity - int((FINAL_NOTE_MAX_CHARS - CARRY_OVER_MAX_CHARS) / judge._chars_per_token)
    steps, used = [], 0
    for step, cost in zip(trace.steps, costs, strict=True):
        if step.id in wanted and used + cost <= room:
            steps.append(step)
            used += cost
    if not steps:
        return None, _Outcome(status="error")
    prompt = render(
        trace,
        taxonomy=judge.taxonomy,
        examples=ctx.examples,
        system=ctx.system,
        steps=steps,
        carry_over=final_pass_note(results, cross),
    )
    try:
        return prompt, await judge._attempt(prompt, trace)
    except ContextLengthError as exc:
        return prompt, _Outcome(status="error", error=str(exc))
