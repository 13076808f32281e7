"""The provider interface: one async call from a rendered :class:`Prompt` to a :class:`Completion`.

A provider knows one SDK and nothing else: no retries, caching or concurrency (the runner adds
those once, for every provider), and the SDK's own retries are switched off so that the
runner stays in control. API keys live only inside the provider object and are masked in its
``repr``; they never reach prompts, results, caches or logs.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import importlib
import inspect
import os
import time
import urllib.parse
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Literal

from mast.errors import AuthError, MissingDependencyError, ProviderError
from mast.judge.prompt.types import Prompt
from mast.judge.providers._errors import stated_limits, translate_error, unexpected_answer
from mast.judge.providers.usage import Usage

StructuredMode = Literal["auto", "json_schema", "tool", "none"]


@dataclass(frozen=True)
class CallConfig:
    """What to ask the model for: which model, how to sample, which output shape.

    ``json_schema`` is the schema of the answer (``None`` = plain text); ``structured``
    chooses how it is requested: ``"json_schema"`` (OpenAI ``response_format`` / Anthropic
    ``output_config.format``), ``"tool"`` (Anthropic forced tool use), ``"auto"`` (the
    provider picks what the model supports) or ``"none"`` (describe it in the prompt only).
    """

    model: str
    temperature: float | None = 0.0
    max_tokens: int | None = None
    json_schema: dict[str, Any] | None = None
    schema_name: str = "mast_verdict"
    timeout: float | None = 120.0
    structured: StructuredMode = "auto"


@dataclass(frozen=True)
class Completion:
    """One model answer: its text (always read by the parser), usage and provenance.

    ``text`` is the JSON of the tool input when the answer came through a tool call
    (``via_tool`` is then True), else the concatenated text the model wrote.
    """

    text: str
    usage: Usage
    model: str
    response_id: str | None
    latency_s: float
    finish_reason: str | None = None
    via_tool: bool = False
    stated_limits: tuple[float | None, float | None] | None = None
    """(requests, tokens) per minute the answer's rate-limit headers state (OpenAI
    ``x-ratelimit-limit-*``, Anthropic ``anthropic-ratelimit-*-limit``); None when it sent
    none (or the answer came from a batch or the cache)."""


def mask_key(key: str | None) -> str:
    """A key as it may appear in a repr: never more than a hint of its last characters."""
    if not key:
        return "None"
    return "'***" + (key[-4:] if len(key) >= 20 else "") + "'"


def import_sdk(module: str, install: str) -> ModuleType:
    """Import an SDK lazily; a missing one raises an error ending with the install line."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"the {module!r} package is needed for this provider but is not installed. "
            f"Install it with: {install}"
        ) from exc


@functools.lru_cache(maxsize=64)  # asked several times per call, of one or two URLs
def endpoint_of(url: str | None) -> str | None:
    """``url`` as an endpoint: lower-case scheme and host, the port unless it is the scheme's
    default, the path without a trailing slash; user, password, query and fragment dropped.

    >>> endpoint_of("HTTPS://bot:pw@Proxy.Example:443/v1/?key=abc")
    'https://proxy.example/v1'
    >>> endpoint_of("http://127.0.0.1:8080")
    'http://127.0.0.1:8080'
    """
    if not url:
        return None
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host += f":{port}"
    return urllib.parse.urlunsplit((scheme, host, parts.path.rstrip("/"), "", ""))


def split_userinfo(url: str | None) -> tuple[str | None, list[str]]:
    """``url`` without ``user:password@``, and the credentials it carried (the password,
    ``user:password`` and its base64, as an HTTP client would send them).

    >>> url, secrets = split_userinfo("http://bot:pw-0123456789@proxy.example:8080/v1")
    >>> url, secrets[:2]
    ('http://proxy.example:8080/v1', ['pw-0123456789', 'bot:pw-0123456789'])
    """
    if not url or "@" not in url:
        return url, []
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, []
    netloc = parts.netloc.rpartition("@")[2]
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    pair = f"{user}:{password}"
    secrets = [password, pair, base64.b64encode(pair.encode()).decode()]
    return clean, [s for s in secrets if s and s != ":"]


