"""The benchmark's LLM server: the tests' fake OpenAI server, run in its own process.

It answers every chat completion after a fixed latency, in the format the prompt asks for
(mast's JSON verdict, or the MAST paper's "A. / B. / C." text layout that the official
annotator asks for), and bills tokens the way the OpenAI API does, prompt caching included:

* input tokens: prompt characters / 4 (the rule of thumb mast also uses), plus 4 per
  message; the structured-output schema counts too and comes first, as OpenAI documents
  ("the schema serves as a prefix to the system message");
* cached tokens: a prefix cache keyed on the exact leading prompt text. A prompt of at
  least 1,024 tokens gets as cached the longest prefix, in steps of 128 tokens from 1,024
  on, that an earlier request had, counting only requests that had finished (a cache
  entry exists once the earlier prompt was processed), so a burst of identical prefixes
  sent together misses, as it would in production;
* output tokens: answer characters / 4.

Every completion (live or batch item) is logged as one JSON line (input, cached, output
tokens, batch or not) to ``--usage-log``: the official annotator discards usage, so the
bill is read from the server's side, the same way for both annotators.

Run ``python bench/_server.py --port-file F [--latency S] [--usage-log L]``; it writes its
base URL to F when ready and serves until it is terminated. :class:`ServerProcess` does
that from the benchmark.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Codes and the names the official answer template prints (its 3.2/3.3 names are swapped).
from baseline_annotator import CODES
from baseline_annotator import NAMES as OFFICIAL_NAMES

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


# Share of MAD traces showing each mode is roughly 5-40%; this gives 2-3 modes per trace.
PREVALENCE = 0.18


def tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


# ---------------------------------------------------------------------------- billing
def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def prompt_text(body: dict[str, Any]) -> tuple[str, int]:
    """The prompt as the provider would tokenise it (schema first), and message count."""
    parts: list[str] = []
    schema = body.get("response_format")
    if schema:
        parts.append(json.dumps(schema, sort_keys=True))
    messages = body.get("messages") or []
    for message in messages:
        parts.append(f"{message.get('role')}\n{_content(message)}\n")
    return "".join(parts), len(messages)


class PrefixCache:
    """OpenAI-style prompt cache: longest previously processed prefix, 128-token steps."""

    def __init__(self) -> None:
        self._ready: dict[str, float] = {}  # prefix hash -> when it became available
        self._lock = threading.Lock()

    @staticmethod
    def _prefix_hashes(text: str) -> list[tuple[int, str]]:
        """(tokens, hash) of every cacheable prefix length of ``text``, shortest first."""
        out: list[tuple[int, str]] = []
        total = len(text) // CHARS_PER_TOKEN
        if total < CACHE_MIN_TOKENS:
            return out
        digest = hashlib.sha256()
        done = 0
        for n in range(CACHE_MIN_TOKENS, total + 1, CACHE_STEP_TOKENS):
            end = n * CHARS_PER_TOKEN
            digest.update(text[done:end].encode("utf-8", "surrogatepass"))
            done = end
            out.append((n, digest.copy().hexdigest()))
        return out

    def lookup_and_store(self, text: str, available_at: float) -> int:
        """Cached tokens for ``text`` now; its prefixes are cached from ``available_at``."""
        prefixes = self._prefix_hashes(text)
        now = time.monotonic()
        cached = 0
        with self._lock:
            for n, h in prefixes:
                ready = self._ready.get(h)
                if ready is None or ready > now:
                    break
                cached = n
            for _, h in prefixes:
                if h not in self._ready or self._ready[h] > available_at:
                    self._ready[h] = available_at
        return cached


# ---------------------------------------------------------------------------- answers
# Every step header (an unsegmented log is one step, "[s1] kind=log", and is cited too).
_STEP_HEADER = re.compile(r"^\[(s\d+)\](?: agent=(\S+))?[^\n]*$", re.M)
_RATIONALE_NO = [
    "No sign of it in the trace.",
    "The agents keep to the task as stated; nothing here matches the definition.",
    "Not observed: the relevant exchanges look consistent with the definition's opposite.",
    "No evidence of this mode in the steps shown.",
    "The run gives no example of it.",
]
_RATIONALE_YES = [
    "The step repeats earlier work without new information, and the run does not move on.",
    "An agent's reply contradicts what it said it would do in the step before.",
    "The final answer is accepted although nobody re-checks it against the task's constraints.",
    "The agent answers for a role it was not given and the others accept it silently.",
    "The run continues after the answer was given and stops only at the turn limit.",
]
_SUMMARY = (
    "The agents reach an answer but the checking is superficial: the reviewer accepts the "
    "output without running it, and one agent repeats work already done. "
    "The run stays on task otherwise, and the final result is not verified against the "
    "requirements."
)


def _rng(text: str) -> random.Random:
    return random.Random(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())


def _present(rng: random.Random) -> set[str]:
    return {code for code in CODES if rng.random() < PREVALENCE}


def _quote(step_body: str) -> str:
    """A short verbatim piece of the step's first wordy line (what a model would cite)."""
    for line in step_body.splitlines():
        line = line.strip()
        if len(line.split()) >= 3:
            cut = line[:60]
            return cut.rsplit(" ", 1)[0] if len(line) > 60 else cut
    return ""


