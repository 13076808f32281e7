"""A local stand-in for the OpenAI and Anthropic HTTP APIs, for tests (no network).

It speaks just enough of both wire protocols for the official SDK clients to work against it:
``POST /v1/chat/completions`` (OpenAI Chat Completions) and ``POST /v1/messages`` (Anthropic
Messages), with the real response shapes: ids, ``choices[].message.content``,
``usage.prompt_tokens_details.cached_tokens``, Anthropic content blocks including
``tool_use``, ``usage.cache_read_input_tokens`` / ``cache_creation_input_tokens``, and both
providers' error bodies. Every request is recorded (path, headers, JSON body) so tests can
assert on what a client really sent.

Replies are scripted: :meth:`FakeLLMServer.enqueue` queues :class:`Reply` objects served
in order; when the queue is empty, ``responder`` (a function of the request) or
``default`` answers, else the server returns HTTP 500 saying nothing was scripted.

>>> with FakeLLMServer() as server:                       # doctest: +SKIP
...     server.enqueue(Reply.text('{"ok": true}'), Reply.error(429, retry_after=3))
...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="test")
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"

_ids = itertools.count(1)


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes

    @property
    def provider(self) -> str:
        return "anthropic" if self.path.endswith(ANTHROPIC_PATH) else "openai"


@dataclass
class Reply:
    """A scripted answer. Build with :meth:`text`, :meth:`tool`, :meth:`error` or :meth:`raw`.

    ``usage`` overrides token counts: keys ``input``, ``cached``, ``cache_write``, ``output``
    (``None`` as the whole value = omit usage from the response). ``delay`` sleeps before
    answering (for timeout tests).
    """

    kind: str
    content: str = ""
    tool_input: Any = None
    status: int = 200
    message: str = ""
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = "application/json"
    usage: dict[str, int] | None = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str | None = None

    @classmethod
    def text(
        cls,
        text: str,
        *,
        usage: dict[str, int] | None = None,
        delay: float = 0.0,
        finish_reason: str | None = None,
    ) -> Reply:
        """A normal answer whose text is ``text`` (OpenAI content / Anthropic text block)."""
        return cls(
            kind="text",
            content=text,
            usage={} if usage is None else usage,
            delay=delay,
            finish_reason=finish_reason,
        )

    @classmethod
    def tool(cls, tool_input: Any, *, text: str = "", usage: dict[str, int] | None = None) -> Reply:
        """An Anthropic ``tool_use`` answer (optionally preceded by a text block)."""
        return cls(kind="tool", tool_input=tool_input, content=text, usage=usage or {})

    @classmethod
    def no_usage(cls, text: str) -> Reply:
        """An answer without a ``usage`` object (as some compatible servers send)."""
        return cls(kind="text", content=text, usage=None)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        error_type: str | None = None,
        code: str | None = None,
        retry_after: float | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """An HTTP error in the provider's own error-body shape."""
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs["retry-after"] = str(retry_after)
        return cls(
            kind="error",
            status=status,
            message=message,
            error_type=error_type,
            error_code=code,
            headers=hdrs,
        )

    @classmethod
    def raw(cls, status: int, body: bytes, *, content_type: str = "application/json") -> Reply:
        """Exactly these bytes (malformed JSON, HTML error pages …)."""
        return cls(kind="raw", status=status, body=body, content_type=content_type)


_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def _usage_numbers(reply: Reply, request: Recorded, out_text: str) -> dict[str, int]:
    knobs = reply.usage or {}
    prompt = json.dumps(request.body) if request.body is not None else ""
    return {
        "input": knobs.get("input", _estimate(prompt)),
        "cached": knobs.get("cached", 0),
        "cache_write": knobs.get("cache_write", 0),
        "output": knobs.get("output", _estimate(out_text)),
    }


