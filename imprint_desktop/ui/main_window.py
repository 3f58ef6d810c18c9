"""The main window: conversations, the transcript and composer, and the research panel.

Layout, left to right: the conversation list; the chat column (transcript, the model's question
card, the card asking before a web page is fetched, the composer); the research panel with the live
budgets and the evidence. The toolbar chooses the model and the workspace. Everything slow goes
through the :class:`Bridge`; the window only lays out, forwards and shows. Window geometry and
the splitter are remembered in the data folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop import APP_NAME, __version__
from imprint_desktop.background import payloads as p
from imprint_desktop.background.bridge import Bridge
from imprint_desktop.core import paths
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui import export_paths
from imprint_desktop.ui.chat.banner import ProblemsBanner, welcome_html
from imprint_desktop.ui.chat.chat_session import ChatSession
from imprint_desktop.ui.chat.composer import Composer
from imprint_desktop.ui.chat.consent_card import ConsentCard
from imprint_desktop.ui.chat.conversation_folder import ConversationFolder
from imprint_desktop.ui.chat.conversations import ConversationsPane
from imprint_desktop.ui.chat.document_viewer import SourceViewer
from imprint_desktop.ui.chat.evidence_opener import EvidenceOpener
from imprint_desktop.ui.chat.question_card import QuestionCard
from imprint_desktop.ui.chat.starter_offer import StarterOffer
from imprint_desktop.ui.chat.toolbar import ResearchToolbar
from imprint_desktop.ui.chat.view import ChatView
from imprint_desktop.ui.research_panel.panel import ResearchPanel

if TYPE_CHECKING:  # the model store and the dialogs load after the first paint, when needed
    from imprint_desktop.background.downloads.book import JobEnded
    from imprint_desktop.background.downloads.manager import DownloadManager
    from imprint_desktop.settings.secrets import SecretStore
    from imprint_desktop.ui.model_manager.window import ModelManagerWindow
    from imprint_desktop.ui.preferences.dialog import PreferencesDialog
    from imprint_desktop.ui.shortcuts import ShortcutsDialog


class MainWindow(QMainWindow):
    def __init__(  # noqa: PLR0915 - laying out a window is a list of statements
        self,
        store: SettingsStore,
        secrets: SecretStore | Callable[[], SecretStore],
        bridge: Bridge,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle(APP_NAME)
        self.resize(1180, 760)
        self._store = store
        self._secrets = secrets  # or how to make it: the keyring loads when first needed
        self.bridge = bridge
        self.preferences: PreferencesDialog | None = None
        self.downloads: DownloadManager | None = None
        self.model_manager: ModelManagerWindow | None = None

        self.banner = ProblemsBanner()
        self.banner.open_button.clicked.connect(self.open_preferences)
        self.banner.show_problems([problem.message for problem in store.problems])
        self.toolbar_row = ResearchToolbar(store, lambda: chosen_model(store.config()).describe())
        toolbar = QToolBar("Model and workspace")
        toolbar.setObjectName("researchToolbar")
        toolbar.setMovable(False)
        toolbar.addWidget(self.toolbar_row)
        self.addToolBar(toolbar)

        self.conversations = ConversationsPane()
        self.summary = QLabel()
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Welcome")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.transcript = ChatView()
        self.starter_offer = StarterOffer(store, lambda: self.downloads, self.open_model_manager)
        self.card = QuestionCard()
        self.consent_card = ConsentCard()
        self.composer = Composer()
        self.panel = ResearchPanel()

        chat = QWidget()
        chat_layout = QVBoxLayout(chat)
        chat_layout.setContentsMargins(0, 0, 0, 0)
        chat_layout.addWidget(self.summary)
        chat_layout.addWidget(self.transcript, 1)
        chat_layout.addWidget(self.starter_offer)
        chat_layout.addWidget(self.card)
        chat_layout.addWidget(self.consent_card)
        chat_layout.addWidget(self.composer)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(self.conversations)
        self.splitter.addWidget(chat)
        self.splitter.addWidget(self.panel)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([240, 620, 320])
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(self.banner)
        layout.addWidget(self.splitter, 1)
        self.setCentralWidget(central)

        self.opener = EvidenceOpener(
            bridge,
            view=self.transcript,
            panel=self.panel,
            parent=self,
            source_bytes=lambda: store.config().workspace.max_file_mb * 2**20,
        )
        self.opener.sig_status.connect(self.show_status)
        self.session = ChatSession(
            bridge,
            view=self.transcript,
            panel=self.panel,
            composer=self.composer,
            card=self.card,
            consent_card=self.consent_card,
            conversations=self.conversations,
            opener=self.opener,
            parent=self,
        )
        self.session.sig_problem.connect(self.show_problem)
        self.conversation_folder = ConversationFolder(
            store, self.conversations, self.toolbar_row.workspace.choose_folder, self
        )
        self.conversation_folder.sig_said.connect(self.show_status)
        self.session.sig_starter_answered.connect(self.starter_offer.starter_answered)
        self.session.sig_conversation_left.connect(self.starter_offer.conversation_left)
        self.composer.sig_question_sent.connect(lambda _question: self._show_summary())
        self.toolbar_row.model.sig_manage_requested.connect(self.open_model_manager)
        self.toolbar_row.model.sig_remote_settings_requested.connect(self.open_preferences)
        bridge.sig_model_status.connect(self.toolbar_row.show_model)
        bridge.sig_index_progress.connect(self._index_progress)
        bridge.sig_index_standing.connect(self._index_standing)
        bridge.sig_job_problem.connect(lambda problem: self.show_problem(problem.message))
        bridge.sig_file_saved.connect(self._saved)
        bridge.sig_connection_tested.connect(self._connection_tested)
        bridge.sig_reply_ended.connect(lambda _ended: self._show_summary())
        bridge.sig_conversation_loaded.connect(lambda _record: self._show_summary())
        self._build_menus()
        self.statusBar().showMessage(f"Settings: {store.path}")
        self._index_line = ""  # what the status bar last said of the index
        self._unsubscribe = store.subscribe(self._settings_changed)
        self._show_summary()
        self._restore_geometry()
        self.setTabOrder(self.composer.edit, self.composer.button)
        bridge.list_conversations("")

    # --- menus --------------------------------------------------------------------------------

    def _action(self, menu: QMenu, text: str, slot: object, *keys: str) -> QAction:
        action = QAction(text, self)
        if keys:
            action.setShortcuts([QKeySequence(key) for key in keys])
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.new_action = self._action(
            file_menu, "&New Conversation", self.session.new_conversation, "Ctrl+N"
        )
        self.export_action = self._action(
            file_menu, "&Export Conversation…", self.export_conversation, "Ctrl+E"
        )
        file_menu.addSeparator()
        self.quit_action = self._action(file_menu, "&Quit", self.close)
        self.quit_action.setShortcuts(_shortcuts("Ctrl+Q", QKeySequence.StandardKey.Quit))

        edit_menu = bar.addMenu("&Edit")
        self.copy_answer_action = self._action(
            edit_menu, "&Copy Last Answer", self._copy_last, "Ctrl+Shift+C"
        )
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

        chat_menu = bar.addMenu("&Chat")
        self.stop_action = self._action(chat_menu, "&Stop", self.session.stop, "Esc")
        self.record_action = self._action(
            chat_menu,
            "Research &Record of the Last Answer",
            lambda: self.opener.open_record(self.session.last_answer_index()),
            "Ctrl+R",
        )
        chat_menu.addSeparator()
        self._action(chat_menu, "Go to &Question Box", self.composer.edit.setFocus, "Ctrl+L")
        self._action(chat_menu, "Go to &Transcript", self.transcript.setFocus, "Ctrl+T")
        self._action(chat_menu, "Go to &Conversations", self.conversations.list.setFocus, "Ctrl+1")
        self._action(
            chat_menu, "Search Conversations", self.conversations.search.setFocus, "Ctrl+K"
        )
        self._action(chat_menu, "Go to &Evidence", self.panel.evidence.setFocus, "Ctrl+3")
        self._action(chat_menu, "Choose &Model", self.toolbar_row.model.showPopup, "Ctrl+Shift+M")
        self._action(
            chat_menu, "Choose &Workspace…", self.toolbar_row.workspace.choose_folder, "Ctrl+O"
        )
        self._action(chat_menu, "Test the Remote &Server", self.bridge.test_connection)

        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&Keyboard Shortcuts", self.show_shortcuts, "Ctrl+/")
        about = QAction(f"&About {APP_NAME}", self)
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def attach_downloads(self, downloads: DownloadManager) -> None:
        """Add the Model menu (Ctrl+M opens the model manager) and the download status."""
        from imprint_desktop.ui.model_manager.download_status import DownloadStatusWidget  # noqa: PLC0415

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
        downloads.sig_job_ended.connect(self._download_job_ended)
        downloads.list_installed()  # fills the model picker (read on a worker)

    @Slot(object)
    def _download_job_ended(self, job: JobEnded) -> None:
        if job.kind == "installed" and job.outcome.value == "finished":
            models = job.value if isinstance(job.value, tuple | list) else ()
            self.toolbar_row.model.set_installed(tuple(models))
        elif job.kind in ("download", "remove", "import") and self.downloads is not None:
            self.downloads.list_installed()

    # --- dialogs ------------------------------------------------------------------------------

    @Slot()
    def open_model_manager(self) -> ModelManagerWindow | None:
        """Show the model manager (one per window; closing it leaves downloads running)."""
        if self.downloads is None:
            return None
        from imprint_desktop.ui.model_manager.window import ModelManagerWindow  # noqa: PLC0415

        if self.model_manager is None:
            self.model_manager = ModelManagerWindow(self.downloads, self._store, self)
        self.model_manager.show()
        self.model_manager.raise_()
        self.model_manager.activateWindow()
        return self.model_manager

    @Slot()
    def show_shortcuts(self) -> ShortcutsDialog:
        """List every shortcut, read from the menus as they are now."""
        from imprint_desktop.ui.shortcuts import ShortcutsDialog  # noqa: PLC0415

        dialog = ShortcutsDialog(self, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    @Slot()
    def open_preferences(self) -> PreferencesDialog:
        """Show the preferences dialog (one at a time) and return it."""
        from imprint_desktop.ui.preferences.dialog import PreferencesDialog  # noqa: PLC0415

        if self.preferences is None:
            if callable(self._secrets):
                self._secrets = self._secrets()
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

    @Slot()
    def export_conversation(self) -> None:
        conversation = self.session.conversation_id
        if conversation is None:
            self.statusBar().showMessage("Open a conversation to export it.", 5000)
            return
        title = self.conversations.title_of(conversation)
        path = export_paths.ask_save_path(self, export_paths.CONVERSATION, title)
        if path is not None:
            self.bridge.export_conversation(conversation, path)

    @Slot()
    def _copy_last(self) -> None:
        index = self.session.last_answer_index()
        if index >= 0:
            self.transcript.copy_message(index)
            self.statusBar().showMessage("Answer copied.", 3000)

    @property
    def viewer(self) -> SourceViewer | None:
        """The viewer evidence and citations opened last (Imprint's own, not the system's)."""
        return self.opener.viewer

    # --- reactions ----------------------------------------------------------------------------

    @Slot(str)
    def show_status(self, message: str) -> None:
        self.statusBar().showMessage(message, 8000)  # a status bar shows plain text

    @Slot(str)
    def show_problem(self, message: str) -> None:
        self.banner.show_error(message)
        self.statusBar().showMessage(message, 10_000)

    @Slot(object)
    def _index_progress(self, status: p.IndexStatus) -> None:
        self.toolbar_row.show_index(status)
        if status.outcome is p.Outcome.FAILED:
            self.show_problem(status.message)
        elif line := self.toolbar_row.finished_line(status):  # "indexed" once every step is
            self.statusBar().showMessage(line, 8000)
            self._index_line = line

    @Slot(object)
    def _index_standing(self, standing: p.IndexStanding) -> None:
        """A question is answered while the background indexing is behind: the status bar says
        what it searched."""
        message = standing.message
        self.statusBar().showMessage(f"{message[:1].upper()}{message[1:]}.", 15_000)

    @Slot(object)
    def _connection_tested(self, test: p.ConnectionTest) -> None:
        if test.ok:
            self.statusBar().showMessage(test.message, 8000)
        else:
            self.show_problem(test.message)

    @Slot(object)
    def _saved(self, saved: p.FileSaved) -> None:
        self.statusBar().showMessage(f"Saved the {saved.what} to {saved.path}", 8000)

    def _settings_changed(self, keys: frozenset[str]) -> None:
        if any(key.startswith(("model.", "remote.")) for key in keys):
            self.toolbar_row.model.rebuild()
            self.bridge.load_model()
        if any(key.startswith("workspace.") for key in keys):
            self.toolbar_row.workspace.refresh()
            self.toolbar_row.forget_reading()
            if self.statusBar().currentMessage() == self._index_line:
                # "Workspace indexed: <the folder before>" is no longer true of the workspace.
                self.statusBar().clearMessage()
            self.bridge.index_workspace()
        self._show_summary()

    def set_starter(self, path: Path | None) -> None:
        """Tell the window whether the starter model is installed (found off the GUI thread)."""
        self.toolbar_row.model.set_starter(path)
        self._show_summary()

    def _show_summary(self) -> None:
        store = self._store
        empty = not self.transcript.messages and not self.transcript.live
        self.summary.setVisible(empty)
        if not empty:
            return
        self.summary.setText(welcome_html(store, self.toolbar_row.model.starter))

    @Slot()
    def _about(self) -> None:
        QMessageBox.about(
            self,
            f"About {APP_NAME}",
            f"<h3>{APP_NAME} {__version__}</h3><p>A research assistant for your own documents, "
            "running on your computer.</p>",
        )

    # --- geometry and closing ---------------------------------------------------------------

    def _geometry_store(self) -> QSettings:
        return QSettings(str(paths.data_dir() / "window.ini"), QSettings.Format.IniFormat)

    def _restore_geometry(self) -> None:
        saved = self._geometry_store()
        geometry = saved.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        splitter = saved.value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)

    def closeEvent(self, event: QCloseEvent) -> None:
        saved = self._geometry_store()
        saved.setValue("geometry", self.saveGeometry())
        saved.setValue("splitter", self.splitter.saveState())
        saved.sync()
        self._unsubscribe()
        self.panel.stop_clock()
        if self.downloads is not None:
            self.downloads.shutdown()  # pauses downloads (partials kept) and joins the workers
        self.bridge.shutdown()  # cancels the reply and joins the loop thread
        self.opener.close()  # stops the viewer's document reader
        super().closeEvent(event)


def _shortcuts(primary: str, standard: QKeySequence.StandardKey) -> list[QKeySequence]:
    """``primary`` on every platform, plus the platform's own binding where it has one."""
    keys = [QKeySequence(primary)]
    keys += [key for key in QKeySequence.keyBindings(standard) if key not in keys]
    return keys
