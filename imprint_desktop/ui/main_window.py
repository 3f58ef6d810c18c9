"""The main window.

For now it shows what research will run on (model, workspace), tells the person about settings that
could not be used, and opens the preferences dialog. The chat arrives with the research engine.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop import APP_NAME, __version__
from imprint_desktop.core import resources
from imprint_desktop.engine.downloads import DownloadManager
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.download_status import DownloadStatusWidget
from imprint_desktop.ui.model_manager import ModelManagerWindow
from imprint_desktop.ui.preferences import PreferencesDialog


class ProblemsBanner(QFrame):
    """A dismissable strip that lists settings problems found at start-up."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemsBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "#problemsBanner { background: #fff4ce; color: #3d2e00; border: 1px solid #e0c36c; }"
        )
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open Preferences")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.clicked.connect(self.hide)
        buttons = QVBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.dismiss_button)
        buttons.addStretch(1)
        layout = QHBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addLayout(buttons)

    def show_problems(self, messages: list[str]) -> None:
        items = "".join(f"<li>{escape(message)}</li>" for message in messages)
        self.text.setText(f"<b>Some settings could not be used.</b><ul>{items}</ul>")
        self.setVisible(bool(messages))


class MainWindow(QMainWindow):
    def __init__(
        self, store: SettingsStore, secrets: SecretStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle(APP_NAME)
        self.resize(960, 640)
        self._store = store
        self._secrets = secrets
        self.preferences: PreferencesDialog | None = None
        self.downloads: DownloadManager | None = None
        self.model_manager: ModelManagerWindow | None = None

        self.banner = ProblemsBanner()
        self.banner.open_button.clicked.connect(self.open_preferences)
        self.banner.show_problems([problem.message for problem in store.problems])

        self.summary = QLabel()
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(self.banner)
        layout.addWidget(self.summary, 1)
        self.setCentralWidget(central)
        self._build_menus()
        self.statusBar().showMessage(f"Settings: {store.path}")
        self._unsubscribe = store.subscribe(self._settings_changed)
        self._show_summary()

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcuts(_shortcuts("Ctrl+Q", QKeySequence.StandardKey.Quit))
        self.quit_action.triggered.connect(self.close)
        file_menu.addAction(self.quit_action)

        edit_menu = self.menuBar().addMenu("&Edit")
        self.preferences_action = QAction("&Preferences…", self)
        self.preferences_action.setShortcuts(
            [
                QKeySequence("Ctrl+,"),
                *QKeySequence.keyBindings(QKeySequence.StandardKey.Preferences),
            ]
        )
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.preferences_action.triggered.connect(self.open_preferences)
        edit_menu.addAction(self.preferences_action)

        help_menu = self.menuBar().addMenu("&Help")
        about = QAction(f"&About {APP_NAME}", self)
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def attach_downloads(self, downloads: DownloadManager) -> None:
        """Add the Model menu (Ctrl+M opens the model manager) and the download status."""
        self.downloads = downloads
        model_menu = QMenu("&Model", self)
        self.menuBar().insertMenu(self.menuBar().actions()[-1], model_menu)  # before Help
        self.models_action = QAction("&Models…", self)
        self.models_action.setShortcut(QKeySequence("Ctrl+M"))
        self.models_action.triggered.connect(self.open_model_manager)
        model_menu.addAction(self.models_action)
        self.download_status = DownloadStatusWidget(downloads)
        self.download_status.sig_open_requested.connect(self.open_model_manager)
        self.statusBar().addPermanentWidget(self.download_status)

    @Slot()
    def open_model_manager(self) -> ModelManagerWindow | None:
        """Show the model manager (one per window; closing it leaves downloads running)."""
        if self.downloads is None:
            return None
        if self.model_manager is None:
            self.model_manager = ModelManagerWindow(self.downloads, self._store, self)
        self.model_manager.show()
        self.model_manager.raise_()
        self.model_manager.activateWindow()
        return self.model_manager

    @Slot()
    def open_preferences(self) -> PreferencesDialog:
        """Show the preferences dialog (one at a time) and return it."""
        if self.preferences is None:
            self.preferences = PreferencesDialog(self._store, self._secrets, self)
            self.preferences.finished.connect(self._preferences_closed)
        self.preferences.show()
        self.preferences.raise_()
        self.preferences.activateWindow()
        return self.preferences

    @Slot()
    def _preferences_closed(self) -> None:
        if self.preferences is not None:
            self.preferences.deleteLater()
            self.preferences = None

    def _settings_changed(self, _keys: frozenset[str]) -> None:
        self._show_summary()

    def _show_summary(self) -> None:
        store = self._store
        if store.get("model.provider") == "remote":
            model = f"Remote server {store.get('remote.base_url')}"
            name = store.get("remote.model")
            model += f", model “{name}”" if name else ", the server's default model"
        elif store.get("model.path"):
            model = f"Local model {store.get('model.path')}"
        else:
            starter = resources.starter_model_path()
            model = (
                f"{resources.STARTER_NAME}, {starter}"
                if starter
                else "No model yet: choose one in Preferences → Model"
            )
        workspace = (
            store.get("workspace.path")
            or f"Sample workspace, {resources.resource('sample-workspace')}"
        )
        self.summary.setText(
            f"<h2>{APP_NAME}</h2>"
            "<p>Ask questions; the model researches your documents and answers with sources.</p>"
            f"<p><b>Model:</b> {escape(str(model))}<br>"
            f"<b>Workspace:</b> {escape(str(workspace))}</p>"
            "<p>Change either in <i>Edit → Preferences</i> (Ctrl+,).</p>"
        )

    @Slot()
    def _about(self) -> None:
        QMessageBox.about(
            self,
            f"About {APP_NAME}",
            f"<h3>{APP_NAME} {__version__}</h3><p>A research assistant for your own documents, "
            "running on your computer.</p>",
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        self._unsubscribe()
        if self.downloads is not None:
            self.downloads.shutdown()  # pauses downloads (partials kept) and joins the workers
        super().closeEvent(event)


def _shortcuts(primary: str, standard: QKeySequence.StandardKey) -> list[QKeySequence]:
    """``primary`` on every platform, plus the platform's own binding where it has one."""
    keys = [QKeySequence(primary)]
    keys += [key for key in QKeySequence.keyBindings(standard) if key not in keys]
    return keys
