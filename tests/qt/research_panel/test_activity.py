"""The research panel's activity list and the research record as a report (issue 16).

The window runs a scripted reply with searches, reads, an error, a question and a stop; the tests
read what the person sees: the rows of the activity list, the record's figures, chart and tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.research_panel.activity import ActivityModel
from imprint_desktop.ui.research_panel.activity_view import ActivityView
from tests.qt.research_harness import ask, open_window, search, type_question
from tests.support.scripted_provider import Step

WAIT_MS = 10_000
HOSTILE = "<img src='file:///dev/zero'><b>bold</b>"


@pytest.fixture
def research_store(research_store: SettingsStore) -> SettingsStore:
    research_store.set("chat.research_no_progress_rounds", 2)
    research_store.set("chat.research_first", False)  # the script decides every call
    return research_store


def read(path: str, start: int | None = None, end: int | None = None) -> tuple[str, Any]:
    arguments: dict[str, Any] = {"path": path}
    if start is not None:
        arguments |= {"start_line": start, "end_line": end}
    return ("read_document", arguments)


def searches_reads_an_error_a_question_and_a_stop() -> Any:
    """Round by round: a search that finds, a read and a read that fails, a question for the
    person, then the same search twice (no new evidence) until patience runs out."""
    research = iter(
        [
            Step(calls=[search("granite")]),
            Step(calls=[read("deep/gamma.md", 1, 3), read("missing.md")]),
            Step(calls=[ask("Which wall do you mean?")]),
            Step(calls=[search("granite")]),
            Step(calls=[search("granite")]),
        ]
    )

    def script(request: CompletionRequest) -> Step:
        if request.phase == "final":
            return Step("The wall is granite [1].")
        return next(research, Step(calls=[search("granite")]))

    return script


def rows_of(model: ActivityModel) -> list[tuple[str, str, str]]:
    """Every row the views see: a round's title, or (what, status, new evidence) of a call."""
    return [
        tuple(str(model.index(row, column).data() or "") for column in range(3))  # type: ignore[misc]
        for row in range(model.rowCount())
    ]


def find(model: ActivityModel, words: str) -> QModelIndex:
    for row in range(model.rowCount()):
        index = model.index(row, 0)
        if index.data() == words:
            return index
    raise AssertionError(f"no row says {words!r}: {rows_of(model)}")


