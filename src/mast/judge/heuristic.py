"""The ``heuristic`` judge: deterministic rules for the modes with observable signatures.

A baseline that agreement reports compare against, not a pretend LLM: it judges four modes
and answers ``None`` for the other ten. A rule answers ``False`` only when the absence of its
signature is actually checkable on the trace; otherwise it answers ``None``. Every positive
cites the steps it found (grounded by construction, and re-checked by :func:`ground`), and
every finding's rationale says what was checked. Rules are matched to taxonomy codes by mode
name, so a custom taxonomy without these modes simply gets no rule answers.

Text of a step = its content, tool name and JSON tool arguments. Similarity = Jaccard index
of the sets of word 3-grams (lower-cased ``\\w+`` words).

**1.3 Step Repetition.** Eligible steps: messages, tool calls and log entries that carry an
agent (not system text, tool results or agent-less log lines) with at least 25 words, that
are not continue-style prompts (see 1.5) and do not restate the task (that is 2.1's
signature). Each eligible step is compared with the previous 50 eligible steps of the same
agent (``agent``, else ``role``). *Present* if a pair has similarity >= 0.8 — unless both
are tool calls whose directly following tool results differ in any word (the repeat
brought new information) — or the same agent makes the identical tool call (same text, and
same result when there is one) 3 or more times. *Absent* if some agent has at least two
eligible steps to compare and nothing was found. Otherwise unknown.

**1.5 Unaware of Termination Conditions.** *Present* if (a) one of the last three steps, or a
string in the trace metadata whose key mentions termination/stop/finish, reports a turn,
round, step or iteration limit being reached (e.g. "maximum number of turns reached",
"max_turns", "stopped due to iteration limit"); or (b) right after a step that gives a final
answer (a non-empty ``\\boxed{…}``, ``TERMINATE`` ending a line, ``FINAL ANSWER: …``) or
states that the task cannot be done ("cannot be solved", "not enough information",
"unsolvable", …), the next step comes from another agent and is a continue-style prompt
(at most 40 words, opening with continue / keep going / go on / carry on / proceed).
*Absent* if neither holds and the last message or tool call carries a final-answer marker,
i.e. the run stopped by itself at its answer. Otherwise unknown.

**2.1 Conversation Reset.** The task statement is ``trace.task`` or, without one, the first
message's text; it needs at least 8 words. Its first issue is the first step containing at least
80% of the task's 3-grams. *Present* if a later step, after at least one substantive step of
other content, again contains at least 80% of the task's 3-grams and either resembles the
first issuing step (similarity >= 0.8) or consists mostly of the task (task 3-grams are at
least half of the step's) — the task re-issued as a fresh start, not quoted inside a longer
message. *Absent* if the task was found, at least three steps follow its first issue, and
no re-issue was found. Otherwise unknown.

**3.1 Premature Termination.** The expected deliverable is read from a request in the
opening of the run (leading system/log steps and the first two messages), else in
``trace.task``: an empty ``\\boxed{}`` asks for a non-empty ``\\boxed{…}``; "reply TERMINATE
when …" for ``TERMINATE`` ending a line; "The answer is (X)" for "the answer is" followed by a
one-character choice; "FINAL ANSWER: [" or "give/report … final answer" for ``FINAL ANSWER:``
followed by text that is not a ``[placeholder]``. *Present* if (a) a deliverable is expected
and nothing after the request (later in the asking step, or in any later step) contains it,
or (b) the last non-system step is an error output (a Python traceback, ``exitcode: 1``,
"execution failed", or a line opening with ``SomethingError:``). *Absent* if
a deliverable is expected and appears, and the run does not end on an error. Otherwise
unknown.

>>> from mast.traces.model import Step, Trace
>>> steps = [Step.make(0, "Solve 2+3 and put the answer in \\\\boxed{}.", agent="proxy"),
...          Step.make(1, "2+3 = \\\\boxed{5}", agent="solver")]
>>> v = heuristic_verdict(Trace(id="t", steps=steps))
>>> v.vector["3.1"], v.vector["1.5"], v.vector["2.2"], v.format
(False, False, None, 'rules')
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mast.judge.reply.grounding import ground
from mast.judge.verdict import Evidence, Finding, Verdict
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.traces.model import Step, StepKind, Trace

__all__ = ["RULE_MODES", "heuristic_verdict"]

MIN_REPEAT_WORDS = 25
REPEAT_SIMILARITY = 0.8
REPEAT_LOOKBACK = 50
TOOL_REPEATS = 3
MIN_TASK_WORDS = 8
TASK_COVERAGE = 0.8
RESET_SIMILARITY = 0.8
TASK_SHARE = 0.5
CONTINUE_MAX_WORDS = 40
QUOTE_CHARS = 80

_WORD = re.compile(r"\w+")
_CONTINUE = re.compile(
    r"^\W*(?:please\s+)?(?:continue|keep\s+(?:going|solving|working|trying)|go\s+on|carry\s+on"
    r"|proceed)\b",
    re.IGNORECASE,
)
_BOXED = re.compile(r"\\boxed\{\s*[^}\s]")
_TERMINATE = re.compile(r"\bTERMINATE\W*$", re.MULTILINE)
_FINAL_ANSWER = re.compile(r"\bfinal answer\s*:\s*(?!\[)\S", re.IGNORECASE)
_ANSWER_IS = re.compile(r"\bthe answer is\s*\(?\s*[0-9A-Za-z]\s*\)?(?!\w)", re.IGNORECASE)
_CANNOT_FINISH = re.compile(
    r"\b(?:cannot|can't|can\s+not|unable\s+to)\s+(?:be\s+)?(?:solved?|answer(?:ed)?|determined?"
    r"|proceed|continue|complete[d]?)\b"
    r"|\bunsolvable\b|\bno\s+solution\b"
    r"|\b(?:not\s+enough|insufficient|missing)\s+(?:information|data|details)\b",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"\bmax(?:imum)?[ _-]?(?:number[ _-]of[ _-])?(?:consecutive[ _-])?"
    r"(?:auto[ _-]?repl(?:y|ies)|turns?|rounds?|steps?|iterations?|messages?)\b[^.\n]{0,40}?"
    r"\b(?:reached|exceeded|hit)\b"
    r"|\b(?:reached|exceeded|hit)\s+(?:the\s+)?max(?:imum)?[ _-]?(?:number\s+of\s+)?"
    r"(?:turns?|rounds?|steps?|iterations?|auto[ _-]?repl(?:y|ies))\b"
    r"|\b(?:turn|round|step|iteration)\s+limit\s+(?:was\s+)?(?:reached|exceeded|hit)\b"
    r"|\bstopped\s+due\s+to\s+(?:the\s+)?(?:iteration|turn|step|round)\s+limit\b"
    r"|\bmax_(?:turns|rounds|steps|iterations)\b",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"Traceback \(most recent call last\)|\bexit\s?code:?\s*[1-9]|\bexecution failed\b"
    r"|^\s*[\w.]*(?:Error|Exception):",
    re.IGNORECASE | re.MULTILINE,
)
_AGENT_KINDS = {StepKind.MESSAGE, StepKind.TOOL_CALL, StepKind.LOG}


@dataclass(frozen=True)
class _Deliverable:
    asked: re.Pattern[str]
    found: re.Pattern[str]
    label: str


# Each deliverable: how a *request* for it reads (with a placeholder or an instruction verb,
# so that an answer is not mistaken for the request), and how the delivered answer reads.
_DELIVERABLES = (
    _Deliverable(re.compile(r"\\boxed\{\s*\}"), _BOXED, "a non-empty \\boxed{…}"),
    _Deliverable(
        re.compile(
            r"\b(?:reply|respond|say|output|write|end|return|send)\b[^.\n]{0,40}\bTERMINATE\b"
            r"|\bTERMINATE\b[^.\n]{0,40}\b(?:when|if|once|after)\b",
            re.IGNORECASE,
        ),
        _TERMINATE,
        "TERMINATE",
    ),
    _Deliverable(
        re.compile(r"the answer is \(\s*X\s*\)", re.IGNORECASE), _ANSWER_IS, '"The answer is (X)"'
    ),
    _Deliverable(
        re.compile(
            r"\bfinal answer\s*:\s*\["
            r"|\b(?:report|give|provide|output|state|write|end\s+with)\b[^.\n]{0,40}"
            r"\bfinal answer\b",
            re.IGNORECASE,
        ),
        _FINAL_ANSWER,
        "FINAL ANSWER: …",
    ),
)


# --------------------------------------------------------------------------- text helpers


def _step_text(step: Step) -> str:
    parts = [step.content or ""]
    if step.tool_name:
        parts.append(step.tool_name)
    if step.tool_args not in (None, "", {}, []):
        args = step.tool_args
        parts.append(args if isinstance(args, str) else json.dumps(args, sort_keys=True))
    return "\n".join(p for p in parts if p)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _grams(words: Sequence[str]) -> frozenset[str]:
    if len(words) < 3:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + 3]) for i in range(len(words) - 2))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    small, large = sorted((len(a), len(b)))
    if small / large < REPEAT_SIMILARITY:  # the bound can't reach the threshold: skip work
        return small / large
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _results_by_call(trace: Trace) -> dict[str, str]:
    """Tool call id -> text of the tool result that directly follows it."""
    out: dict[str, str] = {}
    for call, result in itertools.pairwise(trace.steps):
        if call.kind is StepKind.TOOL_CALL and result.kind is StepKind.TOOL_RESULT:
            out[call.id] = _step_text(result)
    return out


def _new_result(earlier: Step, later: Step, results: dict[str, str]) -> bool:
    # The same call answered differently brought new information: a legitimate re-check.
    if earlier.id not in results or later.id not in results:
        return False
    return _words(results[earlier.id]) != _words(results[later.id])


def _snippet(text: str, match: re.Match[str]) -> str:
    """The match with enough of its line around it to be a quote that proves something
    (grounding rejects quotes shorter than 3 words and 15 characters)."""
    found = match.group(0).strip()
    if len(found) >= 15 or len(found.split()) >= 3:
        return found
    line_start = text.rfind("\n", 0, match.start()) + 1
    line_end = text.find("\n", match.end())
    line_end = len(text) if line_end == -1 else line_end
    start = max(line_start, match.start() - 40)
    end = min(line_end, match.end() + 40)
    return text[start:end].strip()


def _quote(step: Step) -> str | None:
    text = (step.content or "").strip()
    return text[:QUOTE_CHARS].strip() or None


def _is_continue_prompt(text: str) -> bool:
    return len(_words(text)) <= CONTINUE_MAX_WORDS and bool(_CONTINUE.match(text))


def _final_marker(text: str) -> re.Match[str] | None:
    for pattern in (_BOXED, _TERMINATE, _FINAL_ANSWER):
        match = pattern.search(text)
        if match:
            return match
    return None


def _task_words(trace: Trace) -> list[str]:
    if trace.task and trace.task.strip():
        return _words(trace.task)
    first = next((s for s in trace.steps if s.kind is StepKind.MESSAGE), None)
    return _words(_step_text(first)) if first is not None else []


# --------------------------------------------------------------------------- rules


def _rule_step_repetition(trace: Trace) -> Finding:
    code = "1.3"
    task = _grams(_task_words(trace))
    by_agent: dict[str, list[tuple[Step, frozenset[str]]]] = {}
    calls: dict[tuple[str, str, str], list[Step]] = {}
    results = _results_by_call(trace)
    for step in trace.steps:
        if step.kind not in _AGENT_KINDS or (step.kind is StepKind.LOG and not step.agent):
            continue  # framework log lines without an agent are not anyone's step
        key = step.agent or step.role or "?"
        text = _step_text(step)
        if step.kind is StepKind.TOOL_CALL:
            result = " ".join(_words(results[step.id])) if step.id in results else ""
            calls.setdefault((key, " ".join(_words(text)), result), []).append(step)
        words = _words(text)
        if len(words) < MIN_REPEAT_WORDS or _is_continue_prompt(text):
            continue
        grams = _grams(words)
        if task and len(task & grams) >= TASK_COVERAGE * len(task):
            continue  # restating the task is 2.1's signature
        by_agent.setdefault(key, []).append((step, grams))
    pairs: list[tuple[Step, Step, float]] = []
    for items in by_agent.values():
        for j, (later, later_grams) in enumerate(items):
            for earlier, earlier_grams in items[max(0, j - REPEAT_LOOKBACK) : j]:
                score = _jaccard(earlier_grams, later_grams)
                if score >= REPEAT_SIMILARITY and not _new_result(earlier, later, results):
                    pairs.append((earlier, later, score))
                    break  # one match per repeated step is enough
    repeated_calls = [steps for steps in calls.values() if len(steps) >= TOOL_REPEATS]
    checked = (
        f"compared each message of at least {MIN_REPEAT_WORDS} words with the same agent's "
        f"earlier ones (word 3-gram Jaccard >= {REPEAT_SIMILARITY}) and looked for identical "
        f"tool calls made {TOOL_REPEATS}+ times"
    )
    if pairs or repeated_calls:
        cited: list[Step] = []
        notes = []
        for earlier, later, score in pairs[:5]:
            cited += [earlier, later]
            notes.append(f"[{later.id}] repeats [{earlier.id}] (similarity {score:.2f})")
        for steps in repeated_calls[:3]:
            cited += steps[:TOOL_REPEATS]
            notes.append(
                f"the same {steps[0].tool_name} call is made {len(steps)} times "
                f"({', '.join(f'[{s.id}]' for s in steps[:TOOL_REPEATS])}…)"
            )
        return Finding(
            code=code,
            present=True,
            evidence=_evidence(cited),
            rationale=f"Rule: {checked}. Found: {'; '.join(notes)}.",
        )
    comparable = any(len(items) >= 2 for items in by_agent.values())
    if comparable:
        return Finding(code=code, present=False, rationale=f"Rule: {checked}. No repeat was found.")
    return Finding(
        code=code,
        present=None,
        rationale=f"Rule: {checked}. No agent has two eligible steps to compare, so it "
        "cannot tell.",
    )


def _rule_termination(trace: Trace) -> Finding:
    code = "1.5"
    steps = trace.steps
    checked = (
        "looked for a turn/round/iteration-limit message at the end of the run, and for a "
        "continue-style prompt right after a final answer or a statement that the task cannot "
        "be done"
    )
    for step in steps[-3:]:
        match = _LIMIT.search(_step_text(step))
        if match:
            return Finding(
                code=code,
                present=True,
                evidence=[Evidence(step_id=step.id, quote=_snippet(_step_text(step), match))],
                rationale=f"Rule: {checked}. [{step.id}] reports a limit: {match.group(0)!r}.",
            )
    for key, value in trace.metadata.items():
        if (
            isinstance(value, str)
            and len(value) < 500
            and re.search(r"terminat|stop|finish|end_reason", key, re.IGNORECASE)
            and (_LIMIT.search(value) or re.search(r"\bmax|limit\b", value, re.IGNORECASE))
            and steps
        ):
            final = steps[-1]
            return Finding(
                code=code,
                present=True,
                evidence=[Evidence(step_id=final.id)],
                rationale=f"Rule: {checked}. The trace metadata {key}={value!r} says the run "
                f"was stopped by a limit after [{final.id}].",
            )
    for before, after in itertools.pairwise(steps):
        text = _step_text(before)
        stop = _final_marker(text) or _CANNOT_FINISH.search(text)
        if not stop or before.index == 0:
            continue
        if (after.agent or after.role) == (before.agent or before.role):
            continue
        if _is_continue_prompt(_step_text(after)):
            return Finding(
                code=code,
                present=True,
                evidence=[
                    Evidence(step_id=before.id, quote=_snippet(text, stop)),
                    Evidence(step_id=after.id, quote=_quote(after)),
                ],
                rationale=f"Rule: {checked}. [{before.id}] says {stop.group(0)!r}, yet "
                f"[{after.id}] asks to continue.",
            )
    last = _last_agent_step(trace)
    if last is not None and last.index > 0:
        marker = _final_marker(_step_text(last))
        if marker:
            return Finding(
                code=code,
                present=False,
                rationale=f"Rule: {checked}. None found, and the run stops at its final answer "
                f"in [{last.id}] ({marker.group(0)!r}).",
            )
    return Finding(
        code=code,
        present=None,
        rationale=f"Rule: {checked}. None found, but the run does not end at a recognisable "
        "final answer, so it cannot tell.",
    )


def _rule_reset(trace: Trace) -> Finding:
    code = "2.1"
    words = _task_words(trace)
    checked = "looked for the task statement being issued again later as a fresh start"
    if len(words) < MIN_TASK_WORDS:
        return Finding(
            code=code,
            present=None,
            rationale=f"Rule: {checked}. The task statement is missing or shorter than "
            f"{MIN_TASK_WORDS} words, so it cannot tell.",
        )
    task = _grams(words)
    grams = [_grams(_words(_step_text(s))) for s in trace.steps]
    covers = [len(task & g) / len(task) for g in grams]
    first = next((i for i, c in enumerate(covers) if c >= TASK_COVERAGE), None)
    if first is None:
        return Finding(
            code=code,
            present=None,
            rationale=f"Rule: {checked}. The task text does not appear in any step, so it "
            "cannot tell.",
        )
    worked = False
    for i in range(first + 1, len(trace.steps)):
        step = trace.steps[i]
        if covers[i] < TASK_COVERAGE:
            worked = worked or len(grams[i]) >= 5
            continue
        fresh = _jaccard(grams[first], grams[i]) >= RESET_SIMILARITY or (
            len(task & grams[i]) >= TASK_SHARE * len(grams[i])
        )
        if worked and fresh:
            issued = trace.steps[first]
            return Finding(
                code=code,
                present=True,
                evidence=[
                    Evidence(step_id=issued.id),
                    Evidence(step_id=step.id, quote=_quote(step)),
                ],
                rationale=f"Rule: {checked}. The task first issued in [{issued.id}] is issued "
                f"again in [{step.id}] after work had started.",
            )
    if len(trace.steps) - first - 1 >= 3:
        return Finding(
            code=code,
            present=False,
            rationale=f"Rule: {checked}. The task is issued in [{trace.steps[first].id}] and "
            "not re-issued afterwards.",
        )
    return Finding(
        code=code,
        present=None,
        rationale=f"Rule: {checked}. Too few steps follow the task to tell.",
    )


def _rule_premature(trace: Trace) -> Finding:
    code = "3.1"
    checked = (
        "checked that the deliverable format the task asks for appears, and that the run "
        "does not end on an error"
    )
    last = _last_agent_step(trace, include_results=True)
    if last is not None:
        error = _ERROR.search(_step_text(last))
        if error:
            return Finding(
                code=code,
                present=True,
                evidence=[Evidence(step_id=last.id, quote=_snippet(_step_text(last), error))],
                rationale=f"Rule: {checked}. The run ends at [{last.id}] on an error "
                f"({error.group(0).strip()!r}) that nothing after it resolves.",
            )
    expected = _expected_deliverable(trace)
    if expected is None:
        return Finding(
            code=code,
            present=None,
            rationale=f"Rule: {checked}. The task names no recognisable answer format, so it "
            "cannot tell.",
        )
    deliverable, asked_at, asked, asked_end = expected
    # The answer may follow the request in the same step (an unsegmented log is one step),
    # but the request itself ("The answer is (X)") must not count as the answer.
    candidates = [(s, 0) for s in trace.steps[asked_at + 1 :]] if asked_at >= 0 else []
    if asked_at >= 0:
        candidates.insert(0, (trace.steps[asked_at], asked_end))
    else:
        candidates = [(s, 0) for s in trace.steps]
    for step, offset in candidates:
        found = deliverable.found.search(_step_text(step), offset)
        if found:
            return Finding(
                code=code,
                present=False,
                rationale=f"Rule: {checked}. The task asks for {deliverable.label} and "
                f"[{step.id}] gives it ({found.group(0)!r}).",
            )
    if not trace.steps:
        return Finding(code=code, present=None, rationale=f"Rule: {checked}. No steps.")
    end = trace.steps[-1]
    cited = [trace.steps[asked_at]] if asked_at >= 0 else []
    # The request is quoted (also when it is the last step: a citation alone proves nothing).
    evidence = [Evidence(step_id=s.id, quote=asked) for s in cited]
    if not cited or cited[-1] is not end:
        evidence.append(Evidence(step_id=end.id))
    return Finding(
        code=code,
        present=True,
        evidence=evidence,
        rationale=f"Rule: {checked}. The task asks for {deliverable.label}, but no step after "
        f"the request contains one; the run ends at [{end.id}].",
    )


def _opening(trace: Trace) -> list[Step]:
    """Leading system/log steps plus the first two messages: where instructions live."""
    out: list[Step] = []
    messages = 0
    for step in trace.steps:
        out.append(step)
        if step.kind in (StepKind.MESSAGE, StepKind.TOOL_CALL):
            messages += 1
            if messages == 2:
                break
    return out


def _expected_deliverable(trace: Trace) -> tuple[_Deliverable, int, str, int] | None:
    """The expected answer format, the position of the first step asking for it (-1 when
    only the task field does), the asking text and where it ends in that step."""
    opening = _opening(trace)
    for deliverable in _DELIVERABLES:
        for position, step in enumerate(opening):
            asked = deliverable.asked.search(_step_text(step))
            if asked:
                return deliverable, position, _snippet(_step_text(step), asked), asked.end()
        asked = deliverable.asked.search(trace.task or "")
        if asked:
            return deliverable, -1, asked.group(0), 0
    return None


def _last_agent_step(trace: Trace, *, include_results: bool = False) -> Step | None:
    kinds = _AGENT_KINDS | ({StepKind.TOOL_RESULT} if include_results else set())
    for step in reversed(trace.steps):
        if step.kind in kinds and _step_text(step).strip():
            return step
    return None


def _evidence(steps: Sequence[Step]) -> list[Evidence]:
    seen: dict[str, Step] = {}
    for step in steps:
        seen.setdefault(step.id, step)
    ordered = sorted(seen.values(), key=lambda s: s.index)
    return [Evidence(step_id=s.id, quote=_quote(s)) for s in ordered]


RULE_MODES: dict[str, Callable[[Trace], Finding]] = {
    "Step Repetition": _rule_step_repetition,
    "Unaware of Termination Conditions": _rule_termination,
    "Conversation Reset": _rule_reset,
    "Premature Termination": _rule_premature,
}
"""The modes the rules judge, by final MAST name (matched to codes through the taxonomy)."""


def heuristic_verdict(trace: Trace, taxonomy: Taxonomy | None = None) -> Verdict:
    """Apply the rules of the module docstring to ``trace``; ``None`` for the other modes."""
    tax = taxonomy or load_taxonomy()
    findings: list[Finding] = []
    task_completed: bool | None = None
    for name, rule in RULE_MODES.items():
        code = tax.code_for_name(name)
        if code is None:
            continue
        finding = rule(trace).model_copy(update={"code": code})
        findings.append(finding)
        if name == "Premature Termination" and finding.present is True:
            task_completed = False
    judged = ", ".join(
        f"{f.code} {'yes' if f.present else 'no' if f.present is False else 'unknown'}"
        for f in findings
    )
    summary = (
        f"Rule-based baseline: {judged or 'no rule applies to this taxonomy'}; the other "
        f"{len(tax) - len(findings)} modes are not judged by rules."
    )
    verdict = Verdict.from_findings(
        findings, codes=tax.codes, format="rules", task_completed=task_completed, summary=summary
    )
    verdict = ground(verdict, trace)
    return verdict.model_copy(update={"raw": json.dumps(verdict.to_schema_dict(), indent=2)})
