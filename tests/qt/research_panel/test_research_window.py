"""The research chat through the real bridge and loop thread, with a scripted model.

Each test drives the window with keyboard and mouse and watches the widgets, not the engine: what
the person sees is what is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.background.loop_thread import running_loop_threads
from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.research_panel.panel import FINAL_NOT_NEEDED, NOW_CHARS
from tests.qt.research_harness import (
    ask,
    open_window,
    search,
    type_question,
    watch_the_panel,
)
from tests.qt.transcript_links import click_link
from tests.support.scripted_provider import Step

WAIT_MS = 10_000


@dataclass(frozen=True)
class Seen:
    """The panel's widgets right after one budget update was shown."""

    charged: float
    reserved: float
    patience: float
    paused: bool
    time_text: str


def watch_budgets(window: MainWindow) -> list[Seen]:
    """Record the panel after each BudgetUpdate (connected after the window's own slots)."""
    seen: list[Seen] = []
    panel = window.panel

    def record(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.BudgetUpdate):
            seen.append(
                Seen(
                    panel.token_bar.first,
                    panel.token_bar.second,
                    panel.patience_bar.first,
                    panel.time_paused,
                    panel.time_bar.format(),
                )
            )

    window.bridge.sig_reply_event.connect(record)
    return seen


def test_a_reply_drives_every_widget(qtbot: QtBot, research_store: SettingsStore) -> None:
    script = [
        Step(calls=[search("granite")]),  # new evidence
        Step(calls=[search("granite")]),  # the same passage again: a round without progress
        Step(calls=[search("quokka")]),  # new evidence: patience resets
        Step(calls=[ask("Which wall do you mean?")]),
        Step("The harbour wall is granite [1]; a quokka was seen [2]."),
    ]
    window = open_window(qtbot, research_store, script).window
    seen = watch_budgets(window)

    type_question(qtbot, window, "What is the wall made of?")
    assert window.composer.button.text() == "S&top"
    qtbot.waitUntil(window.card.isVisible, timeout=WAIT_MS)

    # Research time is paused while the question waits: the bar says so and does not move.
    assert window.panel.time_paused
    shown = window.panel.time_bar.format()
    assert "(paused)" in shown
    frozen = window.panel.shown_seconds
    watch_the_panel(qtbot, ticks=2)
    assert window.panel.shown_seconds == frozen
    assert window.panel.time_bar.format() == shown
    assert "Waiting for your answer" in window.panel.now_label.text()
    assert window.card.answer.hasFocus()

    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.keyClicks(window.card.answer, "The harbour wall")
        qtbot.keyClick(window.card.answer, Qt.Key.Key_Return)
    assert ended.args[0].outcome is p.Outcome.FINISHED

    # Tokens: a reservation shows as the second segment, then turns into a charge.
    reserved_at = next(i for i, s in enumerate(seen) if s.reserved > 0)
    charged_after = next(s for s in seen[reserved_at:] if s.reserved == 0)
    assert charged_after.charged > seen[reserved_at].charged
    # Patience: counts a round without new evidence, then resets when evidence is new.
    patience = [s.patience for s in seen]
    first_count = patience.index(1)
    assert 0 in patience[first_count:]
    assert any(s.paused for s in seen) and not seen[-1].paused

    panel = window.panel
    assert panel.stop_label.text() == "The model answered."
    # The answer came with a research request: no final stage, and the bar does not pretend one.
    assert (panel.final_bar.format(), panel.final_bar.value()) == ("none", 0)
    assert panel.final_text.whole == FINAL_NOT_NEEDED
    assert panel.evidence.count() == 3  # granite, quokka, and the person's answer
    assert panel.counters.text() == "4 rounds done · 3 pieces of evidence"
    assert not window.card.isVisible()
    assert window.composer.button.text() == "&Send"
    assert "granite" in window.transcript.toPlainText()
    assert window.transcript.messages[-1].role == "assistant"
    qtbot.waitUntil(lambda: window.conversations.list.count() == 1, timeout=WAIT_MS)


