"""Redaction recall and false positives on the test corpus: mast's redactor against
detect-secrets (Yelp's maintained rule set), side by side.

    python bench/redaction_detectors.py            # mast only, if detect-secrets is absent
    pip install detect-secrets && python bench/redaction_detectors.py
    python bench/redaction_detectors.py --holdout  # the held-out set (holdout.yaml)

For every secret of ``tests/fixtures/redaction/secrets.yaml`` (placed in a trace as the
entry says) and every look-alike of ``lookalikes.yaml``, both tools look at the trace text
the judge would send (task, system name, each step's header and body, as rendered).

* mast: ``Redactor().redact_trace``; a secret is caught when none of its random parts is
  readable in the rendered redacted text, raw or JSON-escaped.
* detect-secrets: ``SecretsCollection.scan_file`` with its default plugins and filters on
  the same text written to a file; a secret counts as caught when each of its random parts
  lies inside a value it reported (so replacing what it reports would remove the secret).

A look-alike is a false positive when the tool changes (mast) or reports (detect-secrets)
anything in it. Trace metadata is never sent, so the entries placed there are left out.
Numbers, not timings: this runs in seconds.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from mast.judge.prompt.render import step_header, step_text  # noqa: E402
from mast.redact import Redactor  # noqa: E402
from mast.traces.model import Trace  # noqa: E402
from redaction_corpus import Case, leaks, lookalikes, secrets  # noqa: E402


def sent_text(trace: Trace) -> str:
    """The trace as the prompt shows it (without the fixed instructions around it)."""
    parts = [trace.task or "", trace.system or "", trace.benchmark or ""]
    for step in trace.steps:
        parts += [step_header(step), step_text(step)]
    return "\n".join(p for p in parts if p)


def mast_tool() -> tuple[Callable[[Case], bool], Callable[[Case], bool]]:
    redactor = Redactor()

    def caught(case: Case) -> bool:
        redacted, _ = redactor.redact_trace(case.trace())
        return not leaks(case, sent_text(redacted))

    def flagged(case: Case) -> bool:
        return bool(redactor.redact_trace(case.trace())[1])

    return caught, flagged


def detect_secrets_tool() -> tuple[Callable[[Case], bool], Callable[[Case], bool]] | None:
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="mast-ds-"))

    def found(text: str) -> list[str]:
        path = folder / "trace.txt"
        path.write_text(text, encoding="utf-8")
        collection = SecretsCollection()
        with default_settings():
            collection.scan_file(str(path))
        return [s.secret_value or "" for _, s in collection]

    def caught(case: Case) -> bool:
        values = found(sent_text(case.trace()))

        def covered(piece: str) -> bool:
            once = json.dumps(piece)[1:-1]
            forms = (piece, once, json.dumps(once)[1:-1])
            return any(form in value for value in values for form in forms)

        return all(covered(piece) for piece in case.pieces or [case.secret])

    def flagged(case: Case) -> bool:
        return bool(found(sent_text(case.trace())))

    return caught, flagged


def main() -> None:
    held = "--holdout" in sys.argv[1:]
    name = ("holdout.yaml", "holdout.yaml") if held else ("secrets.yaml", "lookalikes.yaml")
    cases = [c for c in secrets(name[0]) if c.where != "metadata"]
    looks = list(lookalikes(name[1]))
    formats = {c.format for c in cases}
    tools = {
        "mast.redact": mast_tool(),
        "detect-secrets (default plugins and filters)": detect_secrets_tool(),
    }
    print(f"corpus: {len(cases)} secrets sent to the provider ({len(formats)} formats), "
          f"{len(looks)} look-alikes\n")  # fmt: skip
    print("| tool | secrets caught | recall | look-alikes flagged | false-positive rate |")
    print("|---|---|---|---|---|")
    missed: dict[str, list[str]] = {}
    for name, tool in tools.items():
        if tool is None:
            print(f"| {name} | not installed | | | |")
            continue
        caught, flagged = tool
        hits = [c for c in cases if caught(c)]
        false = [c for c in looks if flagged(c)]
        missed[name] = [c.format for c in cases if c not in hits]
        print(f"| {name} | {len(hits)}/{len(cases)} | {len(hits) / len(cases):.1%} | "
              f"{len(false)}/{len(looks)} | {len(false) / len(looks):.1%} |")  # fmt: skip
    for name, formats_missed in missed.items():
        if formats_missed:
            print(f"\n{name} missed: " + "; ".join(sorted(set(formats_missed))))


if __name__ == "__main__":
    main()
