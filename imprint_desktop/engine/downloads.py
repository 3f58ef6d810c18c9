"""Download workers and hub jobs off the GUI thread, reported through signals.

:class:`DownloadManager` lives on the GUI thread and is the UI's whole API to the model store. Every
network request, disk scan and header check runs on its private :class:`QThreadPool`; results come
back as frozen dataclasses on ``sig_<subject>_<event>`` signals, delivered on the GUI thread.

Progress is coalesced: workers only overwrite the latest :class:`DownloadProgress` of their download
under a lock, and a GUI-thread timer publishes what changed ten times a second — so a 1 GB/s link
costs the GUI thread ten cheap slot calls a second, and nothing at all when no download runs.

Each job ends in exactly one of finished / failed / cancelled. Pause and cancel are cooperative
(:class:`~imprint_desktop.core.models.DownloadControl`); :meth:`DownloadManager.shutdown` pauses
every download (partials are kept for next time) and joins the workers. ``QThread.terminate()`` is
never used.
"""

from __future__ import annotations

import enum
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal, Slot

from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import Cancelled, ImprintError
from imprint_desktop.core.models import (
    DownloadControl,
    DownloadOptions,
    DownloadProgress,
    DownloadRecord,
    HubClient,
    HubConfig,
    InstalledModel,
    ModelDownloader,
    ModelLayout,
    ModelLibrary,
    Phase,
    RecommendedModel,
    RemoteModel,
    Sort,
    recommend_here,
)
from imprint_desktop.core.models.journal import Journal
from imprint_desktop.core.models.recommended import MachineProbe
from imprint_desktop.engine.payloads import Outcome
from imprint_desktop.engine.relay import Relay

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_MS = 100


class DownloadState(enum.Enum):
    QUEUED = "queued"
    DOWNLOADING = "downloading"
    PAUSED = "paused"
    FAILED = "failed"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class DownloadItem:
    """One row of the download queue, as the UI shows it."""

    download_id: str
    repo_id: str
    name: str
    total_bytes: int
    done_bytes: int = 0
    state: DownloadState = DownloadState.QUEUED
    phase: Phase = Phase.QUEUED
    rate: float = 0.0
    eta: float | None = None
    message: str = ""
    path: str = ""

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def active(self) -> bool:
        return self.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)


@dataclass(frozen=True)
class DownloadTotals:
    """Everything in flight, summed: what the status bar shows."""

    active: int
    done_bytes: int
    total_bytes: int
    rate: float

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(frozen=True)
class JobEnded:
    """The one terminal event of a hub job (search, file list, installed list, remove, import)."""

    job_id: str
    kind: str
    outcome: Outcome
    value: object = None  # the result when finished
    message: str = ""  # a sentence for a person when failed


class _Job(QRunnable):
    def __init__(self, work: Callable[[], object], finish: Callable[[Outcome, object, str], None]):
        super().__init__()
        self.setAutoDelete(True)
        self._work = work
        self._finish = finish

    def run(self) -> None:
        try:
            value = self._work()
        except Cancelled:
            self._finish(Outcome.CANCELLED, None, "")
        except ImprintError as error:
            self._finish(Outcome.FAILED, error, str(error))
        except Exception as error:  # a job must end, and say so, whatever went wrong
            log.exception("background job failed")
            self._finish(Outcome.FAILED, error, f"Unexpected error: {error}")
        else:
            self._finish(Outcome.FINISHED, value, "")


