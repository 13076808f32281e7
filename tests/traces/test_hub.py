"""Public datasets from the Hub: download, cache, offline, checksums, revisions, access errors.

huggingface_hub is pointed (HF_ENDPOINT) at a local server that answers the way the Hub does
for ``hf_hub_download`` and ``snapshot_download``: ``HEAD/GET /datasets/<repo>/resolve/<rev>/
<file>`` with ``X-Repo-Commit``, ``ETag`` / ``X-Linked-Etag`` / ``X-Linked-Size``, a 302 to a
separate "CDN" origin for LFS files, ``X-Error-Code`` on errors, and the ``/api`` tree listing.
Files are built from tests/fixtures/mad/*.json and tests/fixtures/whoandwhen/*.json.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

import mast
from mast.errors import (
    DatasetAccessError,
    DatasetChecksumError,
    DatasetUnavailableError,
    MissingDependencyError,
)
from mast.traces import catalog, datasets
from mast.traces.datasets import (
    DatasetLicenseWarning,
    DatasetRevisionWarning,
    UnverifiedDatasetWarning,
)
from mast.traces.hub import Inventory, sha256_bytes

FIXTURES = Path(__file__).parents[1] / "fixtures"
MAD = "mcemri/MAST-Data"
REV_A = "a" * 40
REV_B = "b" * 40
REV_C = "c" * 40


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _pointer(data: bytes) -> bytes:
    sha = sha256_bytes(data)
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()
    )


class FakeHub:
    """Two local HTTP servers: the Hub (resolve + API) and a CDN holding LFS content."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, dict[str, bytes]]] = {}
        self.refs: dict[str, dict[str, str]] = {}
        self.lfs: set[str] = set()  # repo paths stored in LFS (served through the CDN)
        self.tokens: dict[str, str] = {}  # gated repo -> the token that may read it
        self.corrupt: set[str] = set()  # LFS sha256s the CDN serves damaged
        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self.hub = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("hub"))
        self.cdn = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("cdn"))
        self.url = f"http://127.0.0.1:{self.hub.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self.cdn.server_address[1]}"

    def add(self, repo: str, commit: str, files: dict[str, bytes], *, lfs: bool = True) -> None:
        self.repos.setdefault(repo, {})[commit] = dict(files)
        if lfs:
            self.lfs.update(files)

    def count(self, server: str | None = None) -> int:
        with self._lock:
            return sum(1 for s, _, _ in self.requests if server in (None, s))

    def __enter__(self) -> FakeHub:
        for server in (self.hub, self.cdn):
            threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()

    def _handler(self, which: str) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                with hub._lock:
                    hub.requests.append((which, self.command, self.path))
                if which == "cdn":
                    self._cdn(head)
                elif self.path.startswith("/api/datasets/"):
                    self._api()
                else:
                    self._resolve(head)

            def _reply(
                self, status: int, headers: dict[str, str], body: bytes = b"", head: bool = False
            ) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _error(
                self, status: int, code: str, message: str, head: bool, **extra: str
            ) -> None:
                headers = {"X-Error-Code": code, "X-Error-Message": message, **extra}
                body = json.dumps({"error": message}).encode()
                self._reply(status, {**headers, "Content-Type": "application/json"}, body, head)

            def _repo_commit(self, repo: str, rev: str, head: bool) -> str | None:
                if repo not in hub.repos:
                    self._error(404, "RepoNotFound", "Repository not found", head)
                    return None
                if repo in hub.tokens:
                    auth = self.headers.get("authorization", "")
                    if not auth:
                        message = (
                            f"Access to dataset {repo} is restricted. You must be authenticated."
                        )
                        self._error(401, "GatedRepo", message, head)
                        return None
                    if auth != f"Bearer {hub.tokens[repo]}":
                        message = f"Access to dataset {repo} is restricted: not authorized."
                        self._error(403, "GatedRepo", message, head)
                        return None
                commit = hub.refs.get(repo, {}).get(rev, rev)
                if commit not in hub.repos[repo]:
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
                    return None
                return commit

            def _resolve(self, head: bool) -> None:
                parts = [unquote(p) for p in urlsplit(self.path).path.split("/")]
                # ['', 'datasets', owner, name, 'resolve', rev, *file]
                repo, rev, name = f"{parts[2]}/{parts[3]}", parts[5], "/".join(parts[6:])
                commit = self._repo_commit(repo, rev, head)
                if commit is None:
                    return
                files = hub.repos[repo][commit]
                if name not in files:
                    self._error(
                        404, "EntryNotFound", "Entry not found", head, **{"X-Repo-Commit": commit}
                    )
                    return
                data = files[name]
                if name in hub.lfs:
                    sha = sha256_bytes(data)
                    headers = {
                        "X-Repo-Commit": commit,
                        "ETag": f'"{_git_blob_sha1(_pointer(data))}"',
                        "X-Linked-Etag": f'"{sha}"',
                        "X-Linked-Size": str(len(data)),
                        "Location": f"{hub.cdn_url}/lfs/{sha}",
                    }
                    self._reply(302, headers, b"", head)
                else:
                    headers = {"X-Repo-Commit": commit, "ETag": f'"{_git_blob_sha1(data)}"'}
                    self._reply(200, headers, data, head)

            def _api(self) -> None:
                parts = [unquote(p) for p in urlsplit(self.path).path.split("/")]
                # ['', 'api', 'datasets', owner, name, 'tree'|'revision', rev, *path]
                repo, kind, rev = f"{parts[3]}/{parts[4]}", parts[5], parts[6]
                commit = self._repo_commit(repo, rev, head=False)
                if commit is None:
                    return
                files = hub.repos[repo][commit]
                if kind == "revision":
                    body = {
                        "id": repo,
                        "sha": commit,
                        "private": False,
                        "gated": bool(hub.tokens.get(repo)),
                        "downloads": 0,
                        "likes": 0,
                        "tags": [],
                        "siblings": [{"rfilename": p} for p in files],
                    }
                else:
                    body = []
                    for folder in sorted({str(Path(p).parent) for p in files} - {"."}):
                        body.append({"type": "directory", "oid": "0" * 40, "path": folder})
                    for path, data in sorted(files.items()):
                        entry: dict[str, Any] = {"type": "file", "path": path, "size": len(data)}
                        if path in hub.lfs:
                            pointer = _pointer(data)
                            entry["oid"] = _git_blob_sha1(pointer)
                            entry["lfs"] = {
                                "oid": sha256_bytes(data),
                                "size": len(data),
                                "pointerSize": len(pointer),
                            }
                        else:
                            entry["oid"] = _git_blob_sha1(data)
                        body.append(entry)
                payload = json.dumps(body).encode()
                self._reply(200, {"Content-Type": "application/json"}, payload)

            def _cdn(self, head: bool) -> None:
                sha = self.path.split("?")[0].rsplit("/", 1)[-1]
                blobs = {
                    sha256_bytes(d): d
                    for r in hub.repos.values()
                    for c in r.values()
                    for d in c.values()
                }
                if sha not in blobs:
                    self._reply(404, {}, b"not found", head)
                    return
                data = blobs[sha]
                if sha in hub.corrupt:  # same length, different bytes: a damaged transfer
                    data = bytes(b ^ 0x20 for b in data)
                start = 0
                ranged = self.headers.get("Range", "")
                if ranged.startswith("bytes="):
                    start = int(ranged[6:].split("-")[0] or 0)
                    headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
                    self._reply(206, headers, data[start:], head)
                else:
                    self._reply(200, {}, data, head)

        return Handler


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    import huggingface_hub.constants as constants
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    with FakeHub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        for name in (
            "HF_HUB_CACHE",
            "HUGGINGFACE_HUB_CACHE",
            "HF_HUB_OFFLINE",
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
        ):
            monkeypatch.delenv(name, raising=False)
        # huggingface_hub read these at import: make the process's own settings harmless.
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
        disable_progress_bars()
        try:
            yield server
        finally:
            enable_progress_bars()


