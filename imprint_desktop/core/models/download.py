"""Downloading a model: ranged, resumable, retried, checked for space and verified by SHA-256.

One :class:`ModelDownloader` run moves one model (every part of a split one) from the hub into the
layout, on the calling thread, and ends in exactly one way: it returns the verified path, raises
:class:`~imprint_desktop.core.errors.Cancelled` (paused or cancelled), or raises a
:class:`~imprint_desktop.core.errors.ModelStoreError`. What survives each ending:

* **paused, failed, killed** — the partial file and its journal record stay; the next run continues
  with an HTTP ``Range`` request from the bytes already on disk (see :mod:`.journal` for which bytes
  are trusted after a machine restart).
* **cancelled** — the partial file and the record are removed.
* **full disk** — the partial is truncated to its last whole write and kept; the run raises
  :class:`DiskFullError` so the app can say so and carry on.
* **checksum mismatch** — the file goes to quarantine; :class:`ChecksumMismatchError` says where.

Network errors, 5xx answers, resets and stalls (no byte for ``read_timeout`` seconds) are retried
with exponential backoff from where the bytes stopped; a retry that made progress resets the count.
The SHA-256 is computed while the bytes arrive, on a helper thread, so verifying costs no extra pass
over the file and no throughput on a fast link.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import filelock

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    Cancelled,
    ChecksumMismatchError,
    DiskFullError,
    ModelStoreError,
)
from imprint_desktop.core.models.fit import human_size
from imprint_desktop.core.models.gguf import inspect_gguf
from imprint_desktop.core.models.hub import HubClient, RemoteModel
from imprint_desktop.core.models.journal import (
    DownloadRecord,
    FileRecord,
    Journal,
    boot_id,
    download_id,
)
from imprint_desktop.core.models.layout import FileTarget, ModelLayout, quarantine
from imprint_desktop.core.models.progress import DownloadProgress, Phase, RateMeter
from imprint_desktop.core.models.transfer import DownloadOptions, FileTransfer, sha256_of

log = logging.getLogger(__name__)


class DownloadControl:
    """Pause or cancel one running download from any thread.

    Both stop the run at its next yield point (a blocked read is woken by shutting the socket);
    only :meth:`cancel` discards what was downloaded.
    """

    def __init__(self) -> None:
        self.token = CancelToken()
        self._discard = threading.Event()

    def pause(self) -> None:
        self.token.cancel()

    def cancel(self) -> None:
        self._discard.set()
        self.token.cancel()

    @property
    def discard(self) -> bool:
        return self._discard.is_set()


ProgressCallback = Callable[[DownloadProgress], None]


class ModelDownloader:
    """Moves models from the hub into a :class:`ModelLayout`; one instance serves many runs."""

    def __init__(
        self,
        hub: HubClient,
        layout: ModelLayout,
        journal: Journal | None = None,
        options: DownloadOptions | None = None,
    ) -> None:
        self.hub = hub
        self.layout = layout
        self.journal = journal if journal is not None else Journal()
        self.options = options if options is not None else DownloadOptions()

    # --- records ---------------------------------------------------------------------------

    def record_for(self, model: RemoteModel) -> DownloadRecord:
        """The journal record of ``model``: the existing one (to resume) or a new, queued one."""
        unverifiable = [file.path for file in model.files if not file.sha256]
        if unverifiable:
            raise ModelStoreError(
                f"{unverifiable[0]} has no SHA-256 on the hub, so a download could not be "
                "verified; it is not offered."
            )
        ident = download_id(model.repo_id, model.name, self.layout.root)
        files = tuple(FileRecord(f.path, f.size, str(f.sha256)) for f in model.files)
        existing = self.journal.load(ident)
        if existing is not None and existing.files == files:
            return existing
        record = DownloadRecord(
            ident,
            model.repo_id,
            model.commit,
            model.name,
            files,
            str(self.layout.root),
            boot=boot_id(),
        )
        self.journal.save(record)
        return record

    def targets(self, record: DownloadRecord) -> list[FileTarget]:
        return [
            self.layout.target(record.repo_id, file.path, record.commit, file.sha256, file.size)
            for file in record.files
        ]

    def partial_bytes(self, record: DownloadRecord) -> int:
        """Bytes already on disk for ``record`` (complete files count whole)."""
        done = 0
        for target in self.targets(record):
            if target.final.exists():
                done += target.size
            elif target.partial.exists():
                done += min(target.partial.stat().st_size, target.size)
        return done

    def discard(self, record: DownloadRecord) -> int:
        """Remove a download's partial files and its record; returns the bytes freed."""
        freed = 0
        for target in self.targets(record):
            try:
                freed += target.partial.stat().st_size
                target.partial.unlink()
            except FileNotFoundError:
                pass
        self.journal.remove(record.download_id)
        return freed

    # --- the run ---------------------------------------------------------------------------

    def run(
        self,
        record: DownloadRecord,
        control: DownloadControl,
        progress: ProgressCallback | None = None,
    ) -> Path:
        """Download, verify and put in place every file of ``record``; returns what to load."""
        report = progress or (lambda _event: None)
        targets = self.targets(record)
        meter = RateMeter(record.download_id, record.total_bytes, len(targets), report)
        try:
            record = record.with_state("downloading")
            self.journal.save(record)
            self._check_space(record, targets)
            done_before = 0
            for index, target in enumerate(targets):
                meter.file_index = index
                record = self._fetch_file(record, target, control, meter, done_before)
                done_before += target.size
            meter.phase(Phase.CHECKING, record.total_bytes)
            inspect_gguf(targets[0].final)
        except Cancelled:
            if control.discard:
                self.discard(record)
            else:
                self.journal.save(self._latest(record).with_state("paused"))
            raise
        except ChecksumMismatchError:
            self.journal.remove(record.download_id)
            raise
        except (ModelStoreError, OSError) as error:
            self.journal.save(self._latest(record).with_state("failed", str(error)))
            raise
        self.journal.remove(record.download_id)
        meter.phase(Phase.DONE, record.total_bytes)
        return targets[0].final

    def _latest(self, record: DownloadRecord) -> DownloadRecord:
        """The record as last saved (a transfer checkpoints into the journal as it goes)."""
        return self.journal.load(record.download_id) or record

    def _check_space(self, record: DownloadRecord, targets: list[FileTarget]) -> None:
        remaining = record.total_bytes - self.partial_bytes(record)
        folder = targets[0].partial.parent
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
        if remaining + self.options.free_space_margin > free:
            raise DiskFullError(
                f"Not enough free space in {folder}: {record.name} needs {human_size(remaining)} "
                f"more and {human_size(free)} is free. Free some space and resume the download."
            )

    def _fetch_file(
        self,
        record: DownloadRecord,
        target: FileTarget,
        control: DownloadControl,
        meter: RateMeter,
        done_before: int,
    ) -> DownloadRecord:
        """One file: reuse it when already complete and intact, else transfer and verify it."""
        control.token.raise_if_cancelled()
        target.partial.parent.mkdir(parents=True, exist_ok=True)
        target.lock.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(str(target.lock), timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise ModelStoreError(
                f"{target.path} is being downloaded by another program (or another Imprint) "
                "right now. Wait for it to finish, then try again."
            ) from None
        try:
            existing = target.blob if target.blob is not None else target.final
            if existing.exists() and existing.stat().st_size == target.size:
                meter.phase(Phase.VERIFYING, done_before)
                if sha256_of(existing, control.token) == target.sha256:
                    if target.blob is not None:
                        self.layout.link_snapshot(target)
                    meter.advance(done_before + target.size)
                    return record
                quarantine(existing, f"{target.path}: SHA-256 differs from {target.sha256}")
            offset = self._trusted_offset(record, target)
            record = record.with_checkpoint(target.path, offset)
            self.journal.save(record)
            transfer = FileTransfer(
                record=record,
                target=target,
                token=control.token,
                meter=meter,
                done_before=done_before,
                journal=self.journal,
                hub=self.hub,
                options=self.options,
            )
            digest = transfer.run(offset)
            record = transfer.record
            meter.phase(Phase.VERIFYING, done_before + target.size)
            if digest != target.sha256:
                moved = quarantine(
                    target.partial,
                    f"{target.repo_id}/{target.path} at {target.commit}: SHA-256 {digest}, "
                    f"the hub says {target.sha256}.",
                )
                raise ChecksumMismatchError(
                    f"{target.path} arrived damaged: its SHA-256 does not match the hub's. It was "
                    f"moved to quarantine ({moved}); download it again.",
                    str(moved),
                )
            self.layout.finalize(target)
            return record
        finally:
            lock.release()

    def _trusted_offset(self, record: DownloadRecord, target: FileTarget) -> int:
        """How much of the partial can be believed (see :mod:`.journal`); truncates the rest."""
        try:
            on_disk = target.partial.stat().st_size
        except FileNotFoundError:
            return 0
        same_boot = bool(record.boot) and record.boot == boot_id()
        trusted = on_disk if same_boot else min(on_disk, record.checkpoints.get(target.path, 0))
        if trusted > target.size:
            trusted = 0
        if trusted != on_disk:
            log.info("resuming %s from %d of %d bytes on disk", target.path, trusted, on_disk)
            os.truncate(target.partial, trusted)
        return trusted
