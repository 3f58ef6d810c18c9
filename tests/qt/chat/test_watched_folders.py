"""Folders that keep themselves current (issue 44, item 2), in the real window with the real
watch, real files and a real index: a file saved, changed, renamed or removed while the window is
idle is searchable as it now is within five seconds; a second folder is researched under its name,
its citations open from it, and it is taken out with its passages; a question asked while a large
folder is still being indexed is answered at once from the index as it stands, and says so."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.workspace import WorkspaceIndex
from imprint_desktop.core.workspace.isolation import is_cancelled
from imprint_desktop.core.workspace.update import IndexUpdate
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.toolbar import ResearchToolbar
from tests.qt.research_harness import open_window, search, type_question, write_corpus
from tests.qt.transcript_links import click_link
from tests.support.scripted_provider import Step

WAIT_MS = 30_000
#: The target: a file saved into a watched folder is searchable this soon while the window idles.
SEARCHABLE_MS = 5_000


def files_read(root: Path) -> object:
    def check(status: p.IndexStatus) -> bool:
        return (
            status.root == str(root.resolve())
            and status.stage is p.IndexStage.FILES
            and status.outcome is p.Outcome.FINISHED
        )

    return check


def found(index: WorkspaceIndex, words: str) -> list[str]:
    return [hit.path for hit in index.search(words)]


def passage_ids(index: WorkspaceIndex, path: str) -> list[int]:
    with sqlite3.connect(index.db_path) as db:
        rows = db.execute(
            "SELECT passages.id FROM passages JOIN files ON files.id = passages.file_id "
            "WHERE files.path = ? ORDER BY passages.id",
            (path,),
        ).fetchall()
    return [row[0] for row in rows]


def test_files_saved_changed_renamed_and_removed_are_searchable_within_seconds(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    store.set("workspace.embedder", "builtin")
    window = open_window(qtbot, store).window
    with qtbot.waitSignal(
        window.bridge.sig_index_progress, timeout=WAIT_MS, check_params_cb=files_read(folder)
    ):
        store.set("workspace.path", str(folder))
    with WorkspaceIndex(folder) as index:  # another reader of the window's index
        (folder / "tide.md").write_text("# Tide\n\nThe tide gauge was moved to the ferry slip.\n")
        qtbot.waitUntil(
            lambda: found(index, "tide gauge ferry slip") == ["tide.md"], timeout=SEARCHABLE_MS
        )

        with (folder / "tide.md").open("a", encoding="utf-8") as changed:  # changed in place
            changed.write("\nA cormorant colony nests on the old breakwater.\n")
        qtbot.waitUntil(
            lambda: found(index, "cormorant colony") == ["tide.md"], timeout=SEARCHABLE_MS
        )
        kept = passage_ids(index, "tide.md")

        (folder / "tide.md").rename(folder / "deep" / "tides.md")
        qtbot.waitUntil(
            lambda: found(index, "cormorant colony") == ["deep/tides.md"], timeout=SEARCHABLE_MS
        )
        assert passage_ids(index, "deep/tides.md") == kept  # a rename keeps its passages

        (folder / "deep" / "tides.md").unlink()
        qtbot.waitUntil(lambda: found(index, "cormorant colony") == [], timeout=SEARCHABLE_MS)
    qtbot.waitUntil(lambda: not window.toolbar_row.index_bar.isVisible(), timeout=WAIT_MS)


def test_a_second_folder_is_researched_under_its_name_and_leaves_with_its_passages(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    reports = tmp_path / "Reports"
    reports.mkdir()
    (reports / "q1.md").write_text("# Q1\n\nRevenue at the ferry terminal grew by nine percent.\n")
    store.set("workspace.embedder", "builtin")
    store.set("workspace.path", str(folder))
    script = [
        Step(calls=[search("ferry terminal revenue")]),
        Step("Revenue grew by nine percent [1]."),
        Step(calls=[search("ferry terminal revenue")]),
        Step("Nothing about it."),
    ]
    opened = open_window(qtbot, store, script)
    window = opened.window
    with qtbot.waitSignal(
        window.bridge.sig_index_progress, timeout=WAIT_MS, check_params_cb=files_read(reports)
    ):
        store.set("workspace.more_folders", str(reports))
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "How did revenue at the ferry terminal grow?")
    first = [message for request in opened.provider.requests for message in request.messages]
    assert any("Reports/q1.md" in message.content for message in first)
    # Its citation opens from that folder, the cited lines highlighted.
    click_link(qtbot, window.transcript, "[1]")
    qtbot.waitUntil(lambda: window.viewer is not None and window.viewer.loaded, timeout=WAIT_MS)
    viewer = window.viewer
    assert viewer is not None and viewer.windowTitle() == "Reports/q1.md"
    assert any("nine percent" in line for line in viewer.highlighted_lines())
    viewer.close()

    store.set("workspace.more_folders", "")
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "And the ferry terminal revenue now?")
    last = opened.provider.requests[-1].messages
    results = [message.content for message in last if message.role == "tool"]
    assert results and "Reports/q1.md" not in results[-1]
    assert "No passages in the workspace match" in results[-1]


def test_a_file_saved_while_a_folder_is_read_does_not_end_the_folders_progress(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    """The vectors of a file saved meanwhile may be in before the folder is read: the bar goes
    on showing the reading, and the workspace is not called indexed until it is."""
    store.set("workspace.path", str(tmp_path))
    root = str(tmp_path.resolve())
    toolbar = ResearchToolbar(store, lambda: "")
    qtbot.addWidget(toolbar)
    toolbar.show()
    toolbar.show_index(p.IndexStatus(root, 900, 3000, "logs/log0900.md"))
    # The reading gives way to a file just saved, and goes on after it (``more``).
    toolbar.show_index(p.IndexStatus(root, 1, 1, "news.md"))
    saved = p.IndexStatus(root, 1, 1, outcome=p.Outcome.FINISHED, more=True)
    toolbar.show_index(saved)
    assert toolbar.index_bar.isVisible()
    assert toolbar.finished_line(saved) == ""  # not "Files read"
    toolbar.show_index(p.IndexStatus(root, 1, 2100, "logs/log0901.md"))
    toolbar.show_index(p.IndexStatus(root, 0, 1, stage=p.IndexStage.MEANING))
    assert toolbar.index_bar.format().startswith("Indexing 2/2 · search by meaning: 0 of 1")
    embedded = p.IndexStatus(root, 1, 1, stage=p.IndexStage.MEANING, outcome=p.Outcome.FINISHED)
    toolbar.show_index(embedded)  # the saved file's vectors are in; the folder is still read
    assert toolbar.index_bar.isVisible()
    assert toolbar.index_bar.format().startswith("Indexing 1/2 · reading files: 1 of 2,100")
    assert toolbar.finished_line(embedded) == ""  # not "Workspace indexed"

    done = p.IndexStatus(root, 3001, 3001, outcome=p.Outcome.FINISHED)
    toolbar.show_index(done)
    assert not toolbar.index_bar.isVisible()
    meaning = p.IndexStatus(root, 40, 40, stage=p.IndexStage.MEANING, outcome=p.Outcome.FINISHED)
    toolbar.show_index(meaning)
    assert not toolbar.index_bar.isVisible()
    assert toolbar.finished_line(meaning) == f"Workspace indexed: {root}"


#: The log files of the large folder from which its reading is held (see ``held_logs``).
HELD_FROM = 1000


@pytest.fixture
def held_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Hold the background reading of ``logs/log1000.md`` and after until the event is set, or
    until the update reading it is told to stop (it gives way to a file just saved), so that a
    large folder is still being read when the test asks, however fast this machine reads. What
    is read, and how, is unchanged."""
    release = threading.Event()
    index_file = IndexUpdate._index_file

    def held(update: IndexUpdate, scanned: object) -> bool:
        path = getattr(scanned, "path", "")
        if path.startswith("logs/log") and int(path[8:12]) >= HELD_FROM:
            stop = update._cancel
            while not release.wait(0.02) and not is_cancelled(stop):
                pass
        return index_file(update, scanned)  # type: ignore[arg-type]

    monkeypatch.setattr(IndexUpdate, "_index_file", held)
    yield release
    release.set()