class Provider(ABC):
    """Base class of the model providers (``openai``, ``anthropic``, …).

    Subclasses implement :meth:`complete` and :meth:`_make_client`. SDK clients are bound to
    the event loop that created them, so one is made per running loop (the sync
    ``Judge.annotate`` runs a fresh loop per call and closes its client with :meth:`aclose`).
    """

    name: ClassVar[str]
    sdk: ClassVar[str]
    env_var: ClassVar[str]
    install: ClassVar[str]
    endpoint_env: ClassVar[str | None] = None
    """The environment variable the SDK reads its server URL from (e.g. ``OPENAI_BASE_URL``)."""

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None) -> None:
        # Fail when the judge is made, not on the first trace of a long run.
        import_sdk(self.sdk, self.install)
        # The server is resolved once, here, as the SDK would (argument, its environment
        # variable, its default), and handed to the SDK explicitly: what is recorded and
        # keyed is then what answers, even if the variable changes later.
        from_env = os.environ.get(self.endpoint_env) if self.endpoint_env else None
        # user:password@ in the URL would make httpx send Basic auth *instead of* the API
        # key; it is removed before any client is built, and kept only to be scrubbed.
        url, self._url_secrets = split_userinfo(base_url or from_env or self.default_url())
        self.base_url = split_userinfo(base_url)[0]
        self.url: str | None = url
        if self._url_secrets:
            warnings.warn(
                f"the {self.name} server URL carries a user name and password; mast removes "
                "them before calling it (HTTP clients would send them as Basic auth instead "
                "of the API key). Pass the key with the provider's key variable.",
                UserWarning,
                stacklevel=3,
            )
        key = api_key or os.environ.get(self.env_var) or None
        if key is None and self.url is not None and not self.default_endpoint:
            # Local OpenAI-compatible servers (vLLM, Ollama) often need no key, but the SDKs
            # refuse to start without one: send an obvious placeholder.
            key = "no-key-needed"
        if key is None:
            raise AuthError(
                f"no API key for provider {self.name!r}: set the {self.env_var} environment "
                f"variable (export {self.env_var}=…), or use model 'heuristic' to run "
                "without a key",
                provider=self.name,
            )
        self.__api_key = key
        # One SDK client per event loop: httpx connections cannot cross loops.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def __getstate__(self) -> dict[str, Any]:
        # SDK clients belong to one event loop of one process: a copy (e.g. a judge shipped
        # to a Ray worker) makes its own on first use.
        state = dict(self.__dict__)
        state.pop("_clients", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = weakref.WeakKeyDictionary()

    @property
    def _api_key(self) -> str:
        return self.__api_key

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, api_key={mask_key(self.__api_key)})"
        )

    def default_url(self) -> str | None:
        """The server the SDK talks to when neither ``base_url`` nor its variable is set."""
        return None

    @property
    def endpoint(self) -> str | None:
        """The server this provider calls, as recorded: scheme, host, port and path, never
        credentials or a query (see :func:`endpoint_of`)."""
        return endpoint_of(self.url)

    @property
    def default_endpoint(self) -> bool:
        """Whether :attr:`endpoint` is the provider's own public default (it is then left out
        of cache keys and config hashes, so that records made before endpoints were
        recorded still resume)."""
        default = self.default_url()
        return default is not None and endpoint_of(default) == self.endpoint

    def credentials(self) -> list[str]:
        """Every secret this provider sends with a request: the key (a provider that sends
        other credential headers adds their values), and what a server URL carried as
        ``user:password@`` (never sent, but a user typed it). The judge scrubs them from
        everything it writes."""
        return [self.__api_key, *self._url_secrets]

    @abstractmethod
    def _make_client(self) -> Any:
        """Build the SDK's async client (SDK retries off)."""

    def client(self) -> Any:
        """The SDK client for the running event loop (made on first use in that loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make_client()
        return client

    async def aclose(self) -> None:
        """Close the SDK client of the running loop, if one was made."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def effective_temperature(self, config: CallConfig) -> float | None:
        """The temperature this provider actually sends for ``config`` (None = not sent)."""
        return config.temperature

    @abstractmethod
    def request_body(self, prompt: Prompt, config: CallConfig) -> dict[str, Any]:
        """The keyword arguments of the SDK call (what goes over the wire, minus the key)."""

    @abstractmethod
    async def complete(self, prompt: Prompt, config: CallConfig) -> Completion:
        """Send ``prompt`` and return the answer; SDK errors become ``ProviderError``s."""

    async def _send(
        self,
        create: Callable[..., Awaitable[Any]],
        body: dict[str, Any],
        config: CallConfig,
        sdk_error: type[BaseException],
    ) -> tuple[Any, float, tuple[float | None, float | None] | None]:
        """``await create(**body)`` with the call's timeout: the answer, its latency (s)
        and the rate limits its headers state (None: none sent).

        ``create`` may be the SDK's ``with_raw_response`` variant: the HTTP answer is then
        parsed here, and its headers read for the provider's stated rate limits.
        ``sdk_error`` (the SDK's base exception), a timeout, or the ``ValueError`` the SDK
        lets escape for a 200 answer whose body is not JSON become a ``ProviderError``.
        """
        start = time.perf_counter()
        stated: tuple[float | None, float | None] | None = None
        try:
            response = await create(**body, timeout=config.timeout)
            headers = getattr(response, "headers", None)
            if headers is not None and callable(getattr(response, "parse", None)):
                requests, tokens = stated_limits(headers)
                stated = None if requests is None and tokens is None else (requests, tokens)
                response = response.parse()
                if inspect.isawaitable(response):  # anthropic's async raw response
                    response = await response
        except (sdk_error, asyncio.TimeoutError, ValueError) as exc:
            raise self._translate_error(exc, config.model) from exc
        return response, time.perf_counter() - start, stated

    def _translate_error(self, exc: BaseException, model: str) -> ProviderError:
        """``exc`` as the ``ProviderError`` that fits it (the API key scrubbed from it)."""
        return translate_error(
            exc, provider=self.name, model=model, env_var=self.env_var, secret=self.credentials()
        )

    def _unexpected_answer(self, answer: Any, model: str, expected: str) -> ProviderError:
        """The error for a 200 answer that is not ``expected`` (e.g. a proxy's HTML page: the
        SDK hands back its text)."""
        return unexpected_answer(
            answer, provider=self.name, model=model, expected=expected, secret=self.credentials()
        )
