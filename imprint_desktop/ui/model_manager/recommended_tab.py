"""The model manager's *Recommended* tab: the curated models judged for this computer.

:class:`RecommendedPage` lists them (best fit first among the three marked picks), with how each
fits and why, downloads one with a click and uses one that is already here. A download is followed
to its end by a :class:`~.model_switch.ModelSwitchOffer`, which asks whether to switch once the file
is verified; the page only says what happens, on the window's status line.

Everything slow (judging the computer, finding the file on the hub, the download) is a job of the
:class:`~imprint_desktop.background.downloads.manager.DownloadManager`; this page only asks and
shows.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState, JobEnded
from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.background.payloads import Outcome
from imprint_desktop.core.chosen import chosen_model, embedder_file
from imprint_desktop.core.models import Recommendation, Recommendations, Verdict, human_size
from imprint_desktop.core.models.embedders import EmbedderRecommendation
from imprint_desktop.core.workspace.embedding import AUTO, BUILTIN, ENCODER, encoder_installed
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.download_status import describe
from imprint_desktop.ui.model_manager.model_rows import embedder_row, recommendation_row
from imprint_desktop.ui.model_manager.model_switch import (
    ModelSwitchOffer,
    current_model_name,
    is_download_of,
    use_file,
)
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


def _rows_follow_their_text(table: QTableWidget) -> None:
    """Each row as tall as its wrapped text at the columns' width of the moment (the window's
    size decides it), never cut off nor padded as it was when the list was filled."""
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)


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
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # may quote the hub's error
        self.table = list_table(
            ("Model", "Size", "On this computer", "Why", "State"), "recommendedModels"
        )
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        for column in (0, 1, 2, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        _rows_follow_their_text(self.table)
        self.table.itemSelectionChanged.connect(self._selected)
        # The list is in order of capability, so the best fit for a small computer is its last
        # row: whenever the rows or the room change, the chosen row is kept in sight.
        self.table.verticalScrollBar().rangeChanged.connect(self._chosen_in_sight)
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
        layout.addWidget(self.table, 3)
        layout.addWidget(self.details)
        layout.addLayout(buttons)
        layout.addWidget(self._embedder_section(), 1)
        manager.sig_job_ended.connect(self._job_ended)
        manager.sig_download_changed.connect(self._download_changed)
        self._update_buttons()

    def _embedder_section(self) -> QWidget:
        """The embedding models for search by meaning, under the chat models: download one, and
        use it for search (``workspace.embedder``)."""
        section = QWidget()
        intro = QLabel(
            "For search by meaning: Imprint's built-in embedder works with nothing to download. "
            "The sentence encoder all-MiniLM-L6-v2, installed with Imprint, and an embedding "
            "model find more passages that say in other words what you ask, and take far longer "
            "to embed a workspace."
        )
        intro.setWordWrap(True)
        self.embedder_table = list_table(
            ("Embedding model", "Size", "On this computer", "Why", "State"), "recommendedEmbedders"
        )
        self.embedder_table.setWordWrap(True)
        header = self.embedder_table.horizontalHeader()
        for column in (0, 1, 2, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        _rows_follow_their_text(self.embedder_table)
        # As tall as its few rows and no taller: the room is the chat models' list's.
        self.embedder_table.setSizeAdjustPolicy(
            QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents
        )
        self.embedder_table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        self.embedder_table.itemSelectionChanged.connect(self._update_buttons)
        self.embedder_download_button = QPushButton("Download")
        self.embedder_download_button.clicked.connect(self.download_embedder)
        self.embedder_use_button = QPushButton("Use for search")
        self.embedder_use_button.clicked.connect(self.use_embedder)
        self.builtin_button = QPushButton("Use the built-in embedder")
        self.builtin_button.clicked.connect(self.use_builtin_embedder)
        self.encoder_button = QPushButton("Use the sentence encoder")
        self.encoder_button.setToolTip(
            "all-MiniLM-L6-v2: finds far more questions asked in other words, and embeds a "
            "hundred times slower than the built-in embedder."
        )
        self.encoder_button.clicked.connect(self.use_sentence_encoder)
        self._encoder_installed = encoder_installed()
        self._embedder_jobs: set[str] = set()
        buttons = QHBoxLayout()
        buttons.addWidget(self.builtin_button)
        buttons.addWidget(self.encoder_button)
        buttons.addStretch(1)
        buttons.addWidget(self.embedder_use_button)
        buttons.addWidget(self.embedder_download_button)
        layout = QVBoxLayout(section)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(intro)
        layout.addWidget(self.embedder_table)
        layout.addLayout(buttons)
        return section

    # --- loading ------------------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        self._job = self._manager.recommend()
        self.refresh_button.setEnabled(False)

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        if event.job_id in self._embedder_jobs:
            self._embedder_jobs.discard(event.job_id)
            if event.outcome is Outcome.FAILED:
                self.sig_message.emit(
                    f"The embedding model could not be downloaded: {event.message}"
                )
            self._update_buttons()
            return
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
        keep = chosen.model.id if chosen is not None else (best.model.id if best else None)
        choose_row(self.table, keep)
        self._chosen_in_sight()
        chosen_embedder = chosen_data(self.embedder_table)
        self.embedder_table.setRowCount(0)
        for row, embedder in enumerate(found.embedders):
            append_row(self.embedder_table, embedder_row(embedder, on_dark))
            self._show_embedder_state(row, embedder)
        choose_row(self.embedder_table, chosen_embedder)
        self._update_buttons()

    def _show_embedder_state(
        self, row: int, entry: EmbedderRecommendation, item: DownloadItem | None = None
    ) -> None:
        if item is not None and item.state is not DownloadState.DONE:
            text = describe(item)
        elif entry.installed is not None or (item is not None and item.path):
            path = str(entry.installed or (item.path if item else ""))
            in_use = embedder_file(self._store.config().workspace.embedder) == Path(path)
            text = "Used for search" if in_use else "Installed"
        else:
            text = ""
        cell = self.embedder_table.item(row, 4)
        if cell is not None:
            cell.setText(text)

    def selected_embedder(self) -> EmbedderRecommendation | None:
        if self.found is None:
            return None
        model_id = chosen_data(self.embedder_table)
        return next((e for e in self.found.embedders if e.model.id == model_id), None)

    def _embedder_path(self, entry: EmbedderRecommendation) -> str | None:
        if entry.installed is not None:
            return str(entry.installed)
        for item in self._manager.items():
            if item.repo_id == entry.model.repo and item.name == entry.model.file and item.path:
                return item.path
        return None

    @Slot()
    def download_embedder(self) -> None:
        entry = self.selected_embedder()
        if entry is None or not self.embedder_download_button.isEnabled():
            return
        self._embedder_jobs.add(self._manager.start_recommended(entry.model))
        self.sig_message.emit(
            f"Downloading {entry.model.name} ({human_size(entry.model.size)}); then choose "
            "Use for search."
        )
        self._update_buttons()

    @Slot()
    def use_embedder(self) -> None:
        entry = self.selected_embedder()
        path = self._embedder_path(entry) if entry is not None else None
        if entry is None or path is None:
            return
        self._store.update({"workspace.embedder": path})
        self.sig_message.emit(
            f"{entry.model.name} now finds passages by meaning; the workspace is embedded again "
            "in the background, and search keeps working meanwhile."
        )
        self.refresh()

    @Slot()
    def use_sentence_encoder(self) -> None:
        self._store.update({"workspace.embedder": ENCODER})
        self.sig_message.emit(
            "The sentence encoder all-MiniLM-L6-v2 now finds passages by meaning; the workspace "
            "is embedded again in the background, and search keeps working meanwhile."
        )
        self.refresh()

    @Slot()
    def use_builtin_embedder(self) -> None:
        self._store.update({"workspace.embedder": ""})
        self.sig_message.emit("The built-in embedder now finds passages by meaning.")
        self.refresh()

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
        self._chosen_in_sight()

    @Slot()
    def _chosen_in_sight(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.table.scrollTo(rows[0])

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
        embedder = self.selected_embedder()
        here = embedder is not None and self._embedder_path(embedder) is not None
        self.embedder_use_button.setEnabled(here)
        downloading = embedder is not None and any(
            item.repo_id == embedder.model.repo
            and item.name == embedder.model.file
            and item.state is not DownloadState.DONE
            for item in self._manager.items()
        )
        self.embedder_download_button.setEnabled(
            embedder is not None
            and not here
            and not downloading
            and not self._embedder_jobs
            and embedder.fit.verdict is not Verdict.DOES_NOT_FIT
        )
        chosen = self._store.config().workspace.embedder.strip()
        # The default (auto) searches by the encoder once it has embedded the workspace in the
        # background: the built-in alone is a choice away, the encoder is already in use.
        self.builtin_button.setEnabled(chosen not in ("", BUILTIN))
        self.encoder_button.setEnabled(self._encoder_installed and chosen not in (ENCODER, AUTO))
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
            if is_download_of(item, entry.model) and item.path:
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
        self._store.update(use_file(path))
        self.sig_message.emit(f"{entry.model.name} is now used for research.")
        self.refresh()

    @Slot(object)
    def _download_changed(self, item: DownloadItem) -> None:
        if self.found is None:
            return
        for row, entry in enumerate(self.found.entries):
            if is_download_of(item, entry.model):
                self._show_state(row, entry, item)
        for row, embedder in enumerate(self.found.embedders):
            if item.repo_id == embedder.model.repo and item.name == embedder.model.file:
                self._show_embedder_state(row, embedder, item)
        self._update_buttons()
