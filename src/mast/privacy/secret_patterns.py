"""The secret patterns behind :mod:`mast.redact`: what a secret looks like, and what does not.

Three families, applied in this order (see :data:`DEFAULT_PATTERNS`):

* **blocks**: private keys (PEM, OpenSSH, PGP, PuTTY ``.ppk``, kubeconfig key data), also
  when a log cut them off;
* **tokens by their shape**: provider keys with a documented prefix (``sk-proj-``, ``ghp_``,
  ``xoxb-``, ``AKIA``, ``SG.``, ``npm_`` …), JWTs, URL and connection-string passwords,
  authorization headers, and a few command lines (``mysql -p…``, ``curl -u user:pw``);
* **secrets by their name**: any value assigned to a name that says it holds a secret
  (``DB_PASSWORD=…``, ``"client_secret": "…"``, ``app.config['SECRET_KEY'] = '…'``). The
  value runs to the end of its quoted string (escaped quotes included) or, unquoted, to the
  next blank; a line that is only ``NAME=value`` gives the value up to the end of the line.

What is left alone on purpose: ``PWD``/``OLDPWD`` (a working directory), tokenizer special
tokens (``"pad_token": "[PAD]"``), pagination tokens, placeholders (``<token>``,
``${VAR}``, ``YOUR_API_KEY``, ``[REDACTED:…]``, ``***``), identifiers and code
(``token=user_input_42``, ``password = input()``), words joined by dashes (``sk-learn-…``)
and AWS's documented example keys (``AKIAIOSFODNN7EXAMPLE``).

>>> [p.kind for p in DEFAULT_PATTERNS][:3]
['private_key', 'private_key', 'private_key']
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re

from mast.privacy.pattern_parts import (
    _PATH,
    _R,
    SecretPattern,
    _base64ish,
    _has,
    _is_call,
    _mixed_case,
    _not_example,
    _not_placeholder,
    _prefixed,
    _random_token,
    _token,
    placeholder,
)

__all__ = ["DEFAULT_PATTERNS", "SecretPattern", "placeholder"]


_BLOCKS = (
    # A key block may contain anything the token patterns would also match: blocks first.
    SecretPattern.make(
        "private_key",
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        # A block cut off (log truncation): its header lines and base64 lines.
        r"|(?:(?:\s|\\[rn])+(?:[A-Za-z-]+:[^\n\\]*|[A-Za-z0-9+/=]{16,}))*)",
    ),
    # PuTTY .ppk: the private lines and their MAC (the public half stays).
    SecretPattern.make(
        "private_key",
        r"Private-Lines:[ \t]*\d+[ \t]*\r?\n((?:[A-Za-z0-9+/=]{4,}[ \t]*(?:\r?\n|$))+"
        r"(?:Private-MAC:[ \t]*[0-9a-fA-F]+)?)",
        group=1,
    ),
    # kubeconfig: client-key-data is a base64 PEM private key.
    SecretPattern.make(
        "private_key",
        r"client-key-data[\"']?[ \t]*[:=][ \t]*[\"']?([A-Za-z0-9+/]{16,}={0,2})",
        group=1,
    ),
)


def _bot_id(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """A Telegram bot token is ``<8-10 digit bot id>:AA<33 characters>``; the regex finds
    the fast literal ``:AA``, this walks back over the id."""
    start = match.start()
    while start > 0 and text[start - 1].isdigit() and match.start() - start <= 10:
        start -= 1
    digits = match.start() - start
    before = text[start - 3 : start] if start >= 3 else ""
    if not 8 <= digits <= 10 or (start and text[start - 1] in _NAME_CHARS and before != "bot"):
        return None
    return (start, match.end()) if _random_token(match.group(0)) else None


_PROVIDER_TOKENS = (
    SecretPattern.make(
        "jwt", _token("eyJ") + r"[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*" + _R
    ),
    # sk-ant- and sk-lf- before the generic OpenAI sk- form.
    _prefixed("anthropic_key", _token("sk-ant-") + r"[A-Za-z0-9_\-]{20,}", None),
    _prefixed(
        "langfuse_key", _token("sk-lf-") + r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", None
    ),
    SecretPattern.make(
        "openai_key",
        _token("sk-") + r"(?!ant-)(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}",
        check=_random_token,
    ),
    _prefixed(
        "gitlab_token",
        r"gl(?<![A-Za-z0-9_\-]gl)(?:pat|rt|dt|ptt|ft|soat|cbt|imt)-[A-Za-z0-9_\-]{20,}",
    ),
    _prefixed("google_api_key", _token("AIza") + r"[0-9A-Za-z_\-]{35}", None),
    _prefixed("google_oauth_secret", _token("GOCSPX-") + r"[A-Za-z0-9_\-]{24,}"),
    _prefixed("google_oauth_token", _token("ya29.") + r"[A-Za-z0-9_\-]{30,}"),
    _prefixed("google_oauth_token", r"1//0(?<![A-Za-z0-9_\-/]1//0)[A-Za-z0-9_\-]{40,}"),
    SecretPattern.make(
        "github_token",
        r"(?:"
        + _token("gh[pousr]_", 4)
        + r"[A-Za-z0-9]{36,}|"
        + _token("github_pat_")
        + r"[A-Za-z0-9_]{22,})"
        + _R,
    ),
    # Legacy GitHub tokens are 40 hex digits: only after "token " (Authorization: token …).
    SecretPattern.make(
        "github_token",
        r"token(?<![a-z0-9_]token)[ \t]+([0-9a-f]{40})(?![0-9a-z])",
        group=1,
        caseless=True,
    ),
    SecretPattern.make(
        "slack_token",
        r"x(?<![A-Za-z0-9_]x)(?:ox[abposre]|app)-[A-Za-z0-9\-]{10,}",
        check=lambda s: _has(s, "digit"),
    ),
    SecretPattern.make(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Za-z0-9]+/[A-Za-z0-9/]+",
    ),
    SecretPattern.make(
        "discord_webhook",
        r"discord(?:app)?\.com/api/webhooks/(\d{16,20}/[A-Za-z0-9_\-]{40,})",
        group=1,
    ),
    _prefixed(
        "discord_token",
        # The class first (the lookbehind after it), so the regex engine skips to M, N or O.
        _token("[MNO]", 1) + r"[A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}",
    ),
    SecretPattern.make("telegram_bot_token", r":AA[A-Za-z0-9_\-]{33}" + _R, locate=_bot_id),
    _prefixed("supabase_token", _token("sbp_") + r"[a-f0-9]{40}", None),
    # HashiCorp Vault service, batch and recovery tokens (hvs. / hvb. / hvr.), with no name
    _prefixed("vault_token", _token("hv[sbr]\\.", 4) + r"[A-Za-z0-9_\-]{20,}"),
    # The key of a Sentry DSN: https://<32 hex>@o123.ingest.sentry.io/456
    SecretPattern.make(
        "sentry_dsn", r"://([0-9a-f]{32})@(?=[a-z0-9.\-]*sentry)", group=1, caseless=True
    ),
    # A GCP service-account file's private_key_id ("private_key" is a secret word, but the
    # named rule stops at "_id")
    SecretPattern.make(
        "gcp_private_key_id",
        r"private_key_id[\"']?[ \t]*[:=][ \t]*[\"']?([0-9a-f]{40})(?![0-9a-z])",
        group=1,
        caseless=True,
    ),
    _prefixed("stripe_key", _token("[srp]k_(?:live|test)_", 8) + r"[A-Za-z0-9]{16,}"),
    _prefixed("stripe_webhook_secret", _token("whsec_") + r"[A-Za-z0-9]{24,}"),
    _prefixed("sendgrid_key", _token("SG.") + r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}"),
    _prefixed("npm_token", _token("npm_") + r"[A-Za-z0-9]{36}"),
    _prefixed("pypi_token", _token("pypi-Ag") + r"[A-Za-z0-9_\-]{50,}"),
    _prefixed(
        "huggingface_token", _token("hf_") + r"[A-Za-z0-9]{30,}", lambda s: _mixed_case(s[3:])
    ),
    _prefixed("groq_key", _token("gsk_") + r"[A-Za-z0-9]{40,}"),
    _prefixed("replicate_token", _token("r8_") + r"[A-Za-z0-9]{30,}"),
    _prefixed("xai_key", _token("xai-") + r"[A-Za-z0-9]{40,}"),
    _prefixed("perplexity_key", _token("pplx-") + r"[A-Za-z0-9]{32,}"),
    _prefixed("tavily_key", _token("tvly-") + r"(?:dev-|prod-)?[A-Za-z0-9]{20,}"),
    _prefixed("langsmith_key", _token("lsv2_") + r"(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{8,}"),
    _prefixed("shopify_token", _token("shp(?:at|ca|pa|ss)_", 6) + r"[a-fA-F0-9]{32}"),
    _prefixed("digitalocean_token", _token("do[por]_v1_", 7) + r"[a-f0-9]{64}"),
    _prefixed("databricks_token", _token("dapi") + r"[a-f0-9]{32}(?:-\d)?"),
    _prefixed("newrelic_key", _token("NRAK-") + r"[A-Z0-9]{27}"),
    _prefixed("linear_key", _token("lin_(?:api|oauth)_", 9) + r"[A-Za-z0-9]{40}"),
    _prefixed("postman_key", _token("PMAK-") + r"[a-f0-9]{24}-[a-f0-9]{34}"),
    _prefixed("atlassian_token", _token("ATATT3") + r"[A-Za-z0-9_\-=]{100,}"),
    # An AWS secret key written right after its access key id, without a variable name
    # (credentials CSV, prose). Before the id itself is replaced.
    SecretPattern.make(
        "aws_secret_key",
        r"A(?:KIA|SIA)(?<![A-Za-z0-9]....)[A-Z0-9]{16}(?![A-Za-z0-9])[\s\S]{0,100}?"
        r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        group=1,
        check=lambda s: _base64ish(s) and _not_example(s),
    ),
    SecretPattern.make(
        "aws_access_key_id",
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)(?<![A-Za-z0-9]....)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
        check=_not_example,
    ),
    SecretPattern.make(
        "aws_secret_key",
        r"(?:aws[_\-]?secret(?:[_\-]?access)?[_\-]?key|secret[_\-]?access[_\-]?key)"
        r"[\"']?[ \t]*(?:=>|[:=])[ \t]*[\"']?([a-z0-9/+]{40})(?![a-z0-9/+])",
        group=1,
        caseless=True,
        check=_not_example,
    ),
    SecretPattern.make(
        "azure_storage_key",
        r"accountkey[ \t]*=[ \t]*([a-z0-9+/]{40,}={0,2})",
        group=1,
        caseless=True,
    ),
    SecretPattern.make(
        "azure_sas", r"[?&]sig=([A-Za-z0-9%+/=]{20,})", group=1, check=_random_token
    ),
)

_HEADERS = (
    # Authorization headers (the scheme stays, the credential goes).
    SecretPattern.make(
        "bearer_token",
        r"bearer(?<![a-z0-9_]......)[ \t]+([a-z0-9._~+/\-]{16,}=*)(?![a-z0-9._~+/=\-])",
        group=1,
        check=_random_token,
        caseless=True,
    ),
    SecretPattern.make(
        "basic_auth",
        r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?[ \t]*basic[ \t]+([a-z0-9+/]{6,}={0,2})",
        group=1,
        caseless=True,
    ),
    # Docker's config.json: "auth": base64 of user:password.
    SecretPattern.make(
        "basic_auth",
        r"[\"']auth[\"'][ \t]*:[ \t]*[\"']([a-z0-9+/]{8,}={0,2})[\"']",
        group=1,
        caseless=True,
    ),
    SecretPattern.make(
        "api_key_header",
        r"(?:x-api-key|api-key|x-auth-token|x-goog-api-key|private-token|x-shopify-access-token"
        r"|x-vault-token)[\"']?[ \t]*[:=][ \t]*[\"']?([a-z0-9._~+/\-]{12,})",
        group=1,
        check=lambda s: _random_token(s) and _not_placeholder(s),
        caseless=True,
    ),
)

# A command-line argument: quoted, or up to the next blank.
_ARG = r"(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"|;&]+))"


_COMMAND_LINES = (
    # Passwords in URLs: scheme://user:password@host (user may be empty: redis://:pw@host).
    SecretPattern.make(
        "url_password",
        r"://[^\s:/?#@\"'<>\[\]]*:(?!\[redacted)([^\s@/\"'<>]+)@(?=[a-z0-9\[])",
        group=1,
        check=lambda s: _not_placeholder(s) and not re.match(r"\d+[?#]", s),  # a port
        caseless=True,
    ),
    # Connection strings: Server=…;User Id=…;Password=…;  and --password=… on command lines.
    SecretPattern.make(
        "password",
        r"p(?<![a-z0-9_]p)(?:assword|wd)[ \t]*=[ \t]*(?!\[redacted|/|~/|[a-z]:\\)"
        r"([^;\s\"'&\\]+)(?=[;\s\"'&\\]|$)",
        group=1,
        check=lambda s: _not_placeholder(s) and not _PATH.match(s),
        caseless=True,
    ),
    # mysql -pSECRET / -p'SECRET' (no blank: "-p" alone makes mysql ask).
    SecretPattern.make(
        "password",
        r"(?:mysql|mysqldump|mysqladmin|mariadb)(?<![a-z0-9_\-/].....)[^\n|;&]*?[ \t]-p"
        r"(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"\-][^\s'\"]*))",
        group=(1, 2, 3),
        check=_not_placeholder,
        caseless=True,
    ),
    # curl -u user:password, --user 'user:password'; sshpass -p password.
    SecretPattern.make(
        "password",
        r"(?:-u|--user)[ \t]+['\"]?[^\s:'\"]+:(?!\[redacted)([^\s'\"]+)",
        group=1,
        check=_not_placeholder,
    ),
    SecretPattern.make(
        "password",
        r"sshpass[ \t]+-p[ \t]*" + _ARG,
        group=(1, 2, 3),
        check=_not_placeholder,
    ),
    # redis-cli -a …, docker/podman/helm registry login -p …, echo '…' | sudo -S.
    SecretPattern.make(
        "password",
        r"redis-cli[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+" + _ARG,
        group=(1, 2, 3),
        check=_not_placeholder,
    ),
    SecretPattern.make(
        "password",
        r"(?:docker|podman|nerdctl|helm registry|buildah|skopeo) login[^\n|;&]*?[ \t]"
        r"(?:-p|--password)[ \t]+" + _ARG,
        group=(1, 2, 3),
        check=_not_placeholder,
    ),
    SecretPattern.make(
        "password",
        r"echo[ \t]+" + _ARG + r"[ \t]*\|[ \t]*sudo[ \t]+(?:-[a-zA-Z]+[ \t]+)*?-[a-zA-Z]*S",
        group=(1, 2, 3),
        check=_not_placeholder,
    ),
    # .netrc: machine … login … password …
    SecretPattern.make(
        "password",
        r"\blogin[ \t]+\S+[ \t]*\r?\n?[ \t]*password[ \t]+(\S+)",
        group=1,
        check=_not_placeholder,
    ),
    # aws configure set aws_secret_access_key … (a blank, not "=", after the name).
    SecretPattern.make(
        "aws_secret_key",
        r"configure set[ \t]+(?:aws_secret_access_key|aws_session_token)[ \t]+(\S+)",
        group=1,
        check=lambda s: _not_placeholder(s) and _not_example(s),
    ),
    # .pgpass lines (host:port:database:user:password), the first after the file is named
    SecretPattern.make(
        "password",
        r"pgpass[\s\S]{0,300}?(?m:^)[^:\s]+:(?:\d+|\*):[^:\s]+:[^:\s]+:(\S+)(?m:$)",
        group=1,
        check=_not_placeholder,
    ),
    SecretPattern.make("wandb_key", r"wandb login[ \t]+(?:--?\S+[ \t]+)*([0-9a-f]{40})\b", group=1),
)

# --------------------------------------------------------------------------- by name

_PASSWORD_WORDS = r"(?:passw(?:or)?d|pwd|passphrase|(?:become|ssh|sudo)_pass)"
_SECRET_WORDS = (
    r"(?:secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|auth[_\-]?key"
    r"|signing(?:[_\-]?key)?|encryption[_\-]?key|master[_\-]?key|credentials?)"
)
# What may follow the word inside the name: SECRET_KEY_BASE, password_hash, TOKEN_VALUE.
_SUFFIX = r"(?:[_\-.]?(?:key|base|value|data|str|string|hash|b64|base64)){0,2}"
_OPERATOR = r"(?:[\"'`]?\])?[\"'`]?[ \t]*(=>|:=|[:=])[ \t]*"
_VALUE = r"(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|[^\s\"'`\\]+)"
# Names that end in a secret word but hold something else.
_NOT_SECRET_NAME = re.compile(
    r"^(?:old)?pwd$|(?:^|[_\-.])(?:pad|eos|bos|unk|mask|cls|sep|start|end|special|page"
    r"|next_page|prev_page|previous_page|continuation|sync|cursor|stop)_?tokens?$"
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SYMBOLS = frozenset("!@#$%^&*()+=~?|")
_NEXT_ASSIGNMENT = re.compile(r"[;,&](?=[A-Za-z_][\w.\-]*=)")
_PLAIN_WORDS = re.compile(r"^(?:[ \t]+[^\s\"'`|&;<>=/.\-][^\s\"'`|&;<>=/]*){1,4}[ \t]*$")


def _name_start(text: str, end: int) -> int:
    start = end
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _trim_bare(value: str, query: bool) -> str:
    """An unquoted value without what clearly follows it: the next ``&name=`` of a query,
    a ``;name=`` / ``,name=`` assignment, trailing separators, unbalanced closers."""
    if query:
        value = re.split(r"[&#]", value, maxsplit=1)[0]
    cut = _NEXT_ASSIGNMENT.search(value)
    if cut:
        value = value[: cut.start()]
    while value and value[-1] in ",;":
        value = value[:-1]
    for opener, closer in ("()", "[]", "{}"):
        while value.endswith(closer) and value.count(closer) > value.count(opener):
            value = value[:-1]
    return value


def _bare_ok(value: str, name: str, operator: str) -> bool:
    if len(value) < 4 or value[0] in "[{(<" or not _not_placeholder(value) or _is_call(value):
        return False  # _is_call: bare code such as token = get_token(scope="read")
    if _random_token(value):
        return True
    if any(c in _SYMBOLS for c in value) and _has(value, "alpha"):
        return True  # p@ss!word, django-insecure-(…)
    # NAME=value in an environment file or listing: any value that is not a placeholder.
    return operator == "=" and name.upper() == name and len(value) >= 6


def _by_name(match: re.Match[str], text: str) -> tuple[int, int] | None:
    word_end = match.start(1)  # group 1 is the operator: the name ends where it starts
    name_start = _name_start(text, match.start())
    name = text[name_start:word_end].rstrip("\"'`] \t").lstrip("-_.:")
    if _NOT_SECRET_NAME.search(name.lower()):
        return None
    a, b = match.span(2)
    value = text[a:b]
    if value[0] in "\"'`":
        inner = value[1:-1]
        if len(inner.strip()) < 3 or not _not_placeholder(inner):
            return None
        return a + 1, b - 1
    before = text[name_start - 1] if name_start else ""
    operator = match.group(1)
    trimmed = _trim_bare(value, query=before in "?&")
    if not _bare_ok(trimmed, name, operator):
        return None
    end = a + len(trimmed)
    line_start = text.rfind("\n", 0, name_start) + 1
    head = text[line_start:name_start].strip()
    if trimmed == value and operator == "=" and head in ("", "export"):
        # A line that is only NAME=value: the value runs to the end of the line (a
        # passphrase with blanks), unless what follows looks like a command.
        line_end = text.find("\n", b)
        rest = text[b : len(text) if line_end == -1 else line_end]
        if rest.strip() and _PLAIN_WORDS.match(rest):
            end = b + len(rest.rstrip())
    return a, end


def _named(kind: str, words: str) -> tuple[SecretPattern, SecretPattern]:
    """``name = value`` and ``--name value`` for names built around ``words``."""
    assignment = SecretPattern.make(
        kind, words + _SUFFIX + _OPERATOR + r"(?!\[redacted)" + _VALUE, caseless=True,
        locate=_by_name,
    )  # fmt: skip
    flag = SecretPattern.make(
        kind,
        r"-(?<![a-z0-9_\-]-)-?(?:[a-z0-9]+-)*" + words + r"([ \t]+|[\"'],[ \t]*[\"'])"
        r"(?!\[redacted)([^\s\"'`\-][^\s\"'`]*)",
        caseless=True,
        locate=_flag_value,
    )
    return assignment, flag


def _flag_value(match: re.Match[str], text: str) -> tuple[int, int] | None:
    a, b = match.span(2)
    value = _trim_bare(text[a:b], query=False)
    return (a, a + len(value)) if _bare_ok(value, "", "") else None


def _session_cookie(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The value of a session or auth cookie, on a ``Cookie:`` / ``Set-Cookie:`` line only
    (``session=…`` elsewhere is often an id a judge needs)."""
    line_start = text.rfind("\n", 0, match.start()) + 1
    if "cookie" not in text[line_start : match.start() + 7].lower():
        return None
    a, b = match.span(2)
    value = text[a:b]
    if not _not_placeholder(value) or not (_random_token(value) or len(value) >= 16):
        return None
    return a, b


