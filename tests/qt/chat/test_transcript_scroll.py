"""The transcript follows the end of the conversation while the person is at the end of it.

Qt lays a document out in steps after each edit, so the scroll range goes on growing after the
edit returns: a view moved to the end once, at the edit, is left above the end. A person who has
scrolled up to read something is left where they are.
"""

from __future__ import annotations

from PySide6.QtWidgets import QScrollBar
from pytestqt.qtbot import QtBot

from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.chat.view import ChatView

WAIT_MS = 5_000


def conversation(turns: int) -> list[ChatMessage]:
    messages = []
    for turn in range(turns):
        messages.append(ChatMessage("user", f"Question {turn}?"))
        messages.append(ChatMessage("assistant", "A long answer. " * 80, turn + 1))
    return messages


def shown_view(qtbot: QtBot) -> tuple[ChatView, QScrollBar]:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view.show_messages(conversation(8))
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=WAIT_MS)
    return view, bar


def at_end(bar: QScrollBar) -> bool:
    return bar.maximum() > 0 and bar.value() == bar.maximum()


def test_an_opened_conversation_shows_its_end_once_laid_out(qtbot: QtBot) -> None:
    _, bar = shown_view(qtbot)
    # The layout's later steps grow the range; the view must reach its end, not stop short.
    qtbot.waitUntil(lambda: at_end(bar), timeout=WAIT_MS)


def test_a_reply_that_ends_with_its_sources_is_shown_to_its_end(qtbot: QtBot) -> None:
    view, bar = shown_view(qtbot)
    view.add_message(ChatMessage("user", "When was it automated?"))
    view.begin_live("Thinking…")
    view.append_text("Gannet Point was automated in 1986 [1].")
    answer = ChatMessage("assistant", "Gannet Point was automated in 1986 [1]. " * 20, 9)
    view.end_live(answer)
    qtbot.waitUntil(lambda: at_end(bar), timeout=WAIT_MS)
    assert view.toPlainText().rstrip().endswith("1986 [1].")


def test_a_person_who_scrolled_up_is_left_where_they_read(qtbot: QtBot) -> None:
    view, bar = shown_view(qtbot)
    view.begin_live("Thinking…")
    bar.setValue(0)
    before = bar.maximum()
    view.append_text("Gannet Point was automated in 1986. " * 40)
    # The reply is drawn and laid out: the range grew below the place being read.
    qtbot.waitUntil(lambda: bar.maximum() > before, timeout=WAIT_MS)
    assert bar.value() == 0 and bar.maximum() > 0


def test_a_person_reading_a_few_lines_up_in_a_streaming_reply_is_not_pulled_down(
    qtbot: QtBot,
) -> None:
    view, bar = shown_view(qtbot)
    view.begin_live("Thinking…")
    renders = view.renders
    view.append_text("Gannet Point was automated in 1986. " * 60)
    qtbot.waitUntil(lambda: view.renders > renders and at_end(bar), timeout=WAIT_MS)
    reading = bar.maximum() - 60
    bar.setValue(reading)
    before, renders = bar.maximum(), view.renders
    # Each render takes the reply's text out and puts it back, longer.
    view.append_text("The light was converted to solar power in 1989. " * 40)
    qtbot.waitUntil(lambda: view.renders > renders and bar.maximum() > before, timeout=WAIT_MS)
    assert bar.value() == reading
