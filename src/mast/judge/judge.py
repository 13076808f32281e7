"""The judge: one trace in, one :class:`~mast.judge.annotation.Annotation` out.

``render → call → parse → (repair) → ground``. The answer text is always read with
:func:`mast.judge.verdict.parse_response`, even when JSON output was requested, because servers
may ignore the request. An unreadable answer gets ``repair_attempts`` short follow-ups that
ask for the JSON only; if it stays unreadable the annotation has status ``"parse_error"``
and every mode ``None``. A failed call gives status ``"error"`` with the reason, except an
:class:`~mast.errors.AuthError`, which is raised (a bulk run must stop on it).

Long traces are annotated in windows of whole steps when the prompt would not fit the
context budget (see :mod:`mast.judge.windows`); tokens are estimated at
:data:`~mast.judge.prompt.render.CHARS_PER_TOKEN` characters per token. The estimate is not
refined from answers: windows that depended on which answer came first would make the
same trace's prompts depend on run order, and a rerun would miss the cache and pay again;
an estimate that proves too low costs one refused call, then smaller windows.

>>> judge = Judge("heuristic")
>>> from mast.traces.model import Step, Trace
>>> ann = judge.annotate(Trace(id="t", steps=[Step.make(0, "hello", agent="a")]))
>>> ann.status, ann.trace_id, ann.cost_usd
('ok', 't', 0.0)
"""

from __future__ import annotations

import contextvars
import copy
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mast._version import __version__
from mast.errors import AuthError, ContextLengthError, ProviderError, VerdictParseError
from mast.judge.annotation import Annotation
from mast.judge.budget import (
    _DEFAULT_OUTPUT,
    _SAFETY,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_MAX_INPUT_TOKENS,
    check_options,
    context_window,
    default_max_tokens,
)
from mast.judge.helpers import judge_taxonomy
from mast.judge.helpers import run_sync as _run_sync
from mast.judge.offload.loop import off_loop
from mast.judge.prompt.answer_format import AnswerMode, answer_schema, answer_settings, check_answer
from mast.judge.prompt.render import render, render_repair, render_system, step_header, step_text
from mast.judge.prompt.shots import FewShot, Shot, Shots
from mast.judge.prompt.types import CHARS_PER_TOKEN, Prompt
from mast.judge.providers import CallConfig, Completion, Provider, StructuredMode, get_provider
from mast.judge.providers import parse_model as _parse_model
from mast.judge.providers.pricing import PricesLike, PriceTable, price_table
from mast.judge.providers.schema_choice import SchemaChoice
from mast.judge.providers.usage import Usage
from mast.judge.records import _Context, _Outcome, answered, failed, heuristic_record, price
from mast.judge.reply.attribution_grounding import ground_attribution
from mast.judge.reply.echo import Planted, folded_fields
from mast.judge.reply.grounding import EvidencePolicy, ground
from mast.judge.reply.parse import find_planted, parse_response
from mast.judge.verdict import Verdict
from mast.judge.windowed import annotate_in_windows
from mast.privacy.redact import Redactor
from mast.privacy.scrub import Scrubber, safe_url, url_credentials
from mast.taxonomy import Taxonomy
from mast.traces.model import Trace

__all__ = ["DEFAULT_CONTEXT_TOKENS", "CallHook", "Judge", "Send", "context_window"]

Send = Callable[[Prompt], Awaitable[Completion]]
"""Sends one prompt to the judge's provider and returns the answer."""

CallHook = Callable[[Prompt, Send], Awaitable[Completion]]
"""Middleware around every provider call of one :meth:`Judge.aannotate`: it gets the prompt
and the function that really sends it, and may answer from a cache, wait for a rate limit,
retry, time out or refuse (the bulk runner does all of that, once, for every provider)."""

# Set for the duration of one aannotate(); a ContextVar keeps concurrent traces apart.
_CALL_HOOK: contextvars.ContextVar[CallHook | None] = contextvars.ContextVar(
    "mast_call_hook", default=None
)