def _objects(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def _asked(schema: dict[str, Any] | None) -> tuple[list[str] | None, bool, int, int]:
    """What a response schema makes a model write: the keys of a present mode's object
    (None: no schema, the fake's own shape), whether ``decisive_error`` is required, and how
    many sentences the summary and a rationale get (one when the schema asks for one
    sentence, else two, the fake's usual length)."""
    if not schema:
        return None, False, 2, 2
    finding = next((o for o in _objects(schema) if "evidence" in (o.get("properties") or {})), None)
    keys = list(finding["properties"]) if finding else None

    def sentences(node: dict[str, Any] | None) -> int:
        text = str((node or {}).get("description", "")).lower()
        return 1 if text.startswith("one sentence") else 2

    summary = sentences((schema.get("properties") or {}).get("summary"))
    rationale = sentences(((finding or {}).get("properties") or {}).get("rationale"))
    return keys, "decisive_error" in (schema.get("required") or []), summary, rationale


def mast_answer(
    user_text: str, *, compact: bool = False, schema: dict[str, Any] | None = None
) -> str:
    """A verdict in mast's JSON shape; with ``compact`` (the prompt asked for compact answers)
    an absent mode is just ``false``. With a response ``schema`` (strict structured output)
    a present mode carries every key the schema requires (who and when included) and a
    failed run names its decisive error, as a constrained model must write them; summary and
    rationales are one sentence when the schema asks for one, else two. This is a proxy for
    a real model: lengths are the fake's, the shape is the schema's."""
    rng = _rng(user_text)
    present = _present(rng)
    headers = list(_STEP_HEADER.finditer(user_text))
    steps = [(m.group(1), _quote(user_text[m.end() : m.end() + 400])) for m in headers]
    agents = {m.group(1): m.group(2) for m in headers}
    keys, decisive, summary_n, rationale_n = _asked(schema)
    modes: dict[str, Any] = {}
    for code in CODES:
        if code in present and steps:
            cited = rng.sample(steps, k=min(len(steps), rng.choice((1, 2))))
            first = min((sid for sid, _ in cited), key=lambda sid: int(sid[1:]))
            values = {
                "evidence": [{"step_id": sid, "quote": quote} for sid, quote in cited],
                "rationale": rng.choice(_RATIONALE_YES)
                + (
                    f" See [{cited[0][0]}]: the later steps build on it unchanged."
                    * (rationale_n > 1)
                ),
                "present": True,
                "confidence": round(rng.uniform(0.6, 0.95), 2),
                "first_step": first,
                "agent": agents.get(first),
            }
            shape = keys or ["evidence", "rationale", "present", "confidence"]
            modes[code] = {k: values.get(k) for k in shape}
        elif compact:
            modes[code] = False
        else:
            modes[code] = {
                "evidence": [],
                "rationale": rng.choice(_RATIONALE_NO),
                "present": False,
                "confidence": round(rng.uniform(0.6, 0.95), 2),
                **({"first_step": None, "agent": None} if keys and "agent" in keys else {}),
            }
    shown = [(code, m) for code, m in modes.items() if isinstance(m, dict) and m.get("present")]
    error: dict[str, Any] | None = None
    if decisive and shown:

        def start(cm: tuple[str, Any]) -> int:
            return min(int(e["step_id"][1:]) for e in cm[1]["evidence"])

        code, first = min(shown, key=start)
        ev = min(first["evidence"], key=lambda e: int(e["step_id"][1:]))
        reason = first["rationale"].split(".")[0] + "."
        error = {"agent": agents.get(ev["step_id"]), "step_id": ev["step_id"], "modes": [code],
                 "reason": reason, "quote": ev["quote"]}  # fmt: skip
    summary = _SUMMARY if summary_n > 1 else _SUMMARY.split(". ")[0] + "."
    answer = {"summary": summary, "modes": modes, "task_completed": not present}
    lines = ["{", f'  "summary": {json.dumps(answer["summary"])},', '  "modes": {']
    for i, code in enumerate(CODES):
        comma = "," if i < len(CODES) - 1 else ""
        lines.append(f'    "{code}": {json.dumps(modes[code])}{comma}')
    lines.append("  },")
    if decisive:
        lines.append(f'  "decisive_error": {json.dumps(error)},')
    lines += [f'  "task_completed": {json.dumps(answer["task_completed"])}', "}"]
    return "\n".join(lines)


def official_answer(prompt: str) -> str:
    """An answer in the layout the official prompt asks for (names echoed, as models do)."""
    rng = _rng(prompt)
    present = _present(rng)
    lines = [
        "@@",
        "A. The reviewer accepts the output without running it and one agent repeats work "
        "already done; the result is not verified against the requirements.",
        f"B. {'no' if present else 'yes'}",
        "C.",
    ]
    for code in CODES:
        lines.append(f"{code} {OFFICIAL_NAMES[code]}: {'yes' if code in present else 'no'}")
    lines.append("@@")
    return "\n".join(lines)


# A sentence only the compact answer format's instructions contain (judge/templates).
_COMPACT_MARK = "A mode the trace does not show is just false."


def answer_for(body: dict[str, Any]) -> tuple[str, str]:
    """(side, answer text): the answer format is the one the prompt asks for."""
    messages = body.get("messages") or []
    text = "\n".join(_content(m) for m in messages)
    if "Reply with one JSON object" in text or body.get("response_format"):
        user = "\n".join(_content(m) for m in messages if m.get("role") == "user")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        return "ours", mast_answer(user, compact=_COMPACT_MARK in text, schema=schema)
    return "official", official_answer(text)


# ---------------------------------------------------------------------------- limits
def request_tokens(body: dict[str, Any], output_tokens: int = 0) -> int:
    """What a request counts against a tokens-per-minute limit: the prompt's tokens
    (estimated as it is billed) plus the ``max_tokens`` it asks for, which OpenAI reserves
    when the request arrives; a request without ``max_tokens`` counts the output it gets
    (``output_tokens``; the fake writes its answer at once, so it is counted at arrival)."""
    text, n_messages = prompt_text(body)
    out = body.get("max_completion_tokens") or body.get("max_tokens") or output_tokens
    return tokens(len(text)) + MESSAGE_OVERHEAD_TOKENS * n_messages + int(out)


def duration(seconds: float) -> str:
    """A wait as OpenAI's ``x-ratelimit-reset-*`` headers write it: ``20ms``, ``1.5s``,
    ``6m0s``."""
    if seconds < 1.0:
        return f"{max(seconds, 0.0) * 1000:.0f}ms"
    if seconds < 60.0:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(seconds, 60.0)
    return f"{minutes:.0f}m{rest:.0f}s"


class WindowLimits:
    """A provider's requests- and tokens-per-window limits: a sliding window over the last
    ``window`` seconds of accepted requests; past either limit, the answer is 429 with
    ``Retry-After`` = when enough of the window has expired. Every decision is logged
    (``events``: time, accepted, tokens) for the benchmark's accounting.

    :meth:`decide` also says which limit refused a request, and :meth:`headers` gives the
    ``x-ratelimit-*`` headers OpenAI sends with every answer (limit, remaining, time
    until the window is empty again) for the state after it."""

    def __init__(
        self, rpm: int | None, tpm: int | None, window: float, clock: Any = time.monotonic
    ) -> None:
        self.rpm, self.tpm, self.window, self.clock = rpm, tpm, window, clock
        self.log: list[tuple[float, int]] = []  # accepted (time, tokens), oldest first
        self.events: list[tuple[float, bool, int]] = []
        self._lock = threading.Lock()

    def admit(self, cost: int) -> float | None:
        """None if the request is accepted (and counted), else the seconds to wait."""
        return self.decide(cost)[0]

    def decide(self, cost: int) -> tuple[float | None, str | None, dict[str, str]]:
        """(None or the seconds to wait, the limit that refused it: "requests" / "tokens" /
        None, the rate-limit headers after the decision)."""
        with self._lock:
            wait, kind = self._decide(cost)
            return wait, kind, self._headers(self.clock())

    def _headers(self, now: float) -> dict[str, str]:
        used = sum(t for _, t in self.log)
        empty_in = self.log[-1][0] + self.window - now if self.log else 0.0
        headers: dict[str, str] = {}
        kinds = (("requests", self.rpm, len(self.log)), ("tokens", self.tpm, used))
        for kind, limit, count in kinds:
            if limit is None:
                continue
            headers[f"x-ratelimit-limit-{kind}"] = str(limit)
            headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, limit - count))
            headers[f"x-ratelimit-reset-{kind}"] = duration(empty_in)
        return headers

    def _decide(self, cost: int) -> tuple[float | None, str | None]:
        now = self.clock()
        while self.log and self.log[0][0] <= now - self.window:
            self.log.pop(0)
        used = sum(t for _, t in self.log)
        waits: list[tuple[float, str]] = []
        if self.rpm is not None and len(self.log) + 1 > self.rpm:
            waits.append((self.log[len(self.log) - self.rpm][0] + self.window - now, "requests"))
        if self.tpm is not None and used + cost > self.tpm:
            freed = 0
            for at, amount in self.log:
                freed += amount
                if used - freed + cost <= self.tpm:
                    waits.append((at + self.window - now, "tokens"))
                    break
            else:
                waits.append((self.window, "tokens"))
        if waits:
            self.events.append((now, False, cost))
            wait, kind = max(waits)
            return max(0.001, wait), kind
        self.log.append((now, cost))
        self.events.append((now, True, cost))
        return None, None


