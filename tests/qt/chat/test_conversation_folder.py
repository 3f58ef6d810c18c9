"""Conversations remember their workspace (issue 41, item 9): the list names each one's folder,
and reopening one researches that folder again, or asks when it is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from pytestqt.qtbot import QtBot

from imprint_desktop.core.history import HistoryStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import open_window, type_question, write_corpus

WAIT_MS = 10_000


def ask_in(qtbot: QtBot, window: MainWindow, question: str) -> None:
    """Ask ``question`` in a new conversation, as a person would."""
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, question)


def entry(window: MainWindow, title: str) -> tuple[int, str, str]:
    """The row, text and tooltip of the list entry of the conversation called ``title``."""
    pane = window.conversations.list
    for row in range(pane.count()):
        item = pane.item(row)
        if item.text().startswith(title):
            return row, item.text(), item.toolTip()
    raise AssertionError(f"no entry {title!r}")


def reopen(qtbot: QtBot, window: MainWindow, title: str) -> None:
    row, _text, _tip = entry(window, title)
    window.conversations.list.setFocus()
    with qtbot.waitSignal(window.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        window.conversations.list.setCurrentRow(row)


def asked_in_each(
    qtbot: QtBot, store: SettingsStore, folders: tuple[Path, Path], *, listed: int
) -> MainWindow:
    """The window after one question about the wall in the first folder and one about the
    ledger in the second (researched last), with ``listed`` conversations in the list."""
    harbour, ferry = folders
    store.set("workspace.path", str(harbour))
    window = open_window(qtbot, store).window
    ask_in(qtbot, window, "What is the wall made of?")
    store.set("workspace.path", str(ferry))
    ask_in(qtbot, window, "Who kept the ledger?")
    qtbot.waitUntil(lambda: window.conversations.list.count() == listed, timeout=WAIT_MS)
    return window


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    return write_corpus(tmp_path / "harbour-docs"), write_corpus(tmp_path / "ferry-docs")


def test_the_list_names_each_conversations_folder_and_reopening_researches_it(
    qtbot: QtBot, store: SettingsStore, folders: tuple[Path, Path]
) -> None:
    harbour, ferry = folders
    # A conversation from before conversations kept their folder.
    history = HistoryStore()
    history.start_reply(history.create_conversation("An old question"), "An old question")
    history.close()
    window = asked_in_each(qtbot, store, folders, listed=3)

    _row, text, tip = entry(window, "What is the wall made of?")
    assert text.split("\n")[1].startswith("harbour-docs · ")
    assert f"Folder: {harbour}" in tip
    assert entry(window, "Who kept the ledger?")[1].split("\n")[1].startswith("ferry-docs · ")
    assert entry(window, "An old question")[1].split("\n")[1][:2].isdigit()  # a date: no folder

    reopen(qtbot, window, "What is the wall made of?")
    assert store.config().workspace.path == str(harbour)
    assert window.toolbar_row.workspace.text() == "Workspace: harbour-docs"
    assert "harbour-docs" in window.statusBar().currentMessage()
    reopen(qtbot, window, "Who kept the ledger?")
    assert store.config().workspace.path == str(ferry)
    reopen(qtbot, window, "An old question")  # its folder is not known: nothing changes
    assert store.config().workspace.path == str(ferry)
    assert window.conversation_folder.missing_box is None


def test_reopening_a_conversation_whose_folder_is_gone_asks(
    qtbot: QtBot,
    store: SettingsStore,
    folders: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harbour, ferry = folders
    window = asked_in_each(qtbot, store, folders, listed=2)
    shutil.rmtree(harbour)

    reopen(qtbot, window, "What is the wall made of?")
    box = window.conversation_folder.missing_box
    assert box is not None and box.isVisible()
    assert str(harbour) in box.text() and "no longer there" in box.text()
    keep = next(b for b in box.buttons() if b.text() == "&Keep ferry-docs")
    keep.click()
    qtbot.waitUntil(lambda: window.conversation_folder.missing_box is None)
    assert store.config().workspace.path == str(ferry)

    moved = write_corpus(tmp_path / "harbour-docs-moved")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args: str(moved))
    reopen(qtbot, window, "Who kept the ledger?")
    reopen(qtbot, window, "What is the wall made of?")
    box = window.conversation_folder.missing_box
    assert box is not None
    next(b for b in box.buttons() if b.text() == "&Choose Folder…").click()
    qtbot.waitUntil(lambda: store.config().workspace.path == str(moved))
