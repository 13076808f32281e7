"""Hugging Face Hub failures translated into dataset errors (:mod:`mast.errors`) that say
what to do.
"""

from __future__ import annotations

from collections.abc import Iterable

from mast.errors import (
    DatasetAccessError,
    DatasetError,
    DatasetUnavailableError,
)
from mast.traces.hub_target import HubSettings, Target


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _http_status(exc: BaseException) -> int | None:
    for err in _chain(exc):
        response = getattr(err, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _is_hub_error(exc: BaseException) -> bool:
    module = type(exc).__module__.split(".")[0]
    return isinstance(exc, (OSError, ValueError)) or module in {
        "huggingface_hub",
        "httpx",
        "httpx2",
        "requests",
        "urllib3",
    }


def _translate(
    exc: Exception, target: Target, settings: HubSettings, *, what: str, url: str
) -> Exception:
    """Turn a huggingface_hub failure into a mast error that says what to do next."""
    if isinstance(exc, DatasetError) or not _is_hub_error(exc):
        return exc
    names = {type(e).__name__ for e in _chain(exc)}
    status = _http_status(exc)
    fix: str | None
    cls: type[DatasetUnavailableError] = DatasetUnavailableError
    if "GatedRepoError" in names or status in (401, 403):
        cls = DatasetAccessError
        kind = "gated dataset" if "GatedRepoError" in names else "not authorized"
        reason = f"the Hub refused access (HTTP {status or '401/403'}, {kind})"
        fix = (
            f"Open {settings.endpoint}/datasets/{target.repo_id} while logged in and accept its "
            "access conditions, then log in here with `hf auth login` or set HF_TOKEN to a "
            "read token (mast uses it automatically)."
        )
    elif "RevisionNotFoundError" in names:
        reason = f"revision {target.revision!r} does not exist in {target.repo_id}"
        fix = "Check the revision: mast.traces.datasets.info() lists the known ones."
    elif "RepositoryNotFoundError" in names:
        reason = f"the Hub has no dataset {target.repo_id!r} (or it is private)"
        fix = "If it is private, log in with `hf auth login` or set HF_TOKEN."
    elif "RemoteEntryNotFoundError" in names or status == 404:
        reason = f"{what} does not exist at revision {target.revision}"
        fix = None
    elif settings.offline or "OfflineModeIsEnabled" in names:
        reason = (
            "offline mode is on (HF_HUB_OFFLINE) and it is not in the local cache "
            f"({settings.cache_dir})"
        )
        fix = "To download it, unset HF_HUB_OFFLINE (once online, later loads use the cache)."
    else:
        cause = exc.__cause__ or exc
        reason = (
            f"the Hub at {settings.endpoint} could not be reached "
            f"({type(cause).__name__}: {cause}) and it is not in the local cache "
            f"({settings.cache_dir})"
        )
        fix = "Check the network, a proxy, or HF_ENDPOINT, and try again."
    return cls(
        _message(target, f"Could not get {what}", reason, url, settings, fix),
        dataset=target.dataset,
        repo_id=target.repo_id,
        revision=target.revision,
        filename=what,
        url=url,
    )


def _message(
    target: Target,
    headline: str,
    reason: str,
    url: str,
    settings: HubSettings,
    fix: str | None,
) -> str:
    text = (
        f"{headline} for dataset {target.dataset!r} ({target.repo_id} at revision "
        f"{target.revision}): {reason}.\n"
        f"Tried: {url} (cache {settings.cache_dir}"
        f"{', offline mode' if settings.offline else ''})."
    )
    if fix:
        text += "\n" + fix
    return text + "\n" + target.manual