def _cache(tmp_path: Path, repo: str = MAD) -> Path:
    return tmp_path / "hf" / "hub" / f"datasets--{repo.replace('/', '--')}"


def _full_a() -> bytes:
    return (FIXTURES / "mad" / "full_array.json").read_bytes()


def _full_b() -> bytes:
    return b"[" + (FIXTURES / "mad" / "full_record_chatdev.json").read_bytes() + b"]"


# --- download, cache, metadata ----------------------------------------------------------------


def test_download_checks_sha256_and_records_it_on_every_trace(hub: FakeHub, tmp_path: Path) -> None:
    data = _full_a()
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": data})
    traces = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))
    assert [t.id for t in traces] == [
        "mad/ChatDev_ProgramDev_GPT4o/5",
        "mad/ChatDev_ProgramDev_GPT4o/6",
    ]
    for trace in traces:
        assert trace.metadata["dataset"] == {
            "name": "mad-full",
            "repo_id": MAD,
            "revision": REV_A,
            "file": "MAD_full_dataset.json",
            "sha256": sha256_bytes(data),
            "checksum": "verified",
            "source": "hub",
        }
    assert traces[0].labels["o1"]["1.1"] is True  # labels as the loader reads them
    # HEAD on the Hub (302 to the CDN carrying the LFS metadata), then GET from the CDN.
    assert [(s, m) for s, m, _ in hub.requests] == [("hub", "HEAD"), ("cdn", "GET")]
    snapshot = _cache(tmp_path) / "snapshots" / REV_A / "MAD_full_dataset.json"
    assert snapshot.read_bytes() == data


