"""What no passage supports is marked under the answer, in the real window (DESIGN §6).

The window researches a small workspace with a scripted model that states another lighthouse's
year; the transcript shows the answer, a bold "Check against your documents" heading with the
reason, the sentence the documents do hold, and — after a restart — the same, from the history.
The mark is written in the palette's own text colour, so it reads in the light and the dark theme.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QFont, QPalette, QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.core.research import sources
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.theme import apply_theme
from tests.qt.research_harness import open_window, search, type_question
from tests.support.scripted_provider import Step

WAIT_MS = 10_000
NOTE = "“1986”: the passage [2] says this of Gannet Point."


def lighthouses(root: Path) -> Path:
    (root / "stations").mkdir(parents=True)
    (root / "stations/marrow-head.md").write_text(
        "# Marrow Head\n\nMarrow Head was automated in 1991.\n", encoding="utf-8"
    )
    (root / "stations/gannet-point.md").write_text(
        "# Gannet Point\n\nGannet Point was automated in 1986.\n", encoding="utf-8"
    )
    return root


def heading_format(document: QTextDocument) -> QTextCursor:
    found = document.find(sources.CHECK_HEADING)
    assert not found.isNull(), document.toPlainText()
    return found


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_an_unsupported_year_is_marked_under_the_answer_and_after_a_restart(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, theme: str
) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, theme)
    store.set("workspace.path", str(lighthouses(tmp_path / "docs")))
    script = [
        Step(calls=[search("automated")]),
        Step("Marrow Head was automated in 1986."),
    ]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "When was Marrow Head automated?")

    text = window.transcript.toPlainText()
    assert "Marrow Head was automated in 1986." in text
    assert NOTE in text
    assert f"{sources.OFFERED_LABEL} “Marrow Head was automated in 1991.” [1]" in text
    # The mark comes before the passages, and is not the answer's own text.
    assert text.index(sources.CHECK_HEADING) < text.index(sources.UNCITED_HEADING)
    message = window.transcript.messages[window.session.last_answer_index()]
    assert message.text == "Marrow Head was automated in 1986."
    assert message.grounding is not None and message.grounding.verdict == "unsupported"

    # Legible: bold, in the palette's text colour (no colour of its own), in either theme.
    cursor = heading_format(window.transcript.document())
    char = cursor.charFormat()
    assert char.fontWeight() >= QFont.Weight.Bold
    text_colour = window.transcript.palette().color(QPalette.ColorRole.Text)
    assert not char.hasProperty(char.Property.ForegroundBrush) or (
        char.foreground().color() == text_colour
    )

    # After a restart, the conversation from the history shows the same mark.
    window.close()
    again = open_window(qtbot, store).window
    qtbot.waitUntil(lambda: again.conversations.list.count() == 1, timeout=WAIT_MS)
    with qtbot.waitSignal(again.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        again.conversations.list.setCurrentRow(0)
    qtbot.waitUntil(lambda: NOTE in again.transcript.toPlainText(), timeout=WAIT_MS)
    apply_theme(app, "system")


def test_a_supported_answer_carries_no_mark_and_is_cited(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    store.set("workspace.path", str(lighthouses(tmp_path / "docs")))
    script = [Step(calls=[search("automated")]), Step("It was automated in 1991.")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "When was Marrow Head automated?")
    text = window.transcript.toPlainText()
    assert "It was automated in 1991 [1]." in text
    assert sources.CHECK_HEADING not in text
    assert "“Marrow Head was automated in 1991.”" in text  # the source quotes its sentence


def test_the_mark_stands_apart_from_a_list_the_answer_left_empty(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    """Seen under Xvfb: an answer whose list ended in an empty item ("-" alone) had its check
    and its sources drawn as that list's items."""
    store.set("workspace.path", str(lighthouses(tmp_path / "docs")))
    answer = "Automation, by station:\n\n1. Marrow Head: in 1986.\n\n    -\n\n2. Gannet Point:\n\n-"
    script = [Step(calls=[search("automated")]), Step(answer)]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "When was Marrow Head automated?")
    document = window.transcript.document()
    for label in (sources.CHECK_HEADING, sources.UNCITED_HEADING):
        block = document.find(label).block()
        assert block.isValid(), document.toPlainText()
        assert block.textList() is None and block.blockFormat().indent() == 0, label
    assert "Marrow Head: in 1986" in document.toPlainText()
