"""Reopening a conversation researches the folder it was about.

A conversation keeps the folder its latest reply researched
(:attr:`~imprint_desktop.core.history.ConversationSummary.workspace`, which the conversation list
also shows). When the person opens one whose folder is not the one being researched, the window
researches that folder again — ``workspace.path`` is set as the toolbar's picker sets it, so the
toolbar and the index follow — and says so in the status bar. When that folder is no longer there,
it asks instead: keep researching the current folder, or choose another. A conversation from before
conversations kept their folder leaves the workspace as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QWidget

from imprint_desktop.core.chosen import workspace_folder
from imprint_desktop.ui.chat.conversations import ConversationsPane, folder_name

if TYPE_CHECKING:
    from imprint_desktop.settings.store import SettingsStore


def same_folder(kept: str, setting: str) -> bool:
    """Whether a conversation's folder (a path, "" for the sample workspace) is the one a
    ``workspace.path`` value researches."""
    try:
        return workspace_folder(kept).resolve() == workspace_folder(setting).resolve()
    except OSError:
        return False


class ConversationFolder(QObject):
    """Switches the researched folder to the one a reopened conversation was about (GUI thread)."""

    sig_said = Signal(str)  # a sentence for the status bar

    def __init__(
        self,
        store: SettingsStore,
        conversations: ConversationsPane,
        choose_folder: Callable[[], None],
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self._store, self._conversations, self._choose = store, conversations, choose_folder
        self._parent = parent
        self.missing_box: QMessageBox | None = None  # open while the person is asked
        conversations.sig_conversation_chosen.connect(self.reopened)

    @Slot(int)
    def reopened(self, conversation_id: int) -> None:
        kept = self._conversations.folder_of(conversation_id)
        if kept is None or same_folder(kept, self._store.config().workspace.path):
            return
        if kept and not Path(kept).is_dir():
            self._ask(self._conversations.title_of(conversation_id), kept)
            return
        self._store.set("workspace.path", kept)
        self.sig_said.emit(
            f"Researching {folder_name(kept)} again, the folder this conversation is about."
        )

    def _ask(self, title: str, kept: str) -> None:
        if self.missing_box is not None:
            self.missing_box.close()
        current = folder_name(self._store.config().workspace.path)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Folder not found",
            f"“{title}” was about the folder {kept}, which is no longer there. Keep researching "
            f"{current}, or choose the folder to research?",
            QMessageBox.StandardButton.NoButton,
            self._parent,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)  # a title and a path are any text
        choose = box.addButton("&Choose Folder…", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton(f"&Keep {current}", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)

        def done(_result: int) -> None:
            chosen = box.clickedButton() is choose
            box.deleteLater()
            self.missing_box = None
            if chosen:
                self._choose()

        box.finished.connect(done)
        self.missing_box = box
        box.open()