def test_second_load_reuses_the_cache_without_a_request(hub: FakeHub) -> None:
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": _full_a()})
    first = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(_full_a()))
    before = hub.count()
    stream = mast.traces.datasets.load_mad(
        revision=REV_A, sha256=sha256_bytes(_full_a()), stream=True
    )
    again = list(stream)
    assert hub.count() == before
    assert [t.id for t in again] == [t.id for t in first]
    assert again[0].metadata["dataset"]["checksum"] == "verified"


def test_default_revision_is_pinned_to_the_published_checksum(hub: FakeHub, tmp_path: Path) -> None:
    # The Hub serving other bytes at the pinned release must fail, and leave nothing behind.
    hub.add(MAD, datasets.MAD_REVISION, {"MAD_full_dataset.json": _full_a()})
    with pytest.raises(DatasetChecksumError) as caught:
        mast.traces.datasets.load_mad()
    err = caught.value
    assert err.expected == "d636ac63dfc1c6af2d312e862f4b7d383b62d3898d431ccd0e7a79d21d85406f"
    assert err.actual == sha256_bytes(_full_a())
    assert err.revision == datasets.MAD_REVISION and err.filename == "MAD_full_dataset.json"
    text = str(err)
    assert "removed from the cache" in text and "sha256sum MAD_full_dataset.json" in text
    assert "mast.traces.datasets.load_mad('MAD_full_dataset.json')" in text
    storage = _cache(tmp_path)
    assert not (storage / "snapshots" / datasets.MAD_REVISION / "MAD_full_dataset.json").exists()
    assert not [p for p in (storage / "blobs").iterdir()]  # no blob, no *.incomplete
    # The bad file is not reused: the next attempt downloads (and fails) again.
    before = hub.count("cdn")
    with pytest.raises(DatasetChecksumError):
        mast.traces.datasets.load_mad()
    assert hub.count("cdn") == before + 1


def test_damaged_transfer_is_caught_removed_and_downloaded_again(
    hub: FakeHub, tmp_path: Path
) -> None:
    data = _full_a()
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": data})
    hub.corrupt.add(sha256_bytes(data))
    with pytest.raises(DatasetChecksumError, match="do not have the expected SHA-256"):
        mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))
    assert not list((_cache(tmp_path) / "blobs").iterdir())
    # Even with no published checksum, the Hub's own LFS hash (the blob name) catches it.
    with pytest.raises(DatasetChecksumError, match="the Hub's own hash"):
        mast.traces.datasets.load_mad(revision=REV_A)
    hub.corrupt.clear()
    traces = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))
    assert traces[0].metadata["dataset"]["checksum"] == "verified"