def reply(qtbot: QtBot, store: SettingsStore) -> MainWindow:
    window = open_window(qtbot, store, searches_reads_an_error_a_question_and_a_stop()).window
    type_question(qtbot, window, "What is the harbour wall made of?")
    activity = window.panel.activity_model
    # Live: while research waits for the person, what it did so far is already listed.
    qtbot.waitUntil(window.card.isVisible, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: find(activity, "read missing.md").isValid(), timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.keyClicks(window.card.answer, "The harbour wall")
        qtbot.keyClick(window.card.answer, Qt.Key.Key_Return)
    assert ended.args[0].result.stop_reason == "no_progress"
    return window


def test_the_activity_lists_every_call_by_round_with_words_status_and_evidence(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    window = reply(qtbot, research_store)
    activity = window.panel.activity_model
    rows = rows_of(activity)
    titles = [what for what, status, new in rows if what.startswith(("Round", "Final"))]
    assert titles[0].startswith("Round 1 · 1 call · +1 new")
    assert titles[-1] == "Final answer"

    def row(words: str) -> tuple[str, str, str]:
        return next(r for r in rows if r[0] == words)

    assert row("searched 'granite'")[1:] == ("ok", "+1 · [1]")
    assert row("read deep/gamma.md lines 1–3")[1] == "ok"
    assert row("read missing.md")[1:] == ("error", "")
    assert row("asked you 'Which wall do you mean?'")[1] == "ok"
    repeated = [r for r in rows if r[0] == "searched 'granite'"]
    assert len(repeated) == 3 and repeated[-1][1:] == ("ok", "")  # found nothing new
    requests = [what for what, _, _ in rows if what.startswith("model request: ")]
    assert len(requests) == 5
    assert all("charged ·" in text and "reused prefix ·" in text for text in requests)
    assert all(text.endswith("refunded") for text in requests)
    assert any(what.startswith("final answer request: ") for what, _, _ in rows)


def test_a_call_that_found_evidence_leads_to_it(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    window = reply(qtbot, research_store)
    view = window.panel.activity
    index = find(window.panel.activity_model, "read deep/gamma.md lines 1–3")
    numbers = window.panel.activity_model.row_at(index)
    assert numbers is not None and numbers.evidence_ids
    view.setFocus()
    view.setCurrentIndex(index)
    qtbot.keyClick(view, Qt.Key.Key_Return)
    current = window.panel.evidence.currentItem()
    assert current is not None
    assert current.text().startswith(f"[{numbers.evidence_ids[0]}] deep/gamma.md")
    assert window.panel.evidence.hasFocus()


def test_tool_events_are_coalesced_into_one_update(qtbot: QtBot) -> None:
    model = ActivityModel()
    view = ActivityView(model)
    qtbot.addWidget(view)
    view.show()
    inserted: list[int] = []
    model.rowsInserted.connect(lambda parent, first, last: inserted.append(last - first + 1))
    for number in range(200):
        call = f"c{number}"
        model.feed(ev.ToolStarted(0.0, 1 + number // 50, call, "search_workspace", "read", ""))
        found = (ev.EvidenceItemView(number + 1, "a.md", "lines 1-2", "x"),)
        model.feed(ev.ToolFinished(0.0, 1 + number // 50, call, "search_workspace", "read",
                                   "ok", 1, 0, 0.01, found))  # fmt: skip
    assert model.rowCount() == 0 and not inserted  # nothing shown per event
    with qtbot.waitSignal(model.sig_flushed, timeout=WAIT_MS):
        pass
    assert model.flushes == 1
    assert inserted == [4 + 200]  # four rounds' own rows and their calls, at once
    titles = [row for row in range(model.rowCount()) if model.is_round(model.index(row, 0))]
    assert titles == [0, 51, 102, 153]
    assert model.index(0, 0).data() == "Round 1 · 50 calls · +50 new"
    assert model.index(203, 2).data() == "+1 · [200]"
    # A call shown while it runs is filled in where it is when it ends.
    model.feed(ev.ToolStarted(0.0, 4, "late", "read_document", "read", "Reading a.md"))
    with qtbot.waitSignal(model.sig_flushed, timeout=WAIT_MS):
        pass
    assert inserted == [204, 1] and model.index(204, 1).data() == "running…"
    changed: list[int] = []
    model.dataChanged.connect(lambda first, last: changed.append(first.row()))
    model.feed(ev.ToolFinished(0.0, 4, "late", "read_document", "read", "error", 0, 0, 0.0))
    with qtbot.waitSignal(model.sig_flushed, timeout=WAIT_MS):
        pass
    assert inserted == [204, 1] and changed and model.index(204, 1).data() == "error"


def test_untrusted_arguments_are_plain_text(qtbot: QtBot) -> None:
    model = ActivityModel()
    started = ev.ToolStarted(0.0, 1, "c1", "search_workspace", "read", f"Searching '{HOSTILE}'")
    model.feed(started)
    model.flush()
    index = model.index(1, 0)
    assert index.data() == f"searched '{HOSTILE}'"  # as written: item views show plain text
    tip = str(index.data(Qt.ItemDataRole.ToolTipRole))
    assert "<img" not in tip and "&lt;img" in tip


def test_the_record_is_a_report_with_a_chart_and_exports_html(
    qtbot: QtBot, research_store: SettingsStore, tmp_path: Path
) -> None:
    window = reply(qtbot, research_store)
    with qtbot.waitSignal(window.bridge.sig_trace_loaded, timeout=WAIT_MS):
        qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    record = window.opener.record
    assert record is not None and record.isVisible()
    assert record.summary.text() == "Research stopped: recent rounds found no new evidence."
    assert record.question.text() == "What is the harbour wall made of?"
    figures = dict(record.report.summary.figures())
    assert figures["Rounds"] == "5" and figures["Answer"] == "written by the model"
    assert figures["Tokens charged"].endswith("of 65,536")
    # The chart: every budget, per round, with the stop in the last round.
    assert [line.name for line in record.chart.series] == [
        "Research time",
        "Tokens charged",
        "Charged + reserved",
        "Patience used",
    ]
    assert record.chart.stop_line.value() == 5
    assert record.chart.series[-1].points[-1] == (5, 100.0)  # patience ran out
    texts = [what for what, _, _ in rows_of(record.activity_model)]
    assert "read missing.md" in texts and "Final answer" in texts
    assert record.evidence.count() == len(record.report.evidence) > 0
    # The raw trace is one click away.
    assert not record.trace.isVisible() and '"type": "run_start"' in record.trace.toPlainText()
    record.trace_toggle.click()
    assert record.trace.isVisible()

    exported = tmp_path / "record.html"
    record.export_to(exported)
    qtbot.waitUntil(lambda: record.saved.text().startswith("Report saved"), timeout=WAIT_MS)
    page = exported.read_text(encoding="utf-8")
    assert "<svg" in page and "Research stopped: recent rounds found no new evidence." in page
    assert "read missing.md" in page
    record.close()


def test_the_record_shows_untrusted_sources_as_text(qtbot: QtBot) -> None:
    from imprint_desktop.ui.research_panel.record_dialog import RecordDialog

    evidence = (ev.EvidenceItemView(1, HOSTILE, HOSTILE, HOSTILE),)
    lines: list[dict[str, object]] = [
        {"t": 0.0, "type": "run_start", "question": HOSTILE, "settings": {}},
        {"t": 0.1, "type": "tool", "round": 1, "call_id": "c", "name": "search_workspace",
         "kind": "read", "status": "ok", "new_evidence": 1, "repeated_evidence": 0,
         "seconds": 0.1},
        {"t": 0.2, "type": "stop", "reason": "answered"},
    ]  # fmt: skip
    record = RecordDialog(HOSTILE, evidence, lines, lambda _path: None)
    qtbot.addWidget(record)
    record.show()
    assert record.question.textFormat() == Qt.TextFormat.PlainText
    assert record.question.text() == HOSTILE
    assert record.evidence.item(0).text().startswith(f"[1] {HOSTILE} · {HOSTILE}")
    assert "<img" not in record.evidence.item(0).toolTip()
    opened: list[object] = []
    record.sig_evidence_opened.connect(opened.append)
    record.evidence.setCurrentRow(0)
    record.evidence.setFocus()
    qtbot.keyClick(record.evidence, Qt.Key.Key_Return)
    assert opened == [evidence[0]]


def test_the_chart_follows_the_dark_theme(qtbot: QtBot) -> None:
    from imprint_desktop.ui.research_panel.record_dialog import RecordDialog
    from imprint_desktop.ui.theme import apply_theme

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, "dark")
    try:
        record = RecordDialog("Q?", (), [{"t": 0.0, "type": "stop", "reason": "answered"}], print)
        qtbot.addWidget(record)
        background = record.chart.plot_widget.backgroundBrush().color()
        assert background.lightness() < 60
    finally:
        apply_theme(app, "system")  # as the other tests find it


def test_a_build_without_the_plotting_library_still_opens_the_record(
    qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from imprint_desktop.ui.research_panel.record_dialog import RecordDialog

    monkeypatch.setitem(sys.modules, "pyqtgraph", None)  # import pyqtgraph raises ImportError
    lines: list[dict[str, object]] = [
        {"t": 0.0, "type": "run_start", "question": "Q?",
         "settings": {"chat.research_no_progress_rounds": 2}},
        {"t": 0.5, "type": "round_end", "round": 1, "progress": False, "excluded": False,
         "no_progress_rounds": 1},
        {"t": 0.6, "type": "stop", "reason": "answered"},
    ]  # fmt: skip
    record = RecordDialog("Q?", (), lines, lambda _path: None)
    qtbot.addWidget(record)
    assert record.chart.plot_widget is None
    assert "Patience used 50%" in record.chart.accessibleDescription()
    assert record.summary.text() == "The model answered."
