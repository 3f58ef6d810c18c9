"""The research record shows what the answer stands on (issue 40), in the real window.

A scripted model answers over a small workspace of two lighthouses, once with a claim the
documents hold and once with another lighthouse's year. Opening the record (Ctrl+R) shows the
verdict in words, each claim beside the passages ([n], as the answer numbers them) that hold it or
the note that flags it, and the sentence the documents do hold; a claim opens its passage in the
evidence list; the exported report says the same; a reply reopened after a restart, too.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.record.claims import (
    GROUNDING_TITLE,
    UNMATCHED,
    verdict_sentence,
)
from imprint_desktop.core.research.sources import OFFERED_LABEL
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.research_panel.record_dialog import RecordDialog
from tests.qt.chat.test_grounding_mark import NOTE, lighthouses
from tests.qt.research_harness import open_window, search, type_question
from tests.support.scripted_provider import Step

WAIT_MS = 10_000


def ask(qtbot: QtBot, window: MainWindow, question: str) -> None:
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, question)


def open_record(qtbot: QtBot, window: MainWindow) -> RecordDialog:
    window.activateWindow()  # the shortcut goes to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    with qtbot.waitSignal(window.bridge.sig_trace_loaded, timeout=WAIT_MS):
        qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    record = window.opener.record
    assert record is not None and record.isVisible()
    return record


def rows(record: RecordDialog) -> list[tuple[str, str]]:
    table = record.claims
    return [
        (table.item(row, 0).text(), table.item(row, 1).text()) for row in range(table.rowCount())
    ]


def test_the_record_shows_each_claim_with_its_passages_or_its_flag(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    store.set("workspace.path", str(lighthouses(tmp_path / "docs")))
    script = [
        Step(calls=[search("automated")]),
        Step("Marrow Head was automated in 1986."),
        Step(calls=[search("automated")]),
        Step("It was automated in 1991."),
    ]
    window = open_window(qtbot, store, script).window
    ask(qtbot, window, "When was Marrow Head automated?")

    record = open_record(qtbot, window)
    assert record.verdict.isVisible() and record.claims.isVisible()
    assert record.verdict.textFormat() == Qt.TextFormat.PlainText  # the quote is a document's
    assert record.verdict.text() == (
        f"{verdict_sentence('unsupported')}\n"
        f"{OFFERED_LABEL} “Marrow Head was automated in 1991.” [1]"
    )
    assert rows(record) == [("Marrow Head was automated in 1986.", f"⚠ {NOTE.rstrip('.')}")]
    assert record.claims.item(0, 1).foreground().color().red() > 150  # flagged

    exported = tmp_path / "record.html"
    record.export_to(exported)
    qtbot.waitUntil(lambda: record.saved.text().startswith("Report saved"), timeout=WAIT_MS)
    page = exported.read_text(encoding="utf-8")
    assert GROUNDING_TITLE in page and verdict_sentence("unsupported") in page
    assert "Gannet Point" in page
    record.close()

    # A supported answer: the claim stands on passage [1], which a claim opens in the evidence.
    ask(qtbot, window, "And when was it automated, again?")
    record = open_record(qtbot, window)
    assert record.verdict.text() == verdict_sentence("supported")
    assert rows(record) == [("It was automated in 1991.", "[1]")]
    record.evidence.setCurrentRow(-1)
    record.claims.setCurrentCell(0, 0)
    record.claims.setFocus()
    qtbot.keyClick(record.claims, Qt.Key.Key_Return)
    current = record.evidence.currentItem()
    assert current is not None and current.text().startswith("[1] stations/marrow-head.md")
    record.close()

    # After a restart, the record of a reply from the history shows the same.
    window.close()
    again = open_window(qtbot, store).window
    qtbot.waitUntil(lambda: again.conversations.list.count() == 1, timeout=WAIT_MS)
    with qtbot.waitSignal(again.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        again.conversations.list.setCurrentRow(0)
    record = open_record(qtbot, again)
    assert rows(record) == [("It was automated in 1991.", "[1]")]
    record.close()


def test_a_long_claim_is_wrapped_to_be_read_whole(qtbot: QtBot) -> None:
    claim = "The keepers of the light kept a log of every ship that passed the rock " * 4
    grounding = ev.GroundingView("partly", (ev.ClaimView(claim, (1,)), ev.ClaimView("Short.")))
    lines: list[dict[str, object]] = [{"t": 0.0, "type": "stop", "reason": "answered"}]
    record = RecordDialog("Q?", (), lines, lambda _path: None, grounding=grounding)
    qtbot.addWidget(record)
    record.show()
    qtbot.waitExposed(record)
    assert rows(record)[0][0] == claim.strip()  # whole, on one line of text
    line = record.claims.fontMetrics().lineSpacing()
    assert record.claims.rowHeight(0) >= 2 * line > record.claims.rowHeight(1)
    assert rows(record)[1] == ("Short.", UNMATCHED)


def test_a_record_without_a_grounding_has_no_such_section(qtbot: QtBot) -> None:
    lines: list[dict[str, object]] = [{"t": 0.0, "type": "stop", "reason": "time_budget"}]
    record = RecordDialog("Q?", (), lines, lambda _path: None)
    qtbot.addWidget(record)
    record.show()
    assert not record.claims.isVisible() and not record.verdict.isVisible()
    assert record.report.grounding is None


def test_a_not_found_reply_says_so_without_an_empty_list(qtbot: QtBot) -> None:
    lines: list[dict[str, object]] = [{"t": 0.0, "type": "stop", "reason": "no_progress"}]
    grounding = ev.GroundingView("not_found")
    record = RecordDialog("Q?", (), lines, lambda _path: None, grounding=grounding)
    qtbot.addWidget(record)
    record.show()
    assert record.verdict.isVisible() and record.verdict.text() == verdict_sentence("not_found")
    assert not record.claims.isVisible()