def test_unpublished_revision_is_trusted_on_first_use_and_says_so(
    hub: FakeHub, tmp_path: Path
) -> None:
    hub.add(MAD, REV_C, {"MAD_full_dataset.json": _full_a()})
    with pytest.warns(UnverifiedDatasetWarning, match="not verified against a published"):
        first = mast.traces.datasets.load_mad(revision=REV_C)
    assert first[0].metadata["dataset"]["checksum"] == "first-use"
    record = json.loads((_cache(tmp_path) / ".mast-checksums" / f"{REV_C}.json").read_text())
    assert record["files"]["MAD_full_dataset.json"]["sha256"] == sha256_bytes(_full_a())
    with pytest.warns(UnverifiedDatasetWarning, match="match the checksums recorded"):
        again = mast.traces.datasets.load_mad(revision=REV_C)
    assert again[0].metadata["dataset"]["checksum"] == "matches-first-use"

    # The cache is cleared and the Hub now serves other bytes under the same commit.
    for folder in ("blobs", "snapshots"):
        for path in sorted((_cache(tmp_path) / folder).rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() else path.rmdir()
    hub.add(MAD, REV_C, {"MAD_full_dataset.json": _full_b()})
    with pytest.raises(DatasetChecksumError, match="recorded on first use") as caught:
        mast.traces.datasets.load_mad(revision=REV_C)
    assert ".mast-checksums" in str(caught.value)
    assert not (_cache(tmp_path) / "snapshots" / REV_C / "MAD_full_dataset.json").exists()


def test_revision_change_gives_other_file_and_other_metadata(hub: FakeHub) -> None:
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": _full_a()})
    hub.add(MAD, REV_B, {"MAD_full_dataset.json": _full_b()})
    hub.refs[MAD] = {"main": REV_B}
    a = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(_full_a()))
    b = mast.traces.datasets.load_mad(revision=REV_B, sha256=sha256_bytes(_full_b()))
    assert len(a) == 2 and len(b) == 1
    assert a[0].metadata["dataset"]["revision"] == REV_A
    assert b[0].metadata["dataset"]["revision"] == REV_B
    assert a[0].metadata["dataset"]["sha256"] != b[0].metadata["dataset"]["sha256"]
    # A branch name is resolved, and the commit it pointed to is what gets recorded.
    with pytest.warns(UnverifiedDatasetWarning):
        main = mast.traces.datasets.load_mad(revision="main")
    assert main[0].metadata["dataset"]["revision"] == REV_B


def test_mad_human_download(hub: FakeHub) -> None:
    data = (FIXTURES / "mad" / "human_with_nan.json").read_bytes()
    hub.add(MAD, REV_A, {"MAD_human_labelled_dataset.json": data})
    traces = mast.traces.datasets.load_mad_human(revision=REV_A, sha256=sha256_bytes(data))
    assert len(traces) == 2 and traces[0].labels["annotator_2"]["1.1"] is None
    assert traces[0].metadata["dataset"]["name"] == "mad-human"
    assert traces[0].metadata["dataset"]["file"] == "MAD_human_labelled_dataset.json"


# --- offline, unreachable, gated ----------------------------------------------------------------


def test_offline_uses_the_cache_and_makes_no_request(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": _full_a()})
    hub.refs[MAD] = {"main": REV_A}
    online = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(_full_a()))
    with pytest.warns(UnverifiedDatasetWarning):
        mast.traces.datasets.load_mad(revision="main")  # leaves refs/main in the cache
    before = hub.count()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(_full_a()))
    assert [t.id for t in offline] == [t.id for t in online]
    with pytest.warns(UnverifiedDatasetWarning):
        by_branch = mast.traces.datasets.load_mad(revision="main")
    assert by_branch[0].metadata["dataset"]["revision"] == REV_A
    assert hub.count() == before


def test_offline_without_cache_says_what_was_tried_and_what_to_do(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.add(MAD, datasets.MAD_REVISION, {"MAD_full_dataset.json": _full_a()})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError) as caught:
        mast.traces.datasets.load_mad()
    text = str(caught.value)
    url = f"{hub.url}/datasets/{MAD}/resolve/{datasets.MAD_REVISION}/MAD_full_dataset.json"
    assert f"Tried: {url}" in text
    assert "HF_HUB_OFFLINE" in text and "offline mode" in text
    assert "d636ac63dfc1c6af2d312e862f4b7d383b62d3898d431ccd0e7a79d21d85406f" in text
    assert "mast.traces.datasets.load_mad('MAD_full_dataset.json')" in text
    assert not isinstance(caught.value, DatasetAccessError)
    assert hub.count() == 0


