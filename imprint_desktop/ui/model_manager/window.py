"""The Model Manager window: find GGUF models on the hub, download them, manage installed ones.

Four tabs — *Recommended* (the curated models judged for this computer, from
:mod:`.recommended_tab`; the window opens on it, before any search), *Find* (search, results, a
repository's models with quantization, size and fit), *Downloads* (the queue, from
:mod:`.download_status`) and *Installed* (use, remove, show in folder, import). Every hub request
and disk scan is a job of the :class:`DownloadManager`; this window only sends requests and shows
what comes back, so it never blocks. What a row of the Find and Installed lists says is
:mod:`.model_rows`'s to word. Closing the window leaves downloads running.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState, JobEnded
from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.background.payloads import Outcome
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.models import (
    InstalledModel,
    ModelLibrary,
    RemoteModel,
    Removal,
    RepoModels,
    SearchPage,
    Sort,
    human_size,
)
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.download_status import DownloadQueue
from imprint_desktop.ui.model_manager.model_rows import hub_model_row, installed_row, repository_row
from imprint_desktop.ui.model_manager.recommended_tab import RecommendedPage
from imprint_desktop.ui.tables import append_row, chosen_data, list_table


def _table(columns: tuple[str, ...], name: str) -> QTableWidget:
    """A list of the Find or the Installed tab: the last column takes the room left; no wrapping."""
    table = list_table(columns, name)
    table.horizontalHeader().setStretchLastSection(True)
    table.setWordWrap(False)
    return table


def _open_in_file_manager(folder: Path) -> None:
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))


class ModelManagerWindow(QWidget):
    """A top-level window; one per main window, shown again rather than rebuilt."""

    def __init__(
        self, manager: DownloadManager, store: SettingsStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("modelManager")
        self.setWindowTitle("Models")
        self.resize(980, 600)
        self._manager = manager
        self._store = store
        self._jobs: dict[str, str] = {}  # job id -> what the window asked for
        self._page = 0
        self._files: RepoModels | None = None
        #: Overridable in tests: ask before removing, open a folder.
        self.confirm: Callable[[str], bool] = self._ask
        self.open_folder: Callable[[Path], None] = _open_in_file_manager

        self.tabs = QTabWidget()
        self.recommended = RecommendedPage(manager, store)
        self.tabs.addTab(self.recommended, "Re&commended")
        self.tabs.addTab(self._build_find(), "&Find")
        self.queue = DownloadQueue(manager)
        self.tabs.addTab(self.queue, "&Downloads")
        self.tabs.addTab(self._build_installed(), "&Installed")
        self.tabs.currentChanged.connect(self._tab_changed)
        self.message = QLabel()
        self.message.setObjectName("managerMessage")
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # names and errors from the hub
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.message)
        manager.sig_job_ended.connect(self._job_ended)
        manager.sig_download_changed.connect(self._download_changed)
        self.recommended.sig_message.connect(self.say)
        self.recommended.refresh()  # judged on a worker; the list fills in when it is ready

    # --- Find --------------------------------------------------------------------------------

    def _build_find(self) -> QWidget:
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search GGUF models, e.g. qwen 7b instruct")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.returnPressed.connect(self.search)
        self.sort_box = QComboBox()
        self.sort_box.addItem("Most downloaded", Sort.DOWNLOADS)
        self.sort_box.addItem("Recently updated", Sort.RECENT)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.search)
        top = QHBoxLayout()
        top.addWidget(self.search_box, 1)
        top.addWidget(self.sort_box)
        top.addWidget(self.search_button)

        self.results = _table(("Repository", "Downloads", "Updated"), "searchResults")
        header = self.results.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.results.itemSelectionChanged.connect(self._repo_selected)
        self.previous_button = QPushButton("◀ Previous")
        self.next_button = QPushButton("Next ▶")
        self.previous_button.clicked.connect(lambda: self.search(self._page - 1))
        self.next_button.clicked.connect(lambda: self.search(self._page + 1))
        pages = QHBoxLayout()
        pages.addWidget(self.previous_button)
        pages.addStretch(1)
        pages.addWidget(self.next_button)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.results, 1)
        left_layout.addLayout(pages)

        right = self._build_files_panel()

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([390, 590])
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        self._update_find_buttons()
        return page

    def _build_files_panel(self) -> QWidget:
        self.repo_label = QLabel("Choose a repository to see its models.")
        self.repo_label.setTextFormat(Qt.TextFormat.PlainText)  # a repository's name is the hub's
        self.repo_label.setWordWrap(True)
        self.files = _table(("Model", "Quant", "Size", "Fit on this computer"), "repoFiles")
        self.files.setColumnWidth(0, 230)
        self.files.setColumnWidth(1, 60)
        self.files.setColumnWidth(2, 75)
        self.files.itemSelectionChanged.connect(self._update_find_buttons)
        self.download_button = QPushButton("&Download")
        self.download_button.clicked.connect(self.download_selected)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.repo_label)
        right_layout.addWidget(self.files, 1)
        right_layout.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignRight)
        return right

    @Slot()
    def search(self, page: int = 0) -> None:
        self._page = max(page, 0)
        sort = self.sort_box.currentData()
        job = self._manager.search(self.search_box.text(), sort, self._page)
        self._jobs[job] = "search"
        self.search_button.setEnabled(False)
        self.say("Searching…")

    def _show_results(self, page: SearchPage) -> None:
        self.results.setRowCount(0)
        for result in page.results:
            append_row(self.results, repository_row(result))
        self.previous_button.setEnabled(page.page > 0)
        self.next_button.setEnabled(page.has_more)
        found = len(page.results)
        self.say(f"{found} repositories on page {page.page + 1}." if found else "Nothing found.")

    @Slot()
    def _repo_selected(self) -> None:
        repo_id = chosen_data(self.results)
        if not isinstance(repo_id, str):
            return
        self.repo_label.setText(f"{repo_id} — reading its files…")
        self.files.setRowCount(0)
        self._files = None
        self._jobs[self._manager.list_files(repo_id)] = "files"
        self._update_find_buttons()

    def _show_files(self, listing: RepoModels) -> None:
        self._files = listing
        self.repo_label.setText(f"{listing.repo_id}: {len(listing.models)} GGUF models")
        self.files.setRowCount(0)
        for model in listing.models:
            append_row(self.files, hub_model_row(model))
        self._update_find_buttons()

    def selected_remote_model(self) -> RemoteModel | None:
        name = chosen_data(self.files)
        if self._files is None or not isinstance(name, str):
            return None
        return next((m for m in self._files.models if m.name == name), None)

    @Slot()
    def download_selected(self) -> None:
        model = self.selected_remote_model()
        if model is None:
            return
        if not model.complete:
            self.say(f"{model.name} is missing parts on the hub and cannot be downloaded.")
            return
        try:
            ident = self._manager.start_download(model)
        except Exception as error:  # an unverifiable file, an unwritable data folder
            self.say(str(error))
            return
        self.tabs.setCurrentWidget(self.queue)
        self.queue.select(ident)
        self.say(f"Downloading {model.name} ({human_size(model.size)}).")

    @Slot()
    def _update_find_buttons(self) -> None:
        self.download_button.setEnabled(self.selected_remote_model() is not None)

    # --- Installed ---------------------------------------------------------------------------

    def _build_installed(self) -> QWidget:
        self.installed = _table(("Model", "Source", "Size", "Quant", "State"), "installedModels")
        self.installed.setColumnWidth(0, 380)
        self.installed.itemSelectionChanged.connect(self._update_installed_buttons)
        self._installed_models: dict[str, InstalledModel] = {}
        self.use_button = QPushButton("&Use")
        self.remove_button = QPushButton("&Remove…")
        self.folder_button = QPushButton("Show in &folder")
        self.import_button = QPushButton("&Import file…")
        self.refresh_button = QPushButton("Refresh")
        self.use_button.clicked.connect(self.use_selected)
        self.remove_button.clicked.connect(self.remove_selected)
        self.folder_button.clicked.connect(self._show_folder)
        self.import_button.clicked.connect(self._import)
        self.refresh_button.clicked.connect(self.refresh_installed)
        buttons = QHBoxLayout()
        for button in (self.use_button, self.remove_button, self.folder_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.import_button)
        buttons.addWidget(self.refresh_button)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addWidget(self.installed, 1)
        layout.addLayout(buttons)
        self._update_installed_buttons()
        return page

    @Slot()
    def refresh_installed(self) -> None:
        self._jobs[self._manager.list_installed()] = "installed"

    def _show_installed(self, models: tuple[InstalledModel, ...]) -> None:
        chosen = chosen_model(self._store.config())
        self._installed_models = {str(model.path): model for model in models}
        self.installed.setRowCount(0)
        for model in models:
            append_row(self.installed, installed_row(model, chosen.uses_file(model.path)))
        self._update_installed_buttons()

    def selected_installed(self) -> InstalledModel | None:
        key = chosen_data(self.installed)
        return self._installed_models.get(key) if isinstance(key, str) else None

    @Slot()
    def _update_installed_buttons(self) -> None:
        model = self.selected_installed()
        self.use_button.setEnabled(model is not None and model.usable)
        self.remove_button.setEnabled(model is not None and model.removable)
        self.folder_button.setEnabled(model is not None)

    @Slot()
    def use_selected(self) -> None:
        model = self.selected_installed()
        if model is None or not model.usable:
            return
        self._store.update(ModelLibrary.use(model))
        self.say(f"{model.name} is now the model used for research.")
        self.refresh_installed()

    @Slot()
    def remove_selected(self) -> None:
        model = self.selected_installed()
        if model is None or not model.removable:
            return
        what = (
            "forget this imported file (the file itself stays)"
            if model.source.value == "imported"
            else f"delete {human_size(model.size)} from this computer"
        )
        if self.confirm(f"Remove {model.name}? This will {what}."):
            self._jobs[self._manager.remove_installed(model)] = "remove"

    @Slot()
    def _show_folder(self) -> None:
        model = self.selected_installed()
        if model is not None:
            self.open_folder(model.path.parent)

    @Slot()
    def _import(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Import a GGUF model", "", "GGUF (*.gguf)")
        if name:
            self._jobs[self._manager.import_file(Path(name))] = "import"

    def _ask(self, question: str) -> bool:
        answer = QMessageBox.question(self, "Remove model", question)
        return answer == QMessageBox.StandardButton.Yes

    # --- events ------------------------------------------------------------------------------

    @Slot(object)
    def say(self, text: str) -> None:
        self.message.setText(text)

    @Slot(int)
    def _tab_changed(self, index: int) -> None:
        if self.tabs.widget(index) is self.installed.parentWidget():
            self.refresh_installed()

    @Slot(object)
    def _download_changed(self, item: DownloadItem) -> None:
        if item.state in (DownloadState.DONE, DownloadState.FAILED):
            self.say(f"{item.name}: {item.message}")
            if item.state is DownloadState.DONE:
                self.refresh_installed()

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        asked = self._jobs.pop(event.job_id, None)
        if asked is None:
            return
        if asked == "search":
            self.search_button.setEnabled(True)
        if event.outcome is not Outcome.FINISHED:
            self.say(event.message or "Stopped.")
            if asked == "files":
                self.repo_label.setText(event.message)
            return
        value = event.value
        if asked == "search" and isinstance(value, SearchPage):
            self._show_results(value)
        elif asked == "files" and isinstance(value, RepoModels):
            self._show_files(value)
        elif asked == "installed" and isinstance(value, tuple):
            self._show_installed(value)
        elif asked == "remove" and isinstance(value, Removal):
            self.say(value.message)
            self.refresh_installed()
        elif asked == "import" and isinstance(value, InstalledModel):
            self.say(f"Imported {value.name}.")
            self.refresh_installed()