class Judge:
    """Annotate traces with a model named ``"provider/model"``, or ``"heuristic"``.

    Parameters
    ----------
    model:
        ``"openai/gpt-4.1"``, ``"anthropic/claude-sonnet-5-5"``, ``"openai/<name>"`` with
        ``base_url`` for any OpenAI-compatible server, or ``"heuristic"`` (offline rules).
    fewshot:
        Worked examples shown before the trace (see :mod:`mast.judge.prompt.shots`): ``None``
        (default) for enough excerpts of the bundled pool to give every mode a positive and
        a near miss, a number of excerpts (0 = zero-shot), a path of example files, or a
        sequence of :class:`~mast.judge.prompt.fewshot.FewShotExample` /
        :class:`~mast.judge.prompt.excerpts.Excerpt` to use as given.
    fewshot_exclude:
        Datasets whose bundled excerpts are never shown (``["agentrx"]`` when AgentRx is the
        evaluation set); see ``mast taxonomy --examples`` for each excerpt's dataset.
    temperature, max_tokens:
        Sampling settings. Reasoning models and Anthropic's current API take no temperature;
        the annotation records the temperature actually sent (``None`` when none was).
    base_url, api_key:
        Server and key; the key defaults to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` and is
        never written anywhere.
    taxonomy:
        A :class:`~mast.taxonomy.Taxonomy`, or what :func:`~mast.load_taxonomy` accepts
        (a bundled name such as ``"sre"`` or a YAML path); default: bundled MAST.
    context_tokens:
        Context budget in tokens; longer prompts are annotated in windows. Default: from a
        small per-model table, else 128k.
    repair_attempts:
        Follow-up requests for an unreadable answer (0 = none).
    drop_ungrounded:
        Move evidence that fails grounding out of ``Finding.evidence`` (into ``dropped``).
    ungrounded:
        A positive answer without grounded evidence is kept (``"keep"``), kept and noted
        (``"flag"``, default) or made ``None`` (``"unknown"``); see
        :mod:`~mast.judge.reply.grounding`.
    max_input_tokens:
        Most prompt tokens one request carries, even if the model takes more (else windows).
    samples:
        Independent judgments per trace in :func:`mast.annotate_many` (temperature > 0).
    prices:
        Price overrides: a mapping, a YAML path or a
        :class:`~mast.judge.providers.pricing.PriceTable`.
    structured_output:
        How the JSON schema is requested: ``"auto"``, ``"json_schema"``, ``"tool"``
        (Anthropic) or ``"none"`` (only described in the prompt, for servers that reject
        schema requests).
    timeout:
        Seconds per call (reasoning models can take minutes on a long trace).
    redact:
        Replace secrets in the trace (API keys, tokens, passwords, private keys; see
        :mod:`mast.privacy.redact`) with ``[REDACTED:<kind>]`` before it is rendered: ``True``
        (default), ``False``, or a :class:`~mast.privacy.redact.Redactor` with your own patterns.
        The judge's own API key is removed from traces even with ``redact=False``.
    answer:
        ``"full"`` (every mode with evidence and rationale) or ``"compact"`` (absent modes are
        ``false``: far fewer output tokens; OpenAI and Azure models that do not reason are
        then asked for at most 512 + 256 per mode output tokens, 4,096 for MAST, unless
        ``max_tokens`` is given); see :mod:`mast.judge.prompt.answer_format`.
    verification:
        3.2/3.3 convention the judge is told: ``"paper"`` (MAST default) or ``"official"``
        (3.2 Weak, 3.3 No or Incorrect Verification; see :func:`~mast.load_taxonomy`).
        Recorded in every annotation (``judge["verification"]``) and in the cache key.
    """

    def __init__(
        self,
        model: str,
        *,
        fewshot: FewShot = None,
        fewshot_exclude: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        context_tokens: int | None = None,
        repair_attempts: int = 1,
        drop_ungrounded: bool = False,
        ungrounded: EvidencePolicy = "flag",
        max_input_tokens: int | None = DEFAULT_MAX_INPUT_TOKENS,
        samples: int = 1,
        prices: PricesLike = None,
        structured_output: StructuredMode = "auto",
        timeout: float | None = 300.0,
        redact: bool | Redactor = True,
        answer: AnswerMode = "full",
        verification: str | None = None,
    ) -> None:
        if repair_attempts < 0:
            raise ValueError(f"repair_attempts must be >= 0, got {repair_attempts}")
        if context_tokens is not None and context_tokens < 1024:
            raise ValueError(f"context_tokens must be at least 1024, got {context_tokens}")
        check_options(ungrounded=ungrounded, max_input_tokens=max_input_tokens, samples=samples)
        self.ungrounded, self.max_input_tokens = ungrounded, max_input_tokens
        self.samples, self.sample, self.answer = samples, 0, check_answer(answer)
        self.model = model
        self.taxonomy = judge_taxonomy(taxonomy, verification, heuristic=model == "heuristic")
        self.temperature = temperature
        self.repair_attempts = repair_attempts
        self.drop_ungrounded = drop_ungrounded
        self.base_url = base_url
        self._prices = price_table(prices)
        self._redact_setting = (
            "custom" if isinstance(redact, Redactor) else "default" if redact else "off"
        )
        self._redactor = (
            redact if isinstance(redact, Redactor) else Redactor() if redact else Redactor.off()
        )
        self._provider: Provider | None
        self.scrubber = Scrubber(())  # removes the credentials from what a server sends back
        self._notes: list[str] = []
        if model == "heuristic":
            self.provider_name, self.model_name = "heuristic", "heuristic"
            self._provider = None
            self.examples: list[Shot] = []
            self._shots = Shots([], [], count=0)
            self.max_tokens = max_tokens
            self.context_tokens = context_tokens or DEFAULT_CONTEXT_TOKENS
            self._config: CallConfig | None = None
            return
        self.provider_name, self.model_name = _parse_model(model)
        self._provider = get_provider(self.provider_name, api_key=api_key, base_url=base_url)
        self.scrubber = Scrubber([*self._provider.credentials(), *url_credentials(base_url)])
        if self.scrubber:
            # A trace that dumps the environment may hold the very key this judge uses.
            self._redactor = self._redactor.with_literals(self.scrubber.literals)
        self._shots = Shots.resolve(fewshot, self.taxonomy, exclude=fewshot_exclude)
        self._notes += self._shots.notes
        self.examples = list(self._shots.chosen)
        from mast.judge.providers.openai import is_reasoning_model

        reasoning = self.provider_name == "openai" and is_reasoning_model(self.model_name)
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens or context_window(model)
        self._config = CallConfig(
            model=self.model_name,
            temperature=temperature,
            max_tokens=max_tokens
            or default_max_tokens(
                self.provider_name, reasoning=reasoning, answer=answer, modes=len(self.taxonomy)
            ),
            json_schema=answer_schema(self.taxonomy, answer),  # inline if refused: SchemaChoice
            timeout=timeout,
            structured=structured_output,
        )
        self._output_reserve = self._config.max_tokens or _DEFAULT_OUTPUT
        self._schemas = SchemaChoice(self._provider)  # shared with the for_sample copies
        self._systems: dict[tuple[str, ...], str] = {}
        self._chars_per_token = CHARS_PER_TOKEN  # fixed: see the module docstring

    # ------------------------------------------------------------------ configuration
    def _context(self, trace: Trace) -> _Context:
        """The examples and static prompt for ``trace``, leaving out excerpts of it."""
        shots = self._shots.for_trace(trace)
        notes = self._notes + shots.notes[len(self._shots.notes) :]
        key = tuple(shots.ids)
        if key not in self._systems:
            self._systems[key] = render_system(
                taxonomy=self.taxonomy, examples=shots.chosen, answer=self.answer
            )
        return _Context(examples=shots.chosen, system=self._systems[key], notes=notes)

    def render(self, trace: Trace) -> Prompt:
        """The prompt this judge sends for ``trace``: redacted, examples filtered, compact.

        It is exactly what :meth:`annotate` sends when the prompt fits the context budget;
        a longer trace is sent in windows of whole steps, whose later prompts carry notes
        from the answers to earlier ones.

        >>> from mast.traces.model import Step, Trace
        >>> judge = Judge("openai/gpt-4.1", api_key="sk-test", fewshot=0)
        >>> prompt = judge.render(Trace(id="t", steps=[Step.make(0, "hi", agent="a")]))
        >>> "[s1] agent=a" in prompt.user
        True
        """
        redacted, _ = self._redactor.redact_trace(trace)
        ctx = self._context(redacted)
        return render(redacted, taxonomy=self.taxonomy, examples=ctx.examples, system=ctx.system)

    def __repr__(self) -> str:
        extra = f", base_url={safe_url(self.base_url)!r}" if self.base_url else ""
        return (
            f"Judge({self.model!r}, fewshot={len(self.examples)}, "
            f"temperature={self.temperature}{extra})"
        )

    @property
    def provider(self) -> Provider | None:
        """The provider object (``None`` for the heuristic judge)."""
        return self._provider

    def describe(self) -> dict[str, Any]:
        """The judge's settings that can change an answer (recorded in every annotation)."""
        info: dict[str, Any] = {
            "provider": self.provider_name,
            "model": self.model_name,
            "taxonomy": self.taxonomy.label,
            "mast_version": __version__,
        }
        if self.taxonomy.verification is not None:
            info["verification"] = self.taxonomy.verification
        if self._provider is None or self._config is None:
            return info
        structured = self._config.structured
        if self.provider_name == "anthropic":
            from mast.judge.providers.anthropic import AnthropicProvider

            assert isinstance(self._provider, AnthropicProvider)
            structured = self._provider.structured_mode(self._config)
        info.update(
            temperature=self._provider.effective_temperature(self._config),
            max_tokens=self._config.max_tokens,
            fewshot=[ex.id for ex in self.examples],
            structured_output=structured,
            repair_attempts=self.repair_attempts,
            context_tokens=self.context_tokens,
            redact=self._redact_setting,
            **answer_settings(self.answer),
        )
        if self.base_url is not None:
            info["base_url"] = safe_url(self.base_url)
        # The server that answers, however it was chosen (base_url=, the SDK's variable,
        # its default): a stub and the real API never share records or cached answers.
        info["endpoint"] = self._provider.endpoint
        # Only what changes answers, and only when it does: older records still resume.
        if self.ungrounded == "unknown":
            info["ungrounded"] = "unknown"
        if self.max_input_tokens is not None and self.max_input_tokens < self.context_tokens:
            info["max_input_tokens"] = self.max_input_tokens
        if self.sample:
            info["sample"] = self.sample
        return info

    def for_sample(self, index: int) -> Judge:
        """This judge for independent judgment number ``index`` (0 = the judge itself)."""
        other = copy.copy(self)
        other.sample = index
        return other

    # ------------------------------------------------------------------ public API
    def annotate(self, trace: Trace) -> Annotation:
        """Annotate one trace (blocking). See :meth:`aannotate`."""

        async def once() -> Annotation:
            try:
                return await self.aannotate(trace)
            finally:
                # This loop ends with the call: close its client instead of leaking it.
                if self._provider is not None:
                    await self._provider.aclose()

        return _run_sync(once)

    async def aclose(self) -> None:
        """Close the provider client of the running event loop."""
        if self._provider is not None:
            await self._provider.aclose()

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def call_config(self) -> CallConfig | None:
        """What every call asks for (model, sampling, output schema); None for heuristic."""
        return self._config

    @property
    def prices(self) -> PriceTable:
        """The price table costs are computed from."""
        return self._prices

    @property
    def output_reserve(self) -> int:
        """Output tokens a call may use (``max_tokens``, or the reserve assumed without one)."""
        return self._output_reserve if self._provider is not None else 0

    async def aannotate(self, trace: Trace, *, call_hook: CallHook | None = None) -> Annotation:
        """Annotate one trace.

        Provider failures become an annotation with status ``"error"``; only an
        :class:`~mast.errors.AuthError` (and a missing SDK) is raised, since retrying
        cannot help with those. ``call_hook`` wraps every provider call made for this trace
        (see :data:`CallHook`); exceptions it raises that are not a
        :class:`~mast.errors.ProviderError` propagate.
        """
        token = _CALL_HOOK.set(call_hook)
        try:
            # Secrets go before anything is rendered: the prompt, the answer's quotes and
            # the grounding of its evidence all refer to the same redacted text.
            size = trace.text_length  # long traces are prepared off the event loop
            redacted, redactions = await off_loop(size, self._redactor.redact_trace, trace)
            annotation = await self._aannotate(redacted)
            if redactions:
                annotation.redactions = redactions
            return annotation
        finally:
            _CALL_HOOK.reset(token)

    async def _aannotate(self, trace: Trace) -> Annotation:
        start = time.perf_counter()
        if self._provider is None:
            return self._heuristic(trace, start)
        ctx, prompt = await off_loop(trace.text_length, self._prepare, trace)
        budget = self._prompt_budget()
        if prompt.estimated_tokens(chars_per_token=self._chars_per_token) <= budget:
            try:
                outcome = await self._attempt(prompt, trace)
            except ContextLengthError as exc:
                # Our estimate was too optimistic: split the steps at least in two.
                return await self._windowed(
                    trace, ctx, start, budget=budget, retries=1, reason=str(exc), shrink=0.5
                )
            return self._annotation(trace, ctx, prompt, outcome, start)
        return await self._windowed(trace, ctx, start, budget=budget, retries=0, reason=None)

    # ------------------------------------------------------------------ internals
    def _prepare(self, trace: Trace) -> tuple[_Context, Prompt]:
        ctx = self._context(trace)
        return ctx, render(trace, taxonomy=self.taxonomy, examples=ctx.examples, system=ctx.system)

    def _prompt_budget(self) -> int:
        limit = self.context_tokens - self._output_reserve
        return int(min(limit, self.max_input_tokens or limit) * _SAFETY)

    async def _send(self, prompt: Prompt) -> Completion:
        assert self._provider is not None and self._config is not None
        # Scrubbed before a call hook can cache it, and again in _call (older caches, batch).
        return self.scrubber.completion(await self._schemas.complete(prompt, self._config))

    async def _call(self, prompt: Prompt) -> Completion:
        hook = _CALL_HOOK.get()
        completion = await (self._send(prompt) if hook is None else hook(prompt, self._send))
        return self.scrubber.completion(completion)

    async def _attempt(self, prompt: Prompt, trace: Trace) -> _Outcome:
        """Call, parse, repair (bounded), ground. ContextLengthError and AuthError propagate."""
        outcome = _Outcome(status="error")
        try:
            completion = await self._call(prompt)
        except (AuthError, ContextLengthError):
            raise
        except ProviderError as exc:
            # Servers and proxies echo parts of a request in errors: scrub before recording.
            outcome.error = self._redactor.redact(str(exc)).text
            return outcome
        outcome.completions.append(completion)
        outcome.usage = outcome.usage + completion.usage
        raws = [completion.text]
        size = prompt.text_length
        planted = await off_loop(
            size, find_planted, [prompt.user, *folded_fields(trace)], self.taxonomy
        )
        verdict, problem = await off_loop(size, self._parse, completion, prompt, planted)
        repairs = 0
        while verdict is None and repairs < self.repair_attempts:
            repairs += 1
            outcome.problems.append(f"answer unreadable ({problem}); repair request {repairs}")
            turns: list[tuple[Any, str]] = []
            if completion.text.strip():
                turns.append(("assistant", completion.text))
            turns.append(("user", render_repair(problem, taxonomy=self.taxonomy)))
            try:
                completion = await self._call(prompt.with_turns(*turns))
            except (AuthError, ContextLengthError):
                raise
            except ProviderError as exc:
                failed = self._redactor.redact(str(exc)).text
                outcome.error = (
                    f"answer unreadable ({problem}); the repair request failed: {failed}"
                )
                outcome.raw = "\n\n".join(raws)
                return outcome
            outcome.completions.append(completion)
            outcome.usage = outcome.usage + completion.usage
            raws.append(completion.text)
            verdict, problem = await off_loop(size, self._parse, completion, prompt, planted)
        outcome.raw = raws[-1] if verdict is not None else "\n\n--- repair ---\n\n".join(raws)
        if verdict is None:
            outcome.status = "parse_error"
            outcome.error = f"answer unreadable after {repairs} repair request(s): {problem}"
            return outcome
        outcome.status = "ok"
        outcome.verdict = await off_loop(size, self._ground, verdict, trace, prompt)
        return outcome

    def _ground(self, verdict: Verdict, trace: Trace, prompt: Prompt | None = None) -> Verdict:
        shown = None
        # A prompt of the whole trace: its compact rendering is the one grounding reads.
        if (
            prompt is not None
            and prompt.shown_steps
            and prompt.step_ids == tuple(s.id for s in trace.steps)
        ):
            shown = dict(zip(prompt.step_ids, prompt.shown_steps, strict=True))
        grounded = ground(
            verdict,
            trace,
            drop_ungrounded=self.drop_ungrounded,
            policy=self.ungrounded,
            shown=shown,
        )
        return ground_attribution(grounded, trace, policy=self.ungrounded)

    def _parse(
        self, completion: Completion, prompt: Prompt, planted: Planted
    ) -> tuple[Verdict | None, str]:
        try:
            # The boundary, the prompt and the verdicts planted in the trace let the parser
            # ignore trace text the model echoed: a fake verdict is never the answer.
            verdict = parse_response(
                completion.text,
                taxonomy=self.taxonomy,
                boundary=prompt.boundary,
                prompt_text=prompt.user,
                planted=planted,
            )
            return verdict, ""
        except VerdictParseError as exc:
            problem = str(exc).split(". Expected")[0]
            if completion.finish_reason in ("length", "max_tokens"):
                problem += f"; the answer was cut off at max_tokens={self._config_max_tokens()}"
            return None, problem

    def _config_max_tokens(self) -> int | None:
        return self._config.max_tokens if self._config is not None else None

    def _step_costs(self, trace: Trace) -> list[int]:
        # Header + body + separators, as the template lays each step out.
        return [
            math.ceil((len(step_header(s)) + len(step_text(s)) + 3) / self._chars_per_token)
            for s in trace.steps
        ]

    async def _windowed(
        self,
        trace: Trace,
        ctx: _Context,
        start: float,
        *,
        budget: int,
        retries: int,
        reason: str | None,
        shrink: float | None = None,
    ) -> Annotation:
        return await annotate_in_windows(
            self, trace, ctx, start, budget=budget, retries=retries, reason=reason, shrink=shrink
        )

    def _cost(self, usage: Usage) -> tuple[float | None, list[str]]:
        return price(self._prices, f"{self.provider_name}/{self.model_name}", usage)

    def _annotation(
        self, trace: Trace, ctx: _Context, prompt: Prompt, outcome: _Outcome, start: float
    ) -> Annotation:
        cost = self._cost(outcome.usage)
        return answered(trace, self.taxonomy, self.describe(), ctx, prompt, outcome, start, cost)

    def _failed(
        self, trace: Trace, ctx: _Context, start: float, error: str, problems: list[str]
    ) -> Annotation:
        return failed(trace, self.taxonomy, self.describe(), ctx, start, error, problems)

    def _heuristic(self, trace: Trace, start: float) -> Annotation:
        from mast.judge.heuristic import heuristic_verdict

        verdict = self._ground(heuristic_verdict(trace, self.taxonomy), trace)
        return heuristic_record(trace, self.taxonomy, self.describe(), verdict, start)
