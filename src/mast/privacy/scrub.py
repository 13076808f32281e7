"""Keep the judge's credentials out of everything it writes, whatever a server sends back.

A server, or a proxy in front of it, may echo a request's headers in its answer: the API
key can come back inside the answer text, the model name or the response id of an HTTP 200
answer, and from there it would reach the results file (``raw``, ``summary``,
``judge.response_ids``, ``judge.response_model``), the response cache and the logs. The
judge passes every answer through a :class:`Scrubber` before anything reads or stores it.

>>> s = Scrubber(["sk-live-judge-key-0123456789"])
>>> s.text("echo: Bearer sk-live-judge-key-0123456789")
'echo: Bearer [REDACTED:api_key]'
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Iterable
from typing import Any, ClassVar, Protocol, TypeVar

from mast.privacy import log_scrub
from mast.privacy.redact import Redactor

__all__ = ["Scrubber", "safe_url", "url_credentials"]


class _Answer(Protocol):
    """The text fields of a provider's answer (a judge ``Completion`` dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def text(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def response_id(self) -> str | None: ...
    @property
    def finish_reason(self) -> str | None: ...


_A = TypeVar("_A", bound=_Answer)

# Shorter values are not secrets worth the risk of replacing ordinary words.
_MIN_LENGTH = 8
_NOT_SECRET = {"no-key-needed"}


def safe_url(url: str | None) -> str | None:
    """``base_url`` without credentials or query (it is recorded in annotations).

    >>> safe_url("https://bot:pw@proxy.example:8443/v1?key=abc")
    'https://proxy.example:8443/v1'
    """
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_credentials(url: str | None) -> list[str]:
    """The password and query values of a ``base_url`` (``https://u:pw@host/v1?key=…``).

    >>> url_credentials("https://bot:pw-0123456789@proxy.example/v1?api-key=abcdef0123")
    ['pw-0123456789', 'abcdef0123']
    """
    if not url:
        return []
    parts = urllib.parse.urlsplit(url)
    values = [parts.password or ""]
    values += [v for _, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=False)]
    return [v for v in values if v]


class Scrubber:
    """Replaces ``secrets`` (and their JSON- and URL-escaped forms) with
    ``[REDACTED:api_key]`` in texts and in every text field of a provider's answer
    (:class:`~mast.judge.providers.Completion`)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        kept = [s for s in secrets if len(s) >= _MIN_LENGTH and s not in _NOT_SECRET]
        if kept:  # the log filter scrubs them too, on the SDK loggers imported by now
            log_scrub.register(kept)
            log_scrub.install()
        self.literals = {s: "api_key" for s in kept}
        """The credentials themselves, as ``{value: "api_key"}`` (for a trace redactor)."""
        forms: dict[str, str] = {}
        for secret in kept:
            encoded = (
                json.dumps(secret)[1:-1],
                urllib.parse.quote(secret, safe=""),
                urllib.parse.quote_plus(secret, safe=""),
            )
            for form in (secret, *encoded):
                forms[form] = "api_key"
        self._redactor = Redactor.off(literals=forms)

    def __bool__(self) -> bool:
        return self._redactor.enabled

    def __repr__(self) -> str:
        return "Scrubber(…)"  # never the secrets

    def text(self, value: str) -> str:
        """``value`` without the secrets."""
        return self._redactor.redact(value).text if self and value else value

    def completion(self, completion: _A) -> _A:
        """``completion`` with its text, model name, response id and finish reason scrubbed
        (the same object when none of them held a secret)."""
        if not self:
            return completion
        new = dataclasses.replace(
            completion,
            text=self.text(completion.text),
            model=self.text(completion.model),
            response_id=self.text(completion.response_id or "") or completion.response_id,
            finish_reason=self.text(completion.finish_reason or "") or completion.finish_reason,
        )
        return completion if new == completion else new
