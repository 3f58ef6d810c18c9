"""A theme chosen while the app runs reaches everything on screen at once (issue 41, item 2).

The real window, a scripted model and a finished reply: choosing another theme in the settings (as
Preferences does) recolours the links of the messages already shown (*Copy*, *Research record*,
``[n]``), their code blocks, the research panel's activity and an open research record.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtGui import QColor, QPalette, QTextCursor
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.view import ChatView
from imprint_desktop.ui.research_panel.activity import ActivityModel
from imprint_desktop.ui.research_panel.record_dialog import RecordDialog
from imprint_desktop.ui.theme import apply_theme
from tests.qt.research_harness import open_window, search, type_question
from tests.qt.research_panel.test_record_grounding import open_record
from tests.qt.transcript_links import anchors
from tests.support.scripted_provider import Step

WAIT_MS = 10_000
LINKS = ("Copy", "Research record", "[1]")


@pytest.fixture(autouse=True)
def system_theme_after(qapp: QApplication) -> Iterator[None]:
    """The application's palette is shared by every test: leave it as the tests found it."""
    yield
    apply_theme(qapp, "system")


def link_colours(view: ChatView) -> dict[str, set[str]]:
    """The colour each of :data:`LINKS` is drawn in, every time it is shown."""
    colours: dict[str, set[str]] = {}
    for anchor in anchors(view.document()):
        if anchor.text in LINKS:
            cursor = QTextCursor(view.document())
            cursor.setPosition(anchor.position + 1)
            colours.setdefault(anchor.text, set()).add(
                cursor.charFormat().foreground().color().name()
            )
    return colours


def code_shade(view: ChatView) -> str:
    block = view.document().begin()
    while block.isValid():
        if block.text() == "granite = True":
            return block.blockFormat().background().color().name()
        block = block.next()
    raise AssertionError("no code block in the transcript")


def band(model: ActivityModel) -> str:
    """The background of the activity's first group row (a round's heading)."""
    brush = model.index(0, 0).data(8)  # Qt.ItemDataRole.BackgroundRole
    assert isinstance(brush, QColor)
    return brush.name()


def test_a_theme_change_recolours_what_is_already_shown(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    research_store.set("ui.theme", "light")
    script = [
        Step(calls=[search("granite")]),
        Step("The wall is granite [1].\n\n```\ngranite = True\n```\n"),
    ]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "What is the wall made of?")
    view = window.transcript
    qtbot.waitUntil(lambda: "granite = True" in view.toPlainText(), timeout=WAIT_MS)
    record = open_record(qtbot, window)
    light = QApplication.palette()
    light_link = light.color(QPalette.ColorRole.Link).name()
    assert link_colours(view) == {
        "Copy": {light_link},
        "Research record": {light_link},
        "[1]": {light_link},
    }
    light_shade, light_band = code_shade(view), band(window.panel.activity_model)
    assert record.chart.plot_widget.backgroundBrush().color() == light.color(
        QPalette.ColorRole.Base
    )

    research_store.set("ui.theme", "dark")

    dark = QApplication.palette()
    dark_link = dark.color(QPalette.ColorRole.Link).name()
    assert dark_link != light_link
    qtbot.waitUntil(lambda: view.palette().color(QPalette.ColorRole.Link).name() == dark_link)
    assert link_colours(view) == {
        "Copy": {dark_link},
        "Research record": {dark_link},
        "[1]": {dark_link},
    }
    assert code_shade(view) == dark.color(QPalette.ColorRole.AlternateBase).name() != light_shade
    assert band(window.panel.activity_model) == dark.color(QPalette.ColorRole.AlternateBase).name()
    assert band(window.panel.activity_model) != light_band
    assert record.chart.plot_widget.backgroundBrush().color() == dark.color(QPalette.ColorRole.Base)
    assert band(record.activity_model) == dark.color(QPalette.ColorRole.AlternateBase).name()

    # And back again.
    record.close()
    research_store.set("ui.theme", "light")
    qtbot.waitUntil(lambda: view.palette().color(QPalette.ColorRole.Link).name() == light_link)
    assert all(colours == {light_link} for colours in link_colours(view).values())
    assert code_shade(view) == light_shade


def test_an_open_record_recolours_its_flagged_claims(qtbot: QtBot, qapp: QApplication) -> None:
    apply_theme(qapp, "light")
    grounding = ev.GroundingView(
        "partly",
        (
            ev.ClaimView("Held.", (1,)),
            ev.ClaimView("Not.", note="“1857”: the passage says this of Skerry Rock"),
        ),
    )
    lines: list[dict[str, object]] = [{"t": 0.0, "type": "stop", "reason": "answered"}]
    record = RecordDialog("Q?", (), lines, lambda _path: None, grounding=grounding)
    qtbot.addWidget(record)
    record.show()
    qtbot.waitExposed(record)
    flag = record.claims.item(1, 1)
    assert flag.foreground().color().name() == "#b3261e"  # a red that reads on white

    apply_theme(qapp, "dark")

    qtbot.waitUntil(lambda: flag.foreground().color().name() == "#ff8a80")  # and on grey
