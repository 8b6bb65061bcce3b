"""The shared download cache: every file a task needs from the internet (setup ``download`` steps
and evaluator ``cloud_file`` gold files), addressed by URL, and prefetch.

Layout: ``<cache>/downloads/<sha256(url)[:2]>/<sha256(url)>`` (the file's bytes; the hash is of
the URL string as written in the task file). Nothing else is needed to use a cache: copy the
``downloads`` folder to another machine (``rsync -a``, ``tar``) into its ``--cache-dir`` and the
run there needs no internet for those files. Before OSWorld's ``SetupController`` or
``cloud_file`` getter looks for a file in its per-task folder, the harness links it there from
this cache (:func:`computer_env.osworld.prepare.setup.seed_downloads`,
:func:`computer_env.osworld.scoring.shim.seed_cloud_files`).

Every download goes through :func:`.guarded_http.guarded_client`: a URL (or a redirect hop)
that leads to this host or a private network, in whatever spelling, is refused
(:class:`~.guarded_http.RefusedAddress`, naming the URL) before any request is sent there.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx

from computer_env.errors import NetworkError
from computer_env.osworld.catalog.tasks import Task, is_local_url
from computer_env.osworld.guards.confine import ConfinementError
from computer_env.osworld.guards.guarded_http import RefusedAddress, check_literal, guarded_client
from computer_env.retry import RetryPolicy

logger = logging.getLogger(__name__)

_CHUNK = 1 << 16


def cache_path(cache_dir: Path, url: str) -> Path:
    """Where ``url`` lives in the cache: ``<cache_dir>/<sha256[:2]>/<sha256>``."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
    return Path(cache_dir) / digest[:2] / digest


def upstream_cache_name(url: str, guest_path: str) -> str:
    """The file name OSWorld's ``SetupController`` uses for a download in its task cache."""
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(guest_path)}"


#: Task downloads: 3 tries, 2 s then 4 s apart (at most 10 s).
DOWNLOAD_RETRY = RetryPolicy(attempts=3, backoff=2.0, cap=10.0)


def fetch(
    url: str,
    dest: Path,
    *,
    retry: RetryPolicy = DOWNLOAD_RETRY,
    timeout: float = 300.0,
    allow_hosts: Collection[str] = (),
) -> Path:
    """Download ``url`` to ``dest`` atomically (temp file + rename); raises ``NetworkError``,
    or ``RefusedAddress`` (not retried) for a URL or redirect that leads to this host or a
    private network. ``allow_hosts``: ``host[:port]`` let through (the asset server)."""
    try:
        check_literal(url, allow_hosts)  # before httpx, which rejects some spellings (0177.0.0.1)
    except RefusedAddress as exc:
        raise RefusedAddress(f"{url!r}: refused: {exc}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)

    def once() -> Path:
        tmp = dest.with_name(f"{dest.name}.part.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        try:
            with (
                guarded_client(allow_hosts=allow_hosts, timeout=timeout) as client,
                client.stream("GET", url) as resp,
            ):
                resp.raise_for_status()
                with tmp.open("wb") as out:
                    for chunk in resp.iter_bytes(_CHUNK):
                        out.write(chunk)
            os.replace(tmp, dest)
            return dest
        finally:
            tmp.unlink(missing_ok=True)

    try:
        return retry.call(once, retry_on=(httpx.HTTPError, OSError), what=f"download {url}")
    except RefusedAddress as exc:
        raise RefusedAddress(f"{url!r}: refused: {exc}") from exc
    except httpx.InvalidURL as exc:
        raise ConfinementError(f"{url!r}: not a usable URL: {exc}") from exc
    except (httpx.HTTPError, OSError) as exc:
        raise NetworkError(
            f"download of {url} failed after {retry.attempts} attempts: {exc}"
        ) from exc


def cached_fetch(
    cache_dir: Path, url: str, *, use_cache: bool = True, allow_hosts: Collection[str] = ()
) -> Path:
    """The local file for ``url``, downloading it into the cache when missing."""
    path = cache_path(cache_dir, url)
    if use_cache and path.is_file():
        return path
    return fetch(url, path, allow_hosts=allow_hosts)


def download_sources(tasks: Iterable[Task]) -> dict[str, list[str]]:
    """Every remote URL the tasks fetch (``download`` steps of setup and postconfig, evaluator
    ``cloud_file``s), each with the ids (``domain/id``) of the tasks that name it."""
    seen: dict[str, list[str]] = {}
    for task in tasks:
        urls: list[str] = []
        for step in task.all_steps():
            if step.type != "download":
                continue
            for item in step.parameters.get("files", []):
                url = str(item.get("url", "")) if isinstance(item, dict) else ""
                if url and not is_local_url(url):
                    urls.append(url)
        for url in [*urls, *cloud_file_urls(task)]:
            names = seen.setdefault(url, [])
            if task.case_id not in names:
                names.append(task.case_id)
    return seen


def download_urls(tasks: Iterable[Task]) -> list[str]:
    """Every remote URL the tasks fetch (see :func:`download_sources`), deduplicated."""
    return list(download_sources(tasks))


def cloud_file_urls(task: Task) -> list[str]:
    """The URLs of a task's evaluator ``cloud_file`` getters (gold files OSWorld's getter
    downloads at evaluation time)."""
    urls: list[str] = []
    for spec in task.evaluator.getter_specs():
        if spec.get("type") != "cloud_file":
            continue
        paths = spec.get("path")
        for url in paths if isinstance(paths, list) else [paths]:
            if isinstance(url, str) and url and not is_local_url(url) and url not in urls:
                urls.append(url)
    return urls


@dataclass(frozen=True)
class PrefetchResult:
    """What :func:`prefetch` did."""

    total: int
    fetched: int
    cached: int
    failed: dict[str, str]
    bytes: int
    refused: tuple[str, ...] = ()
    """URLs refused (this host or a private network); also in ``failed``, naming the tasks."""


def prefetch(
    tasks: Iterable[Task],
    cache_dir: Path,
    *,
    progress: Callable[[int, int, str, str], None] | None = None,
) -> PrefetchResult:
    """Fill the download cache for ``tasks`` ahead of a run. ``progress(i, n, url, status)`` is
    called for each URL (status: ``cached``, ``fetched``, ``failed: ...`` or ``refused: task
    <id>: ...``); a refused or failed URL does not stop the others."""
    sources = download_sources(tasks)
    urls = list(sources)
    fetched = cached = size = 0
    failed: dict[str, str] = {}
    refused: list[str] = []
    for i, url in enumerate(urls, 1):
        path = cache_path(cache_dir, url)
        if path.is_file():
            cached += 1
            status = "cached"
        else:
            try:
                fetch(url, path)
                fetched += 1
                status = "fetched"
            except NetworkError as exc:
                failed[url] = str(exc)
                status = f"failed: {exc}"
            except RefusedAddress as exc:
                names = ", ".join(sources[url])
                failed[url] = f"task {names}: {exc}"
                refused.append(url)
                status = f"refused: {failed[url]}"
        if path.is_file():
            size += path.stat().st_size
        if progress:
            progress(i, len(urls), url, status)
    return PrefetchResult(len(urls), fetched, cached, failed, size, tuple(refused))


__all__ = [
    "PrefetchResult",
    "cache_path",
    "cached_fetch",
    "cloud_file_urls",
    "download_sources",
    "download_urls",
    "fetch",
    "prefetch",
    "upstream_cache_name",
]
