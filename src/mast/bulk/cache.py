"""An on-disk cache of model answers (SQLite), so that no call is paid for twice.

The key is what changes the answer: the provider, the server that answers (its endpoint,
unless it is the provider's own public one), the request body the provider would send
(model, sampling parameters, output schema and the rendered prompt, whose hash is kept as
well) and the taxonomy version — never transport settings such as the timeout or the API
key. The cache stores the **raw answer text and its token usage**, not
the parsed verdict, so re-annotating after a parser fix reads the stored answers again
instead of calling the API.

Each entry remembers whether its cost has been *charged* to a results record yet. An answer
received just before a crash, or fetched from a provider batch, is stored uncharged; the
first record that uses it carries its cost, and every later use is a free cache hit. That
keeps the cost in a results file equal to what was paid, once.

>>> import tempfile
>>> from mast.judge.providers.usage import Usage
>>> from mast.judge.providers import Completion
>>> with tempfile.TemporaryDirectory() as tmp, ResponseCache(tmp) as cache:
...     cache.put("k1", Completion("answer", Usage(input_tokens=10, output_tokens=2),
...                                "m", None, 0.5), provider="openai", model="m")
...     hit = cache.get("k1")
...     hit.completion.text, hit.charged
('answer', False)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sqlite3
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from mast.bulk.cache_trouble import CacheWarning, is_corrupt, move_aside
from mast.errors import MastError
from mast.judge.providers import Completion
from mast.judge.providers.usage import Usage
from mast.taxonomy import Taxonomy

__all__ = [
    "CACHE_FILE",
    "CacheLike",
    "CacheWarning",
    "CachedResponse",
    "ResponseCache",
    "cache_key",
    "default_cache_dir",
    "open_cache",
]

CACHE_FILE = "responses.sqlite"
"""File name of the cache inside its directory."""

_KEY_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_hash TEXT,
    text TEXT NOT NULL,
    usage TEXT NOT NULL,
    response_model TEXT,
    response_id TEXT,
    finish_reason TEXT,
    via_tool INTEGER NOT NULL DEFAULT 0,
    latency_s REAL,
    batch INTEGER NOT NULL DEFAULT 0,
    charged INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
)
"""