def test_unreachable_hub_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import huggingface_hub.constants as constants
    import huggingface_hub.utils._http as hf_http

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub retries a refused connection with exponential backoff (~30 s of sleep);
    # the retries still happen, only the waiting is skipped.
    monkeypatch.setattr(hf_http, "time", SimpleNamespace(sleep=lambda s: None, time=time.time))
    with pytest.raises(DatasetUnavailableError, match="could not be reached") as caught:
        mast.traces.datasets.load_mad_human()
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_gated_dataset_needs_a_token_and_the_error_says_how(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _full_a()
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": data})
    hub.tokens[MAD] = "hf_granted"
    with pytest.raises(DatasetAccessError) as no_token:
        mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))
    text = str(no_token.value)
    assert "HTTP 401" in text and "gated" in text
    assert "hf auth login" in text and "HF_TOKEN" in text and "accept" in text
    assert "load_mad('MAD_full_dataset.json')" in text

    monkeypatch.setenv("HF_TOKEN", "hf_refused")
    with pytest.raises(DatasetAccessError, match="HTTP 403"):
        mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))

    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    traces = mast.traces.datasets.load_mad(revision=REV_A, sha256=sha256_bytes(data))
    assert traces[0].metadata["dataset"]["checksum"] == "verified"


def test_missing_revision_and_missing_file(hub: FakeHub) -> None:
    hub.add(MAD, REV_A, {"MAD_full_dataset.json": _full_a()})
    with pytest.raises(DatasetUnavailableError, match="does not exist in"):
        mast.traces.datasets.load_mad(revision=REV_B)
    with pytest.raises(DatasetUnavailableError, match="does not exist at revision"):
        mast.traces.datasets.load_mad_human(revision=REV_A)


def test_missing_huggingface_hub_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(MissingDependencyError, match="pip install huggingface_hub"):
        mast.traces.datasets.load_mad()
    # A local file still loads without it.
    assert mast.traces.datasets.load_mad(FIXTURES / "mad" / "full_record_chatdev.json")


# --- local files --------------------------------------------------------------------------------


def test_local_file_records_its_sha256_and_can_be_checked() -> None:
    path = FIXTURES / "mad" / "full_array.json"
    (trace, _) = mast.traces.datasets.load_mad(path)
    meta = trace.metadata["dataset"]
    assert meta["sha256"] == sha256_bytes(path.read_bytes())
    assert (meta["checksum"], meta["revision"], meta["source"]) == ("unverified", None, "local")
    with pytest.raises(DatasetChecksumError, match="the checksum published for revision 95118ac"):
        mast.traces.datasets.load_mad(path, revision=datasets.MAD_REVISION)
    with pytest.raises(DatasetChecksumError, match="the sha256 you passed"):
        mast.traces.datasets.load_mad(path, sha256="0" * 64, stream=True)  # fails at the call
    assert mast.traces.datasets.load_mad(path, sha256=meta["sha256"])[0].metadata["dataset"][
        "checksum"
    ] == ("verified")


def test_local_folder_records_each_file(tmp_path: Path) -> None:
    for name in ("full_array.json", "full_record_chatdev.json"):
        (tmp_path / name).write_bytes((FIXTURES / "mad" / name).read_bytes())
    traces = mast.traces.datasets.load_mad(tmp_path)
    digests = {t.metadata["dataset"]["file"]: t.metadata["dataset"]["sha256"] for t in traces}
    assert digests == {
        name: sha256_bytes((FIXTURES / "mad" / name).read_bytes())
        for name in ("full_array.json", "full_record_chatdev.json")
    }


def test_local_file_is_recognised_by_digest_and_a_superseded_one_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = FIXTURES / "mad" / "full_record_chatdev.json"
    sha = sha256_bytes(path.read_bytes())
    full = datasets.info("mad-full")
    old = dataclasses.replace(full.releases[1], files={"MAD_full_dataset.json": sha})
    monkeypatch.setitem(
        catalog._CATALOG, "mad-full", dataclasses.replace(full, releases=(full.releases[0], old))
    )
    with pytest.warns(DatasetRevisionWarning, match="not comparable"):
        (trace,) = mast.traces.datasets.load_mad(path)
    assert trace.metadata["dataset"]["revision"] == catalog.MAD_OLD_REVISION
    assert trace.metadata["dataset"]["checksum"] == "verified"


# --- Who&When and ITBench (many files) ---------------------------------------------------------


