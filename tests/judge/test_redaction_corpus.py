"""The redaction corpus: every made-up secret is gone before the trace leaves the machine,
every look-alike stays as it was, and SECURITY.md reports the numbers measured here.

The corpus (``fixtures/redaction/``, loaded by ``redaction_corpus.py``) places secrets of
many formats in every part of a trace: messages, tool results, tool arguments (plain, JSON
inside a JSON string, and one level deeper), agent and tool names, the task, the system
name and metadata. Checked on the redacted trace as the prompt shows it, and end to end on
the request body that reaches a local server through the official OpenAI client.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from fake_llm_server import FakeLLMServer, Reply, verdict_json
from mast.judge.judge import Judge
from mast.judge.prompt.render import render
from mast.privacy.redact import DEFAULT_PATTERNS, Redactor
from mast.taxonomy import load_taxonomy
from redaction_corpus import PLACES, Case, kept, leaks, lookalikes, secrets

R = Redactor()
SECRETS = secrets()
LOOKALIKES = lookalikes()
# Written after the patterns were first measured; SECURITY.md reports it apart.
HELD_SECRETS = secrets("holdout.yaml")
HELD_LOOKALIKES = lookalikes("holdout.yaml")
# Written before the issue-33 patterns (measured before and after; SECURITY.md reports it).
HELD2_SECRETS = secrets("holdout2.yaml")
HELD2_LOOKALIKES = lookalikes("holdout2.yaml")
ALL_SECRETS = SECRETS + HELD_SECRETS + HELD2_SECRETS
ALL_LOOKALIKES = LOOKALIKES + HELD_LOOKALIKES + HELD2_LOOKALIKES
SECURITY = Path(__file__).resolve().parents[2] / "SECURITY.md"


def sent(case: Case) -> tuple[str, dict[str, int]]:
    """The user message the judge would send for ``case``'s trace, and the counts."""
    redacted, counts = R.redact_trace(case.trace())
    return render(redacted, examples=()).user, counts


def test_the_corpus_is_large_and_varied() -> None:
    assert len(SECRETS) >= 100
    assert len({c.format for c in SECRETS}) >= 40
    assert len(LOOKALIKES) >= 50
    assert len({c.id for c in SECRETS}) == len(SECRETS), "ids are unique"
    assert {c.where for c in SECRETS} == set(PLACES), "secrets sit in every part of a trace"
    # Every kind of placeholder the default patterns can produce is exercised.
    every = ALL_SECRETS
    assert {p.kind for p in DEFAULT_PATTERNS} <= {k for c in every for k in c.kinds}
    for case in SECRETS:
        assert case.pieces, f"{case.id}: a secret needs a random part to look for"


@pytest.mark.parametrize("case", ALL_SECRETS, ids=[c.id for c in ALL_SECRETS])
def test_each_secret_is_redacted(case: Case) -> None:
    text, counts = sent(case)
    assert not leaks(case, text), f"{case.format} reaches the prompt"
    if case.where != "metadata":  # metadata is never sent, so never redacted
        assert any(counts.get(kind) for kind in case.kinds), (case.kinds, counts)
    assert not kept(case, text), "the text around the secret is kept"


@pytest.mark.parametrize("case", ALL_LOOKALIKES, ids=[c.id for c in ALL_LOOKALIKES])
def test_each_lookalike_is_left_alone(case: Case) -> None:
    trace = case.trace()
    assert R.redact_trace(trace) == (trace, {})


def measured(
    secret_cases: tuple[Case, ...], lookalike_cases: tuple[Case, ...]
) -> tuple[int, int, int, int, int]:
    """Secrets sent, caught; formats; look-alikes, changed."""
    cases = [c for c in secret_cases if c.where != "metadata"]
    caught = sum(not leaks(c, sent(c)[0]) for c in cases)
    changed = sum(bool(R.redact_trace(c.trace())[1]) for c in lookalike_cases)
    return len(cases), caught, len({c.format for c in cases}), len(lookalike_cases), changed


@pytest.mark.parametrize("held_out", [0, 1, 2])
def test_security_md_reports_what_is_measured(held_out: int) -> None:
    pair = [
        (SECRETS, LOOKALIKES),
        (HELD_SECRETS, HELD_LOOKALIKES),
        (HELD2_SECRETS, HELD2_LOOKALIKES),
    ][held_out]
    total, caught, formats, looks, changed = measured(*pair)
    line = (
        f"{total} secrets of {formats} formats sent to the provider: recall "
        f"{caught}/{total} ({caught / total:.0%}); {looks} look-alikes: false positives "
        f"{changed}/{looks} ({changed / looks:.0%})"
    )
    text = " ".join(SECURITY.read_text(encoding="utf-8").split())
    assert line in text, f"SECURITY.md should say: {line}"
    assert caught == total and changed / looks <= 0.02


def test_every_secret_is_absent_from_the_request_body(fake_llm: FakeLLMServer) -> None:
    """End to end: trace → Judge → official OpenAI client → the body the server received."""
    fake_llm.default = Reply.text(verdict_json(load_taxonomy().codes))
    judge = Judge(
        "openai/gpt-4.1", base_url=fake_llm.openai_base_url, api_key="sk-test-corpus", fewshot=0
    )
    failures: list[str] = []
    kinds: Counter[str] = Counter()
    for case in ALL_SECRETS:
        annotation = judge.annotate(case.trace())
        body = fake_llm.requests[-1].raw.decode()
        if annotation.status != "ok" or leaks(case, body):
            failures.append(f"{case.id} ({case.where}): {case.format}")
        kinds.update(annotation.redactions)
    assert not failures, failures
    assert len(fake_llm.requests) == len(ALL_SECRETS)
    assert set(kinds) >= {p.kind for p in DEFAULT_PATTERNS}


def test_no_key_shaped_string_is_stored_in_the_fixtures() -> None:
    """The random parts are generated when the corpus is loaded: the fixture files hold no
    string a secret scanner would take for a provider key."""
    folder = Path(__file__).parents[1] / "fixtures" / "redaction"
    stored = "\n".join(p.read_text(encoding="utf-8") for p in folder.glob("*.yaml"))
    assert not re.search(r"sk-(?:proj-|ant-)[A-Za-z0-9_\-]{20}|ghp_[A-Za-z0-9]{36}", stored)
