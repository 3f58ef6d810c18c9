"""Indexing progress a person can read (issue 41, item 3).

The toolbar's bar once wrapped "Indexing 0 of 14" onto two clipped lines, and the status bar said
"Workspace indexed" while the passages were still being embedded. In the real window, at its
narrowest and at a wide width: the bar says the step, how far it is and (once it can tell) about how
long is left, on one line cut with "…" to its width and whole in its tooltip; the status bar says
"indexed" only once every step is done, on a real index update.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.index_progress import Pace, progress_line, time_left_words
from imprint_desktop.ui.chat.toolbar import FOLDER_CHARS
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import open_window, write_corpus

WAIT_MS = 30_000
STEPS = [
    (p.IndexStatus("/w", 3, 14, path="harbour/notes.md"), "Indexing 1/2 · reading files: 3 of 14"),
    (
        p.IndexStatus("/w", 128, 900, stage=p.IndexStage.MEANING),
        "Indexing 2/2 · search by meaning: 128 of 900 passages",
    ),
    (
        p.IndexStatus("/w", 320, 1892, stage=p.IndexStage.IMPROVING),
        "Improving search (optional): 320 of 1,892 passages",
    ),
]


def assert_readable(window: MainWindow, whole: str) -> None:
    bar = window.toolbar_row.index_bar
    assert bar.isVisible() and bar.whole_text() == whole
    shown = bar.text()
    assert "\n" not in shown
    assert bar.fontMetrics().horizontalAdvance(shown) <= bar.contentsRect().width()
    assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))
    assert bar.visibleRegion().boundingRect() == bar.rect()  # not clipped by the toolbar
    assert whole in html.unescape(bar.toolTip()) and bar.accessibleDescription() == whole


@pytest.mark.parametrize("wide", [False, True])
def test_the_bar_reads_on_one_line_at_any_window_width(
    qtbot: QtBot, research_store: SettingsStore, wide: bool
) -> None:
    window = open_window(qtbot, research_store).window
    qtbot.waitUntil(lambda: not window.toolbar_row.indexing, timeout=WAIT_MS)
    width = 1600 if wide else window.minimumSizeHint().width()
    window.resize(width, 700)
    qtbot.waitUntil(lambda: window.width() == width)
    for status, whole in STEPS:
        window.bridge.sig_index_progress.emit(status)
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)  # laid out anew
        assert_readable(window, whole)
        if wide:
            assert window.toolbar_row.index_bar.text() == whole
        assert window.width() == width  # the line never widens the window
        if status.stage is p.IndexStage.FILES:  # the files are read before the next step
            window.bridge.sig_index_progress.emit(
                p.IndexStatus("/w", 14, 14, outcome=p.Outcome.FINISHED)
            )
    window.bridge.sig_index_progress.emit(
        p.IndexStatus("/w", 1892, 1892, outcome=p.Outcome.FINISHED, stage=p.IndexStage.IMPROVING)
    )
    assert not window.toolbar_row.index_bar.isVisible()

    # What the update could not read is as long as its problems: cut, it never widens the window
    # (it did, from 605 to 879 px), and its tooltip names each file.
    problems = "3 files have no text layer · 1 file could not be read · 2 files are too large"
    done = p.IndexStatus(
        "/w", 6, 6, outcome=p.Outcome.FINISHED, problems=problems, details=("scan.pdf: no text",)
    )
    window.bridge.sig_index_progress.emit(done)
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)
    line = window.toolbar_row.index_problems
    assert line.isVisible() and line.whole == problems and window.width() == width
    shown = line.text()
    if wide:
        assert shown == problems
    else:
        assert shown == problems or (shown.endswith("…") and problems.startswith(shown[:-1]))
    assert line.fontMetrics().horizontalAdvance(shown) <= line.contentsRect().width()
    assert line.visibleRegion().boundingRect() == line.rect()
    assert "scan.pdf: no text" in html.unescape(line.toolTip())


def test_the_time_left_is_told_once_the_step_has_run_a_while() -> None:
    now = [0.0]
    pace = Pace(lambda: now[0])
    first = p.IndexStatus("/w", 0, 100)
    assert pace.seconds_left(first) is None  # nothing to go by yet
    now[0] = 2.0
    later = p.IndexStatus("/w", 10, 100)
    left = pace.seconds_left(later)
    assert left == pytest.approx(18.0)  # 10 files in 2 s, 90 to go
    assert progress_line(later, left) == "Indexing 1/2 · reading files: 10 of 100 · about 20 s left"
    # Another step is timed from its own start.
    meaning = p.IndexStatus("/w", 500, 1000, stage=p.IndexStage.MEANING)
    assert pace.seconds_left(meaning) is None
    assert [time_left_words(s) for s in (3, 61, 3600, 4000)] == [
        "about 5 s left",
        "about 2 min left",
        "about 1 h left",
        "about 1 h 7 min left",
    ]


def test_the_status_bar_says_indexed_only_when_every_step_is_done(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    for number in range(40):
        (folder / f"log{number:02d}.md").write_text(
            f"# Log {number}\n\nThe tide gauge read {number} centimetres.\n", encoding="utf-8"
        )
    store.set("workspace.embedder", "builtin")  # no optional step after the two
    window = open_window(qtbot, store).window
    root = str(folder.resolve())
    said: list[tuple[p.IndexStage, p.Outcome | None, str]] = []

    def record(status: p.IndexStatus) -> None:  # after the window's own slot
        if status.root == root:
            said.append((status.stage, status.outcome, window.statusBar().currentMessage()))

    window.bridge.sig_index_progress.connect(record)
    with qtbot.waitSignal(
        window.bridge.sig_index_progress,
        timeout=WAIT_MS,
        check_params_cb=lambda status: (
            status.root == root
            and status.stage is p.IndexStage.MEANING
            and status.outcome is p.Outcome.FINISHED
        ),
    ):
        store.set("workspace.path", str(folder))
    stages = [(stage, outcome) for stage, outcome, _ in said]
    files_done = stages.index((p.IndexStage.FILES, p.Outcome.FINISHED))
    assert said[files_done][2] == f"Files read: {root}. Preparing search by meaning…"
    assert all("indexed" not in message.lower() for _, _, message in said[:-1])
    assert said[-1][2] == f"Workspace indexed: {root}"


def test_a_long_folder_name_does_not_widen_the_window(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / ("Harbour archive, minutes and letters " * 3).strip())
    window = open_window(qtbot, store).window
    width = window.minimumSizeHint().width()
    window.resize(width, 700)
    qtbot.waitUntil(lambda: window.width() == width)
    store.set("workspace.path", str(folder))
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)
    picker = window.toolbar_row.workspace
    assert picker.text() == f"Workspace: {folder.name[: FOLDER_CHARS - 1]}…"
    assert str(folder) in html.unescape(picker.toolTip())
    assert window.width() == width and window.minimumSizeHint().width() <= width


def test_a_folder_researched_no_more_is_not_called_indexed(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    """The end of a folder's reading can come after another folder was chosen (a conversation
    reopened in its own folder): the status bar must not say the old one is the workspace."""
    old, new = write_corpus(tmp_path / "ferry-docs"), write_corpus(tmp_path / "harbour-docs")
    store.set("workspace.path", str(new))
    window = open_window(qtbot, store).window
    late = p.IndexStatus(
        str(old.resolve()), 3, 3, outcome=p.Outcome.FINISHED, stage=p.IndexStage.MEANING
    )
    assert window.toolbar_row.finished_line(late) == ""
    current = p.IndexStatus(
        str(new.resolve()), 3, 3, outcome=p.Outcome.FINISHED, stage=p.IndexStage.MEANING
    )
    assert window.toolbar_row.finished_line(current).startswith("Workspace indexed:")


def test_choosing_another_folder_clears_the_last_folders_indexed_line(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    """Seen under Xvfb: "Workspace indexed: …/sample" stayed in the status bar for seconds
    after a big folder was chosen and while it was being read."""
    old, new = write_corpus(tmp_path / "ferry-docs"), write_corpus(tmp_path / "harbour-docs")
    store.set("workspace.path", str(old))
    window = open_window(qtbot, store).window
    done = p.IndexStatus(
        str(old.resolve()), 3, 3, outcome=p.Outcome.FINISHED, stage=p.IndexStage.MEANING
    )
    window.bridge.sig_index_progress.emit(done)
    assert window.statusBar().currentMessage().startswith("Workspace indexed:")
    store.set("workspace.path", str(new))
    assert window.statusBar().currentMessage() == ""  # before the new folder's reading is told
    # Another message (not the index's) is left as it is.
    window.statusBar().showMessage("Answer copied.", 3000)
    store.set("workspace.path", str(old))
    assert window.statusBar().currentMessage() == "Answer copied."