def lognormal(median: float, p95: float, rng: random.Random) -> float:
    """A latency from the log-normal distribution with this median and 95th percentile."""
    sigma = math.log(p95 / median) / 1.6448536269514722 if p95 > median else 0.0
    return float(median * math.exp(sigma * rng.gauss(0.0, 1.0)))


# ---------------------------------------------------------------------------- server
class Billing:
    """Turns requests into replies with usage, and logs every bill."""

    def __init__(
        self,
        latency: float,
        usage_log: Path | None,
        *,
        limits: WindowLimits | None = None,
        p95: float | None = None,
        events_log: Path | None = None,
        rate_headers: bool = True,
    ) -> None:
        self.rate_headers = rate_headers  # False: a 429 says only Retry-After
        self.latency = latency
        self.p95 = p95  # with it, latency is the median of a log-normal draw
        self.limits = limits
        self.events_log = events_log
        self._rng = random.Random(0)
        self.cache = PrefixCache()
        self._log = usage_log.open("a", encoding="utf-8") if usage_log else None
        self._lock = threading.Lock()

    def reply(self, request: Any) -> Any:
        from fake_llm_server import Reply  # imported after the path insert in main()

        body = request.body or {}
        batch = request.custom_id is not None
        side, answer = answer_for(body)
        headers: dict[str, str] = {}
        if self.limits is not None and not batch:
            cost = request_tokens(body, tokens(len(answer)))
            wait, kind, headers = self.limits.decide(cost)
            if not self.rate_headers:
                headers = {}
            if wait is not None:
                if not self.rate_headers:  # as servers that name no limit answer
                    return Reply.error(429, "rate limit reached", retry_after=f"{wait:.3f}")
                return Reply.error(
                    429,
                    self._refusal(body, kind, cost, wait),
                    error_type=kind,
                    code="rate_limit_exceeded",
                    retry_after=f"{wait:.3f}",
                    headers=headers,
                )
        text, n_messages = prompt_text(body)
        input_tokens = tokens(len(text)) + MESSAGE_OVERHEAD_TOKENS * n_messages
        # Batch items are answered back to back; live requests finish after the latency.
        latency = 0.0 if batch else self.latency
        if self.p95 is not None and not batch:
            with self._lock:
                latency = lognormal(self.latency, self.p95, self._rng)
        cached = self.cache.lookup_and_store(text, time.monotonic() + latency)
        output_tokens = tokens(len(answer))
        usage = {"input": input_tokens, "cached": cached, "output": output_tokens}
        if self._log is not None:
            line = json.dumps({"side": side, "batch": batch, **usage, "latency": latency})
            with self._lock:
                self._log.write(line + "\n")
                self._log.flush()
        reply = Reply.text(answer, usage=usage, delay=latency)
        reply.headers = headers
        return reply

    def _refusal(self, body: dict[str, Any], kind: str | None, cost: int, wait: float) -> str:
        """A 429's message in OpenAI's words, e.g. "Rate limit reached for gpt-4.1 in
        organization org-… on tokens per min (TPM): Limit 30000, Used 29100, Requested
        1500. Please try again in 1.2s. …"."""
        assert self.limits is not None
        limits = self.limits
        if kind == "requests":
            what, limit, used, asked = "requests per min (RPM)", limits.rpm, len(limits.log), 1
        else:
            used = sum(t for _, t in limits.log)
            what, limit, asked = "tokens per min (TPM)", limits.tpm, cost
        return (
            f"Rate limit reached for {body.get('model', 'gpt-4.1')} in organization "
            f"org-bench on {what}: Limit {limit}, Used {used}, Requested {asked}. "
            f"Please try again in {duration(wait)}. Visit "
            "https://platform.openai.com/account/rate-limits to learn more."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, type=Path)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--usage-log", type=Path)
    parser.add_argument("--p95", type=float, help="log-normal latency: --latency is the median")
    parser.add_argument("--rpm", type=int, help="requests per --window (429 past it)")
    parser.add_argument("--tpm", type=int, help="tokens per --window (429 past it)")
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--events-log", type=Path, help="every rate-limit decision, at exit")
    parser.add_argument(
        "--no-rate-headers",
        action="store_true",
        help="send no x-ratelimit-* headers and a bare 429 message (only Retry-After)",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    from fake_llm_server import FakeLLMServer

    limits = (
        WindowLimits(args.rpm, args.tpm, args.window)
        if args.rpm is not None or args.tpm is not None
        else None
    )
    billing = Billing(
        args.latency,
        args.usage_log,
        limits=limits,
        p95=args.p95,
        events_log=args.events_log,
        rate_headers=not args.no_rate_headers,
    )
    server = FakeLLMServer()
    server.responder = billing.reply
    server.batch_polls = 0
    server.start()
    # Requests are recorded by the fake; a long benchmark must not keep megabytes of them.
    stop = threading.Event()

    def trim() -> None:
        while not stop.wait(1.0):
            with server._lock:
                del server.requests[:-64]
                del server.batch_requests[:-64]

    threading.Thread(target=trim, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(server.url)
    os.replace(tmp, args.port_file)
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    server.stop()
    if limits is not None and args.events_log is not None:
        lines = [json.dumps({"t": t, "ok": ok, "tokens": n}) for t, ok, n in limits.events]
        args.events_log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 0


class ServerProcess:
    """Start the server in a child process; ``with ServerProcess(latency=0.5) as s: s.url``."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        workdir: Path | None = None,
        p95: float | None = None,
        rpm: int | None = None,
        tpm: int | None = None,
        window: float = 60.0,
        rate_headers: bool = True,
    ) -> None:
        self.latency = latency
        self.extra: list[str] = [] if rate_headers else ["--no-rate-headers"]
        if p95 is not None:
            self.extra += ["--p95", str(p95)]
        if rpm is not None:
            self.extra += ["--rpm", str(rpm)]
        if tpm is not None:
            self.extra += ["--tpm", str(tpm)]
        self.extra += ["--window", str(window)]
        self._dir = Path(tempfile.mkdtemp(prefix="mast-bench-server-", dir=workdir))
        self.usage_log = self._dir / "usage.jsonl"
        self.events_log = self._dir / "events.jsonl"
        self.events: list[dict[str, Any]] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        port_file = self._dir / "url"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--port-file", str(port_file)]
        cmd += ["--latency", str(self.latency), "--usage-log", str(self.usage_log)]
        cmd += [*self.extra, "--events-log", str(self.events_log)]
        self._proc = subprocess.Popen(cmd)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the benchmark LLM server did not start")
            time.sleep(0.05)
        self.url = port_file.read_text().strip()
        return self

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    def usage(self) -> list[dict[str, Any]]:
        """Every bill so far (one dict per completion)."""
        if not self.usage_log.exists():
            return []
        lines = self.usage_log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self.events_log.exists():  # kept for the caller after the folder goes
            lines = self.events_log.read_text(encoding="utf-8").splitlines()
            self.events = [json.loads(line) for line in lines if line.strip()]
        for path in self._dir.iterdir():
            path.unlink()
        self._dir.rmdir()


if __name__ == "__main__":
    raise SystemExit(main())
