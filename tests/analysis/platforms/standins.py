"""Local HTTP stand-ins for the Langfuse and LangSmith APIs (no local server of theirs can run
here). Each checks every request against the platform's documented shape and records what
breaks it in ``problems``; the tests drive them with the vendors' own SDK clients.

Langfuse shapes, from its documentation and the SDK's API definition (Fern-generated types in
``langfuse.api``):
* ``POST /api/public/scores`` with HTTP Basic auth (public key : secret key), a JSON list of
  CreateScoreRequest objects: ``name`` and ``value`` required; ``traceId``, ``observationId``,
  ``id``, ``comment``, ``metadata`` (an object), ``dataType`` one of NUMERIC, BOOLEAN,
  CATEGORICAL, TEXT, CORRECTION; a BOOLEAN value is 1 or 0; ``source`` API or ANNOTATION,
  ANNOTATION only with a ``configId``; ``timestamp`` ISO 8601 with an offset. "To update an
  existing score, send it again with the same id and timestamp." Answer 202
  ``{"message": "Accepted"}`` (207 with accepted/rejected counts). See
  https://langfuse.com/docs/evaluation/evaluation-methods/scores-via-sdk and the API
  reference's CreateScoreRequest (https://js.reference.langfuse.com, ApiCreateScoreRequest).
* ``GET/POST /api/public/score-configs`` (page-numbered listing ``{data, meta}``).
* ``GET /api/public/v2/observations``: cursor pagination (``meta.cursor``), filters as query
  parameters (``traceId``, ``isRootObservation``, ``fromStartTime``…), ``fields`` groups.

LangSmith shapes, from https://docs.langchain.com/langsmith/feedback-data-format and the
REST reference (https://docs.langchain.com/langsmith/smith-api/feedback/create-feedback):
``X-Api-Key`` header; ``POST /feedback`` with ``id`` (uuid), ``run_id`` (uuid), ``trace_id``,
``key`` (str), ``score`` (number), ``value``, ``comment``, ``feedback_source`` with ``type``
("api" or "model") and ``metadata``; an id that exists is a 409; ``PATCH /feedback/{id}``
updates score/value/comment. ``GET /info`` tells the client the server's version.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_SCORE_FIELDS = {
    "id", "traceId", "sessionId", "observationId", "datasetRunId", "name", "value", "comment",
    "metadata", "environment", "queueId", "dataType", "configId", "source", "timestamp",
}  # fmt: skip
_DATA_TYPES = {"NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT", "CORRECTION"}


class _Server:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                return json.loads(raw) if raw else None

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urlparse(self.path)
                owner.requests.append((method, url.path))
                body = self._body() if method in ("POST", "PATCH") else None
                status, answer = owner.handle(
                    method, url.path, parse_qs(url.query), body, self.headers
                )
                self._send(status, answer)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(
        self, method: str, path: str, query: dict[str, list[str]], body: Any, headers: Any
    ) -> tuple[int, Any]:
        raise NotImplementedError


def _iso_with_offset(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return moment.tzinfo is not None


class LangfuseStandIn(_Server):
    """Langfuse's scores, score-configs and v2 observations endpoints."""

    public_key = "pk-lf-test"
    secret_key = "sk-lf-test"

    def __init__(self, observations: list[dict[str, Any]] | None = None) -> None:
        self.scores: dict[str, dict[str, Any]] = {}
        self.created = 0
        self.configs: list[dict[str, Any]] = []
        self.observations = observations or []
        self.page_size_seen: list[int] = []
        super().__init__()

    def handle(self, method, path, query, body, headers):  # type: ignore[override]
        expected = (
            "Basic " + base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode()
        )
        if headers.get("Authorization") != expected:
            self.problems.append(f"{method} {path}: no Basic auth with the project keys")
            return 401, {"message": "unauthorized"}
        if method == "POST" and path == "/api/public/scores":
            return self._scores(body)
        if path == "/api/public/score-configs":
            if method == "POST":
                if body.get("dataType") not in _DATA_TYPES - {"TEXT", "CORRECTION"} or not body.get(
                    "name"
                ):
                    self.problems.append(f"score config {body}")
                config = {
                    "id": f"cfg-{len(self.configs) + 1}", "name": body["name"],
                    "dataType": body["dataType"], "projectId": "p1", "isArchived": False,
                    "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
                }  # fmt: skip
                self.configs.append(config)
                return 200, config
            return 200, {
                "data": self.configs,
                "meta": {"page": 1, "limit": 100, "totalItems": len(self.configs), "totalPages": 1},
            }
        if method == "GET" and path == "/api/public/v2/observations":
            return self._observations(query)
        self.problems.append(f"unexpected {method} {path}")
        return 404, {"message": "not found"}

    def _scores(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, list):
            self.problems.append(f"scores body is not a list: {type(body).__name__}")
            return 400, {"message": "expected a list"}
        for item in body:
            bad = set(item) - _SCORE_FIELDS
            if bad:
                self.problems.append(f"unknown score fields {sorted(bad)}")
            if not isinstance(item.get("name"), str) or "value" not in item:
                self.problems.append(f"score without name/value: {item}")
            if item.get("dataType") not in _DATA_TYPES:
                self.problems.append(f"dataType {item.get('dataType')!r}")
            if item.get("dataType") == "BOOLEAN" and item.get("value") not in (0, 1):
                self.problems.append(f"BOOLEAN value {item.get('value')!r} is not 1 or 0")
            if item.get("source", "API") not in ("API", "ANNOTATION"):
                self.problems.append(f"source {item.get('source')!r}")
            if item.get("source") == "ANNOTATION" and not item.get("configId"):
                self.problems.append("an ANNOTATION score without configId")
            if "metadata" in item and not isinstance(item["metadata"], dict):
                self.problems.append("metadata is not an object")
            if "timestamp" in item and not _iso_with_offset(item["timestamp"]):
                self.problems.append(f"timestamp {item['timestamp']!r} has no UTC offset")
            if not isinstance(item.get("traceId"), str):
                self.problems.append("score without traceId")
            key = str(item.get("id") or uuid.uuid4())
            old = self.scores.get(key)
            if old is not None and old.get("timestamp") != item.get("timestamp"):
                # Langfuse updates only on the same id AND timestamp.
                key = f"{key}#{uuid.uuid4()}"
            if key not in self.scores:
                self.created += 1
            self.scores[key] = item
        return 202, {"message": "Accepted"}

    def _observations(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        limit = int(query.get("limit", ["50"])[0])
        self.page_size_seen.append(limit)
        items = self.observations
        if "traceId" in query:
            items = [o for o in items if o["traceId"] == query["traceId"][0]]
        if query.get("isRootObservation") == ["true"]:
            items = [o for o in items if not o.get("parentObservationId")]
        start = int(base64.b64decode(query["cursor"][0]).decode()) if "cursor" in query else 0
        page = items[start : start + limit]
        more = start + limit < len(items)
        cursor = base64.b64encode(str(start + limit).encode()).decode() if more else None
        return 200, {"data": page, "meta": {"cursor": cursor}}


class LangSmithStandIn(_Server):
    """LangSmith's feedback endpoints (and the /info the client reads first)."""

    api_key = "lsv2-test"
    project_id = "11111111-2222-4333-8444-555555555555"

    def __init__(self, runs: list[dict[str, Any]] | None = None, page: int = 2) -> None:
        self.feedback: dict[str, dict[str, Any]] = {}
        self.patched: list[str] = []
        # The fixture runs were written from the SDK's Run objects; the API sends no
        # "attachments" (the client builds them from "s3_urls").
        self.runs = [
            {**{k: v for k, v in r.items() if k != "attachments"}, "session_id": self.project_id}
            for r in runs or []
        ]
        self.page = page
        self.queries: list[dict[str, Any]] = []
        super().__init__()

    def handle(self, method, path, query, body, headers):  # type: ignore[override]
        if path == "/info":
            return 200, {"version": "0.10.100", "instance_flags": {}, "batch_ingest_config": {}}
        if headers.get("x-api-key") != self.api_key:
            self.problems.append(f"{method} {path}: no X-Api-Key")
            return 401, {"detail": "unauthorized"}
        if method == "POST" and path == "/feedback":
            for name in ("id", "run_id", "trace_id"):
                try:
                    uuid.UUID(str(body.get(name)))
                except ValueError:
                    self.problems.append(f"feedback {name} {body.get(name)!r} is not a uuid")
            if not isinstance(body.get("key"), str):
                self.problems.append("feedback without key")
            if not isinstance(body.get("score"), (int, float)):
                self.problems.append(f"score {body.get('score')!r}")
            source = body.get("feedback_source") or {}
            if source.get("type") not in ("api", "model"):
                self.problems.append(f"feedback_source.type {source.get('type')!r}")
            if not isinstance(source.get("metadata"), dict):
                self.problems.append("feedback_source.metadata is not an object")
            if body["id"] in self.feedback:
                return 409, {"detail": "Feedback with this id already exists"}
            self.feedback[body["id"]] = body
            return 200, body
        if method == "GET" and path == "/sessions":
            # read_project(project_name=…): the project list filtered by name.
            return 200, [
                {
                    "id": self.project_id, "name": query.get("name", ["agents"])[0],
                    "tenant_id": "99999999-2222-4333-8444-555555555555",
                    "start_time": "2026-01-01T00:00:00+00:00", "reference_dataset_id": None,
                }
            ]  # fmt: skip
        if method == "POST" and path == "/runs/query":
            return self._query(body)
        if method == "PATCH" and path.startswith("/feedback/"):
            key = path.rsplit("/", 1)[1]
            if key not in self.feedback:
                return 404, {"detail": "not found"}
            bad = set(body) - {"score", "value", "correction", "comment"}
            if bad:
                self.problems.append(f"PATCH fields {sorted(bad)}")
            self.feedback[key].update(body)
            self.patched.append(key)
            return 200, self.feedback[key]
        self.problems.append(f"unexpected {method} {path}")
        return 404, {"detail": "not found"}

    def _query(self, body: dict[str, Any]) -> tuple[int, Any]:
        # POST /runs/query: {session: [project ids], is_root, trace, start_time, limit,
        # cursor}; answers {runs: [...], cursors: {next}} (cursor pagination).
        self.queries.append(body)
        if body.get("session") != [self.project_id]:
            self.problems.append(f"runs query without the project id: {body.get('session')}")
        runs = self.runs
        if body.get("is_root"):
            runs = [r for r in runs if not r.get("parent_run_id")]
        if body.get("trace"):
            runs = [r for r in runs if r["trace_id"] == body["trace"]]
        start = int(body.get("cursor") or 0)
        chunk = runs[start : start + self.page]
        more = start + self.page < len(runs)
        return 200, {"runs": chunk, "cursors": {"next": str(start + self.page) if more else None}}
