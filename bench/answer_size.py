"""Output size of the full vs the compact answer (issue 21), and of the schema each sends.

Not a benchmark run against the official annotator: it measures the answer JSON and the
schema for one realistic verdict (3 of 14 modes present, with evidence and a rationale), in
characters and in tokens (mast.judge.prompt.tokens: tiktoken's o200k_base when installed, else
mast's calibrated estimate; the method is printed).

Run: ``python bench/answer_size.py``
"""

from __future__ import annotations

import json

from mast.judge.prompt.answer_format import answer_schema, compact_answer
from mast.judge.prompt.render import render_system
from mast.judge.prompt.tokens import count_tokens
from mast.judge.verdict import example_answer
from mast.taxonomy import load_taxonomy

TAX = load_taxonomy()
PRESENT = {"1.3": ["s7", "s11"], "2.6": ["s9"], "3.3": ["s14"]}
QUOTES = {
    "s7": "Let me search for the flight prices again to be sure.",
    "s11": "Searching flight prices for the same dates once more.",
    "s9": "I will assume the budget is 2000 USD since it was not given.",
    "s14": "The itinerary looks complete. TERMINATE",
}
NOTES = {
    "1.3": "The planner reruns the same flight search at s7 and s11 with identical "
    "arguments instead of using the first result.",
    "2.6": "At s9 the agent invents a budget that the user never stated and plans around it, "
    "so its reasoning no longer matches the task.",
    "3.3": "The verifier ends the run at s14 without checking the itinerary against the "
    "dates the user asked for.",
}


def verdict() -> dict[str, object]:
    """A full-shape answer as a careful model writes it: every absent mode with a one-line
    rationale and a confidence, present modes with quoted evidence and who/when."""
    labels = {code: code in PRESENT for code in TAX.codes}
    answer = example_answer(
        labels=labels,
        evidence=PRESENT,
        rationale="The planner repeats a search and invents a budget; the verifier stops "
        "the run without checking the dates, so the itinerary is wrong.",
        notes={c: NOTES.get(c, "No step shows this; the agents do not do it.") for c in TAX.codes},
        agents={"s7": "Planner", "s9": "Planner", "s11": "Planner", "s14": "Verifier"},
        task_completed=False,
    )
    for code, entry in answer["modes"].items():
        entry["confidence"] = 0.8 if code in PRESENT else 0.9
        for ev in entry["evidence"]:
            ev["quote"] = QUOTES[ev["step_id"]]
    return answer


def row(name: str, text: str) -> tuple[str, int, int, str]:
    count = count_tokens(text, model="gpt-4.1")
    return name, len(text), count.tokens, count.method


def main() -> None:
    full = verdict()
    compact = compact_answer(full)
    rows = [
        row("answer, full", json.dumps(full, ensure_ascii=False)),
        row("answer, compact", json.dumps(compact, ensure_ascii=False)),
    ]
    for inline in (False, True):
        # $ref is what every request carries; inline only after a server refused $ref.
        how = "inline, after a refusal" if inline else "$ref, sent by default"
        for mode in ("full", "compact"):
            schema = answer_schema(TAX, mode, inline=inline)  # type: ignore[arg-type]
            rows.append(row(f"schema, {mode} ({how})", json.dumps(schema)))
    for mode in ("full", "compact"):
        text = render_system(taxonomy=TAX, answer=mode)  # type: ignore[arg-type]
        rows.append(row(f"static prompt without examples, {mode}", text))
    print("| what | characters | tokens | counted by |")
    print("|---|---|---|---|")
    for name, chars, tokens, method in rows:
        print(f"| {name} | {chars:,} | {tokens:,} | {method} |")
    (_, fc, ft, _), (_, cc, ct, _) = rows[:2]
    print(f"\ncompact / full answer: {cc / fc:.2f}x characters, {ct / ft:.2f}x tokens")


if __name__ == "__main__":
    main()