class DownloadManager(QObject):
    """Queue, progress and hub jobs for the model manager window, the status bar and the app."""

    #: DownloadItem — a download joined the queue (also restored paused ones at start).
    sig_download_added = Signal(object)
    #: DownloadItem — state or progress of a download changed (at most ~10 per second).
    sig_download_changed = Signal(object)
    #: str — a cancelled download left the queue.
    sig_download_removed = Signal(object)
    #: DownloadTotals — overall progress changed.
    sig_downloads_totals = Signal(object)
    #: JobEnded — a hub job ended (finished, failed or cancelled).
    sig_job_ended = Signal(object)

    def __init__(
        self,
        settings: Callable[[], Config],
        parent: QObject | None = None,
        *,
        options: DownloadOptions | None = None,
        environ: Mapping[str, str] | None = None,
        max_parallel: int = 2,
        probe: MachineProbe | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings
        self._environ = environ
        self._options = options
        self._probe = probe  # how recommend() reads this computer; tests give a fixed one
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_parallel + 2)  # downloads plus hub jobs
        self._relay = Relay()
        self._relay.sig_payload.connect(self._on_ended)
        self._items: dict[str, DownloadItem] = {}
        self._records: dict[str, DownloadRecord] = {}
        self._models: dict[str, RemoteModel] = {}
        self._controls: dict[str, DownloadControl] = {}
        self._latest: dict[str, DownloadProgress] = {}
        self._latest_lock = threading.Lock()
        self._timer = QTimer(self)
        self._timer.setInterval(PROGRESS_INTERVAL_MS)
        self._timer.timeout.connect(self._publish_progress)
        self._closed = False

    # --- the store, built from a fresh settings snapshot for each job -----------------------

    def _config(self) -> HubConfig:
        return HubConfig.from_config(self._settings().network, self._environ)

    def _layout(self) -> ModelLayout:
        return ModelLayout.from_config(self._settings().downloads, self._environ)

    def _downloader(self) -> ModelDownloader:
        return ModelDownloader(HubClient(self._config()), self._layout(), Journal(), self._options)

    def library(self) -> ModelLibrary:
        return ModelLibrary(self._layout())

    # --- hub jobs ----------------------------------------------------------------------------

    def search(self, text: str, sort: Sort = Sort.DOWNLOADS, page: int = 0) -> str:
        config = self._config()
        return self._submit("search", lambda: HubClient(config).search(text, sort, page))

    def list_files(self, repo_id: str) -> str:
        config = self._config()
        n_ctx = self._settings().model.n_ctx
        return self._submit("files", lambda: HubClient(config).repo_models(repo_id, n_ctx))

    def list_installed(self) -> str:
        library = self.library()
        return self._submit("installed", lambda: tuple(library.installed()))

    def remove_installed(self, model: InstalledModel) -> str:
        library = self.library()
        return self._submit("remove", lambda: library.remove(model))

    def import_file(self, path: Path) -> str:
        library = self.library()
        return self._submit("import", lambda: library.import_file(path))

    def recommend(self) -> str:
        """The recommended models judged for this computer (a ``Recommendations`` when finished)."""
        settings, environ, probe = self._settings(), self._environ, self._probe
        if probe is None:
            return self._submit("recommended", lambda: recommend_here(settings, environ))
        return self._submit("recommended", lambda: recommend_here(settings, environ, probe=probe))

    def start_recommended(self, model: RecommendedModel) -> str:
        """Find ``model``'s file on the hub (on a worker), then queue its download.

        The job (kind ``resolve``) ends finished with the download id as its value, or failed
        with why the download could not start (no network, the file is gone from the hub).
        """
        config = self._config()
        n_ctx = self._settings().model.n_ctx
        return self._submit(
            "resolve", lambda: HubClient(config).resolve_model(model.repo, model.file, n_ctx)
        )

    def restore(self) -> str:
        """Bring back downloads a previous run left paused or failed (read on a worker)."""
        downloader = self._downloader()

        def load() -> list[tuple[DownloadRecord, int]]:
            return [(r, downloader.partial_bytes(r)) for r in downloader.journal.all()]

        return self._submit("restore", load)

    def _submit(self, kind: str, work: Callable[[], object]) -> str:
        job_id = f"{kind}-{uuid.uuid4().hex[:8]}"
        relay = self._relay

        def finish(outcome: Outcome, value: object, message: str) -> None:
            result = value if outcome is Outcome.FINISHED else None
            relay.sig_payload.emit(JobEnded(job_id, kind, outcome, result, message))

        self._pool.start(_Job(work, finish))
        return job_id

    # --- downloads ---------------------------------------------------------------------------

    def items(self) -> list[DownloadItem]:
        return list(self._items.values())

    def item(self, download_id: str) -> DownloadItem | None:
        return self._items.get(download_id)

    def start_download(self, model: RemoteModel) -> str:
        """Queue ``model``; returns its download id (the same id resumes the same partial)."""
        downloader = self._downloader()
        record = downloader.record_for(model)  # one small JSON write; no network
        ident = record.download_id
        if ident in self._controls:
            return ident
        self._records[ident] = record
        self._models[ident] = model
        known = ident in self._items
        item = DownloadItem(ident, model.repo_id, model.name, record.total_bytes)
        if known:
            item = replace(self._items[ident], state=DownloadState.QUEUED, message="")
        self._items[ident] = item
        (self.sig_download_changed if known else self.sig_download_added).emit(item)
        self._launch(ident, downloader)
        return ident

    def resume(self, download_id: str) -> None:
        if download_id in self._controls or download_id not in self._records:
            return
        self._set(download_id, state=DownloadState.QUEUED, message="")
        self._launch(download_id, self._downloader())

    def pause(self, download_id: str) -> None:
        control = self._controls.get(download_id)
        if control is not None:
            control.pause()

    def cancel(self, download_id: str) -> None:
        """Stop and delete the partial; a download that is not running is discarded at once."""
        control = self._controls.get(download_id)
        if control is not None:
            control.cancel()
            return
        record = self._records.pop(download_id, None)
        if record is not None:
            downloader = self._downloader()
            self._submit("discard", lambda: downloader.discard(record))
        self._items.pop(download_id, None)
        self.sig_download_removed.emit(download_id)
        self._emit_totals()

    def _launch(self, ident: str, downloader: ModelDownloader) -> None:
        record = self._records[ident]
        control = DownloadControl()
        self._controls[ident] = control
        relay = self._relay
        latest, lock = self._latest, self._latest_lock

        def progress(event: DownloadProgress) -> None:
            with lock:
                latest[ident] = event

        def finish(outcome: Outcome, value: object, message: str) -> None:
            discarded = outcome is Outcome.CANCELLED and control.discard
            payload = (ident, discarded, str(value) if outcome is Outcome.FINISHED else "")
            relay.sig_payload.emit(JobEnded(ident, "download", outcome, payload, message))

        self._pool.start(_Job(lambda: downloader.run(record, control, progress), finish))
        if not self._timer.isActive():
            self._timer.start()

    # --- GUI-thread bookkeeping --------------------------------------------------------------

    @Slot(object)
    def _on_ended(self, event: JobEnded) -> None:
        if event.kind == "download":
            self._download_ended(event)
        elif event.kind == "restore" and event.outcome is Outcome.FINISHED:
            self._restored(event.value)  # type: ignore[arg-type]
        elif event.kind == "resolve":
            event = self._start_resolved(event)
        self.sig_job_ended.emit(event)

    def _start_resolved(self, event: JobEnded) -> JobEnded:
        """A recommended model was found on the hub: queue it (not once the app is closing)."""
        model = event.value
        if not isinstance(model, RemoteModel):
            return event
        if self._closed:
            return JobEnded(event.job_id, event.kind, Outcome.CANCELLED)
        try:
            return replace(event, value=self.start_download(model))
        except ImprintError as error:  # an unverifiable file, an unwritable data folder
            return JobEnded(event.job_id, event.kind, Outcome.FAILED, None, str(error))

    def _download_ended(self, event: JobEnded) -> None:
        ident = event.job_id
        self._controls.pop(ident, None)
        with self._latest_lock:
            self._latest.pop(ident, None)
        discarded = event.outcome is Outcome.CANCELLED and self._discarded(event)
        if discarded:
            self._records.pop(ident, None)
            self._items.pop(ident, None)
            self.sig_download_removed.emit(ident)
        elif event.outcome is Outcome.FINISHED:
            path = event.value[2] if isinstance(event.value, tuple) else ""
            item = self._items[ident]
            self._set(
                ident,
                state=DownloadState.DONE,
                phase=Phase.DONE,
                path=str(path),
                done_bytes=item.total_bytes,
                rate=0.0,
                eta=None,
                message="Verified",
            )
        elif event.outcome is Outcome.CANCELLED:
            self._set(ident, state=DownloadState.PAUSED, rate=0.0, eta=None, message="Paused")
        else:
            self._set(ident, state=DownloadState.FAILED, rate=0.0, eta=None, message=event.message)
        if not self._controls:
            self._timer.stop()
        self._emit_totals()

    @staticmethod
    def _discarded(event: JobEnded) -> bool:
        return isinstance(event.value, tuple) and bool(event.value[1])

    def _restored(self, found: list[tuple[DownloadRecord, int]]) -> None:
        for record, done in found:
            ident = record.download_id
            if ident in self._items:
                continue
            self._records[ident] = record
            state = DownloadState.FAILED if record.state == "failed" else DownloadState.PAUSED
            message = record.message or "Paused; resume to continue"
            item = DownloadItem(
                ident, record.repo_id, record.name, record.total_bytes, done, state, message=message
            )
            self._items[ident] = item
            self.sig_download_added.emit(item)
        self._emit_totals()

    @Slot()
    def _publish_progress(self) -> None:
        with self._latest_lock:
            fresh = dict(self._latest)  # the workers hold this very dict: empty it, keep it
            self._latest.clear()
        for ident, event in fresh.items():
            if ident not in self._items or ident not in self._controls:
                continue
            self._set(
                ident,
                state=DownloadState.DOWNLOADING,
                phase=event.phase,
                done_bytes=event.done_bytes,
                rate=event.rate,
                eta=event.eta,
                message=event.detail,
            )
        if fresh:
            self._emit_totals()

    def _set(self, ident: str, **changes: object) -> None:
        item = replace(self._items[ident], **changes)  # type: ignore[arg-type]
        self._items[ident] = item
        self.sig_download_changed.emit(item)

    def totals(self) -> DownloadTotals:
        active = [item for item in self._items.values() if item.active]
        return DownloadTotals(
            active=len(active),
            done_bytes=sum(item.done_bytes for item in active),
            total_bytes=sum(item.total_bytes for item in active),
            rate=sum(item.rate for item in active),
        )

    def _emit_totals(self) -> None:
        self.sig_downloads_totals.emit(self.totals())

    # --- shutdown ----------------------------------------------------------------------------

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Pause every download (partials stay for next time) and join the workers."""
        if self._closed:
            return True
        self._closed = True
        for control in list(self._controls.values()):
            control.pause()
        self._timer.stop()
        return bool(self._pool.waitForDone(timeout_ms))
