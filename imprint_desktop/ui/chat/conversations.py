"""The conversation list: search, new, rename and delete (with confirmation); each entry names the
folder its conversation researches.

The pane only asks; the history lives on the loop thread. It emits what the person wants and
shows the :class:`~imprint_desktop.background.payloads.ConversationList` the bridge sends back.
Dialogs are opened window-modal with ``open()`` rather than ``exec()``, so no nested event loop
runs inside a slot and the tests can answer them like a person would.
"""

from __future__ import annotations

import time
from pathlib import PurePath
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.background.payloads import ConversationList
from imprint_desktop.core.chosen import sample_workspace
from imprint_desktop.ui.inert import tooltip

if TYPE_CHECKING:
    from imprint_desktop.core.history import ConversationSummary

ID_ROLE = Qt.ItemDataRole.UserRole
SEARCH_DELAY_MS = 200


def _when(stamp: float) -> str:
    return time.strftime("%d %b %Y %H:%M", time.localtime(stamp))


def folder_name(workspace: str | None) -> str:
    """A conversation's folder as its list entry names it: the folder's own name, "Sample
    workspace", or "" when it is not known."""
    if workspace is None:
        return ""
    if not workspace:
        return "Sample workspace"
    return PurePath(workspace).name or workspace


def folder_path(workspace: str | None) -> str:
    """A conversation's folder in full, for its tooltip ("" when not known)."""
    if workspace is None:
        return ""
    return workspace or str(sample_workspace())


class ConversationsPane(QWidget):
    sig_conversation_chosen = Signal(int)
    sig_new_requested = Signal()
    sig_rename_requested = Signal(int, str)
    sig_delete_requested = Signal(int)
    sig_search_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversationsPane")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations")
        self.search.setAccessibleName("Search conversations")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setObjectName("conversationList")
        self.list.setAccessibleName("Conversations")
        self.list.setAccessibleDescription("F2 renames, Delete deletes the selected conversation")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.new_button = QPushButton("&New")
        self.new_button.setAccessibleName("New conversation")
        self.rename_button = QPushButton("&Rename")
        self.rename_button.setAccessibleName("Rename conversation")
        self.delete_button = QPushButton("&Delete")
        self.delete_button.setAccessibleName("Delete conversation")
        buttons = QHBoxLayout()
        for button in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)

        self.rename_dialog: QInputDialog | None = None
        self.delete_box: QMessageBox | None = None
        self._selected: int | None = None
        self._titles: dict[int, str] = {}  # of every conversation listed, searched for or not
        self._folders: dict[int, str | None] = {}  # and the folder each researches (see history)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(lambda: self.sig_search_changed.emit(self.search.text()))
        self.search.textChanged.connect(lambda _text: self._search_timer.start())
        self.list.itemActivated.connect(self._chosen)
        self.list.currentItemChanged.connect(self._current_changed)
        self.new_button.clicked.connect(self.sig_new_requested)
        self.rename_button.clicked.connect(self.ask_rename)
        self.delete_button.clicked.connect(self.ask_delete)
        rename = QShortcut(QKeySequence(Qt.Key.Key_F2), self.list)
        rename.setContext(Qt.ShortcutContext.WidgetShortcut)
        rename.setWhatsThis("Rename the chosen conversation")  # Help → Keyboard Shortcuts
        rename.activated.connect(self.ask_rename)
        delete = QShortcut(QKeySequence(Qt.Key.Key_Delete), self.list)
        delete.setContext(Qt.ShortcutContext.WidgetShortcut)
        delete.setWhatsThis("Delete the chosen conversation")
        delete.activated.connect(self.ask_delete)
        self._update_buttons()

    # --- showing ------------------------------------------------------------------------------

    @Slot(object)
    def show_list(self, listing: ConversationList) -> None:
        if listing.search != self.search.text():
            return  # an answer to an older search
        self.list.blockSignals(True)
        self.list.clear()
        for conversation in listing.conversations:
            self.list.addItem(self._item(conversation))
            self._titles[conversation.id] = conversation.title
            self._folders[conversation.id] = conversation.workspace
        self.list.blockSignals(False)
        self.select(self._selected)

    def _item(self, conversation: ConversationSummary) -> QListWidgetItem:
        replies = f"{conversation.replies} question{'' if conversation.replies == 1 else 's'}"
        folder = folder_name(conversation.workspace)
        details = " · ".join(
            part for part in (folder, _when(conversation.updated), replies) if part
        )
        item = QListWidgetItem(f"{conversation.title}\n{details}")
        item.setData(ID_ROLE, conversation.id)
        where = folder_path(conversation.workspace)
        # A title is a question and a path any name: both any text, shown as text.
        item.setToolTip(
            tooltip(f"{conversation.title}\nFolder: {where}" if where else conversation.title)
        )
        return item

    def select(self, conversation_id: int | None) -> None:
        """Mark ``conversation_id`` as the open one (None: a new, unsaved conversation)."""
        self._selected = conversation_id
        self.list.blockSignals(True)
        self.list.clearSelection()
        self.list.setCurrentRow(-1)
        for row in range(self.list.count()):
            if self.list.item(row).data(ID_ROLE) == conversation_id:
                self.list.setCurrentRow(row)
                break
        self.list.blockSignals(False)
        self._update_buttons()

    @property
    def selected(self) -> int | None:
        return self._selected

    def title_of(self, conversation_id: int) -> str:
        """The title of a conversation listed so far ("" for one never listed)."""
        return self._titles.get(conversation_id, "")

    def folder_of(self, conversation_id: int) -> str | None:
        """The folder a listed conversation researches: a path, "" for the sample workspace, None
        when it is not known (:attr:`~imprint_desktop.core.history.ConversationSummary.workspace`).
        """
        return self._folders.get(conversation_id)

    def _update_buttons(self) -> None:
        has = self._selected is not None
        self.rename_button.setEnabled(has)
        self.delete_button.setEnabled(has)

    # --- actions ------------------------------------------------------------------------------

    @Slot(QListWidgetItem, QListWidgetItem)
    def _current_changed(self, current: QListWidgetItem | None, _old: object) -> None:
        if current is not None:
            self._chosen(current)

    @Slot(QListWidgetItem)
    def _chosen(self, item: QListWidgetItem) -> None:
        conversation_id = int(item.data(ID_ROLE))
        self._selected = conversation_id
        self._update_buttons()
        self.sig_conversation_chosen.emit(conversation_id)

    @Slot()
    def ask_rename(self) -> None:
        conversation_id = self._selected
        if conversation_id is None:
            return
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename conversation")
        dialog.setLabelText("New name:")
        dialog.setTextValue(self.title_of(conversation_id))
        dialog.setAccessibleName("Rename conversation")

        def done(result: int) -> None:
            if result == QInputDialog.DialogCode.Accepted and dialog.textValue().strip():
                self.sig_rename_requested.emit(conversation_id, dialog.textValue().strip())
            dialog.deleteLater()
            self.rename_dialog = None

        dialog.finished.connect(done)
        self.rename_dialog = dialog
        dialog.open()

    @Slot()
    def ask_delete(self) -> None:
        conversation_id = self._selected
        if conversation_id is None:
            return
        title = self.title_of(conversation_id)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete conversation",
            f"Delete “{title}” and all its replies? This cannot be undone.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)  # the title is shown, never interpreted
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def done(result: int) -> None:
            if result == QMessageBox.StandardButton.Yes:
                self.sig_delete_requested.emit(conversation_id)
            box.deleteLater()
            self.delete_box = None

        box.finished.connect(done)
        self.delete_box = box
        box.open()
