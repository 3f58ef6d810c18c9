"""The window says what the workspace index could not read: a count beside the workspace, each
file and its reason in the tooltip, and the count in the status line."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.toolbar import ResearchToolbar
from tests.qt.research_harness import open_window, write_corpus
from tests.support import documents

WAIT_MS = 20_000


def test_a_scan_in_the_workspace_is_counted_beside_it_with_its_reason(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    documents.scanned_pdf(folder / "scans/invoice.pdf", [["Invoice 4471"]])
    documents.docx_file(folder / "brief.docx", "Brief", [("Price", "It costs 56,000.")])
    store.set("workspace.ocr", False)
    window = open_window(qtbot, store).window
    with qtbot.waitSignal(
        window.bridge.sig_index_progress,
        timeout=WAIT_MS,
        check_params_cb=lambda status: status.outcome is p.Outcome.FINISHED,
    ):
        store.set("workspace.path", str(folder))
    problems = window.toolbar_row.index_problems
    assert problems.isVisible()
    assert problems.text() == "1 file has no text layer"
    assert "scans/invoice.pdf: it has no text layer (a scan?); OCR is turned off" in (
        problems.toolTip()
    )
    assert "1 file has no text layer" in window.statusBar().currentMessage()


def test_the_count_goes_when_nothing_is_left_unread(qtbot: QtBot, store: SettingsStore) -> None:
    toolbar = ResearchToolbar(store, lambda: "model")
    qtbot.addWidget(toolbar)
    toolbar.show()
    finished = p.Outcome.FINISHED
    toolbar.show_index(
        p.IndexStatus(
            "/w",
            3,
            3,
            outcome=finished,
            problems="2 files have no text layer · 1 file could not be read",
            details=("a.pdf: no text", "b.png: no text", "c.docx: refused as a likely ZIP bomb"),
        )
    )
    assert toolbar.index_problems.isVisible()
    assert "c.docx: refused as a likely ZIP bomb" in toolbar.index_problems.toolTip()
    toolbar.show_index(p.IndexStatus("/w", 3, 3, outcome=finished))
    assert not toolbar.index_problems.isVisible()
