"""Provider batch APIs: many requests in one job, answered within a day at half the price.

Two backends share one small interface (:class:`BatchBackend`): **OpenAI Batch**
(upload a JSONL file of requests, create a batch, poll it, download the output and error
files) and **Anthropic Message Batches** (create with the requests inline, poll, stream the
results). Requests are matched to results by ``custom_id`` — mast uses the response-cache
key, which also fits Anthropic's 64-character limit. The runner
(:func:`mast.annotate_many` with ``batch=True``) drives them; every SDK error is translated
at the same choke point as live calls.

The ids of submitted batches are kept in a small JSON file beside the results file
(:class:`BatchState`), so a run killed while it waits picks its batches up again instead of
submitting and paying for them twice.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.errors import MastError, ProviderError
from mast.judge.providers import Completion, Provider
from mast.judge.providers._base import import_sdk

__all__ = [
    "BATCH_PRICE_FACTOR",
    "BatchBackend",
    "BatchEntry",
    "BatchState",
    "BatchStatus",
    "batch_backend",
    "batch_state_path",
]

BATCH_PRICE_FACTOR = 0.5
"""Batch requests cost half the standard price at both OpenAI and Anthropic."""

ItemResult = Completion | ProviderError


@dataclass(frozen=True)
class BatchStatus:
    """Where a batch is: ``ended`` once results can be fetched; ``state`` in the provider's
    words; ``done`` / ``total`` requests processed so far (when reported)."""

    ended: bool
    state: str
    done: int | None = None
    total: int | None = None


class _ItemFailure(Exception):
    """A failed batch item dressed like an SDK status error, for ``translate_error``."""

    def __init__(self, status: int | None, body: Any, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.body = body
        self.message = message
        self.response = None


class BatchBackend(ABC):
    """Submit, poll and read one provider's batch jobs.

    ``max_requests`` and ``max_bytes`` are the provider's limits for one batch; the runner
    submits larger work as several batches (:meth:`split`), each remembered on its own so
    that a rerun collects every part that was submitted.
    """

    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024

    def __init__(self, provider: Provider, model: str) -> None:
        self.provider = provider
        self.model = model

    def _translate(self, exc: BaseException) -> ProviderError:
        return self.provider._translate_error(exc, self.model)

    def _item_error(self, status: int | None, body: Any) -> ProviderError:
        detail = body
        if isinstance(body, Mapping):
            err = body.get("error", body)
            if isinstance(err, Mapping):
                detail = err.get("message") or err.get("code") or err
        for secret in self.provider.credentials():  # a server may echo the key in an error
            detail = str(detail).replace(secret, "***")
        failure = _ItemFailure(status, body, f"batch item failed: {detail}")
        if status is None:
            # Expired or canceled before it ran: another try can help.
            return ProviderError(
                f"{self.provider.name}/{self.model}: batch item not processed ({detail})",
                provider=self.provider.name,
                retryable=True,
            )
        return self._translate(failure)

    def request_size(self, custom_id: str, body: dict[str, Any]) -> int:
        """Bytes one request adds to a batch (its JSON line, with a margin for framing)."""
        return len(json.dumps({"custom_id": custom_id, "body": body}).encode("utf-8")) + 128

    def split(
        self, requests: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[list[tuple[str, dict[str, Any]]]]:
        """``requests`` cut into batches within ``max_requests`` and ``max_bytes``, in order.
        A single request larger than ``max_bytes`` goes alone (the provider will refuse it,
        and its trace then gets an error record instead of holding up the others)."""
        parts: list[list[tuple[str, dict[str, Any]]]] = []
        size = 0
        for cid, body in requests:
            need = self.request_size(cid, body)
            if not parts or len(parts[-1]) >= self.max_requests or size + need > self.max_bytes:
                parts.append([])
                size = 0
            parts[-1].append((cid, body))
            size += need
        return parts

    @abstractmethod
    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Create a batch of ``(custom_id, request body)``; returns the batch id."""

    @abstractmethod
    async def status(self, batch_id: str) -> BatchStatus:
        """Poll the batch."""

    @abstractmethod
    async def results(self, batch_id: str) -> dict[str, ItemResult]:
        """Every item's answer or error, by ``custom_id`` (call once ``ended``)."""


