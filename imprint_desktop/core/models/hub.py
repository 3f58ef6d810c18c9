"""The model hub, read through huggingface-hub: search GGUF repositories and list their models.

Every call blocks on the network, so it runs on a download worker or in the CLI. Errors
come out as :class:`HubNotFoundError` (no such repository, file or revision; gated or private) or
:class:`HubUnavailableError` (the hub or the network failed), with sentences a person can act on.

Before asking, a client makes sure the hub answers at all (:func:`check_answering`): a hub that
cannot be reached — no network, a refused connection, a server that never answers — is said in one
sentence within :data:`ANSWER_SECONDS`, instead of after huggingface-hub's half-minute of retries
and their warnings. It asks every time: a hub that answered a minute ago may be gone now.

Search pages are stateless: page *n* asks the hub for the first ``(n + 1) × size + 1`` results and
keeps the last page. A few more bytes per page, in exchange for pages that can be reloaded, skipped
to or retried from any thread without keeping a half-read generator alive.
"""

from __future__ import annotations

import enum
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

import httpx
import httpx2
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils._headers import build_hf_headers

from imprint_desktop.core.errors import (
    HubNotFoundError,
    HubUnavailableError,
    InvalidModelFileError,
)
from imprint_desktop.core.models.fit import FitHint, fit_hint
from imprint_desktop.core.models.gguf import parse_header_prefix
from imprint_desktop.core.models.machine import available_memory
from imprint_desktop.core.models.naming import ModelFiles, group_gguf_files, quantization
from imprint_desktop.core.models.network import HubConfig, configure_hub_metadata

log = logging.getLogger(__name__)

GGUF_TAG = "gguf"
HEADER_PREFIX_BYTES = 512 * 1024  # the architecture keys sit before the tokenizer's large arrays
MAX_RESULTS = 1000  # the hub's cap on one listing
#: How long the hub has to answer before it is said to be out of reach (name lookup included).
ANSWER_SECONDS = 2.5


class Sort(enum.Enum):
    DOWNLOADS = "downloads"
    RECENT = "last_modified"


@dataclass(frozen=True)
class RepoSummary:
    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None


@dataclass(frozen=True)
class SearchPage:
    query: str
    sort: Sort
    page: int
    results: tuple[RepoSummary, ...]
    has_more: bool


@dataclass(frozen=True)
class HubFile:
    """One file of a repository with the hub's LFS metadata (the SHA-256 a download must match)."""

    path: str
    size: int
    sha256: str | None  # None for a file stored without LFS: not verifiable, so not offered


@dataclass(frozen=True)
class RemoteModel:
    """A downloadable model: one GGUF file or every part of a split one."""

    repo_id: str
    commit: str
    name: str
    files: tuple[HubFile, ...]
    quantization: str
    complete: bool
    fit: FitHint

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)


@dataclass(frozen=True)
class RepoModels:
    repo_id: str
    commit: str
    models: tuple[RemoteModel, ...]


class HubClient:
    """Metadata from the hub at ``config.endpoint``. Thread-safe; cheap to create."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        configure_hub_metadata(config)
        self._api = HfApi(endpoint=config.endpoint, library_name="imprint-desktop")

    def search(
        self, text: str, sort: Sort = Sort.DOWNLOADS, page: int = 0, page_size: int = 20
    ) -> SearchPage:
        """One page of GGUF repositories matching ``text``, most downloaded or most recent first."""
        wanted = min((page + 1) * page_size + 1, MAX_RESULTS)
        sort_key: Literal["downloads", "last_modified"] = (
            "downloads" if sort is Sort.DOWNLOADS else "last_modified"
        )
        with _hub_errors("search the model hub", self.config.endpoint):
            check_answering(self.config)
            found = list(
                self._api.list_models(
                    search=text.strip() or None, filter=GGUF_TAG, sort=sort_key, limit=wanted
                )
            )
        start = page * page_size
        results = tuple(
            RepoSummary(
                repo_id=info.id,
                downloads=int(info.downloads or 0),
                likes=int(info.likes or 0),
                last_modified=info.last_modified,
            )
            for info in found[start : start + page_size]
        )
        has_more = len(found) > start + page_size and wanted < MAX_RESULTS
        return SearchPage(text, sort, page, results, has_more)

    def repo_models(
        self, repo_id: str, n_ctx: int, revision: str | None = None, *, probe_header: bool = True
    ) -> RepoModels:
        """The GGUF models of ``repo_id`` with sizes, quantizations and a fit hint at ``n_ctx``.

        ``probe_header`` reads the start of one file for the KV-cache size (one ranged request);
        without it the fit hint counts the file size only.
        """
        with _hub_errors(f"list the files of {repo_id}", self.config.endpoint):
            check_answering(self.config)
            info = self._api.model_info(
                repo_id, revision=revision, files_metadata=True, timeout=self.config.read_timeout
            )
        commit = info.sha or revision or "main"
        files: dict[str, HubFile] = {}
        for sibling in info.siblings or []:
            lfs = sibling.lfs
            size = lfs.size if lfs is not None else (sibling.size or 0)
            files[sibling.rfilename] = HubFile(
                sibling.rfilename, int(size), lfs.sha256 if lfs is not None else None
            )
        groups = group_gguf_files(files)
        kv_per_token = (
            self._kv_bytes_per_token(repo_id, commit, groups, files) if probe_header else None
        )
        available = available_memory()
        models = []
        for group in groups:
            parts = tuple(files[path] for path in group.files)
            kv = kv_per_token * n_ctx if kv_per_token is not None else None
            models.append(
                RemoteModel(
                    repo_id=repo_id,
                    commit=commit,
                    name=group.name,
                    files=parts,
                    quantization=quantization(group.name),
                    complete=group.complete,
                    fit=fit_hint(sum(part.size for part in parts), kv, available),
                )
            )
        return RepoModels(repo_id, commit, tuple(models))

    def resolve_model(self, repo_id: str, filename: str, n_ctx: int = 8192) -> RemoteModel:
        """The model ``filename`` names in ``repo_id``: a file, a split set's name or one part."""
        listing = self.repo_models(repo_id, n_ctx, probe_header=False)
        for model in listing.models:
            if filename == model.name or filename in {file.path for file in model.files}:
                return model
        names = ", ".join(model.name for model in listing.models) or "none"
        raise HubNotFoundError(
            f"{repo_id} has no GGUF file named {filename!r}. Its GGUF models: {names}."
        )

    def file_url(self, repo_id: str, path: str, commit: str) -> str:
        return hf_hub_url(repo_id, path, revision=commit, endpoint=self.config.endpoint)

    def request_headers(self) -> dict[str, str]:
        """Headers for a byte download: user agent and, for gated models, the person's HF token."""
        return build_hf_headers(library_name="imprint-desktop")

    def _kv_bytes_per_token(
        self,
        repo_id: str,
        commit: str,
        groups: list[ModelFiles],
        files: dict[str, HubFile],
    ) -> int | None:
        """Read the KV-cache size per token from the start of the repository's smallest GGUF file.

        Every quantization of a model shares its architecture, so one ranged read serves the whole
        list. Failure only makes the fit hint less precise.
        """
        firsts = [group.first for group in groups]
        if not firsts:
            return None
        smallest = min(firsts, key=lambda path: files[path].size)
        headers = {**self.request_headers(), "Range": f"bytes=0-{HEADER_PREFIX_BYTES - 1}"}
        try:
            with self.config.download_client() as client:
                response = client.get(self.file_url(repo_id, smallest, commit), headers=headers)
                response.raise_for_status()
                info = parse_header_prefix(response.content[:HEADER_PREFIX_BYTES])
        except (httpx.HTTPError, InvalidModelFileError) as error:
            log.info("could not read the GGUF header of %s/%s: %s", repo_id, smallest, error)
            return None
        return info.kv_cache_bytes(1)