def default_cache_dir() -> Path:
    """``$MAST_CACHE_DIR``, else ``$XDG_CACHE_HOME/mast``, else ``~/.cache/mast``.

    >>> explicit = os.environ.get("MAST_CACHE_DIR")
    >>> default_cache_dir() == Path(explicit) if explicit else default_cache_dir().name == "mast"
    True
    """
    explicit = os.environ.get("MAST_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mast"


def cache_taxonomy(taxonomy: Taxonomy) -> str:
    """The taxonomy part of a cache key: its label, and its 3.2/3.3 convention when that is
    not the paper's (keys made before conventions existed stay valid).

    >>> from mast.taxonomy import load_taxonomy
    >>> cache_taxonomy(load_taxonomy()), cache_taxonomy(load_taxonomy(verification="official"))
    ('MAST 1.0', 'MAST 1.0 [verification: official]')
    """
    if taxonomy.verification in (None, "paper"):
        return taxonomy.label
    return f"{taxonomy.label} [verification: {taxonomy.verification}]"


def cache_key(
    *,
    provider: str,
    body: Mapping[str, Any],
    taxonomy: str,
    prompt_hash: str = "",
    sample: int = 0,
    endpoint: str | None = None,
) -> str:
    """The cache key (64 hex digits) of one request.

    ``body`` is the request as the provider sends it (``Provider.request_body``); it holds
    the model, the sampling parameters, the output schema and the messages. ``sample``
    tells repeated judgments of one request apart (0, the first, keeps the plain key).
    ``endpoint`` is the server the request goes to, ``None`` for the provider's own public
    server (which keeps the keys made before endpoints were keyed): a local stub's answers
    are never served for the real API.

    >>> k = cache_key(provider="openai", body={"model": "m", "messages": []}, taxonomy="MAST 1.0")
    >>> len(k), k == cache_key(provider="openai", body={"messages": [], "model": "m"},
    ...                        taxonomy="MAST 1.0")
    (64, True)
    """
    payload = {
        "v": _KEY_VERSION,
        "provider": provider,
        "taxonomy": taxonomy,
        "prompt_hash": prompt_hash,
        "body": body,
    }
    if endpoint is not None:
        payload["endpoint"] = endpoint
    if sample:
        # Independent judgment number `sample` of the same request (Judge(samples=K)):
        # its own entry, so that K samples are K calls, each cached and billed once.
        payload["sample"] = sample
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A stored answer: the completion, and whether its cost was charged to a record yet.

    ``batch`` marks answers fetched through a provider batch API (billed at batch prices).
    """

    completion: Completion
    charged: bool
    batch: bool


_BUSY_TIMEOUT_S = 30.0


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, waiting out other processes doing the same.

    Workers that open a new cache at once (Ray actors, shards) all switch its journal mode;
    SQLite answers "database is locked" to all but one at once, without waiting the
    connection's timeout (waiting could deadlock them), so the switch is tried again.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01 + random.random() * 0.04)


class ResponseCache:
    """The response cache in directory ``path`` (file :data:`CACHE_FILE`), or a ``.sqlite``
    file given directly. Safe across processes (SQLite WAL); one instance per thread."""

    def __init__(self, path: str | Path | None = None) -> None:
        target = Path(path).expanduser() if path is not None else default_cache_dir()
        if target.suffix not in (".sqlite", ".sqlite3", ".db"):
            target = target / CACHE_FILE
        self.path = target
        self._writable = True
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._connect()
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise
                self._move_aside(exc)
        except (OSError, sqlite3.Error) as exc:
            raise MastError(
                f"cannot open the response cache {target}: {exc}; pass another cache "
                "directory (cache=… / --cache DIR) or turn the cache off (--no-cache)"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        # Not shared between threads at once, but annotate_many may run in a worker
        # thread (inside a notebook's event loop) with a cache the caller opened.
        db = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        try:
            # WAL + NORMAL: every commit survives a killed process, and readers never block.
            _switch_to_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, exc: BaseException) -> None:
        """A damaged file: move it aside and start an empty cache (one warning)."""
        with contextlib.suppress(AttributeError, sqlite3.Error):
            self._db.close()
        aside = move_aside(self.path)
        self._db = self._connect()
        warnings.warn(
            f"the response cache {self.path} is corrupt ({exc}); moved it to {aside.name} and "
            "started an empty one: answers it held will be asked for again",
            CacheWarning,
            stacklevel=3,
        )

    def _failed(self, exc: sqlite3.Error | OSError) -> None:
        """An SQLite error during a read or write: never the run's problem."""
        if is_corrupt(exc):
            try:
                self._move_aside(exc)
                return
            except (OSError, sqlite3.Error) as again:
                exc = again
        if self._writable:
            self._writable = False  # warn once; the run goes on without storing answers
            warnings.warn(
                f"cannot use the response cache {self.path} ({exc}): answers from now on are "
                "not cached; free space or pass --cache DIR",
                CacheWarning,
                stacklevel=3,
            )

    @property
    def writable(self) -> bool:
        """False once a write failed (a full disk): answers since then are not stored."""
        return self._writable

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __len__(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0])

    def get(self, key: str) -> CachedResponse | None:
        """The stored answer for ``key``, or None (also when the cache cannot be read)."""
        try:
            row = self._db.execute(
                "SELECT text, usage, COALESCE(response_model, model), response_id, "
                "finish_reason, via_tool, latency_s, batch, charged FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None
        if row is None:
            return None
        text, usage, model, response_id, finish, via_tool, latency, batch, charged = row
        completion = Completion(
            text=text,
            usage=Usage.model_validate_json(usage),
            model=model,
            response_id=response_id,
            latency_s=float(latency or 0.0),
            finish_reason=finish,
            via_tool=bool(via_tool),
        )
        return CachedResponse(completion=completion, charged=bool(charged), batch=bool(batch))

    def put(
        self,
        key: str,
        completion: Completion,
        *,
        provider: str,
        model: str,
        prompt_hash: str | None = None,
        batch: bool = False,
        charged: bool = False,
        replace: bool = False,
    ) -> None:
        """Store the answer for ``key``, committed before returning.

        An existing entry is kept unless ``replace``: the first answer wins, and storing
        the same batch results twice (a rerun collecting them again) cannot make an
        answer that was already charged look unpaid.
        """
        if not self._writable:
            return
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        try:
            self._insert(verb, key, completion, provider, model, prompt_hash, batch, charged)
        except sqlite3.Error as exc:
            self._failed(exc)

    def _insert(
        self,
        verb: str,
        key: str,
        completion: Completion,
        provider: str,
        model: str,
        prompt_hash: str | None,
        batch: bool,
        charged: bool,
    ) -> None:
        self._db.execute(
            f"{verb} INTO responses (key, provider, model, prompt_hash, text, usage, "
            "response_model, response_id, finish_reason, via_tool, latency_s, batch, charged, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                provider,
                model,
                prompt_hash,
                completion.text,
                completion.usage.model_dump_json(),
                completion.model,
                completion.response_id,
                completion.finish_reason,
                int(completion.via_tool),
                completion.latency_s,
                int(batch),
                int(charged),
                datetime.now(timezone.utc).isoformat(),
            ),
        )
        self._db.commit()

    def mark_charged(self, keys: Iterable[str]) -> None:
        """Record that the cost of these entries is now carried by a results record."""
        keys = list(keys)
        if not keys or not self._writable:
            return
        try:
            self._db.executemany(
                "UPDATE responses SET charged = 1 WHERE key = ?", [(k,) for k in keys]
            )
            self._db.commit()
        except sqlite3.Error as exc:
            self._failed(exc)

    def delete(self, key: str) -> None:
        """Forget one entry."""
        self._db.execute("DELETE FROM responses WHERE key = ?", (key,))
        self._db.commit()


CacheLike = ResponseCache | str | Path | bool | None


def open_cache(cache: CacheLike) -> tuple[ResponseCache | None, bool]:
    """``(cache, whether we opened it and must close it)`` for a ``cache=`` argument."""
    if cache is None or cache is False:
        return None, False
    if isinstance(cache, ResponseCache):
        return cache, False
    if cache is True:
        return ResponseCache(), True
    return ResponseCache(cache), True