def _whoandwhen_files() -> dict[str, bytes]:
    root = FIXTURES / "whoandwhen"
    return {
        "Who&When/Algorithm-Generated/102.json": (
            root / "algorithm-generated-102.json"
        ).read_bytes(),
        "Who&When/Hand-Crafted/12.json": (root / "hand-crafted-12.json").read_bytes(),
        "Hand-Crafted.parquet": b"PAR1 not read by mast PAR1",
        "README.md": b"# Who&When\n",
    }


def test_whoandwhen_download_subset_and_offline(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.add("Kevin355/Who_and_When", datasets.WHOANDWHEN_REVISION, _whoandwhen_files(), lfs=False)
    with pytest.warns(UnverifiedDatasetWarning, match="2 of 2 file"):
        runs = mast.traces.datasets.load_whoandwhen()
    assert [t.metadata["dataset"]["subset"] for t in runs] == [
        "Algorithm-Generated",
        "Hand-Crafted",
    ]
    assert runs[1].metadata["mistake_agent"] and runs[1].metadata["dataset"]["file"] == (
        "Who&When/Hand-Crafted/12.json"
    )
    assert {t.metadata["dataset"]["checksum"] for t in runs} == {"first-use"}
    assert not any("parquet" in path for _, _, path in hub.requests)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = hub.count()
    with pytest.warns(UnverifiedDatasetWarning):
        hand = mast.traces.datasets.load_whoandwhen(subset="Hand-Crafted")
    assert [t.id for t in hand] == [runs[1].id] and hub.count() == before
    assert hand[0].metadata["dataset"]["checksum"] == "matches-first-use"
    # A half-deleted cache is reported, not silently read as a smaller dataset.
    storage = _cache(tmp_path, "Kevin355/Who_and_When")
    (
        storage / "snapshots" / datasets.WHOANDWHEN_REVISION / "Who&When/Hand-Crafted/12.json"
    ).unlink()
    with pytest.raises(DatasetUnavailableError):
        mast.traces.datasets.load_whoandwhen()


def test_whoandwhen_from_a_local_folder(tmp_path: Path) -> None:
    for name, data in _whoandwhen_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    runs = mast.traces.datasets.load_whoandwhen(tmp_path / "Who&When", subset="Algorithm-Generated")
    assert len(runs) == 1 and runs[0].metadata["dataset"]["source"] == "local"
    assert runs[0].metadata["dataset"]["checksum"] == "unverified"
    with pytest.raises(ValueError, match="subset"):
        mast.traces.datasets.load_whoandwhen(tmp_path, subset="hand")  # type: ignore[arg-type]


def _codex_session(question: str) -> bytes:
    events = [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/w", "instructions": "SRE agent"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": question}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command": ["ls"]}',
                "call_id": "c1",
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "alerts"},
        },
    ]
    lines = [
        json.dumps({"timestamp": f"2026-01-01T00:00:0{i}Z", **e}) for i, e in enumerate(events)
    ]
    return ("\n".join(lines) + "\n").encode()


def _itbench_files() -> dict[str, bytes]:
    prefix = "ReAct-Agent-Trajectories/OpenAI-GPT-OSS-120B/sre"
    files = {"README.md": b"# ITBench trajectories\n"}
    for scenario, run in (("3", "1"), ("3", "2"), ("24", "1")):
        base = f"{prefix}/Scenario-{scenario}/{run}"
        files[f"{base}/session.jsonl"] = _codex_session(f"Diagnose scenario {scenario} run {run}.")
        if (scenario, run) != ("3", "2"):  # like Scenario 80 run 2: no output, no judge file
            files[f"{base}/agent_output.json"] = json.dumps({"entities": []}).encode()
    return files


def test_itbench_warns_licence_and_checks_the_published_inventory(
    hub: FakeHub, tmp_path: Path
) -> None:
    repo = "ibm-research/ITBench-Trajectories"
    hub.add(repo, datasets.ITBENCH_REVISION, _itbench_files())
    # Three sessions are not the 105 published ones: refused, and removed from the cache.
    with (
        pytest.warns(DatasetLicenseWarning, match="non-commercial"),
        pytest.raises(DatasetChecksumError, match="published inventory"),
    ):
        mast.traces.datasets.load_itbench_trajectories()
    snapshot = _cache(tmp_path, repo) / "snapshots" / datasets.ITBENCH_REVISION
    assert not list(snapshot.rglob("session.jsonl"))

    hub.add(repo, REV_A, _itbench_files())
    with pytest.warns(DatasetLicenseWarning), pytest.warns(UnverifiedDatasetWarning):
        runs = mast.traces.datasets.load_itbench_trajectories(revision=REV_A, scenarios=[3])
    assert [(t.metadata["dataset"]["scenario"], t.metadata["dataset"]["run"]) for t in runs] == [
        ("3", "1"),
        ("3", "2"),
    ]
    assert runs[0].metadata["dataset"]["file"].endswith("Scenario-3/1/session.jsonl")
    assert [s.kind.value for s in runs[0].steps][-2:] == ["tool_call", "tool_result"]
    assert runs[1].outcome.value == "failure"  # no diagnosis file