def check_answering(config: HubConfig) -> None:
    """Return once the hub at ``config.endpoint`` answers (any HTTP status will do), or raise the
    transport's exception within :data:`ANSWER_SECONDS` or so when it does not.

    The question runs on a thread of its own, since looking the name up is not bounded by any
    timeout of the HTTP client: when a name server does not answer, the thread is left to end
    by itself (it only reads), and the caller is told at the deadline.
    """
    failures: list[Exception] = []
    done = threading.Event()

    def ask() -> None:
        try:
            with config.hub_metadata_client() as client:
                client.head(f"{config.endpoint}/", timeout=httpx2.Timeout(ANSWER_SECONDS))
        except Exception as error:  # handed to the caller, which sorts it
            failures.append(error)
        finally:
            done.set()

    threading.Thread(target=ask, name="hub-answering", daemon=True).start()
    if not done.wait(ANSWER_SECONDS + 0.3):
        raise httpx2.ConnectTimeout("the name of the hub was not looked up in time")
    if failures:
        raise failures[0]


@contextmanager
def _hub_errors(doing: str, endpoint: str) -> Iterator[None]:
    """Translate huggingface-hub's and the network's exceptions into the model-store tree."""
    try:
        yield
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError) as error:
        raise HubNotFoundError(
            f"Could not {doing}: the hub has no such repository or file, or it is private or "
            "gated (log in with `hf auth login` for gated models)."
        ) from error
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else None
        raise HubUnavailableError(
            f"Could not {doing}: the hub answered HTTP {status}. Try again in a moment."
        ) from error
    except OfflineModeIsEnabled as error:
        raise HubUnavailableError(f"Could not {doing}: HF_HUB_OFFLINE is set.") from error
    except (httpx2.TimeoutException, httpx2.ConnectError) as error:
        raise HubUnavailableError(
            f"Could not {doing}: {_out_of_reach(endpoint, error)}. "
            "Check the network and the proxy settings."
        ) from error
    except (httpx2.HTTPError, httpx.HTTPError, OSError) as error:
        raise HubUnavailableError(
            f"Could not {doing}: {type(error).__name__}: {error or 'the connection failed'}. "
            "Check the network and the proxy settings."
        ) from error


def _out_of_reach(endpoint: str, error: httpx2.TimeoutException | httpx2.ConnectError) -> str:
    """Why the hub at ``endpoint`` cannot be reached, in words: ``huggingface.co did not answer
    within 3 seconds``, ``127.0.0.1:8080 refused the connection``."""
    parts = urlsplit(endpoint)
    host = parts.hostname or endpoint
    host += f":{parts.port}" if parts.port else ""
    if isinstance(error, httpx2.TimeoutException):
        return f"{host} did not answer within {ANSWER_SECONDS:g} seconds"
    reason = _ERRNO.sub("", str(error)).strip() or "the connection failed"
    if "refused" in reason.lower():
        return f"{host} refused the connection"
    return f"{host} cannot be reached ({reason})"


_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
