"""Help → Keyboard Shortcuts lists every shortcut the window defines, and cannot miss one."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

import imprint_desktop.ui
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.shortcuts import ShortcutsDialog
from tests.qt.test_main_window import open_window

UI = Path(imprint_desktop.ui.__file__).parent
PORTABLE = QKeySequence.SequenceFormat.PortableText
NATIVE = QKeySequence.SequenceFormat.NativeText

#: Files of ui/ whose keys are not shortcuts, and why.
NOT_SHORTCUTS = {
    # Enter ends an edit in a number field of the preferences (it keeps what was typed).
    UI / "preferences" / "editors.py",
    # The list itself, which names every key it lists.
    UI / "shortcuts.py",
}


def open_shortcuts(qtbot: QtBot, window: MainWindow) -> ShortcutsDialog:
    """As a person would: the shortcut of the list itself."""
    qtbot.keyClick(window, Qt.Key.Key_Slash, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), ShortcutsDialog))
    dialog = QApplication.activeModalWidget()
    assert isinstance(dialog, ShortcutsDialog)
    return dialog


def listed_keys(dialog: ShortcutsDialog) -> set[str]:
    return {key.toString(PORTABLE) for shortcut in dialog.shortcuts for key in shortcut.keys}


def plain(text: str) -> str:
    return text.replace("&", "").removesuffix("…")


def test_every_action_and_shortcut_of_the_window_is_listed(
    qtbot: QtBot, store: SettingsStore
) -> None:
    window = open_window(qtbot, store)
    dialog = open_shortcuts(qtbot, window)
    rows = dialog.listed()
    assert ("File", "New Conversation", "Ctrl+N") in rows
    assert ("Model", "Models", "Ctrl+M") in rows, "the menu added after the window is built"
    assert ("Conversations", "Rename the chosen conversation", "F2") in rows
    assert (
        "Question box",
        "Send the question",
        ", ".join(QKeySequence(key).toString(NATIVE) for key in ("Return", "Enter")),
    ) in rows
    assert ("Help", "Keyboard Shortcuts", QKeySequence("Ctrl+/").toString(NATIVE)) in rows

    for action in window.findChildren(QAction):
        keys = [key for key in action.shortcuts() if not key.isEmpty()]
        if keys:
            text = ", ".join(key.toString(NATIVE) for key in keys)
            assert any(row[1:] == (plain(action.text()), text) for row in rows), action.text()
    shortcuts = window.findChildren(QShortcut)
    assert shortcuts
    for shortcut in shortcuts:
        row = next(row for row in rows if row[2] == shortcut.key().toString(NATIVE))
        assert row[1] and row[1] == shortcut.whatsThis(), "it says what the key does"
    dialog.reject()


def test_a_shortcut_added_to_a_menu_is_listed_without_listing_it(
    qtbot: QtBot, store: SettingsStore
) -> None:
    window = open_window(qtbot, store)
    chat = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Chat")
    added = QAction("&Summarise the Workspace…", window)
    added.setShortcut(QKeySequence("Ctrl+Shift+U"))
    chat.addAction(added)
    dialog = open_shortcuts(qtbot, window)
    shown = QKeySequence("Ctrl+Shift+U").toString(NATIVE)
    assert ("Chat", "Summarise the Workspace", shown) in dialog.listed()
    dialog.reject()


def keys_named_in_the_source() -> dict[str, set[str]]:
    """Every key the code of ui/ names, portable text → the files naming it."""
    named: dict[str, set[str]] = {}
    for path in sorted(UI.rglob("*.py")):
        if path in NOT_SHORTCUTS:
            continue
        source = path.read_text(encoding="utf-8")
        keys = [QKeySequence(text) for text in _KEY_TEXT.findall(source)]
        keys += [QKeySequence(getattr(Qt.Key, f"Key_{name}")) for name in _QT_KEY.findall(source)]
        for name in _STANDARD_KEY.findall(source):
            keys += QKeySequence.keyBindings(getattr(QKeySequence.StandardKey, name))
        for key in keys:
            named.setdefault(key.toString(PORTABLE), set()).add(path.name)
    return named


_KEY_TEXT = re.compile(r'"((?:Ctrl|Shift|Alt|Meta)\+[^"\s]+|Esc|F\d{1,2})"')
_QT_KEY = re.compile(r"Qt\.Key\.Key_(\w+)")
_STANDARD_KEY = re.compile(r"StandardKey\.(\w+)")


def test_every_key_the_code_names_is_listed(qtbot: QtBot, store: SettingsStore) -> None:
    """A key handled anywhere in ui/ (a menu action, a QShortcut, a keyPressEvent) that the
    list does not show fails here: list it, or say above why it is not a shortcut."""
    named = keys_named_in_the_source()
    assert {"Ctrl+N", "Ctrl+M", "F2", "Del", "Return", "Esc", "Ctrl+Q"} <= set(named)
    window = open_window(qtbot, store)
    dialog = open_shortcuts(qtbot, window)
    missing = {key: files for key, files in named.items() if key not in listed_keys(dialog)}
    assert not missing, f"named in ui/ but not in Help → Keyboard Shortcuts: {missing}"
    dialog.reject()