def test_an_answer_reaches_only_the_reply_and_call_that_asked(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    script = [
        Step(calls=[ask("Which wall do you mean?")]),
        Step("The harbour wall."),
        Step(calls=[ask("And which ship?")]),
        Step("The ledger ship."),
    ]
    window = open_window(qtbot, research_store, script).window
    bridge = window.bridge
    asked: list[tuple[int, str]] = []
    answers: list[str] = []

    def watch(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.QuestionAsked):
            asked.append((payload.reply_id, payload.event.call_id))
        elif isinstance(payload.event, ev.UserWait):
            answers.append(payload.event.answer)

    bridge.sig_reply_event.connect(watch)
    for question, answer in (("Which wall?", "The harbour wall"), ("Which ship?", "The ledger")):
        type_question(qtbot, window, question)
        qtbot.waitUntil(window.card.isVisible, timeout=WAIT_MS)
        reply_id, call_id = asked[-1]
        # Answers meant for the reply before (the same call id or its own) and for another call
        # of this reply reach nothing; they were sent first, so the card's answer would not count.
        for stale_reply, stale_call in [(reply_id - 1, call_id), *asked[:-1], (reply_id, "x")]:
            bridge.answer_question(stale_reply, stale_call, "a stale answer")
        with qtbot.waitSignal(bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
            qtbot.keyClicks(window.card.answer, answer)
            qtbot.keyClick(window.card.answer, Qt.Key.Key_Return)
        assert ended.args[0].outcome is p.Outcome.FINISHED
    assert answers == ["The harbour wall", "The ledger"]
    assert [reply for reply, _ in asked] == [1, 2]


def test_stop_ends_a_hanging_reply_quickly_and_the_window_is_usable(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    # The workspace holds nothing on these questions: the model's answer is still the reply.
    research_store.set("chat.answer_without_evidence", True)
    hang = Step(hang=True)
    window = open_window(qtbot, research_store, [hang, Step("Second answer.")]).window
    type_question(qtbot, window, "A question the model never finishes")
    qtbot.waitUntil(hang.started.is_set, timeout=WAIT_MS)

    # While the model works, the clock runs between budget events (extrapolated by the GUI).
    start = window.panel.shown_seconds
    shown = window.panel.time_bar.format()
    qtbot.waitUntil(lambda: window.panel.time_bar.format() != shown, timeout=WAIT_MS)
    assert window.panel.shown_seconds > start

    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=250) as ended:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Escape)
        assert window.composer.button.text() == "&Send"  # usable at once
    assert ended.args[0].outcome is p.Outcome.CANCELLED
    assert window.panel.stop_label.text() == "Stopped."

    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as second:
        type_question(qtbot, window, "And now?")
    assert second.args[0].result.answer == "Second answer."
    assert "Second answer." in window.transcript.toPlainText()


def test_a_new_question_supersedes_the_running_reply(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    hang = Step(hang=True)
    window = open_window(qtbot, research_store, [hang, Step("Fresh answer.")]).window
    bridge = window.bridge
    type_question(qtbot, window, "Old question")
    qtbot.waitUntil(hang.started.is_set, timeout=WAIT_MS)
    first = bridge.current_reply_id
    delivered: list[int] = []
    bridge.sig_reply_event.connect(lambda payload: delivered.append(payload.reply_id))
    ends: list[p.ReplyEnded] = []
    bridge.sig_reply_ended.connect(ends.append)

    type_question(qtbot, window, "New question")
    qtbot.waitUntil(lambda: bool(ends), timeout=WAIT_MS)
    assert [end.reply_id for end in ends] == [first + 1]
    assert delivered and set(delivered) == {first + 1}  # the old reply's events were dropped
    assert ends[0].result is not None and ends[0].result.answer == "Fresh answer."


def test_history_is_restored_after_a_restart(qtbot: QtBot, research_store: SettingsStore) -> None:
    script = [Step(calls=[search("ledger")]), Step("Ships were kept in a ledger [1].")]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "What did the master keep?")
    window.close()
    assert not running_loop_threads()

    again = open_window(qtbot, research_store).window
    conversations = again.conversations.list
    qtbot.waitUntil(lambda: conversations.count() == 1, timeout=WAIT_MS)
    assert conversations.item(0).text().startswith("What did the master keep?")
    conversations.setFocus()
    with qtbot.waitSignal(again.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        qtbot.keyClick(conversations, Qt.Key.Key_Down)
    text = again.transcript.toPlainText()
    assert "What did the master keep?" in text and "Ships were kept in a ledger" in text
    assert again.panel.evidence.count() == 1
    assert "beta.txt" in again.panel.evidence.item(0).text()


def test_a_killed_processs_reply_reopens_interrupted_with_its_evidence(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    history = HistoryStore()  # the data folder the window will use
    conversation = history.create_conversation("Killed mid-reply")
    recorder = history.start_reply(conversation, "Where is the quokka?")
    found = ev.EvidenceItemView(1, "deep/gamma.md", "lines 3-3", "A quokka was seen near the pier")
    recorder(
        ev.ToolFinished(0.5, 1, "call_1", "search_workspace", "read", "ok", 1, 0, 0.1, (found,))
    )
    history.close()  # and then the process died: the reply is still "running"

    window = open_window(qtbot, research_store).window
    qtbot.waitUntil(lambda: window.conversations.list.count() == 1, timeout=WAIT_MS)
    window.conversations.list.setFocus()
    with qtbot.waitSignal(window.bridge.sig_conversation_loaded, timeout=WAIT_MS) as loaded:
        qtbot.keyClick(window.conversations.list, Qt.Key.Key_Down)
    reply = loaded.args[0].replies[0]
    assert reply.status == "interrupted"
    assert "interrupted" in window.transcript.toPlainText()
    assert window.transcript.messages[-1].interrupted
    assert window.panel.evidence.count() == 1
    assert "deep/gamma.md" in window.panel.evidence.item(0).text()


def test_citations_copy_and_the_research_record(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    script = [
        Step(calls=[search("granite")]),
        Step(calls=[search("quokka")]),
        Step("Granite [1], and a quokka [2]."),
    ]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "What is the harbour wall made of, and what was seen?")

    click_link(qtbot, window.transcript, "[2]")
    current = window.panel.evidence.currentItem()
    assert current is not None and current.text().startswith("[2] deep/gamma.md")
    qtbot.waitUntil(lambda: window.viewer is not None and window.viewer.loaded, timeout=WAIT_MS)
    assert window.viewer is not None and window.viewer.windowTitle() == "deep/gamma.md"
    window.viewer.close()

    click_link(qtbot, window.transcript, "Copy", occurrence=1)  # the answer's (0: the question's)
    assert QGuiApplication.clipboard().text().startswith("Granite [1], and a quokka [2].")

    window.activateWindow()  # the viewer had the focus; shortcuts need the window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)

    with qtbot.waitSignal(window.bridge.sig_trace_loaded, timeout=WAIT_MS):
        qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    record = window.opener.record
    assert record is not None and record.isVisible()
    assert '"type": "run_start"' in record.trace.toPlainText()
    assert "The model answered." in record.summary.text()
    record.close()


def test_conversations_rename_search_and_delete_with_confirmation(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    window = open_window(qtbot, research_store).window
    pane = window.conversations
    for question in ("First about granite", "Second about ships"):
        with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
            type_question(qtbot, window, question)
        qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: pane.list.count() == 2, timeout=WAIT_MS)

    pane.list.setFocus()
    with qtbot.waitSignal(window.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        pane.list.setCurrentRow(0)
    qtbot.keyClick(pane.list, Qt.Key.Key_F2)
    assert pane.rename_dialog is not None
    pane.rename_dialog.setTextValue("Ships, renamed")
    with qtbot.waitSignal(window.bridge.sig_conversations_listed, timeout=WAIT_MS):
        pane.rename_dialog.accept()
    qtbot.waitUntil(lambda: pane.list.item(0).text().startswith("Ships, renamed"))

    pane.search.setText("granite")
    qtbot.waitUntil(lambda: pane.list.count() == 1, timeout=WAIT_MS)
    assert pane.list.item(0).text().startswith("First about granite")
    pane.search.clear()
    qtbot.waitUntil(lambda: pane.list.count() == 2, timeout=WAIT_MS)

    window.activateWindow()  # the rename dialog had the focus; shortcuts need the window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    pane.list.setFocus()
    with qtbot.waitSignal(window.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        pane.list.setCurrentRow(1)
    qtbot.keyClick(pane.list, Qt.Key.Key_Delete)
    assert pane.delete_box is not None
    pane.delete_box.reject()  # Cancel keeps it
    assert pane.list.count() == 2
    qtbot.keyClick(pane.list, Qt.Key.Key_Delete)
    assert pane.delete_box is not None
    with qtbot.waitSignal(window.bridge.sig_conversations_listed, timeout=WAIT_MS):
        pane.delete_box.done(pane.delete_box.StandardButton.Yes)
    qtbot.waitUntil(lambda: pane.list.count() == 1, timeout=WAIT_MS)
    assert pane.list.item(0).text().startswith("Ships, renamed")


def test_a_model_that_cannot_load_is_explained_in_a_sentence(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    from imprint_desktop.core.errors import ModelFileError

    async def broken(*_args: object) -> None:
        raise ModelFileError("The model file /models/x.gguf is truncated.")

    window = open_window(qtbot, research_store, factory=broken).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        type_question(qtbot, window, "Anything")
    assert ended.args[0].outcome is p.Outcome.FAILED
    text = window.banner.text.text()
    assert "truncated" in text and "Choose another model" in text
    assert "Traceback" not in text and window.banner.isVisible()
    assert window.composer.button.text() == "&Send"


def test_streamed_text_is_coalesced_into_few_repaints(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    view = open_window(qtbot, research_store).window.transcript
    view.begin_live("Thinking…")
    qtbot.waitUntil(lambda: "Thinking…" in view.toPlainText(), timeout=WAIT_MS)
    before = view.renders
    for index in range(200):
        view.append_text(f"token{index} ")
    assert view.renders == before  # nothing painted per token
    qtbot.waitUntil(lambda: "token199" in view.toPlainText(), timeout=WAIT_MS)
    assert view.renders == before + 1


def test_window_geometry_is_remembered(qtbot: QtBot, research_store: SettingsStore) -> None:
    window = open_window(qtbot, research_store).window
    # Inside the offscreen screen, which restoreGeometry respects, and above the window's least
    # height (the research panel keeps room for the lines that change while a reply runs).
    window.resize(740, 600)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (740, 600))
    window.close()
    again = open_window(qtbot, research_store).window
    assert (again.width(), again.height()) == (740, 600)


def test_every_control_has_an_accessible_name(qtbot: QtBot, research_store: SettingsStore) -> None:
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QComboBox,
        QLineEdit,
        QPlainTextEdit,
        QProgressBar,
        QTextEdit,
        QWidget,
    )

    window = open_window(qtbot, research_store).window
    kinds = (
        QAbstractButton,
        QComboBox,
        QLineEdit,
        QPlainTextEdit,
        QTextEdit,
        QProgressBar,
        QAbstractItemView,
    )
    controls = [w for w in window.findChildren(QWidget) if isinstance(w, kinds) and w.isVisible()]
    assert len(controls) > 10
    unnamed = [
        f"{type(widget).__name__} {widget.objectName()}"
        for widget in controls
        if not widget.accessibleName() and not _has_text(widget)
    ]
    assert not unnamed


def _has_text(widget: object) -> bool:
    text = getattr(widget, "text", None)
    return bool(callable(text) and str(text()).replace("&", "").strip())


def test_streaming_lays_out_only_the_paragraph_being_written(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    from imprint_desktop.ui.chat.markdown import ChatMessage

    view = open_window(qtbot, research_store).window.transcript
    view.add_message(ChatMessage("you", "q"))
    view.begin_live("Thinking…")
    answer = "First paragraph [1].\n\n1. one\n2. two\n\nLast paragraph, still being written"
    edits: list[int] = []  # where each change to the document began
    view.document().contentsChange.connect(lambda at, _removed, _added: edits.append(at))

    def stream(text: str) -> int:
        """Append ``text``; after the one coalesced render, where the earliest change began."""
        edits.clear()
        renders = view.renders
        view.append_text(text)
        qtbot.waitUntil(lambda: view.renders > renders, timeout=WAIT_MS)
        return min(edits)

    def end_of(text: str) -> int:
        """Where the text of the paragraph holding ``text`` ends."""
        block = view.document().find(text).block()
        return block.position() + block.length() - 1

    stream(answer[:30])  # the first paragraph is finished, the list is not
    first = view.document().find("First paragraph").block()
    first_text, first_position, first_end = first.text(), first.position(), end_of("First")
    assert stream(answer[30:-8]) >= first_end  # the list is laid out below the first paragraph
    assert view.document().findBlock(first_position).text() == first_text
    # The list is settled: only the paragraph still being written is laid out again.
    list_end = end_of("two")
    assert stream(answer[-8:]) >= list_end
    assert "Last paragraph, still being written" in view.toPlainText()
    view.end_live(ChatMessage("assistant", answer, stored_id=1))
    full = open_window(qtbot, research_store).window.transcript
    full.add_message(ChatMessage("you", "q"))
    full.add_message(ChatMessage("assistant", answer, stored_id=1))
    assert view.toPlainText() == full.toPlainText()
    assert view.links.href("cite", 1, 1) in view.toHtml()


def test_an_unknown_tool_with_a_huge_name_is_shown_bounded(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    """A model may call a tool named anything: 80 KB of name once took the status label seconds
    to lay out. What the window shows of it is as bounded as any argument."""
    name = "x" * 80_000
    window = open_window(qtbot, research_store, [Step(calls=[(name, {})]), Step("Done.")]).window
    shown: list[int] = []
    summaries: list[str] = []

    def seen(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.ToolStarted):
            summaries.append(payload.event.summary)
        shown.append(len(window.panel.now_label.text()))

    window.bridge.sig_reply_event.connect(seen)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything?")
    assert summaries and all(len(summary) <= 100 for summary in summaries), summaries
    assert max(shown) <= NOW_CHARS
    assert name not in window.transcript.toPlainText()
