"""Moving the bytes of one file: a ranged HTTP stream, retried, written, hashed and checkpointed.

:class:`FileTransfer` is one file of one download run (see :mod:`.download` for the whole story).
It streams with our own ``httpx`` client rather than huggingface-hub's downloader because it needs
what that one does not give: resume into a partial file that outlives the process, a socket that a
pause can wake, a stop on a full disk that keeps every whole byte, and the SHA-256 computed while
the bytes arrive (on a helper thread: hashlib releases the GIL, so hashing costs no throughput).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    Cancelled,
    DiskFullError,
    HubNotFoundError,
    HubUnavailableError,
    ModelStoreError,
)
from imprint_desktop.core.models.fit import human_size
from imprint_desktop.core.models.hub import HubClient
from imprint_desktop.core.models.journal import DownloadRecord, Journal
from imprint_desktop.core.models.layout import FileTarget
from imprint_desktop.core.models.progress import Phase, RateMeter
from imprint_desktop.core.net import retry_after_seconds

log = logging.getLogger(__name__)

_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
#: The longest a download waits before its next attempt when the hub asks it to (Retry-After).
_LONGEST_RETRY_AFTER = 60.0


@dataclass(frozen=True)
class DownloadOptions:
    max_retries: int = 6  # failed attempts in a row (an attempt that made progress resets it)
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    chunk_size: int = 1 << 20
    checkpoint_seconds: float = 2.0
    free_space_margin: int = 32 << 20  # keep this much free beyond the download itself


class _Retry(Exception):  # noqa: N818 - a control-flow signal, not an error
    """A network failure worth another ranged attempt."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.wait = wait


