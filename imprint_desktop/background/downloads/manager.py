"""The UI's whole API to the model store: hub jobs and downloads off the GUI thread, reported
through signals.

:class:`DownloadManager` lives on the GUI thread. Every network request, disk scan and header
check runs on its private :class:`QThreadPool`; results come back as frozen dataclasses
(:mod:`.book`) on ``sig_<subject>_<event>`` signals, delivered on the GUI thread. What each
download's row shows is the queue's bookkeeping, :class:`~.book.DownloadBook`; this module owns the
threads around it.

Progress is coalesced: workers only overwrite the latest :class:`DownloadProgress` of their download
under a lock, and a GUI-thread timer publishes what changed ten times a second — so a 1 GB/s link
costs the GUI thread ten cheap slot calls a second, and nothing at all when no download runs.

Each job ends in exactly one of finished / failed / cancelled (:class:`_Job` is that one error
policy). Pause and cancel are cooperative (:class:`~imprint_desktop.core.models.DownloadControl`);
:meth:`DownloadManager.shutdown` pauses every download (partials are kept for next time) and joins
the workers. ``QThread.terminate()`` is never used.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal, Slot

from imprint_desktop.background.downloads.book import (
    DownloadBook,
    DownloadItem,
    DownloadTotals,
    JobEnded,
)
from imprint_desktop.background.payloads import Outcome
from imprint_desktop.background.relay import Relay
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
    RecommendedModel,
    RemoteModel,
    Sort,
    recommend_here,
)
from imprint_desktop.core.models.embedders import RecommendedEmbedder
from imprint_desktop.core.models.journal import Journal
from imprint_desktop.core.models.recommended import MachineProbe

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_MS = 100


class _Job(QRunnable):
    """One blocking call on a worker, ending in exactly one outcome whatever it raises."""

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

    #: A download joined the queue (also restored paused ones at start).
    sig_download_added = Signal(DownloadItem)
    #: State or progress of a download changed (at most ~10 per second).
    sig_download_changed = Signal(DownloadItem)
    #: str — a cancelled download left the queue.
    sig_download_removed = Signal(object)
    #: Overall progress changed.
    sig_downloads_totals = Signal(DownloadTotals)
    #: A job ended (finished, failed or cancelled): a hub job or a download.
    sig_job_ended = Signal(JobEnded)

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
        self._book = DownloadBook()  # changed on the GUI thread only
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

    def start_recommended(self, model: RecommendedModel | RecommendedEmbedder) -> str:
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
        return self._book.items()

    def item(self, download_id: str) -> DownloadItem | None:
        return self._book.item(download_id)

    def totals(self) -> DownloadTotals:
        return self._book.totals()

    def start_download(self, model: RemoteModel) -> str:
        """Queue ``model``; returns its download id (the same id resumes the same partial)."""
        downloader = self._downloader()
        record = downloader.record_for(model)  # one small JSON write; no network
        if record.download_id in self._controls:
            return record.download_id
        item, known = self._book.queue(record)
        (self.sig_download_changed if known else self.sig_download_added).emit(item)
        self._launch(record, downloader)
        return record.download_id

    def resume(self, download_id: str) -> None:
        record = self._book.record(download_id)
        if download_id in self._controls or record is None:
            return
        self.sig_download_changed.emit(self._book.requeue(download_id))
        self._launch(record, self._downloader())

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
        record = self._book.forget(download_id)
        if record is not None:
            downloader = self._downloader()
            self._submit("discard", lambda: downloader.discard(record))
        self.sig_download_removed.emit(download_id)
        self._emit_totals()

    def _launch(self, record: DownloadRecord, downloader: ModelDownloader) -> None:
        ident = record.download_id
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
        _, discarded, path = event.value if isinstance(event.value, tuple) else (ident, False, "")
        if event.outcome is Outcome.CANCELLED and discarded:
            self._book.forget(ident)
            self.sig_download_removed.emit(ident)
        elif event.outcome is Outcome.FINISHED:
            self.sig_download_changed.emit(self._book.finished(ident, str(path)))
        elif event.outcome is Outcome.CANCELLED:
            self.sig_download_changed.emit(self._book.paused(ident))
        else:
            self.sig_download_changed.emit(self._book.failed(ident, event.message))
        if not self._controls:
            self._timer.stop()
        self._emit_totals()

    def _restored(self, found: list[tuple[DownloadRecord, int]]) -> None:
        for record, done in found:
            item = self._book.restore(record, done)
            if item is not None:
                self.sig_download_added.emit(item)
        self._emit_totals()

    @Slot()
    def _publish_progress(self) -> None:
        with self._latest_lock:
            fresh = dict(self._latest)  # the workers hold this very dict: empty it, keep it
            self._latest.clear()
        for ident, event in fresh.items():
            if self._book.item(ident) is None or ident not in self._controls:
                continue
            self.sig_download_changed.emit(self._book.progressed(ident, event))
        if fresh:
            self._emit_totals()

    def _emit_totals(self) -> None:
        self.sig_downloads_totals.emit(self._book.totals())

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
