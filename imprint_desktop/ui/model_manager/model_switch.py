"""Switching to a recommended model once it is here: its download followed to the end, then the
offer to use it.

:class:`ModelSwitchOffer` follows one recommended download: the app keeps the model it has until the
new file is verified, then asks, without blocking anything, whether to switch — the person may keep
what they have. The model manager's Recommended tab (:mod:`.recommended_tab`) and the welcome of a
first run (:mod:`.welcome`) both start one, so both places behave alike. Making a file the model
used for research is written here once for both (:func:`use_file`).

Everything slow (finding the file on the hub, the download) is a job of the
:class:`~imprint_desktop.background.downloads.manager.DownloadManager`; the offer only asks and
listens.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QAbstractButton, QApplication, QMainWindow, QMessageBox, QWidget

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState, JobEnded
from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.background.payloads import Outcome
from imprint_desktop.core.chosen import chosen_model, model_path_value
from imprint_desktop.core.models import Recommendation, RecommendedModel
from imprint_desktop.settings.store import SettingsStore


def front_window() -> QWidget | None:
    """Where to ask: the active window, else the visible main window (the welcome's download
    may end while no window of the app has the focus)."""
    active = QApplication.activeWindow()
    if active is not None:
        return active
    shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow)]
    return next((w for w in shown if w.isVisible()), None)


def current_model_name(store: SettingsStore) -> str:
    return chosen_model(store.config()).describe()


def use_file(path: str) -> dict[str, object]:
    """The settings changes that make the local file at ``path`` the model used for research."""
    return {"model.path": model_path_value(path), "model.provider": "local"}


def is_download_of(item: DownloadItem, model: RecommendedModel) -> bool:
    """Whether the queued download ``item`` is ``model``'s file."""
    return item.repo_id == model.repo and item.name == model.file


def _message_box(
    parent: QWidget | None, name: str, *, icon: QMessageBox.Icon, title: str, text: str, more: str
) -> QMessageBox:
    """A message box named ``name`` that blocks nothing, its text shown as plain text."""
    box = QMessageBox(parent)
    box.setObjectName(name)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    box.setInformativeText(more)
    box.setWindowModality(Qt.WindowModality.NonModal)
    return box


class ModelSwitchOffer(QObject):
    """Downloads one recommended model, then offers to switch to it once it is verified."""

    #: str — the path now in ``model.path`` (the person said yes).
    sig_switched = Signal(object)
    #: str — the verified file the person chose not to use now.
    sig_kept = Signal(object)
    #: str — why the download did not start or did not finish.
    sig_failed = Signal(object)
    #: None — the offer is over (switched, kept or failed).
    sig_finished = Signal()

    def __init__(
        self,
        downloads: DownloadManager,
        store: SettingsStore,
        entry: Recommendation,
        *,
        window: Callable[[], QWidget | None] | None = None,
        report_failures: bool = True,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent if parent is not None else downloads)
        self._downloads = downloads
        self._store = store
        self.entry = entry
        self._window = window or front_window
        self._report_failures = report_failures  # in a message box (else sig_failed only)
        self._job = ""
        self.download_id = ""
        self.path = ""  # the verified file, once there is one
        self.box: QMessageBox | None = None  # the question, while it is asked
        self.failure_box: QMessageBox | None = None  # why it failed, when it did
        downloads.sig_job_ended.connect(self._job_ended)
        downloads.sig_download_changed.connect(self._download_changed)

    @property
    def model(self) -> RecommendedModel:
        return self.entry.model

    def start(self) -> None:
        self._job = self._downloads.start_recommended(self.model)

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        if event.job_id != self._job:
            return
        if event.outcome is Outcome.FINISHED and isinstance(event.value, str):
            self.download_id = event.value
        elif event.outcome is Outcome.FAILED:
            self._failed(event.message)

    @Slot(object)
    def _download_changed(self, item: DownloadItem) -> None:
        if not is_download_of(item, self.model):
            return
        if item.state is DownloadState.DONE and self.box is None:
            self.ask(item.path)
        elif item.state is DownloadState.FAILED:
            self._failed(item.message)

    def _failed(self, message: str) -> None:
        text = f"{self.model.name} could not be downloaded: {message}"
        if self._report_failures:
            box = _message_box(
                self._window(),
                "modelDownloadFailed",
                icon=QMessageBox.Icon.Warning,
                title="Download failed",
                text=text,
                more=f"Imprint keeps using {current_model_name(self._store)}. The model manager "
                "(Model menu) can try again; a partial download resumes where it stopped.",
            )
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.show()
            self.failure_box = box
        self.sig_failed.emit(text)
        self._finish()

    def ask(self, path: str) -> None:
        """Ask, without blocking anything, whether to use the verified file at ``path`` now."""
        box = _message_box(
            self._window(),
            "modelSwitchOffer",
            icon=QMessageBox.Icon.Question,
            title="A new model is ready",
            text=f"{self.model.name} is downloaded and verified. Use it for research now?",
            more=f"Until you switch, Imprint keeps using {current_model_name(self._store)}. Both "
            "stay installed: you can change models at any time in the model manager.",
        )
        self.switch_button = box.addButton(
            f"Use {self.model.name}", QMessageBox.ButtonRole.AcceptRole
        )
        self.keep_button = box.addButton(
            "Keep the current model", QMessageBox.ButtonRole.RejectRole
        )
        box.setDefaultButton(self.switch_button)
        box.setEscapeButton(self.keep_button)
        box.buttonClicked.connect(self._answered)
        self.path = path
        self.box = box
        box.show()

    @Slot(QAbstractButton)
    def _answered(self, button: QAbstractButton) -> None:
        path = self.path
        if button is self.switch_button:
            changes = use_file(path)
            if self.entry.fit.on_gpu and self._store.config().model.n_gpu_layers == 0:
                changes["model.n_gpu_layers"] = -1  # it was judged to run on the GPU
            self._store.update(changes)
            self.sig_switched.emit(path)
        else:
            self.sig_kept.emit(path)
        self._finish()

    def _finish(self) -> None:
        """Stop listening, and let go of the offer and its question: each offer is a child of the
        download manager, which lives as long as the app, so one kept after its end would stay
        for good. The deletion is deferred to the event loop, after the slot that ends the offer
        (and those told by ``sig_finished``) have returned."""
        self._downloads.sig_job_ended.disconnect(self._job_ended)
        self._downloads.sig_download_changed.disconnect(self._download_changed)
        if self.box is not None:
            self.box.deleteLater()
            self.box = None
        self.sig_finished.emit()
        self.deleteLater()