@dataclass
class FileTransfer:
    """Transfers one file into ``target.partial``; :meth:`run` returns the SHA-256 of its bytes."""

    record: DownloadRecord
    target: FileTarget
    token: CancelToken
    meter: RateMeter
    done_before: int
    journal: Journal
    hub: HubClient
    options: DownloadOptions

    def run(self, offset: int) -> str:
        """Bring the partial from ``offset`` to the full size, retrying; returns its SHA-256."""
        hasher = HashPipe()
        try:
            hasher.feed_file(self.target.partial, offset, self.token)
            self._with_retries(hasher)
            return hasher.finish()
        finally:
            hasher.close()

    def _with_retries(self, hasher: HashPipe) -> None:
        attempt = 0
        while hasher.fed < self.target.size:
            start = hasher.fed
            try:
                self._attempt(hasher)
            except _Retry as retry:
                self.token.raise_if_cancelled()
                attempt = 0 if hasher.fed > start else attempt + 1
                if attempt > self.options.max_retries:
                    raise HubUnavailableError(
                        f"Downloading {self.target.path} failed {attempt} times in a row "
                        f"({retry}). The partial file is kept: resume when the hub or the network "
                        "is back."
                    ) from retry
                backoff = self.options.backoff_initial * 2 ** max(attempt - 1, 0)
                delay = retry.wait if retry.wait is not None else backoff
                delay = min(delay, self.options.backoff_max)
                log.info("download of %s: %s; retrying in %.1fs", self.target.path, retry, delay)
                self.meter.phase(
                    Phase.RETRYING, self.done_before + hasher.fed, f"{retry}; retrying"
                )
                if self.token.wait(delay):
                    raise Cancelled("Stopped.") from None

    def _attempt(self, hasher: HashPipe) -> None:
        headers = {**self.hub.request_headers(), "Accept-Encoding": "identity"}
        if hasher.fed:
            headers["Range"] = f"bytes={hasher.fed}-"
        url = self.hub.file_url(self.target.repo_id, self.target.path, self.target.commit)
        self.meter.phase(Phase.DOWNLOADING, self.done_before + hasher.fed)
        try:
            with (
                self.hub.config.download_client() as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                self._check_response(response, hasher)
                sock = _socket_of(response)
                remove = self.token.on_cancel(lambda: _shutdown(sock))
                try:
                    self._write_body(response, hasher)
                finally:
                    remove()
        except httpx.TransportError as error:
            self.token.raise_if_cancelled()
            raise _Retry(_describe(error)) from error

    def _check_response(self, response: httpx.Response, hasher: HashPipe) -> None:
        status, target, offset = response.status_code, self.target, hasher.fed
        if status in (401, 403, 404):
            raise HubNotFoundError(
                f"The hub has no file {target.path} in {target.repo_id} (HTTP {status}); it may "
                "have been removed, or the repository is gated or private."
            )
        if status == 416 and offset:
            self._start_over(hasher)
            raise _Retry("the server refused to resume; starting the file over", wait=0.0)
        if status in (408, 429) or status >= 500:
            asked = retry_after_seconds(response.headers.get("Retry-After"))
            wait = None if asked is None else min(asked, _LONGEST_RETRY_AFTER)
            raise _Retry(f"the hub answered HTTP {status}", wait=wait)
        if status not in (200, 206):
            raise HubUnavailableError(f"The hub answered HTTP {status} for {target.path}.")
        if offset and status == 200:
            log.info("the server ignored the range request for %s; starting over", target.path)
            self._start_over(hasher)
        elif status == 206:
            content_range = response.headers.get("Content-Range", "")
            if not content_range.startswith(f"bytes {offset}-"):
                raise _Retry(f"the server sent the wrong range ({content_range or 'none'})")

    def _start_over(self, hasher: HashPipe) -> None:
        os.truncate(self.target.partial, 0)
        hasher.reset()

    def _write_body(self, response: httpx.Response, hasher: HashPipe) -> None:
        target = self.target
        descriptor = os.open(target.partial, os.O_WRONLY | os.O_CREAT, 0o644)
        last_sync = time.monotonic()
        try:
            os.lseek(descriptor, hasher.fed, os.SEEK_SET)
            for chunk in response.iter_raw(self.options.chunk_size):
                self.token.raise_if_cancelled()
                if hasher.fed + len(chunk) > target.size:
                    raise _Retry("the server sent more bytes than the file has")
                view = memoryview(chunk)
                while view:
                    try:
                        written = os.write(descriptor, view)
                    except OSError as error:
                        if error.errno in _DISK_FULL:
                            self._stop_on_full_disk(descriptor, hasher.fed)
                        raise
                    hasher.feed(view[:written])
                    view = view[written:]
                self.meter.advance(self.done_before + hasher.fed)
                if time.monotonic() - last_sync >= self.options.checkpoint_seconds:
                    self._checkpoint(descriptor, hasher.fed)
                    last_sync = time.monotonic()
            self.token.raise_if_cancelled()
        finally:
            # Whatever ended the body (done, a reset, a pause), what arrived is kept and recorded.
            try:
                self._checkpoint(descriptor, hasher.fed)
            except OSError:
                log.warning("could not checkpoint %s", target.path)
            os.close(descriptor)
        if hasher.fed < target.size:
            raise _Retry(f"the connection closed after {hasher.fed:,} of {target.size:,} bytes")

    def _checkpoint(self, descriptor: int, synced: int) -> None:
        os.fsync(descriptor)
        self.record = self.record.with_checkpoint(self.target.path, synced)
        self.journal.save(self.record)

    def _stop_on_full_disk(self, descriptor: int, offset: int) -> None:
        os.ftruncate(descriptor, offset)  # no half-written block stays behind
        raise DiskFullError(
            f"The disk holding {self.target.partial.parent} is full: {self.target.path} stopped "
            f"at {human_size(offset)} of {human_size(self.target.size)}. The partial file is "
            "kept; free some space and resume."
        )


class HashPipe:
    """SHA-256 of the bytes written, computed on a helper thread that is always joined."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._queue: queue.Queue[memoryview | None] = queue.Queue(maxsize=64)
        self._thread = self._start()
        self.fed = 0

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._work, name="imprint-sha256", daemon=True)
        thread.start()
        return thread

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            self._sha.update(item)

    def feed(self, data: memoryview) -> None:
        self._queue.put(data)
        self.fed += len(data)

    def feed_file(self, path: Path, length: int, token: CancelToken) -> None:
        """Feed the first ``length`` bytes already on disk (a resumed partial)."""
        if not length:
            return
        with path.open("rb") as handle:
            while self.fed < length:
                token.raise_if_cancelled()
                block = handle.read(min(1 << 22, length - self.fed))
                if not block:
                    raise ModelStoreError(f"{path} shrank while it was being resumed.")
                self.feed(memoryview(block))

    def reset(self) -> None:
        self.close()
        self._sha = hashlib.sha256()
        self.fed = 0
        self._thread = self._start()

    def finish(self) -> str:
        self.close()
        return self._sha.hexdigest()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


def sha256_of(path: Path, token: CancelToken) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            token.raise_if_cancelled()
            digest.update(block)
    return digest.hexdigest()


def _socket_of(response: httpx.Response) -> socket.socket | None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None


def _shutdown(sock: socket.socket | None) -> None:
    """Wake a read blocked on ``sock`` (closing alone does not wake it on Linux)."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _describe(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "the hub stopped sending (timed out)"
    if isinstance(error, httpx.ConnectError):
        return "could not connect to the hub"
    return f"the connection broke ({type(error).__name__})"
