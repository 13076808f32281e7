"""Fetch dataset files from the Hugging Face Hub at a pinned revision and check their SHA-256.

Only this module talks to the Hub, through ``huggingface_hub`` (imported lazily, so
``import mast`` stays fast). Downloads go to the ordinary Hugging Face cache, so ``HF_HOME``,
``HF_HUB_CACHE``, ``HF_ENDPOINT``, ``HF_HUB_OFFLINE`` and tokens (``HF_TOKEN`` or
``hf auth login``) work as they do for every other Hub client; they are read at call time.

Every file is hashed after the download and before anyone reads it:

- ``"verified"``: it matches a checksum published for that revision (the table in
  :mod:`mast.traces.datasets`) or one the caller passed;
- ``"first-use"`` / ``"matches-first-use"``: no published checksum exists, so the digest seen on
  the first download is recorded next to the cache (trust on first use) and later loads must
  match it. These are *not* verified against a published checksum, and say so.

A file that fails a check is removed from the cache before the error is raised, so a bad
download is never read or reused.

>>> sha256_bytes(b"")
'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import quote

from mast.errors import (
    DatasetChecksumError,
    DatasetUnavailableError,
    MissingDependencyError,
)
from mast.traces.hub_errors import _message, _translate
from mast.traces.hub_target import HubSettings, Target

__all__ = [
    "Checksum",
    "Fetched",
    "Inventory",
    "Pin",
    "fetch_file",
    "fetch_folder",
    "hub_settings",
    "resolve_url",
    "sha256_bytes",
    "sha256_file",
]

Checksum = Literal["verified", "first-use", "matches-first-use"]

REPO_TYPE = "dataset"
INSTALL_HINT = "pip install huggingface_hub"
_RECORDS_DIR = ".mast-checksums"  # beside huggingface_hub's own ".no_exist" in the repo folder
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX40 = re.compile(r"[0-9a-f]{40}")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Inventory:
    """A published digest over a set of files, not over each file.

    The digest is SHA-256 over the lines ``"<file sha256>  <path in repo>\\n"`` of every file
    matching ``pattern`` (fnmatch over repository paths), in path order. ``source`` says
    where the numbers were published.
    """

    pattern: str
    count: int
    total_bytes: int
    sha256: str
    source: str = ""

    def check(self, files: Mapping[str, tuple[str, int]]) -> str | None:
        """Problem with ``{path: (sha256, size)}`` of the matching files, or ``None`` if it fits."""
        chosen = {p: v for p, v in files.items() if fnmatch.fnmatchcase(p, self.pattern)}
        if len(chosen) != self.count:
            return f"{len(chosen)} files match {self.pattern!r}, the published set has {self.count}"
        size = sum(v[1] for v in chosen.values())
        if size != self.total_bytes:
            return f"they hold {size} bytes, the published set {self.total_bytes}"
        digest = hashlib.sha256()
        # Path order by components, as pathlib sorts (the publisher sorted Path objects).
        for path in sorted(chosen, key=lambda p: PurePosixPath(p).parts):
            digest.update(f"{chosen[path][0]}  {path}\n".encode())
        if digest.hexdigest() != self.sha256:
            return f"their inventory digest is {digest.hexdigest()}, published {self.sha256}"
        return None


@dataclass(frozen=True)
class Pin:
    """Checksums published for one revision (commit) of a repository."""

    files: Mapping[str, str] = field(default_factory=dict)
    inventories: tuple[Inventory, ...] = ()


@dataclass(frozen=True)
class Fetched:
    """One local file from the Hub, with what was checked."""

    path: Path
    repo_id: str
    revision: str
    filename: str
    sha256: str
    checksum: Checksum


def _require_hub() -> None:
    try:
        import huggingface_hub  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            "downloading public datasets needs the huggingface_hub package, which is not "
            "installed. Pass the path of a file you downloaded yourself instead, or install "
            f"it: {INSTALL_HINT}"
        ) from exc


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def hub_settings() -> HubSettings:
    """Read ``HF_ENDPOINT``, ``HF_HUB_CACHE``/``HF_HOME`` and ``HF_HUB_OFFLINE`` now.

    huggingface_hub reads these once, at import; reading them per call lets a notebook change
    them after ``import mast`` and still be obeyed.
    """
    _require_hub()
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if not cache and os.environ.get("HF_HOME"):
        cache = os.path.join(os.environ["HF_HOME"], "hub")
    cache_dir = Path(os.path.expandvars(os.path.expanduser(cache or constants.HF_HUB_CACHE)))
    offline = _truthy(os.environ.get("HF_HUB_OFFLINE")) or bool(constants.HF_HUB_OFFLINE)
    return HubSettings(endpoint=endpoint, cache_dir=cache_dir, offline=offline)


def resolve_url(endpoint: str, repo_id: str, revision: str, filename: str) -> str:
    """The ``/resolve/`` URL of a dataset file: what a browser or ``curl -L`` downloads."""
    return (
        f"{endpoint.rstrip('/')}/datasets/{repo_id}/resolve/"
        f"{quote(revision, safe='')}/{quote(filename)}"
    )


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks (a 200 MB file never sits in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- fetching -------------------------------------------------------------------------------


def fetch_file(
    target: Target,
    filename: str,
    *,
    pins: Mapping[str, Pin],
    sha256: str | None = None,
) -> Fetched:
    """Download (or find in the cache) one file and check it before returning its path.

    ``pins`` maps commit hashes to published checksums; ``sha256`` is an extra expected digest
    from the caller. Raises :class:`DatasetUnavailableError` (offline, unreachable, missing),
    :class:`DatasetAccessError` (401/403, gated) or :class:`DatasetChecksumError`.
    """
    settings = hub_settings()
    from huggingface_hub import hf_hub_download

    url = resolve_url(settings.endpoint, target.repo_id, target.revision, filename)
    try:
        local = Path(
            hf_hub_download(
                repo_id=target.repo_id,
                repo_type=REPO_TYPE,
                filename=filename,
                revision=target.revision,
                cache_dir=settings.cache_dir,
                endpoint=settings.endpoint,
                local_files_only=settings.offline,
            )
        )
    except Exception as exc:
        raise _translate(exc, target, settings, what=filename, url=url) from exc
    storage = _storage(settings.cache_dir, target.repo_id)
    commit = _commit_of(local, storage, target.revision)
    records = _Records(storage, commit)
    (fetched,) = _verify(
        target, storage, records, {filename: local}, pins.get(commit, Pin()), sha256, settings
    )
    return fetched


def fetch_folder(
    target: Target,
    patterns: Sequence[str],
    *,
    pins: Mapping[str, Pin],
    describe: str,
) -> list[Fetched]:
    """Download every file matching ``patterns`` (fnmatch over repo paths) and check each.

    ``describe`` names the selection in messages ("the Who&When runs"). Files are returned
    in path order.
    """
    settings = hub_settings()
    from huggingface_hub import snapshot_download

    url = f"{settings.endpoint}/datasets/{target.repo_id}/tree/{quote(target.revision, safe='')}"
    try:
        folder = Path(
            snapshot_download(
                repo_id=target.repo_id,
                repo_type=REPO_TYPE,
                revision=target.revision,
                allow_patterns=list(patterns),
                cache_dir=settings.cache_dir,
                endpoint=settings.endpoint,
                local_files_only=settings.offline,
            )
        )
    except Exception as exc:
        raise _translate(exc, target, settings, what=describe, url=url) from exc
    storage = _storage(settings.cache_dir, target.repo_id)
    commit = folder.name if _HEX40.fullmatch(folder.name) else target.revision
    found = {
        rel: folder / rel
        for rel in _walk(folder)
        if any(fnmatch.fnmatchcase(rel, pattern) for pattern in patterns)
    }
    records = _Records(storage, commit)
    wanted = records.file_set(patterns)
    missing = sorted(set(wanted or ()) - set(found))
    if missing or not found:
        reason = (
            f"the cached copy lacks {len(missing)} of the {len(wanted or ())} files it had "
            f"when first downloaded (e.g. {missing[0]})"
            if missing
            else f"no file at revision {commit} matches {list(patterns)}"
        )
        raise DatasetUnavailableError(
            _message(target, f"Could not get {describe}", reason, url, settings, fix=None),
            dataset=target.dataset,
            repo_id=target.repo_id,
            revision=commit,
            url=url,
        )
    if wanted is None:
        records.set_file_set(patterns, sorted(found))  # saved by _verify once all files pass
    return _verify(target, storage, records, found, pins.get(commit, Pin()), None, settings)


# --- checking -------------------------------------------------------------------------------


def _verify(
    target: Target,
    storage: Path,
    records: _Records,
    files: Mapping[str, Path],
    pin: Pin,
    sha256: str | None,
    settings: HubSettings,
) -> list[Fetched]:
    commit = records.commit
    actual = {name: sha256_file(path) for name, path in files.items()}
    sizes = {name: path.stat().st_size for name, path in files.items()}
    status: dict[str, Checksum] = {}
    problems: list[tuple[str, str, str, str]] = []  # (file, expected, actual, why)

    for name, path in files.items():
        # The Hub names each cached blob after its own hash of the content (LFS sha256 or git
        # blob sha1): a cheap check that the transfer delivered what the Hub meant to send.
        blob_problem = _blob_mismatch(path, actual[name])
        if blob_problem:
            problems.append((name, blob_problem, actual[name], "the Hub's own hash of the file"))
        expected = [e.lower() for e in (pin.files.get(name), sha256) if e]
        for value in expected:
            if value != actual[name]:
                problems.append((name, value, actual[name], "the checksum published for it"))
        if expected:
            status[name] = "verified"

    inventory_sizes = {n: (actual[n], sizes[n]) for n in files}
    for inventory in pin.inventories:
        covered = [n for n in files if fnmatch.fnmatchcase(n, inventory.pattern)]
        if not covered:
            continue
        problem = inventory.check(inventory_sizes)
        if problem:
            problems.extend(
                (n, inventory.sha256, actual[n], f"the published inventory ({problem})")
                for n in covered
            )
        else:
            status.update(dict.fromkeys(covered, "verified"))

    for name in files:
        if name in status:
            continue
        seen = records.file(name)
        if seen is None:
            records.add_file(name, actual[name], sizes[name])
            status[name] = "first-use"
        elif seen["sha256"] != actual[name]:
            when = seen.get("recorded", "an earlier load")
            problems.append(
                (name, seen["sha256"], actual[name], f"the checksum recorded on first use ({when})")
            )
        else:
            status[name] = "matches-first-use"

    if problems:
        for name in {p[0] for p in problems}:
            _evict(files[name], storage)
        raise _checksum_error(target, commit, problems, records.path, settings)
    if records.dirty:
        records.save()
    return [
        Fetched(
            path=files[name],
            repo_id=target.repo_id,
            revision=commit,
            filename=name,
            sha256=actual[name],
            checksum=status[name],
        )
        for name in sorted(files, key=lambda n: PurePosixPath(n).parts)
    ]


def _blob_mismatch(path: Path, sha256: str) -> str | None:
    """The Hub's hash from the cached blob's name when it disagrees with the content."""
    if not path.is_symlink():
        return None  # no-symlink caches (Windows) copy the file: no blob name to compare
    name = path.resolve().name
    if _HEX64.fullmatch(name):
        return None if name == sha256 else name
    if _HEX40.fullmatch(name):
        size = path.stat().st_size
        digest = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
        return None if digest.hexdigest() == name else name
    return None


def _checksum_error(
    target: Target,
    commit: str,
    problems: Sequence[tuple[str, str, str, str]],
    records_path: Path,
    settings: HubSettings,
) -> DatasetChecksumError:
    lines = [
        f"- {name}: expected {expected} ({why}), got {actual}"
        for name, expected, actual, why in problems[:5]
    ]
    if len(problems) > 5:
        lines.append(f"- … and {len(problems) - 5} more")
    tofu = any("first use" in p[3] for p in problems)
    files = sorted({p[0] for p in problems})
    text = (
        f"{len(files)} file(s) of dataset {target.dataset!r} ({target.repo_id} at revision "
        f"{commit}) do not have the expected SHA-256:\n" + "\n".join(lines) + "\n"
        "The bad file(s) were removed from the cache, so they will not be read or reused. "
        "A corrupted transfer, or a mirror or proxy serving other content "
        f"(endpoint {settings.endpoint}), are the usual causes: try again."
    )
    if tofu:
        text += (
            " No checksum is published for this revision; if you trust the new file, delete "
            f"{records_path} and load again."
        )
    text += "\n" + target.manual
    err = DatasetChecksumError(
        text,
        dataset=target.dataset,
        repo_id=target.repo_id,
        revision=commit,
        filename=files[0],
    )
    err.expected, err.actual = problems[0][1], problems[0][2]
    return err


def _evict(pointer: Path, storage: Path) -> None:
    """Remove a cached file: the snapshot entry and the blob it points to."""
    blob = pointer.resolve() if pointer.is_symlink() else None
    pointer.unlink(missing_ok=True)
    if blob is not None and (storage / "blobs") in blob.parents:
        blob.unlink(missing_ok=True)


class _Records:
    """Trust-on-first-use digests for one commit, kept in the repository's cache folder."""

    def __init__(self, storage: Path, commit: str) -> None:
        self.path = storage / _RECORDS_DIR / f"{commit}.json"
        self.commit = commit
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self._files: dict[str, dict[str, Any]] = dict(data.get("files") or {})
        self._sets: dict[str, list[str]] = dict(data.get("sets") or {})
        self.dirty = False

    def file(self, name: str) -> dict[str, Any] | None:
        return self._files.get(name)

    def add_file(self, name: str, sha256: str, size: int) -> None:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._files[name] = {"sha256": sha256, "size": size, "recorded": now}
        self.dirty = True

    def file_set(self, patterns: Sequence[str]) -> list[str] | None:
        return self._sets.get("\n".join(sorted(patterns)))

    def set_file_set(self, patterns: Sequence[str], names: list[str]) -> None:
        self._sets["\n".join(sorted(patterns))] = names
        self.dirty = True

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"schema_version": 1, "revision": self.commit, "files": self._files}
        if self._sets:
            data["sets"] = self._sets
        # Atomic replace: a reader never sees half a file, a crash never leaves one.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


# --- paths ----------------------------------------------------------------------------------


def _storage(cache_dir: Path, repo_id: str) -> Path:
    # huggingface_hub's layout: <cache>/datasets--<owner>--<name>/{blobs,refs,snapshots}
    return cache_dir / f"datasets--{repo_id.replace('/', '--')}"


def _commit_of(local: Path, storage: Path, revision: str) -> str:
    try:
        commit = local.relative_to(storage / "snapshots").parts[0]
    except (ValueError, IndexError):
        return revision
    return commit if _HEX40.fullmatch(commit) else revision


def _walk(folder: Path) -> Iterator[str]:
    for root, _dirs, names in os.walk(folder):
        for name in names:
            yield (Path(root) / name).relative_to(folder).as_posix()


# --- errors ---------------------------------------------------------------------------------
