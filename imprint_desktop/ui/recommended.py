"""Recommended models in the window: the model manager's *Recommended* tab and the switch offer.

:class:`RecommendedPage` lists the curated models judged for this computer (best fit first among
the three marked picks), downloads one with a click, and uses one that is already here.
:class:`ModelSwitchOffer` follows one recommended download to its end: the app keeps the model it
has until the new file is verified, then asks whether to switch — the person may keep what they
have. The welcome uses the same offer, so both places behave alike.

Everything slow (judging the computer, finding the file on the hub, the download) is a job of the
:class:`~imprint_desktop.engine.downloads.DownloadManager`; these widgets only ask and show.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.models import (
    Recommendation,
    Recommendations,
    RecommendedModel,
    Verdict,
    human_size,
)
from imprint_desktop.engine.download_payloads import DownloadItem, DownloadState, JobEnded
from imprint_desktop.engine.downloads import DownloadManager
from imprint_desktop.engine.payloads import Outcome
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.download_status import describe
from imprint_desktop.ui.model_rows import recommendation_row
from imprint_desktop.ui.tables import append_row, choose_row, chosen_data, list_table


def computer_summary(found: Recommendations) -> str:
    """``2 CPU cores, 22.5 GiB free memory, no GPU …``: what the picks were chosen for."""
    machine = found.machine
    parts = [f"{machine.cpu_cores} CPU core{'s' if machine.cpu_cores != 1 else ''}"]
    if machine.available_memory is not None:
        parts.append(f"{human_size(machine.available_memory)} free memory")
    if machine.gpu is not None:
        parts.append(f"{machine.gpu.name} ({human_size(machine.gpu.free_bytes)} free)")
    else:
        parts.append("no graphics card that llama.cpp can use")
    if machine.disk_free is not None:
        parts.append(f"{human_size(machine.disk_free)} free disk")
    return ", ".join(parts)


def pick_title(entry: Recommendation) -> str:
    """One line: name, size, how it fits, and why it is offered."""
    parts = [entry.model.name, human_size(entry.model.size), entry.fit.verdict.words]
    if entry.role is not None:
        parts.append(entry.role.words.lower())
    if entry.installed is not None:
        parts.append("already on this computer")
    return "  ·  ".join(parts)


def front_window() -> QWidget | None:
    """Where to ask: the active window, else the visible main window (the welcome's download
    may end while no window of the app has the focus)."""
    active = QApplication.activeWindow()
    if active is not None:
        return active
    shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow)]
    return next((w for w in shown if w.isVisible()), None)


def current_model_name(store: SettingsStore) -> str:
    chosen = chosen_model(store.config()).file
    return chosen.name if chosen is not None else "the current model"


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
        if item.repo_id != self.model.repo or item.name != self.model.file:
            return
        if item.state is DownloadState.DONE and self.box is None:
            self.ask(item.path)
        elif item.state is DownloadState.FAILED:
            self._failed(item.message)

    def _failed(self, message: str) -> None:
        text = f"{self.model.name} could not be downloaded: {message}"
        if self._report_failures:
            box = QMessageBox(self._window())
            box.setObjectName("modelDownloadFailed")
            box.setIcon(QMessageBox.Icon.Warning)
            box.setWindowTitle("Download failed")
            box.setTextFormat(Qt.TextFormat.PlainText)
            box.setText(text)
            box.setInformativeText(
                f"Imprint keeps using {current_model_name(self._store)}. The model manager "
                "(Model menu) can try again; a partial download resumes where it stopped."
            )
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.setWindowModality(Qt.WindowModality.NonModal)
            box.show()
            self.failure_box = box
        self.sig_failed.emit(text)
        self._finish()

    def ask(self, path: str) -> None:
        """Ask, without blocking anything, whether to use the verified file at ``path`` now."""
        box = QMessageBox(self._window())
        box.setObjectName("modelSwitchOffer")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("A new model is ready")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText(f"{self.model.name} is downloaded and verified. Use it for research now?")
        box.setInformativeText(
            f"Until you switch, Imprint keeps using {current_model_name(self._store)}. Both stay "
            "installed: you can change models at any time in the model manager."
        )
        self.switch_button = box.addButton(
            f"Use {self.model.name}", QMessageBox.ButtonRole.AcceptRole
        )
        self.keep_button = box.addButton(
            "Keep the current model", QMessageBox.ButtonRole.RejectRole
        )
        box.setDefaultButton(self.switch_button)
        box.setEscapeButton(self.keep_button)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.buttonClicked.connect(self._answered)
        self.path = path
        self.box = box
        box.show()

    @Slot(QAbstractButton)
    def _answered(self, button: QAbstractButton) -> None:
        path = self.path
        if button is self.switch_button:
            changes: dict[str, object] = {"model.path": path, "model.provider": "local"}
            if self.entry.fit.on_gpu and self._store.config().model.n_gpu_layers == 0:
                changes["model.n_gpu_layers"] = -1  # it was judged to run on the GPU
            self._store.update(changes)
            self.sig_switched.emit(path)
        else:
            self.sig_kept.emit(path)
        self._finish()

    def _finish(self) -> None:
        """Stop listening. The offer itself stays, a small child of the download manager: deleting
        it from inside its own slots proved fragile under PySide, and it holds nothing else."""
        self._downloads.sig_job_ended.disconnect(self._job_ended)
        self._downloads.sig_download_changed.disconnect(self._download_changed)
        if self.box is not None:
            self.box.deleteLater()
        self.sig_finished.emit()


class RecommendedPage(QWidget):
    """The model manager's first tab: the curated list, judged for this computer."""

    #: str — a sentence for the window's status line.
    sig_message = Signal(object)

    def __init__(
        self, manager: DownloadManager, store: SettingsStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("recommendedPage")
        self._manager = manager
        self._store = store
        self._job = ""
        self.found: Recommendations | None = None
        self.offers: list[ModelSwitchOffer] = []

        self.summary = QLabel("Checking this computer…")
        self.summary.setObjectName("recommendedSummary")
        self.summary.setWordWrap(True)
        self.table = list_table(
            ("Model", "Size", "On this computer", "Why", "State"), "recommendedModels"
        )
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        for column in (0, 1, 2, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selected)
        self.details = QLabel()
        self.details.setObjectName("recommendedDetails")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setMinimumHeight(self.fontMetrics().lineSpacing() * 3 + 4)
        self.download_button = QPushButton("&Download")
        self.download_button.clicked.connect(self.download_selected)
        self.use_button = QPushButton("&Use")
        self.use_button.clicked.connect(self.use_selected)
        self.refresh_button = QPushButton("Check again")
        self.refresh_button.clicked.connect(self.refresh)
        buttons = QHBoxLayout()
        buttons.addWidget(self.refresh_button)
        buttons.addStretch(1)
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.download_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.details)
        layout.addLayout(buttons)
        manager.sig_job_ended.connect(self._job_ended)
        manager.sig_download_changed.connect(self._download_changed)
        self._update_buttons()

    # --- loading ------------------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        self._job = self._manager.recommend()
        self.refresh_button.setEnabled(False)

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        if event.job_id != self._job:
            return
        self.refresh_button.setEnabled(True)
        if event.outcome is Outcome.FINISHED and isinstance(event.value, Recommendations):
            self.show_recommendations(event.value)
        elif event.outcome is Outcome.FAILED:
            self.summary.setText(f"The recommended models could not be listed: {event.message}")

    def show_recommendations(self, found: Recommendations) -> None:
        chosen = self.selected()
        self.found = found
        best = found.best
        lead = (
            f"Best fit for this computer: {best.model.name}."
            if best is not None
            else "None of these models fits this computer now; the reasons are below."
        )
        self.summary.setText(f"{lead}\nJudged for {computer_summary(found)}.")
        self.table.setRowCount(0)
        on_dark = self.table.palette().base().color().lightness() < 128
        for row, entry in enumerate(found.entries):
            append_row(self.table, recommendation_row(entry, on_dark))
            self._show_state(row, entry)
        self.table.resizeRowsToContents()
        keep = chosen.model.id if chosen is not None else (best.model.id if best else None)
        choose_row(self.table, keep)
        self._update_buttons()

    def _show_state(
        self, row: int, entry: Recommendation, item: DownloadItem | None = None
    ) -> None:
        if item is not None and item.state is not DownloadState.DONE:
            text = describe(item)
        elif entry.installed is not None or (item is not None and item.path):
            path = str(entry.installed or (item.path if item else ""))
            in_use = chosen_model(self._store.config()).uses_file(path)
            text = "In use" if in_use else "Installed"
        else:
            text = ""
        cell = self.table.item(row, 4)
        if cell is not None:
            cell.setText(text)

    # --- choosing -----------------------------------------------------------------------------

    def selected(self) -> Recommendation | None:
        if self.found is None:
            return None
        model_id = chosen_data(self.table)
        if model_id is None:
            return None
        return next((e for e in self.found.entries if e.model.id == model_id), None)

    def select(self, model_id: str) -> None:
        choose_row(self.table, model_id)

    @Slot()
    def _selected(self) -> None:
        entry = self.selected()
        if entry is None:
            self.details.setText("")
        else:
            model = entry.model
            self.details.setText(
                f"{model.good_at}\n{model.publisher} · license {model.license} · "
                f"{model.parameters:g} billion parameters · reads up to "
                f"{model.context_length:,} tokens\n{model.repo} · {model.file}"
            )
        self._update_buttons()

    def _busy(self, entry: Recommendation) -> bool:
        return any(offer.entry.model.id == entry.model.id for offer in self.offers)

    @Slot()
    def _update_buttons(self) -> None:
        entry = self.selected()
        here = entry is not None and self._installed_path(entry) is not None
        self.use_button.setEnabled(here)
        self.download_button.setEnabled(
            entry is not None
            and not here
            and entry.fit.verdict is not Verdict.DOES_NOT_FIT
            and not self._busy(entry)
        )

    def _installed_path(self, entry: Recommendation) -> str | None:
        if entry.installed is not None:
            return str(entry.installed)
        for item in self._manager.items():
            if item.repo_id == entry.model.repo and item.name == entry.model.file and item.path:
                return item.path
        return None

    @Slot()
    def download_selected(self) -> None:
        entry = self.selected()
        if entry is None or not self.download_button.isEnabled():
            return
        offer = ModelSwitchOffer(
            self._manager, self._store, entry, window=self.window, report_failures=False
        )
        offer.sig_finished.connect(self._offer_done)
        offer.sig_switched.connect(self._switched)
        offer.sig_kept.connect(self._kept)
        offer.sig_failed.connect(self.sig_message)
        self.offers.append(offer)
        offer.start()
        self.sig_message.emit(
            f"Downloading {entry.model.name} ({human_size(entry.model.size)}). Imprint keeps "
            f"using {current_model_name(self._store)} until it is verified."
        )
        self._update_buttons()

    @Slot()
    def _offer_done(self) -> None:
        self.offers = [offer for offer in self.offers if offer is not self.sender()]
        self.refresh()

    @Slot(object)
    def _switched(self, path: str) -> None:
        self.sig_message.emit(f"{Path(path).name} is now the model used for research.")

    @Slot(object)
    def _kept(self, path: str) -> None:
        self.sig_message.emit(
            f"{Path(path).name} is ready; Imprint keeps using {current_model_name(self._store)}."
        )

    @Slot()
    def use_selected(self) -> None:
        entry = self.selected()
        path = self._installed_path(entry) if entry is not None else None
        if entry is None or path is None:
            return
        self._store.update({"model.path": path, "model.provider": "local"})
        self.sig_message.emit(f"{entry.model.name} is now used for research.")
        self.refresh()

    @Slot(object)
    def _download_changed(self, item: DownloadItem) -> None:
        if self.found is None:
            return
        for row, entry in enumerate(self.found.entries):
            if item.repo_id == entry.model.repo and item.name == entry.model.file:
                self._show_state(row, entry, item)
        self._update_buttons()
