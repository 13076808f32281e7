"""A stand-in for the official annotator (``agentdash``), for when it cannot be installed.

Written from the package's documented behaviour, in our own words (not its code):

* one trace per call, one blocking request each (``produce_taxonomy(trace)``), no retries
  of its own beyond the OpenAI client's defaults, temperature 1.0, a single user message;
* the prompt layout: instructions and an answer template first, then **the trace**, then
  the failure-mode definitions, then the few-shot examples, so no two prompts share a
  prefix longer than the instructions;
* traces longer than about 1 MB (minus the examples) are cut;
* the answer is read with loose regular expressions: for each code, the first "yes" or
  "no" (as a substring, case-insensitive) after the first occurrence of the code (whose
  dots match any character) after the first "C." in the answer; failing that, looser
  searches; a code that is never found counts as 0 ("no"), like an answer of "no".

It runs with only the standard library and the ``openai`` client, like the original, and
takes ``OPENAI_BASE_URL`` from the environment the same way. The benchmark labels its
numbers "baseline (re-implementation)"; when ``agentdash`` is installed, the benchmark
also checks that both read the same cells on the parser corpus.
"""

from __future__ import annotations

import re
from typing import Any

CODES = ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
CODES += ["3.1", "3.2", "3.3"]
# The names the official answer template prints (its 3.2/3.3 names are the swapped ones).
NAMES = {
    "1.1": "Disobey Task Specification",
    "1.2": "Disobey Role Specification",
    "1.3": "Step Repetition",
    "1.4": "Loss of Conversation History",
    "1.5": "Unaware of Termination Conditions",
    "2.1": "Conversation Reset",
    "2.2": "Fail to Ask for Clarification",
    "2.3": "Task Derailment",
    "2.4": "Information Withholding",
    "2.5": "Ignored Other Agent's Input",
    "2.6": "Action-Reasoning Mismatch",
    "3.1": "Premature Termination",
    "3.2": "No or Incorrect Verification",
    "3.3": "Weak Verification",
}
MAX_CHARS = 1_048_570
# The official example answer lists two draft codes (1.6, 2.7) among the final ones.
_SAMPLE_CODES = ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "2.1", "2.2", "2.3", "2.4", "2.5"]
_SAMPLE_CODES += ["2.6", "2.7", "3.1", "3.2", "3.3"]

_INTRO = (
    "You will receive the trace of a multi-agent system run. Analyse how the system behaved "
    "and tell me which failure modes and inefficiencies, from the list below, it shows. "
    "For each one answer yes or no. Give a short one-sentence summary of the problems you "
    "found, and only mark a failure mode when you can point to an example of it in the trace "
    "(mention it in the summary). Say as well whether the task was completed successfully, "
    "yes or no. After the trace come the definitions of the failure modes, and after the "
    "definitions some examples of them, to help you recognise them. Put your answer between "
    "two @@ marks, exactly in the layout below (the @@ marks themselves are not part of it)."
    "*** start of the answer layout *** @@"
    "A. Free-text summary of the failure modes and inefficiencies in the trace: <summary>"
    "B. Was the task completed successfully: <yes or no>"
    "C. Which failure modes or inefficiencies occur:"
)
_EXAMPLE_ANSWER = (
    "@@*** end of the answer layout ***"
    "For instance, an answer could look like this: \n"
    "A. The task was not completed: the agents left their roles and chatted with each other "
    "instead of doing the work, drifted off the task, and the verifier did not notice. \n"
    "B. no \n"
    "C. \n"
)
_DEFINITIONS = """
Failure modes of multi-agent systems (short definitions):

Specification issues
1.1 Disobey Task Specification: the agents do not follow the task's stated requirements
1.2 Disobey Role Specification: an agent steps outside the role it was assigned
1.3 Step Repetition: the same step or action is redone without making progress
1.4 Loss of Conversation History: an agent forgets context established earlier
1.5 Unaware of Termination Conditions: the agents do not see that they should stop

Inter-agent misalignment
2.1 Conversation Reset: the dialogue restarts and throws away progress made so far
2.2 Fail to Ask for Clarification: an agent goes ahead although it needed more information
2.3 Task Derailment: the conversation wanders away from the task
2.4 Information Withholding: an agent keeps back information the others needed
2.5 Ignored Other Agent's Input: an agent disregards input or feedback from the others
2.6 Action-Reasoning Mismatch: what an agent does differs from what it reasoned

Task verification
3.1 Premature Termination: the run stops before the goal is reached
3.2 No or Incorrect Verification: checking is missing or wrong
3.3 Weak Verification: checking happens but is too shallow to catch problems
"""