def test_a_question_on_a_folder_still_being_indexed_waits_only_for_the_file_saved_before_it(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, held_logs: threading.Event
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    for number in range(3000):
        (folder / "logs").mkdir(exist_ok=True)
        (folder / "logs" / f"log{number:04d}.md").write_text(
            f"# Log {number}\n\nThe tide gauge read {number} centimetres.\n", encoding="utf-8"
        )
    store.set("workspace.embedder", "builtin")
    script = [Step(calls=[search("walrus slipway")]), Step("A walrus slept there [1].")]
    opened = open_window(qtbot, store, script)
    window = opened.window
    standing: list[p.IndexStanding] = []
    window.bridge.sig_index_standing.connect(standing.append)
    statuses: list[p.IndexStatus] = []
    window.bridge.sig_index_progress.connect(statuses.append)

    def far_from_done(status: p.IndexStatus) -> bool:
        going = status.stage is p.IndexStage.FILES and status.outcome is None
        return going and status.total >= 3000 and status.total - status.done > 1500

    with qtbot.waitSignal(
        window.bridge.sig_index_progress, timeout=WAIT_MS, check_params_cb=far_from_done
    ):
        store.set("workspace.path", str(folder))
    # A file saved while the folder is being read goes first; the question asked just after
    # waits for it, and not for the rest of the folder. (The folder's watch may start a moment
    # after its reading does: a save it missed is saved again, as a person would.)
    news = folder / "news.md"
    for _ in range(10):
        news.write_text("# News\n\nA walrus slept on the slipway.\n")
        try:
            qtbot.waitUntil(
                lambda: any(status.path == "news.md" for status in statuses), timeout=3_000
            )
            break
        except qtbot.TimeoutError:
            continue
    assert any(status.path == "news.md" for status in statuses)
    qtbot.waitUntil(lambda: any(status.outcome is not None for status in statuses))
    read = next(status for status in statuses if status.outcome is not None)
    assert read.outcome is p.Outcome.FINISHED and read.more  # the folder is read after it
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        type_question(qtbot, window, "Was a walrus seen?")
    assert ended.args[0].outcome is p.Outcome.FINISHED
    tool_results = [
        message.content
        for message in opened.provider.requests[-1].messages
        if message.role == "tool"
    ]
    assert "news.md" in tool_results[-1]
    assert "the index is searched as it stands" in tool_results[-1]
    assert standing and "still being indexed in the background" in standing[0].message
    assert "still being indexed" in window.statusBar().currentMessage()
    assert window.toolbar_row.index_bar.isVisible()  # the folder is still being read
    with qtbot.waitSignal(
        window.bridge.sig_index_progress, timeout=WAIT_MS, check_params_cb=files_read(folder)
    ):
        held_logs.set()
    with WorkspaceIndex(folder) as index:
        assert len(index.documents("logs")) == 3000


def test_without_watching_a_question_reads_what_changed_before_it_is_answered(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    store.set("workspace.embedder", "builtin")
    store.set("workspace.watch", False)
    script = [Step(calls=[search("walrus slipway")]), Step("A walrus slept there [1].")]
    opened = open_window(qtbot, store, script)
    window = opened.window
    with qtbot.waitSignal(
        window.bridge.sig_index_progress, timeout=WAIT_MS, check_params_cb=files_read(folder)
    ):
        store.set("workspace.path", str(folder))
    (folder / "news.md").write_text("# News\n\nA walrus slept on the slipway.\n")
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Was a walrus seen?")
    tool_results = [
        message.content
        for message in opened.provider.requests[-1].messages
        if message.role == "tool"
    ]
    assert "news.md" in tool_results[-1]
    assert "as it stands" not in tool_results[-1]
