"""Keep credentials out of log records: of mast and of the HTTP and SDK clients it drives.

The HTTP client logs every request's URL at INFO (``HTTP Request: POST https://user:pw@…``),
so a ``base_url`` carrying ``user:password@`` or ``?api-key=…`` would reach any log a user
turns on. :func:`install` puts one :class:`CredentialFilter` on mast's loggers and on those
of httpx / httpcore (and their ``2`` successors), openai and anthropic. The filter rewrites a
record only when its message holds a URL with credentials or a secret a judge registered
(:func:`register`; :class:`~mast.privacy.scrub.Scrubber` does it for every judge), with the
same replacement as :mod:`mast.privacy.scrub`. A filter runs only for records a logger lets
through, so with logging off it costs nothing.

>>> record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "HTTP Request: %s %s",
...                            ("POST", "https://bot:pw-123@proxy.example/v1?api-key=k"), None)
>>> _ = CredentialFilter().filter(record)
>>> record.getMessage()
'HTTP Request: POST https://[REDACTED:url_credentials]@proxy.example/v1?api-key=[REDACTED:api_key]'
"""

from __future__ import annotations

import logging
import re
import threading

__all__ = ["CredentialFilter", "install", "register"]

# Loggers of the libraries whose records can carry a request URL or header (their children
# are separate loggers: a logger's filter does not see records of its children).
_PREFIXES = ("mast", "httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic")
_KNOWN = (
    *("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic"),
    *(f"{lib}.{part}" for lib in ("httpcore", "httpcore2")
      for part in ("connection", "http11", "http2", "proxy", "socks")),
    *(f"{sdk}.{part}" for sdk in ("openai", "anthropic")
      for part in ("_base_client", "_response", "_legacy_response")),
    *("mast", "mast.bulk.runner", "mast.distributed", "mast.judge.offload"),
    "mast.judge.providers.schema_choice",
)  # fmt: skip

# scheme://userinfo@ (userinfo without "/", "@" or spaces) and credential-like query values.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s?#]+@")
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&](?:api[-_]?key|key|token|access[-_]?token|sig|signature|password|secret)=)"
    r"[^&#\s\"']+",
    re.IGNORECASE,
)
_MIN_LENGTH = 8  # as mast.privacy.scrub: shorter values would replace ordinary words

_secrets: set[str] = set()
_lock = threading.Lock()


def register(secrets: list[str]) -> None:
    """Remember credentials (API keys, URL passwords) to scrub from every filtered record."""
    kept = {s for s in secrets if len(s) >= _MIN_LENGTH}
    if kept - _secrets:
        with _lock:
            _secrets.update(kept)


def scrub(text: str) -> str:
    """``text`` with URL credentials and registered secrets replaced."""
    if "@" in text:
        text = _USERINFO.sub(r"\g<scheme>[REDACTED:url_credentials]@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\g<name>[REDACTED:api_key]", text)
    for secret in tuple(_secrets):
        if secret in text:
            text = text.replace(secret, "[REDACTED:api_key]")
    return text


class CredentialFilter(logging.Filter):
    """Rewrites a record's message without credentials (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a broken format string is the handler's to report
            return True
        clean = scrub(text)
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrub(formatted)
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


_FILTER = CredentialFilter()


def _ours(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in _PREFIXES)


def install() -> None:
    """Put the filter on the known loggers and on every existing logger of those libraries
    (cheap and idempotent: called when mast loads and whenever a judge is made)."""
    names = {*_KNOWN, *(n for n in list(logging.Logger.manager.loggerDict) if _ours(n))}
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