def _openai_body(reply: Reply, request: Recorded) -> dict[str, Any]:
    if reply.kind == "tool":
        raise ValueError("Reply.tool is an Anthropic shape; use Reply.text on OpenAI")
    model = (request.body or {}).get("model", "unknown")
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake{next(_ids):06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.finish_reason or "stop",
            }
        ],
    }
    if reply.usage is not None:
        n = _usage_numbers(reply, request, reply.content)
        body["usage"] = {
            "prompt_tokens": n["input"],
            "completion_tokens": n["output"],
            "total_tokens": n["input"] + n["output"],
            "prompt_tokens_details": {"cached_tokens": n["cached"], "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
    return body


def _anthropic_body(reply: Reply, request: Recorded) -> dict[str, Any]:
    req = request.body or {}
    content: list[dict[str, Any]] = []
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    out_text = reply.content
    stop = reply.finish_reason or "end_turn"
    if reply.kind == "tool":
        choice = req.get("tool_choice") or {}
        tools = req.get("tools") or [{}]
        name = choice.get("name") or tools[0].get("name", "tool")
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_fake{next(_ids):06d}",
                "name": name,
                "input": reply.tool_input,
            }
        )
        out_text += json.dumps(reply.tool_input)
        stop = "tool_use"
    body: dict[str, Any] = {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": req.get("model", "unknown"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }
    n = _usage_numbers(reply, request, out_text)
    # Anthropic's input_tokens counts only tokens that were neither read from nor written to
    # the cache; the knobs give totals, so subtract.
    body["usage"] = {
        "input_tokens": max(n["input"] - n["cached"] - n["cache_write"], 0),
        "cache_read_input_tokens": n["cached"],
        "cache_creation_input_tokens": n["cache_write"],
        "output_tokens": n["output"],
        "service_tier": "standard",
    }
    return body


def _error_body(reply: Reply, provider: str) -> dict[str, Any]:
    if provider == "anthropic":
        kind = reply.error_type or _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.message}}
    kind = reply.error_type or _OPENAI_ERROR_TYPES.get(reply.status, "server_error")
    return {
        "error": {"message": reply.message, "type": kind, "param": None, "code": reply.error_code}
    }


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 (random port) speaking both providers' protocols.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. Thread-safe: the
    recorded requests and the reply queue are guarded by a lock, so concurrent clients
    (bulk-runner tests) work.
    """

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.default: Reply | None = None
        self.responder: Callable[[Recorded], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url`` for the OpenAI SDK (it appends ``/chat/completions``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """``base_url`` for the Anthropic SDK (it appends ``/v1/messages``)."""
        return self.url

    # -- scripting ---------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Serve these replies, in order, to the next requests."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
        self.default = None
        self.responder = None

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    def _record_and_pick(self, request: Recorded) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return self.default


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            self._send(404, {"error": {"message": f"no route GET {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            path = self.path.split("?", 1)[0]
            request = Recorded(
                method="POST",
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            if not (path.endswith(OPENAI_PATH) or path.endswith(ANTHROPIC_PATH)):
                server._record_and_pick(request)
                self._send(404, {"error": {"message": f"no route POST {path}"}})
                return
            reply = server._record_and_pick(request)
            if reply is None:
                self._send(500, _error_body(Reply.error(500, "no reply scripted"), "openai"))
                return
            if reply.delay:
                time.sleep(reply.delay)
            # The client may have given up already (timeout tests).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(reply, request)

        def _answer(self, reply: Reply, request: Recorded) -> None:
            provider = request.provider
            if reply.kind == "raw":
                self._send_bytes(reply.status, reply.body, reply.content_type, reply.headers)
            elif reply.kind == "error":
                self._send(reply.status, _error_body(reply, provider), reply.headers)
            elif provider == "anthropic":
                self._send(200, _anthropic_body(reply, request), reply.headers)
            else:
                self._send(200, _openai_body(reply, request), reply.headers)

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode("utf-8")
            self._send_bytes(status, data, "application/json", headers or {})

        def _send_bytes(
            self, status: int, data: bytes, content_type: str, headers: dict[str, str]
        ) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler
