"""Help → Keyboard Shortcuts: every shortcut the window defines, read from the window itself.

The list is made when it is opened, from the objects that *are* the shortcuts: each menu's actions
(their text and keys), each :class:`~PySide6.QtGui.QShortcut` in the window (its ``whatsThis``
says what it does), and the keys the question box handles itself (:data:`QUESTION_BOX_KEYS`,
beside :class:`~imprint_desktop.ui.chat.composer.QuestionEdit`'s own handling). So a shortcut
added to a menu is listed without anyone listing it; ``tests/qt/test_shortcuts.py`` reads the
source of ``ui/`` for keys and fails when one of them is not in the list.

    ShortcutsDialog(window)
      └─ window_shortcuts(window) → [Shortcut(where, what, keys)]
           ├─ the menu bar's menus, and their actions with keys
           ├─ the window's QShortcuts
           └─ QUESTION_BOX_KEYS
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

QUESTION_BOX = "Question box"

#: What the question box does with a key itself, not through an action (what, portable keys).
QUESTION_BOX_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Send the question", ("Return", "Enter")),
    ("Start a new line", ("Shift+Return",)),
    ("Stop the reply", ("Esc",)),
)


@dataclass(frozen=True)
class Shortcut:
    """One thing a key does: ``where`` it works (a menu, a list), ``what`` it does, its keys."""

    where: str
    what: str
    keys: tuple[QKeySequence, ...]

    def key_text(self) -> str:
        """The keys as this platform writes them: ``Ctrl+N``, ``⌘N``."""
        return ", ".join(key.toString(QKeySequence.SequenceFormat.NativeText) for key in self.keys)


def window_shortcuts(window: QMainWindow) -> list[Shortcut]:
    """Every shortcut of ``window``, in menu order, then the lists' and the question box's."""
    found: list[Shortcut] = []
    for menu in _menus(window):
        for action in menu.actions():
            if action.shortcuts() and not action.isSeparator():
                found.append(Shortcut(_plain(menu.title()), _plain(action.text()), _keys(action)))
    for shortcut in window.findChildren(QShortcut):
        if not shortcut.key().isEmpty():
            where = shortcut.parent()
            name = where.accessibleName() if isinstance(where, QWidget) else ""
            found.append(Shortcut(name or "Window", shortcut.whatsThis(), (shortcut.key(),)))
    for what, keys in QUESTION_BOX_KEYS:
        found.append(Shortcut(QUESTION_BOX, what, tuple(QKeySequence(key) for key in keys)))
    return found


def _menus(window: QMainWindow) -> list[QMenu]:
    menus = []
    for action in window.menuBar().actions():
        menu = action.menu()
        if isinstance(menu, QMenu):
            menus.append(menu)
    return menus


def _keys(action: QAction) -> tuple[QKeySequence, ...]:
    return tuple(key for key in action.shortcuts() if not key.isEmpty())


def _plain(text: str) -> str:
    """A menu text without its mnemonic marks and its trailing ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").removesuffix("…")


class ShortcutsDialog(QDialog):
    """The list of shortcuts, grouped by where they work. Made anew each time it opens."""

    def __init__(self, window: QMainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.setObjectName("keyboardShortcuts")
        self.resize(560, 600)
        self.shortcuts = window_shortcuts(window)
        intro = QLabel(
            "The usual editing keys (copy, paste, select all, undo) work in every text as well."
        )
        intro.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("shortcutList")
        self.tree.setAccessibleName("Keyboard shortcuts")
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Does", "Keys"])
        self.tree.setRootIsDecorated(False)
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setStretchLastSection(False)
        groups: dict[str, QTreeWidgetItem] = {}
        for shortcut in self.shortcuts:
            group = groups.get(shortcut.where)
            if group is None:
                group = QTreeWidgetItem(self.tree, [shortcut.where])
                font = group.font(0)
                font.setBold(True)
                group.setFont(0, font)
                group.setFirstColumnSpanned(True)
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                groups[shortcut.where] = group
            QTreeWidgetItem(group, [shortcut.what, shortcut.key_text()])
        self.tree.expandAll()
        self._groups = list(groups.values())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)

    def listed(self) -> list[tuple[str, str, str]]:
        """What the list shows: (where, what, keys) for each row, as a person reads it."""
        rows = []
        for group in self._groups:
            items = (group.child(index) for index in range(group.childCount()))
            rows += [(group.text(0), item.text(0), item.text(1)) for item in items if item]
        return rows
