"""Secret redaction: every pattern on realistic secrets and on near misses, traces, the judge.

The secrets below are made up in the shape of the real thing (prefix, alphabet, length);
none of them is a live credential.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_llm_server import FakeLLMServer, Reply
from mast.judge.judge import Judge
from mast.privacy.redact import DEFAULT_PATTERNS, Redactor, SecretPattern, placeholder, redact
from mast.taxonomy import load_taxonomy
from mast.traces.model import Step, Trace
from redaction_corpus import secrets

CODES = load_taxonomy().codes
R = Redactor()

OPENAI = "sk-proj-Xq3vB7nK2mR9tY4wZ8aL1cD6fG0hJ5sE-pQ_uI2oT7rW3yA9zX4cV8bN1mK6jH0g"
OPENAI_LEGACY = "sk-" + "T3BlbkFJ" + "a8Kd93jfLq0Zx7Vb2Nc4Mp6Rt1Ws5Ye9Uh3Ig"
ANTHROPIC = (
    "sk-ant-api03-" + "Zk4mQ9vX2bN7cR1tY6wL3pD8fH0jS5aE-gK_uI4oT2rW7yB9zX1cV6nM3kJ8hG0fD5sAA"
)
GOOGLE = "AIza" + "SyB3k9Xq2mN7vR4tZ8wL1cD6fG0hJ5sE-pQ"
GITHUB = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0abcdefghijkl_MNOPQRSTUVWXyz0123456789abcdefghijklmnopqrstuv"
SLACK = "xoxb-" + "2401879348-5503915822016-Qz3kR9vX2bN7cT1yW6pL8dF0"
STRIPE = "sk_live_" + "51HxQ2kLm9Nv3Rt7Yw4Zb8Cd6Fg0Jh5Se"
HF = "hf_" + "QmXkRtVbNcLpWzDfGhJsAeYuIoPqMnBvCx"
AWS_ID = "AKIA" + "Z3K9QX2M7V4R8T1W"
AWS_SECRET = "wJalrXUtnFI/K7MDENG/bPxRfiCYzEXAMPLEKEY3"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUiLCJpYXQiOjE1MTYyMzkwMjJ9."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEowIBAAKCAQEAq3v8N2k9Xb7mR4tY1wZ6pL0dF3hJ5sE8gK2uI4oT7rW9yB1zX3cV\n" * 3
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----"

assert len(AWS_SECRET) == 40


def red(text: str) -> tuple[str, dict[str, int]]:
    result = R.redact(text)
    return result.text, result.counts


# --------------------------------------------------------------------------- positives

POSITIVES: list[tuple[str, str, str, str]] = [
    # (kind, text, the secret that must be gone, context that must stay)
    ("openai_key", f"export OPENAI_API_KEY={OPENAI}", OPENAI, "export OPENAI_API_KEY="),
    ("openai_key", f"client = OpenAI(api_key='{OPENAI_LEGACY}')", OPENAI_LEGACY, "OpenAI("),
    ("anthropic_key", f"ANTHROPIC_API_KEY={ANTHROPIC} python run.py", ANTHROPIC, "python run"),
    (
        "gitlab_token",
        "git clone https://oauth2:glpat-Zk4mQ9vX2bN7cR1tY6wL@gitlab.com/g/p.git",
        "glpat-Zk4mQ9vX2bN7cR1tY6wL",
        "@gitlab.com/g/p.git",
    ),
    ("google_api_key", f"https://maps.googleapis.com/x?key={GOOGLE}&q=1", GOOGLE, "&q=1"),
    ("github_token", f"git push https://x-access-token:{GITHUB}@github.com/o/r", GITHUB, "/o/r"),
    ("github_token", f"GH_TOKEN: {GITHUB_PAT}", GITHUB_PAT, "GH_TOKEN"),
    ("slack_token", f'{{"token": "{SLACK}", "channel": "C1"}}', SLACK, '"channel": "C1"'),
    (
        "slack_webhook",
        "POST https://hooks.slack.com/services/T024BE7LD/B08QJ1V3K/8b2Xq9mK3vR7tN1wZ4cL",
        "8b2Xq9mK3vR7tN1wZ4cL",
        "POST ",
    ),
    ("stripe_key", f"stripe.api_key = '{STRIPE}'", STRIPE, "stripe.api_key"),
    ("huggingface_token", f"huggingface-cli login --token {HF}", HF, "--token "),
    ("aws_access_key_id", f"aws_access_key_id = {AWS_ID}", AWS_ID, "aws_access_key_id = "),
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret"),
    ("aws_secret_key", f'"SecretAccessKey": "{AWS_SECRET}",', AWS_SECRET, '"SecretAccessKey"'),
    ("jwt", f"id_token={JWT}; path=/", JWT, "; path=/"),
    ("private_key", f"key file:\n{PEM}\ndone", PEM_BODY.splitlines()[0], "done"),
    (
        "bearer_token",
        "-H 'Authorization: Bearer 7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c8e2b4d6a0f'",
        "7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c8e2b4d6a0f",
        "Authorization: Bearer ",
    ),
    (
        "basic_auth",
        "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
        "YWxhZGRpbjpvcGVuc2VzYW1l",
        "Basic ",
    ),
    (
        "api_key_header",
        "x-api-key: k3Y9mQ2vX7bN4cR1tW8zL6pD",
        "k3Y9mQ2vX7bN4cR1tW8zL6pD",
        "x-api-key: ",
    ),
    (
        "url_password",
        "DATABASE_URL=postgres://app_user:Tr0ub4dor&3@db.internal:5432/prod",
        "Tr0ub4dor&3",
        "@db.internal:5432/prod",
    ),
    ("url_password", "redis://:s3cretRedisPw@cache:6379/0", "s3cretRedisPw", "@cache:6379"),
    (
        "password",
        "Server=tcp:db.example.net;Database=app;User Id=sa;Password=Pa55w0rd!x;Encrypt=True",
        "Pa55w0rd!x",
        "Encrypt=True",
    ),
    ("password", "mysql --user=root --password=hunter2x -h db", "hunter2x", "-h db"),
    ("password", 'DB_PASSWORD="correct horse battery staple"', "correct horse", "DB_PASSWORD"),
    ("password", "smtp_password: m4ilP4ss99", "m4ilP4ss99", "smtp_password: "),
    ("secret", '{"client_secret": "Zq8v-2kXm_9bN7c"}', "Zq8v-2kXm_9bN7c", '{"client_secret": '),
    ("secret", "WEBHOOK_SECRET=whk9f3Xq2m7Lz", "whk9f3Xq2m7Lz", "WEBHOOK_SECRET="),
]


@pytest.mark.parametrize(("kind", "text", "secret", "context"), POSITIVES)
def test_each_pattern_finds_its_secret(kind: str, text: str, secret: str, context: str) -> None:
    out, counts = red(text)
    assert secret not in out
    assert placeholder(kind) in out, out
    assert counts.get(kind, 0) >= 1, counts
    assert context in out, "the text around a secret is kept"


def test_every_default_pattern_has_a_positive_case() -> None:
    # Here or in the redaction corpus (test_redaction_corpus.py), which has every kind.
    corpus = secrets() + secrets("holdout.yaml") + secrets("holdout2.yaml")
    tested = {kind for kind, *_ in POSITIVES} | {k for case in corpus for k in case.kinds}
    assert {p.kind for p in DEFAULT_PATTERNS} <= tested


def test_truncated_private_key_block_is_redacted() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAA\n"
    text += "AAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQAAAYEAx8\n[log truncated at 4096 bytes]"
    out, counts = red(text)
    assert counts == {"private_key": 1}
    assert "b3Blbn" not in out and "AAAAAB" not in out
    assert "[log truncated at 4096 bytes]" in out


def test_private_key_inside_json_string() -> None:
    """A service-account file dumped as JSON: newlines are \\n escapes."""
    body = PEM.replace("\n", "\\n")
    text = json.dumps({"type": "service_account", "private_key": PEM})
    assert body in text
    out, counts = red(text)
    assert counts.get("private_key") == 1 and "MIIEow" not in out
    assert json.loads(out)["type"] == "service_account"


def test_secrets_behind_auth_schemes_keep_their_specific_type() -> None:
    out, counts = red(f"Authorization: Bearer {OPENAI}\nAuthorization: Bearer {JWT}")
    assert counts == {"openai_key": 1, "jwt": 1}
    assert "Bearer [REDACTED:openai_key]" in out and "Bearer [REDACTED:jwt]" in out


def test_several_secrets_are_all_counted() -> None:
    env = "\n".join(
        [f"OPENAI_API_KEY={OPENAI}", f"GITHUB_TOKEN={GITHUB}", f"HF_TOKEN={HF}", "HOME=/root"]
    )
    out, counts = red(env + "\n" + env)
    assert counts == {"openai_key": 2, "github_token": 2, "huggingface_token": 2}
    assert out.count("HOME=/root") == 2


# --------------------------------------------------------------------------- near misses

NEGATIVES = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "pip install scikit-learn  # import sklearn; sk-learn-contrib-imbalanced-learn",
    "the task-management-system-for-everyone repo",
    "from huggingface_hub import hf_hub_download_with_progress_bar_enabled",
    "max_tokens: 4096, token_count=12345678, tokens_used = 77123",
    "password = input('Password: ')",
    "password = getpass.getpass()",
    "self.password = password",
    'schema = {"password": {"type": "string"}, "api_key": "string"}',
    "def login(username: str, password: str) -> bool:",
    "api_key: Optional[str] = None",
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "api_key = os.environ['OPENAI_API_KEY']",
    "export API_KEY=YOUR_API_KEY_HERE",
    "http://localhost:8080/api/v1/items?page=2",
    "https://user@example.com/path and mailto:someone@example.com",
    "ssh://git@github.com:22/org/repo.git",
    "the bearer of bad news, the Bearer token is missing",
    "password=\nINFO next line is not the password",
    "Authorization header missing; set Bearer <token>",
    "AKIA is the prefix of AWS access keys",
    "eyJhbGciOi is where a JWT header starts",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
    "-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUF\n"
    "-----END CERTIFICATE-----",
    "Traceback: File '/usr/lib/python3.11/site-packages/openai/_base_client.py', line 1024",
    "secret_santa_list.txt and token_bucket.py",
    "ghp_ tokens start with ghp_, Stripe keys with sk_live_",
]


# Real passwords may start with a character a placeholder starts with (AppWorld's MAD traces
# carry "$F!HiVT" and "%VH3es3"): only a whole reference or mask is left alone.
@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("$F!HiVT", False),
        ("%VH3es3", False),
        ("#abc123Z", False),
        ("[x]y7Qz!", False),
        ("$HOME", True),
        ("${DB_PASS}", True),
        ("$(cat /run/secrets/db)", True),
        ("%APPDATA%", True),
        ("<your password>", True),
        ("{{ secrets.DB }}", True),
        ("***", True),
    ],
)
def test_password_values_that_start_like_placeholders(value: str, kept: bool) -> None:
    text = json.dumps({"account_name": "spotify", "password": value})
    out, counts = red(text)
    assert (out == text) is kept, out
    assert counts == ({} if kept else {"password": 1})


@pytest.mark.parametrize("text", NEGATIVES)
def test_near_misses_are_left_alone(text: str) -> None:
    out, counts = red(text)
    assert (out, counts) == (text, {})


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_hashes_uuids_and_base64_text_are_not_secrets(data: st.DataObject) -> None:
    seed = data.draw(st.binary(min_size=1, max_size=64))
    prose = data.draw(st.text(alphabet=st.characters(codec="ascii"), min_size=1, max_size=80))
    samples = [
        hashlib.sha1(seed).hexdigest(),
        hashlib.sha256(seed).hexdigest(),
        hashlib.md5(seed).hexdigest(),
        str(uuid.UUID(bytes=hashlib.md5(seed).digest())),
        base64.b64encode(prose.encode()).decode(),
        f"checksum={hashlib.sha256(seed).hexdigest()} "
        f"id={uuid.UUID(bytes=seed[:16].ljust(16, b'x'))}",
    ]
    for text in samples:
        assert red(text) == (text, {}), text


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_idempotent(text: str) -> None:
    once = R.redact(text + " " + OPENAI).text
    assert R.redact(once).text == once
    assert R.redact(once).counts == {}


# --------------------------------------------------------------------------- user patterns


def test_user_patterns_and_literals() -> None:
    custom = Redactor(
        extra=[("ticket", r"TCK-\d{6}"), SecretPattern.make("email", r"[\w.]+@corp\.example")],
        literals={"internal-codename-zebra": "codename"},
    )
    out = custom.redact(f"TCK-123456 from ana@corp.example about internal-codename-zebra {GITHUB}")
    assert out.text == (
        "[REDACTED:ticket] from [REDACTED:email] about [REDACTED:codename] [REDACTED:github_token]"
    )
    assert out.counts == {"ticket": 1, "email": 1, "codename": 1, "github_token": 1}
    only = Redactor(patterns=[("ticket", r"TCK-\d{6}")])
    assert only.redact(f"TCK-000001 {GITHUB}").text == f"[REDACTED:ticket] {GITHUB}"
    assert not Redactor.off().enabled and Redactor.off().redact(OPENAI).text == OPENAI
    assert "zebra" not in repr(custom)


def test_bad_user_patterns_fail_early() -> None:
    with pytest.raises(ValueError, match="kind"):
        SecretPattern.make("bad kind!", r"x")
    with pytest.raises(ValueError, match="group"):
        SecretPattern.make("k", r"(x)", group=2)


def test_redact_helper() -> None:
    assert redact(f"key={GITHUB}") == "key=[REDACTED:github_token]"


# --------------------------------------------------------------------------- traces


def secret_trace() -> Trace:
    return Trace(
        id="leaky",
        task=f"Deploy with token {GITHUB}",
        steps=[
            Step.make(0, "Plan: deploy the app.", agent="planner"),
            Step.make(
                1,
                "",
                agent="ops",
                kind="tool_call",
                tool_name="shell",
                tool_args={"cmd": "aws s3 ls", "env": {"aws_secret_access_key": AWS_SECRET}},
            ),
            Step.make(2, f"env:\nOPENAI_API_KEY={OPENAI}\nPATH=/usr/bin", agent="ops"),
        ],
    )


def test_redact_trace() -> None:
    trace = secret_trace()
    redacted, counts = R.redact_trace(trace)
    assert counts == {"github_token": 1, "aws_secret_key": 1, "openai_key": 1}
    dumped = redacted.model_dump_json()
    for secret in (GITHUB, AWS_SECRET, OPENAI):
        assert secret not in dumped
    assert redacted.steps[0] is trace.steps[0], "unchanged steps are shared"
    assert redacted.steps[1].tool_args == {
        "cmd": "aws s3 ls",
        "env": {"aws_secret_access_key": "[REDACTED:aws_secret_key]"},
    }
    assert "PATH=/usr/bin" in redacted.steps[2].content
    assert trace.task and GITHUB in trace.task, "the input trace is not changed"
    clean = Trace(id="c", steps=[Step.make(0, "nothing to hide")])
    assert R.redact_trace(clean) == (clean, {})


def test_redaction_of_a_big_log_finds_its_one_secret() -> None:
    # ~10 MB of log lines that look like ids and numbers: no false positive, the key found.
    # (Speed is measured in bench/, not asserted here: machines are noisy.)
    line = "INFO 2025-01-01 worker-3 processed batch 1234 id=5f2b9c1e-77aa-4e0b in 12ms\n"
    text = line * 130_000 + f"OPENAI_API_KEY={OPENAI}\n"
    out = R.redact(text)
    assert out.counts == {"openai_key": 1}


# --------------------------------------------------------------------------- the judge

KEY = "sk-redact-judge-key-0123456789abcdef"


def verdict_with(evidence: list[dict[str, str]]) -> str:
    modes: dict[str, Any] = {
        c: {"evidence": [], "rationale": "", "present": False, "confidence": None} for c in CODES
    }
    modes["2.4"] = {"evidence": evidence, "rationale": "leaks", "present": True, "confidence": 1}
    return json.dumps({"summary": "s", "modes": modes, "task_completed": False})


def judge(server: FakeLLMServer, **kwargs: Any) -> Judge:
    kwargs.setdefault("fewshot", 0)
    return Judge("openai/gpt-4.1", base_url=server.openai_base_url, api_key=KEY, **kwargs)


def test_judge_redacts_by_default(fake_llm: FakeLLMServer) -> None:
    # The model quotes what it saw: the placeholder, which is grounded in the redacted trace.
    quote = "OPENAI_API_KEY=[REDACTED:openai_key]"
    fake_llm.enqueue(Reply.text(verdict_with([{"step_id": "s3", "quote": quote}])))
    ann = judge(fake_llm).annotate(secret_trace())
    sent = fake_llm.requests[0].raw.decode()
    for secret in (GITHUB, AWS_SECRET, OPENAI):
        assert secret not in sent
    assert "[REDACTED:openai_key]" in sent
    assert ann.redactions == {"github_token": 1, "aws_secret_key": 1, "openai_key": 1}
    evidence = ann.findings["2.4"].evidence[0]
    assert evidence.grounded is True, evidence.problem
    assert ann.judge["redact"] == "default"
    back = type(ann).model_validate_json(ann.model_dump_json())
    assert back.redactions == ann.redactions


def test_judge_without_redaction_sends_the_trace_as_is(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text(verdict_with([{"step_id": "s3", "quote": OPENAI}])))
    trace = secret_trace()
    trace.steps[2].content += f"\nMY_KEY={KEY}"  # the judge's own key, dumped in the trace
    ann = judge(fake_llm, redact=False).annotate(trace)
    sent = fake_llm.requests[0].raw.decode()
    assert GITHUB in sent and OPENAI in sent
    # Its own key never goes into a prompt, whatever the setting.
    assert KEY not in json.dumps(fake_llm.requests[0].body)
    assert ann.redactions == {"api_key": 1}
    assert ann.findings["2.4"].evidence[0].grounded is True
    assert ann.judge["redact"] == "off"


def test_judge_with_a_custom_redactor(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text(verdict_with([])))
    custom = Redactor(patterns=[("deploy_target", r"prod-cluster-\d+")])
    trace = Trace(id="c", steps=[Step.make(0, f"deploying to prod-cluster-7 with {GITHUB}")])
    ann = judge(fake_llm, redact=custom).annotate(trace)
    sent = fake_llm.requests[0].raw.decode()
    assert "prod-cluster-7" not in sent and GITHUB in sent
    assert ann.redactions == {"deploy_target": 1}
    assert ann.judge["redact"] == "custom"


def test_heuristic_judge_redacts_too() -> None:
    ann = Judge("heuristic").annotate(secret_trace())
    assert ann.redactions == {"github_token": 1, "aws_secret_key": 1, "openai_key": 1}
    assert OPENAI not in ann.model_dump_json()


# --------------------------------------------------------------------------- the command


def test_mast_annotate_redaction_options(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mast.cli import main

    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    fake_llm.default = Reply.text(verdict_with([]))
    inputs = tmp_path / "t.jsonl"
    messages = [{"role": "user", "content": f"ticket TCK-123456, token {GITHUB}"}]
    inputs.write_text(json.dumps({"id": "t1", "messages": messages}) + "\n")

    def run(*extra: str) -> str:
        fake_llm.requests.clear()
        out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
        command = ["annotate", str(inputs), "--model", "openai/gpt-4o-mini", "--base-url",
                   fake_llm.openai_base_url, "--out", str(out), "--fewshot", "0", "--quiet",
                   "--no-cache", *extra]  # fmt: skip
        assert main(command) == 0
        return fake_llm.requests[-1].raw.decode()

    sent = run()
    assert GITHUB not in sent and "[REDACTED:github_token]" in sent and "TCK-123456" in sent
    sent = run("--redact-pattern", r"ticket=TCK-\d{6}")
    assert "[REDACTED:ticket]" in sent and "[REDACTED:github_token]" in sent
    sent = run("--no-redact")
    assert GITHUB in sent and "TCK-123456" in sent
    sent = run("--no-redact", "--redact-pattern", r"ticket=TCK-\d{6}")
    assert GITHUB in sent and "[REDACTED:ticket]" in sent
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["annotate", str(inputs), "--model", "heuristic", "--out", "x.jsonl",
              "--redact-pattern", "no equals sign"])  # fmt: skip
    assert "KIND=REGEX" in capsys.readouterr().err


def test_docstring_examples() -> None:
    import doctest

    import mast.privacy.redact

    result = doctest.testmod(mast.privacy.redact, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0