def test_itbench_from_a_local_folder(tmp_path: Path) -> None:
    for name, data in _itbench_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    with pytest.warns(DatasetLicenseWarning, match="CC BY-NC 4.0"):
        runs = mast.traces.datasets.load_itbench_trajectories(tmp_path, scenarios=["Scenario-24"])
    (run,) = runs
    meta = run.metadata["dataset"]
    assert (meta["scenario"], meta["run"], meta["source"]) == ("24", "1", "local")
    assert meta["checksum"] == "unverified" and len(meta["sha256"]) == 64


def test_inventory_digest_matches_the_publishers_method(tmp_path: Path) -> None:
    # The publisher hashed sorted(root.rglob("session.jsonl")) as "<sha>  <relative path>".
    prefix = "ReAct-Agent-Trajectories/OpenAI-GPT-OSS-120B/sre"
    names = ["Scenario-1/1", "Scenario-10/1", "Scenario-2/3", "Scenario-1/2"]
    for i, name in enumerate(names):
        path = tmp_path / prefix / name / "session.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"x" * (i + 1))
    digest = hashlib.sha256()
    total = 0
    for path in sorted(tmp_path.rglob("session.jsonl")):
        digest.update(
            f"{sha256_bytes(path.read_bytes())}  {path.relative_to(tmp_path).as_posix()}\n".encode()
        )
        total += path.stat().st_size
    files = {
        p.relative_to(tmp_path).as_posix(): (sha256_bytes(p.read_bytes()), p.stat().st_size)
        for p in tmp_path.rglob("session.jsonl")
    }
    inventory = Inventory(f"{prefix}/Scenario-*/*/session.jsonl", 4, total, digest.hexdigest())
    assert inventory.check(files) is None
    assert "published set has 5" in (dataclasses.replace(inventory, count=5).check(files) or "")
    assert "inventory digest" in (
        dataclasses.replace(inventory, sha256="0" * 64).check(files) or ""
    )


# --- info --------------------------------------------------------------------------------------


def test_info_lists_licence_size_labels_and_quirks() -> None:
    catalog = {d.name: d for d in mast.traces.datasets.info()}
    assert list(catalog) == ["mad-full", "mad-human", "whoandwhen", "itbench-trajectories"]
    for entry in catalog.values():
        assert entry.licence and entry.size and entry.quirks and entry.releases
        assert entry.label_source in ("human", "llm")
        assert entry.default_revision in {r.revision for r in entry.releases}
    full, human = catalog["mad-full"], catalog["mad-human"]
    assert full.label_source == "llm" and human.label_source == "human"
    assert "CC-BY-NC" in catalog["itbench-trajectories"].licence
    quirks = " ".join(full.quirks + human.quirks)
    for fact in ("o1", "(trace.key, trace_id)", "all 14 labels null", "2026-08-13", "1,242"):
        assert fact in quirks
    for fact in ("NaN", "trailing spaces", "4.3 before 4.2", "17 and 18"):
        assert fact in quirks
    assert full.release("95118ac") is not None and full.release("95118ac").records == 1642
    assert not catalog["whoandwhen"].releases[0].verifiable
    assert "1,242 records" in str(full)
    with pytest.raises(KeyError, match="known"):
        mast.traces.datasets.info("nope")


def test_dataset_errors_survive_pickling() -> None:
    err = DatasetChecksumError("bad", dataset="mad-full", revision=REV_A, filename="f")
    err.expected, err.actual = "1" * 64, "2" * 64
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.dataset, copy.revision, copy.expected, copy.actual, str(copy)) == (
        "mad-full",
        REV_A,
        "1" * 64,
        "2" * 64,
        "bad",
    )