_COOKIES = (
    # After the named rules, so that "auth_token=…" in a cookie keeps its usual kind.
    SecretPattern.make(
        "session_cookie",
        r"(?:cookie[ \t]*:|;)[ \t]*"
        r"([a-z0-9_.\-]*(?:sess|sid|auth|token|jwt|remember|login)[a-z0-9_.\-]*)"
        r"=([^;\s'\"\\]{8,})",
        caseless=True,
        locate=_session_cookie,
    ),
)


def _encoded_secret(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """A base64 blob that decodes to text holding a secret (``{"api_key": …}``, an .env
    file): the whole blob goes. The head is decoded first, so images and hashes cost
    little."""
    blob = match.group(0)
    start = match.start()
    if start and (text[start - 1].isalnum() or text[start - 1] in "+/=_-"):
        return None  # inside a longer word
    try:
        head = base64.b64decode(blob[:32])
        if not head.isascii() or not all(c >= 32 or c in (9, 10, 13) for c in head):
            return None
        plain = base64.b64decode(blob + "=" * (-len(blob) % 4)).decode("utf-8")
    except (ValueError, binascii.Error):
        return None
    for pattern in _PLAIN_PATTERNS:
        if pattern.spans(plain, plain.lower() if pattern.caseless else plain):
            return match.span()
    return None


_BLOB_END = r"={0,2}(?![A-Za-z0-9+/=_\-])"
_ENCODED = (
    # Scanning every text for base64 would cost more than all other patterns together, so
    # blobs are looked at where they can hold a secret: base64 of a JSON object (it starts
    # with eyJ, eyAi or ewo), and any blob in a text that speaks of base64 or holds a
    # Kubernetes-style data: section.
    SecretPattern.make(
        "encoded_secret",
        r"(?:eyJ|eyAi|ewo)[A-Za-z0-9+/]{21,65536}" + _BLOB_END,
        locate=_encoded_secret,
    ),
    dataclasses.replace(
        SecretPattern.make(
            "encoded_secret", r"[A-Za-z0-9+/]{24,65536}" + _BLOB_END, locate=_encoded_secret
        ),
        needles=("base64", "b64", "data:"),
    ),
)

_PLAIN_PATTERNS: tuple[SecretPattern, ...] = (
    *_BLOCKS,
    *_PROVIDER_TOKENS,
    *_HEADERS,
    *_COMMAND_LINES,
    *_named("password", _PASSWORD_WORDS),
    *_named("secret", _SECRET_WORDS),
    *_COOKIES,
)

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (*_PLAIN_PATTERNS, *_ENCODED)
"""The secret patterns the judge applies by default, most specific first."""