class OpenAIBatch(BatchBackend):
    """The OpenAI Batch API on ``/v1/chat/completions``."""

    endpoint = "/v1/chat/completions"

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        openai = import_sdk("openai", self.provider.install)
        lines = [
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body},
                ensure_ascii=False,
            )
            for cid, body in requests
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        client = self.provider.client()
        try:
            upload = await client.files.create(
                file=("mast-batch.jsonl", data, "application/jsonl"), purpose="batch"
            )
            batch = await client.batches.create(
                input_file_id=upload.id,
                endpoint=self.endpoint,
                completion_window="24h",
                metadata={"created_by": "mast annotate"},
            )
        except (openai.OpenAIError, ValueError) as exc:
            raise self._translate(exc) from exc
        return str(batch.id)

    async def status(self, batch_id: str) -> BatchStatus:
        openai = import_sdk("openai", self.provider.install)
        try:
            batch = await self.provider.client().batches.retrieve(batch_id)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._translate(exc) from exc
        counts = batch.request_counts
        ended = batch.status in ("completed", "failed", "expired", "cancelled")
        return BatchStatus(
            ended=ended,
            state=str(batch.status),
            done=None if counts is None else counts.completed + counts.failed,
            total=None if counts is None else counts.total,
        )

    async def _file_lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        openai = import_sdk("openai", self.provider.install)
        try:
            content = await self.provider.client().files.content(file_id)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._translate(exc) from exc
        return [json.loads(line) for line in content.text.splitlines() if line.strip()]

    async def results(self, batch_id: str) -> dict[str, ItemResult]:
        openai = import_sdk("openai", self.provider.install)
        try:
            batch = await self.provider.client().batches.retrieve(batch_id)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._translate(exc) from exc
        out: dict[str, ItemResult] = {}
        lines = await self._file_lines(batch.output_file_id)
        lines += await self._file_lines(batch.error_file_id)
        for line in lines:
            cid = line.get("custom_id")
            if not isinstance(cid, str):
                continue
            response = line.get("response") or {}
            status = response.get("status_code")
            body = response.get("body")
            if status == 200 and isinstance(body, Mapping):
                out[cid] = self._completion(body)
            else:
                out[cid] = self._item_error(
                    status if isinstance(status, int) else None, body or line.get("error")
                )
        return out

    def _completion(self, body: Mapping[str, Any]) -> ItemResult:
        from openai.types.chat import ChatCompletion

        from mast.judge.providers.openai import completion_from_response

        try:
            response = ChatCompletion.model_validate(dict(body))
        except ValueError as exc:
            return ProviderError(
                f"openai/{self.model}: a batch result is not a chat completion ({exc})",
                provider="openai",
                retryable=True,
            )
        return completion_from_response(response, model=self.model, latency_s=0.0)


class AnthropicBatch(BatchBackend):
    """Anthropic Message Batches."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        anthropic = import_sdk("anthropic", self.provider.install)
        try:
            batch = await self.provider.client().messages.batches.create(
                requests=[{"custom_id": cid, "params": body} for cid, body in requests]
            )
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self._translate(exc) from exc
        return str(batch.id)

    async def status(self, batch_id: str) -> BatchStatus:
        anthropic = import_sdk("anthropic", self.provider.install)
        try:
            batch = await self.provider.client().messages.batches.retrieve(batch_id)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self._translate(exc) from exc
        c = batch.request_counts
        total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
        return BatchStatus(
            ended=batch.processing_status == "ended",
            state=str(batch.processing_status),
            done=total - c.processing,
            total=total,
        )

    # Anthropic reports item errors by type only; map them to the HTTP status they stand for.
    _ERROR_STATUS: Mapping[str, int] = {
        "invalid_request_error": 400,
        "authentication_error": 401,
        "billing_error": 402,
        "permission_error": 403,
        "not_found_error": 404,
        "request_too_large": 413,
        "rate_limit_error": 429,
        "api_error": 500,
        "timeout_error": 504,
        "gateway_timeout_error": 504,
        "overloaded_error": 529,
    }

    async def results(self, batch_id: str) -> dict[str, ItemResult]:
        anthropic = import_sdk("anthropic", self.provider.install)
        out: dict[str, ItemResult] = {}
        try:
            stream = await self.provider.client().messages.batches.results(batch_id)
            async for item in stream:
                result = item.result
                if result.type == "succeeded":
                    out[item.custom_id] = self._completion(result.message)
                elif result.type == "errored":
                    error = result.error.error
                    kind = getattr(error, "type", "api_error")
                    body = {"error": {"type": kind, "message": getattr(error, "message", "")}}
                    out[item.custom_id] = self._item_error(self._ERROR_STATUS.get(kind, 500), body)
                else:
                    out[item.custom_id] = self._item_error(None, result.type)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self._translate(exc) from exc
        return out

    def _completion(self, message: Any) -> Completion:
        from mast.judge.providers.anthropic import completion_from_message

        return completion_from_message(message, model=self.model, latency_s=0.0)


def batch_backend(provider: Provider, model: str) -> BatchBackend:
    """The batch backend for ``provider`` (OpenAI or Anthropic)."""
    if provider.name == "openai":
        return OpenAIBatch(provider, model)
    if provider.name == "anthropic":
        return AnthropicBatch(provider, model)
    raise MastError(
        f"provider {provider.name!r} has no batch API in mast; run without --batch"
    )  # pragma: no cover - every provider mast knows has one


def batch_state_path(results: str | Path) -> Path:
    """Where the batch ids of a results file are kept: ``<results>.batches.json``."""
    results = Path(results)
    return results.with_name(results.name + ".batches.json")


@dataclass
class BatchEntry:
    """One submitted batch: its id and the ``custom_id`` s (cache keys) it holds."""

    id: str
    provider: str
    model: str
    keys: list[str]
    submitted_at: float = field(default_factory=time.time)


class BatchState:
    """The batches submitted but not yet collected, kept in a JSON file (or in memory when
    ``path`` is None). Writes are atomic (temporary file, fsync, rename)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[BatchEntry] = []
        if path is not None and path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                self.entries = [BatchEntry(**item) for item in raw.get("batches", [])]
            except (OSError, ValueError, TypeError) as exc:
                raise MastError(
                    f"cannot read the batch state file {path}: {exc}. It lists batches a "
                    "previous run submitted; fix or delete it (deleting it means those "
                    "batches' results are not collected)"
                ) from exc

    def add(self, entry: BatchEntry) -> None:
        """Remember a submitted batch (saved before returning)."""
        self.entries.append(entry)
        self._save()

    def remove(self, batch_id: str) -> None:
        """Forget a collected batch."""
        self.entries = [e for e in self.entries if e.id != batch_id]
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        payload = {"version": 1, "batches": [e.__dict__ for e in self.entries]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name, dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