def build_prompt(trace: str, definitions: str = _DEFINITIONS, examples: str = "") -> str:
    """The official layout: instructions, answer template, example answer, TRACE, then
    definitions and examples (nothing after the instructions is shared between traces)."""
    template = "".join(f"{code} {NAMES[code]}: <yes or no>" for code in CODES)
    sample = "".join(
        f"{code} {'yes' if code in ('1.6', '2.3', '2.6', '3.2') else 'no'} \n"
        for code in _SAMPLE_CODES
    )
    return (
        _INTRO
        + template
        + _EXAMPLE_ANSWER
        + sample
        + "The trace: \n"
        + trace
        + "The definitions of the failure modes and inefficiencies: \n"
        + definitions
        + " \nExamples of the failure modes and inefficiencies: \n"
        + examples
    )


def _code_pattern(code: str) -> str:
    # The official parser puts the code into its regular expressions unescaped, so "2.5"
    # also matches "2x5"; keep that.
    return code


def _first_yes_no(text: str, start: int) -> str | None:
    match = re.compile(r"yes|no", re.I).search(text, start)
    return match.group(0).lower() if match else None


def read_cell(text: str, code: str) -> int:
    """1 or 0 for ``code``, as the official parser reads it (never "unknown")."""
    pattern = _code_pattern(code)
    anchor = re.search(r"C\.", text, re.I)
    if anchor is not None:
        found = re.compile(pattern).search(text, anchor.end())
        if found is not None:
            word = _first_yes_no(text, found.end())
            if word is not None:
                return int(word == "yes")
    # Looser fallbacks: the code right before the answer, then anywhere before one.
    tight = re.search(pattern + r"[\s:]*(yes|no)", text, re.I)
    if tight is not None:
        return int(tight.group(1).lower() == "yes")
    loose = re.search(pattern + r".*?(yes|no)", text, re.I | re.S)
    if loose is not None:
        return int(loose.group(1).lower() == "yes")
    return 0


def parse(response: str) -> dict[str, int]:
    text = response.strip()
    text = text[2:] if text.startswith("@@") else text
    text = text[:-2] if text.endswith("@@") else text
    return {code: read_cell(text, code) for code in CODES}


def task_completion(response: str) -> bool:
    match = re.search(r"B\.\s*(yes|no)", response, re.I)
    return bool(match and match.group(1).lower() == "yes")


class BaselineAnnotator:
    """Same calling convention as ``agentdash.annotator`` (key, model; produce_taxonomy)."""

    def __init__(self, openai_api_key: str, model: str = "o1-mini") -> None:
        from openai import OpenAI

        if not openai_api_key:
            raise ValueError("an OpenAI API key is required")
        self.model = model
        self.client = OpenAI(api_key=openai_api_key)
        self.definitions = _DEFINITIONS
        self.examples = ""

    def _create_evaluation_prompt(self, trace: str) -> str:
        return build_prompt(trace, self.definitions, self.examples)

    def produce_taxonomy(self, trace: str) -> dict[str, Any]:
        limit = MAX_CHARS - len(self.examples)
        prompt = self._create_evaluation_prompt(trace[:limit])
        response = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            temperature=1.0,
        )
        raw = response.choices[0].message.content if response.choices else ""
        modes = parse(raw or "")
        return {
            "failure_modes": modes,
            "task_completion": task_completion(raw or ""),
            "total_failures": sum(modes.values()),
            "raw_response": raw,
        }
