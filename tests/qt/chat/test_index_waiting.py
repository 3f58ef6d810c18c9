"""The window says so while its index update waits for another Imprint's (issue 38), and goes on
once that one is done."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.workspace import index_path_for
from imprint_desktop.core.workspace.database import Connections
from imprint_desktop.core.workspace.update import WAITING
from imprint_desktop.settings.store import SettingsStore
from tests.qt.research_harness import open_window, write_corpus

WAIT_MS = 20_000


def test_an_update_waiting_for_another_imprint_says_so_in_the_toolbar(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    # The built-in embedder alone: under auto the sentence encoder's background progress
    # ("Improving search") follows the update in the same bar (tests/qt/chat/test_index_improving).
    store.set("workspace.embedder", "builtin")
    window = open_window(qtbot, store).window
    another = Connections(index_path_for(folder), folder)  # another Imprint, updating this index
    try:
        # The update finishes once the lock is released, as the outer block ends.
        with (
            qtbot.waitSignal(
                window.bridge.sig_index_progress,
                timeout=WAIT_MS,
                check_params_cb=lambda status: status.outcome is p.Outcome.FINISHED,
            ),
            another.updates.held(),
        ):
            with qtbot.waitSignal(
                window.bridge.sig_index_progress,
                timeout=WAIT_MS,
                check_params_cb=lambda status: status.message == WAITING,
            ):
                store.set("workspace.path", str(folder))
            bar = window.toolbar_row.index_bar
            assert bar.isVisible() and bar.format() == WAITING
    finally:
        another.close_all()
    # The bar goes once the update is done (the folder's watch may first show its own check).
    qtbot.waitUntil(lambda: not window.toolbar_row.index_bar.isVisible(), timeout=WAIT_MS)
