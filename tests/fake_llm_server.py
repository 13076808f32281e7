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

For bulk-runner tests it also counts requests in flight (``in_flight``, ``max_in_flight``),
stamps each request with monotonic start/finish times, can drop a connection without an
answer (:meth:`Reply.reset`), and implements both providers' batch APIs: OpenAI
``/v1/files`` (multipart upload, content download) and ``/v1/batches`` (create, retrieve),
Anthropic ``/v1/messages/batches`` (create, retrieve, ``/results`` JSONL). A batch stays in
progress for ``batch_polls`` retrieves, then each item is answered like a live request
(queue, ``responder``, ``default``) and recorded in ``batch_requests``; an error reply
becomes that item's error (a partial batch failure).

>>> with FakeLLMServer() as server:                       # doctest: +SKIP
...     server.enqueue(Reply.text('{"ok": true}'), Reply.error(429, retry_after=3))
...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="test")
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
OPENAI_FILES = "/v1/files"
OPENAI_BATCHES = "/v1/batches"
ANTHROPIC_BATCHES = "/v1/messages/batches"

_ids = itertools.count(1)


def wire_protocol(path: str) -> str | None:
    """Which API shape a model-call path speaks: ``"openai"`` for Chat Completions (also
    Azure's ``/openai/deployments/<name>/chat/completions`` and Gemini's
    ``/v1beta/openai/chat/completions``), ``"anthropic"`` for Messages (also Bedrock's
    ``/model/<id>/invoke`` and Vertex's ``…/models/<model>:rawPredict``), else ``None``."""
    path = path.split("?", 1)[0]
    if path.endswith(ANTHROPIC_PATH) or path.endswith("/invoke") or path.endswith(":rawPredict"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai"
    return None


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes
    started: float = 0.0  # time.monotonic() when the request was read
    finished: float | None = None  # when the answer was sent (None: not, or not yet)
    custom_id: str | None = None  # set for batch items (see FakeLLMServer.batch_requests)
    query: str = ""  # the URL's query string (Azure sends api-version there)

    @property
    def provider(self) -> str:
        return wire_protocol(self.path) or "openai"

    @property
    def is_completion(self) -> bool:
        """A live model call (chat completion or message), not a batch or file request."""
        return self.custom_id is None and wire_protocol(self.path) is not None


@dataclass
class Reply:
    """A scripted answer. Build with :meth:`text`, :meth:`tool`, :meth:`error` or :meth:`raw`.

    ``usage`` overrides token counts: keys ``input``, ``cached``, ``cache_write``, ``output``
    (``None`` as the whole value = omit usage from the response). ``delay`` sleeps before
    answering (for timeout tests). Faults: :meth:`reset` (connection dropped),
    :meth:`truncated` (body cut short), :meth:`dripping` (body sent slowly), :meth:`raw`
    with another ``content_type`` (an HTML page from a proxy).
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
    truncate_at: int | None = None  # send only this many body bytes, then close
    truncate_share: float | None = None  # or only this share of them
    drip: float = 0.0  # seconds between body chunks of drip_chunk bytes (slow drip)
    drip_chunk: int = 64
    model: str | None = None  # the answer's model name (default: the requested model)
    response_id: str | None = None  # the answer's id (default: a fresh fake id)

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

    @classmethod
    def reset(cls, *, delay: float = 0.0) -> Reply:
        """Close the connection without any answer (a dropped connection / reset)."""
        return cls(kind="reset", delay=delay)

    def with_delay(self, delay: float) -> Reply:
        """This reply, answered after ``delay`` seconds."""
        self.delay = delay
        return self

    def truncated(self, keep: int | float = 0.5) -> Reply:
        """This reply with its body cut: the headers announce the full length, then only
        ``keep`` bytes (an int) or that share of them (a float) arrive and the connection
        closes (a proxy or server dying mid-answer)."""
        if isinstance(keep, float):
            self.truncate_share = keep
        else:
            self.truncate_at = keep
        return self

    def dripping(self, interval: float, *, chunk: int = 64) -> Reply:
        """This reply with its body sent ``chunk`` bytes at a time, ``interval`` seconds
        apart (a slow or congested server: each read succeeds, the whole takes long)."""
        self.drip, self.drip_chunk = interval, chunk
        return self


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
    model = reply.model or (request.body or {}).get("model", "unknown")
    body: dict[str, Any] = {
        "id": reply.response_id or f"chatcmpl-fake{next(_ids):06d}",
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
        "id": reply.response_id or f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or req.get("model", "unknown"),
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
        self.in_flight = 0
        self.max_in_flight = 0
        self.batch_polls = 1
        self.batch_error: Reply | None = None  # answer every batch-API request with this
        # (max requests, max bytes) per batch, as the providers enforce (400 above them).
        self.batch_limits: tuple[int, int] | None = None
        self.batch_requests: list[Recorded] = []
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
        self._server.daemon_threads = True
        # The default listen backlog (5) drops connections when a bulk test opens dozens at
        # once; the client then sees a timeout the test did not script.
        self._server.request_queue_size = 128
        try:
            self._server.server_bind()
            self._server.server_activate()
        except OSError:
            self._server.server_close()
            raise
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
        """Forget recorded requests, queued replies, batches and counters."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.batch_requests.clear()
            self.batches.clear()
            self.files.clear()
            self.max_in_flight = self.in_flight
        self.default = None
        self.responder = None

    @property
    def completions(self) -> list[Recorded]:
        """The live model calls received (chat completions and messages), in order."""
        with self._lock:
            return [r for r in self.requests if r.is_completion]

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    def _record_and_pick(self, request: Recorded) -> Reply | None:
        with self._lock:
            self.requests.append(request)
        return self._pick(request)

    def _pick(self, request: Recorded) -> Reply | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return self.default

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    # -- batch APIs ----------------------------------------------------------------------------
    def _new_file(self, data: bytes, purpose: str, filename: str) -> dict[str, Any]:
        file_id = f"file-fake{next(_ids):06d}"
        with self._lock:
            self.files[file_id] = data
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }

    def _batch_item(self, custom_id: str, path: str, body: Any) -> tuple[Reply, Recorded]:
        item = Recorded(
            method="POST",
            path=path,
            headers={},
            body=body,
            raw=json.dumps(body).encode(),
            started=time.monotonic(),
            custom_id=custom_id,
        )
        with self._lock:
            self.batch_requests.append(item)
        reply = self._pick(item) or Reply.error(500, "no reply scripted")
        item.finished = time.monotonic()
        return reply, item

    def _check_batch_limits(self, count: int, size: int) -> None:
        if self.batch_limits is not None:
            most, biggest = self.batch_limits
            if count > most or size > biggest:
                raise ValueError(
                    f"batch of {count} requests / {size} bytes exceeds the limit of "
                    f"{most} requests / {biggest} bytes"
                )

    def _openai_batch_create(self, body: dict[str, Any]) -> dict[str, Any]:
        batch_id = f"batch_fake{next(_ids):06d}"
        now = int(time.time())
        with self._lock:
            data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            raise KeyError(f"no file {body.get('input_file_id')!r}")
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        self._check_batch_limits(len(lines), len(data))
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body.get("endpoint", OPENAI_PATH),
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 86400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        with self._lock:
            self.batches[batch_id] = {
                "provider": "openai",
                "object": batch,
                "lines": lines,
                "polls": 0,
            }
        return batch

    def _openai_batch_retrieve(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            state = self.batches[batch_id]
            state["polls"] += 1
            ready = state["polls"] > self.batch_polls and state["object"]["status"] != "completed"
            if not ready and state["object"]["status"] == "validating":
                state["object"]["status"] = "in_progress"
        if ready:
            out: list[str] = []
            errors: list[str] = []
            for line in state["lines"]:
                cid = line["custom_id"]
                reply, item = self._batch_item(cid, line.get("url", OPENAI_PATH), line["body"])
                request_id = f"req_fake{next(_ids):06d}"
                if reply.kind == "error":
                    response = {
                        "status_code": reply.status,
                        "request_id": request_id,
                        "body": _error_body(reply, "openai"),
                    }
                    errors.append(
                        json.dumps(
                            {
                                "id": f"batch_req_{cid}",
                                "custom_id": cid,
                                "response": response,
                                "error": None,
                            }
                        )
                    )
                else:
                    response = {
                        "status_code": 200,
                        "request_id": request_id,
                        "body": _openai_body(reply, item),
                    }
                    out.append(
                        json.dumps(
                            {
                                "id": f"batch_req_{cid}",
                                "custom_id": cid,
                                "response": response,
                                "error": None,
                            }
                        )
                    )
            batch = state["object"]
            batch["output_file_id"] = self._new_file(
                ("\n".join(out) + "\n").encode() if out else b"", "batch_output", "output.jsonl"
            )["id"]
            if errors:
                batch["error_file_id"] = self._new_file(
                    ("\n".join(errors) + "\n").encode(), "batch_output", "errors.jsonl"
                )["id"]
            batch["status"] = "completed"
            batch["completed_at"] = int(time.time())
            batch["request_counts"] = {
                "total": len(state["lines"]),
                "completed": len(out),
                "failed": len(errors),
            }
        return dict(state["object"])

    def _anthropic_batch_create(self, body: dict[str, Any]) -> dict[str, Any]:
        batch_id = f"msgbatch_fake{next(_ids):06d}"
        requests = list(body.get("requests") or [])
        self._check_batch_limits(len(requests), len(json.dumps(body).encode("utf-8")))
        now = time.time()
        batch = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(requests),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "ended_at": None,
            "created_at": _iso(now),
            "expires_at": _iso(now + 86400),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
        }
        with self._lock:
            self.batches[batch_id] = {
                "provider": "anthropic",
                "object": batch,
                "lines": requests,
                "polls": 0,
                "results": b"",
            }
        return batch

    def _anthropic_batch_retrieve(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            state = self.batches[batch_id]
            state["polls"] += 1
            ready = state["polls"] > self.batch_polls and state["object"]["results_url"] is None
        if ready:
            lines: list[str] = []
            counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            for request in state["lines"]:
                cid = request["custom_id"]
                reply, item = self._batch_item(cid, ANTHROPIC_PATH, request["params"])
                if reply.kind == "error":
                    result: dict[str, Any] = {
                        "type": "errored",
                        "error": {**_error_body(reply, "anthropic"), "request_id": None},
                    }
                    counts["errored"] += 1
                else:
                    result = {"type": "succeeded", "message": _anthropic_body(reply, item)}
                    counts["succeeded"] += 1
                lines.append(json.dumps({"custom_id": cid, "result": result}))
            state["results"] = ("\n".join(lines) + "\n").encode()
            batch = state["object"]
            batch["processing_status"] = "ended"
            batch["ended_at"] = _iso(time.time())
            batch["request_counts"] = counts
            batch["results_url"] = f"{self.url}{ANTHROPIC_BATCHES}/{batch_id}/results"
        return dict(state["object"])


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def _multipart_file(content_type: str, raw: bytes) -> tuple[bytes, dict[str, str]]:
    """The uploaded file and the other form fields of a multipart/form-data body."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    data = b""
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if part.get_filename():
            data = payload
            fields["filename"] = part.get_filename() or "upload"
        elif isinstance(name, str):
            fields[name] = payload.decode()
    return data, fields


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # http.server writes headers and body separately; with Nagle on, the body waits for
        # the client's delayed ACK (~40 ms on Linux). Real API servers do not stall like that.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _recorded(self, method: str, raw: bytes) -> Recorded:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            return Recorded(
                method=method,
                path=self.path.split("?", 1)[0],
                query=self.path.split("?", 1)[1] if "?" in self.path else "",
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
                started=time.monotonic(),
            )

        def do_GET(self) -> None:
            request = self._recorded("GET", b"")
            with server._lock:
                server.requests.append(request)
            path = request.path
            try:
                if path.startswith(ANTHROPIC_BATCHES + "/") and path.endswith("/results"):
                    batch_id = path[len(ANTHROPIC_BATCHES) + 1 : -len("/results")]
                    data = server.batches[batch_id]["results"]
                    self._send_bytes(200, data, "application/binary", {})
                elif path.startswith(ANTHROPIC_BATCHES + "/"):
                    batch_id = path[len(ANTHROPIC_BATCHES) + 1 :]
                    self._send(200, server._anthropic_batch_retrieve(batch_id))
                elif path.startswith(OPENAI_BATCHES + "/"):
                    self._send(200, server._openai_batch_retrieve(path[len(OPENAI_BATCHES) + 1 :]))
                elif path.startswith(OPENAI_FILES + "/") and path.endswith("/content"):
                    file_id = path[len(OPENAI_FILES) + 1 : -len("/content")]
                    self._send_bytes(200, server.files[file_id], "application/octet-stream", {})
                else:
                    self._send(404, {"error": {"message": f"no route GET {path}"}})
            except KeyError as exc:
                self._send(404, {"error": {"message": f"not found: {exc}"}})
            request.finished = time.monotonic()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = self._recorded("POST", raw)
            path = request.path
            if path in (OPENAI_FILES, OPENAI_BATCHES, ANTHROPIC_BATCHES):
                with server._lock:
                    server.requests.append(request)
                self._batch_post(request)
                request.finished = time.monotonic()
                return
            if wire_protocol(path) is None:
                server._record_and_pick(request)
                self._send(404, {"error": {"message": f"no route POST {path}"}})
                return
            server._enter()
            try:
                reply = server._record_and_pick(request)
                if reply is None:
                    self._send(500, _error_body(Reply.error(500, "no reply scripted"), "openai"))
                    request.finished = time.monotonic()
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                # The client may have given up already (timeout tests).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(reply, request)
                    if reply.kind != "reset":
                        request.finished = time.monotonic()
            finally:
                server._leave()

        def _batch_post(self, request: Recorded) -> None:
            if server.batch_error is not None:
                self._answer(server.batch_error, request)
                return
            try:
                if request.path == OPENAI_FILES:
                    data, fields = _multipart_file(
                        self.headers.get("content-type", ""), request.raw
                    )
                    self._send(
                        200,
                        server._new_file(
                            data, fields.get("purpose", "batch"), fields.get("filename", "upload")
                        ),
                    )
                elif request.path == OPENAI_BATCHES:
                    self._send(200, server._openai_batch_create(request.body or {}))
                else:
                    self._send(200, server._anthropic_batch_create(request.body or {}))
            except (KeyError, ValueError) as exc:
                self._send(400, {"error": {"message": f"bad batch request: {exc}"}})

        def _answer(self, reply: Reply, request: Recorded) -> None:
            provider = request.provider
            if reply.kind == "reset":
                # Linger 0: closing sends a TCP reset instead of an orderly goodbye.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.close()
                return
            if reply.kind == "raw":
                self._send_bytes(reply.status, reply.body, reply.content_type, reply.headers, reply)
            elif reply.kind == "error":
                self._send(reply.status, _error_body(reply, provider), reply.headers, reply)
            elif provider == "anthropic":
                self._send(200, _anthropic_body(reply, request), reply.headers, reply)
            else:
                self._send(200, _openai_body(reply, request), reply.headers, reply)

        def _send(
            self,
            status: int,
            payload: Any,
            headers: dict[str, str] | None = None,
            reply: Reply | None = None,
        ) -> None:
            data = json.dumps(payload).encode("utf-8")
            self._send_bytes(status, data, "application/json", headers or {}, reply)

        def _send_bytes(
            self,
            status: int,
            data: bytes,
            content_type: str,
            headers: dict[str, str],
            reply: Reply | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply is not None and (reply.truncate_at, reply.truncate_share) != (None, None):
                share = reply.truncate_share
                keep = int(len(data) * share) if share is not None else reply.truncate_at or 0
                self.wfile.write(data[: max(0, min(keep, len(data) - 1))])
                self.wfile.flush()
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply is not None and reply.drip > 0:
                for start in range(0, len(data), reply.drip_chunk):
                    self.wfile.write(data[start : start + reply.drip_chunk])
                    self.wfile.flush()
                    time.sleep(reply.drip)
                return
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


def verdict_json(codes: list[str], present: tuple[str, ...] = (), summary: str = "ok") -> str:
    """A well-formed MAST verdict answer in the judge's JSON shape (no evidence cited)."""
    modes = {
        code: {
            "evidence": [],
            "rationale": f"rationale for {code}",
            "present": code in present,
            "confidence": 0.8,
        }
        for code in codes
    }
    return json.dumps({"summary": summary, "modes": modes, "task_completed": not present})


class RateWindow:
    """A provider-style rate limit in front of another answer, for ``server.responder``.

    At most ``requests`` requests and ``tokens`` tokens (estimated from the request body,
    four characters a token, plus its ``max_tokens``) per fixed ``window`` seconds; past
    either, HTTP 429 with ``Retry-After`` = the time left in the window. Counts are kept
    per window (``accepted``, ``refused``, ``windows``: window number -> (requests,
    tokens) accepted) so tests check the accounting, never the clock.
    """

    def __init__(
        self,
        answer: Callable[[Recorded], Reply],
        *,
        requests: int | None = None,
        tokens: int | None = None,
        window: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.answer = answer
        self.requests = requests
        self.tokens = tokens
        self.window = window
        self.clock = clock
        self.start = clock()
        self.lock = threading.Lock()
        self.accepted = 0
        self.refused = 0
        self.windows: dict[int, tuple[int, int]] = {}

    @staticmethod
    def tokens_of(request: Recorded) -> int:
        """The tokens a request counts for: its body's characters / 4 + its max_tokens."""
        body = request.body if isinstance(request.body, dict) else {}
        out = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        return len(request.raw) // 4 + int(out)

    def __call__(self, request: Recorded) -> Reply:
        cost = self.tokens_of(request)
        with self.lock:
            now = self.clock()
            number = int((now - self.start) // self.window)
            used_requests, used_tokens = self.windows.get(number, (0, 0))
            over = (self.requests is not None and used_requests + 1 > self.requests) or (
                self.tokens is not None and used_tokens + cost > self.tokens
            )
            if over:
                self.refused += 1
                left = self.start + (number + 1) * self.window - now
                return Reply.error(429, "rate limit reached", retry_after=f"{left:.3f}")
            self.windows[number] = (used_requests + 1, used_tokens + cost)
            self.accepted += 1
        return self.answer(request)
