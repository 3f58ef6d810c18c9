"""Nothing moves under the pointer while a reply runs (issue 41, item 4).

In a window of a laptop's size, a reply's figures ("2,068 used + 4,136 reserved of 65,536 (59,332
left)") once widened the research panel by about 45 px and pushed Send/Stop to the left, so a first
click on Stop missed; and the panel's lines, wrapping and appearing, moved its lists down and up a
line at a time. The real window, a scripted model: where Send/Stop is, how wide the panel is and
where its lists start are watched through the whole reply (every event, and every 10 ms), one that
ends in a final stage of its own among them. The window has no download manager, so the starter
model's offer of a better model (a line of its own under the transcript, shown once a reply has
ended) stays out of it.
"""

from __future__ import annotations

import html

import pytest
from PySide6.QtCore import QRect, Qt, QTimer
from pytestqt.qtbot import QtBot

from imprint_desktop.app import build_window
from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.fitted_label import FittedLabel
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.research_panel.panel import ResearchPanel
from tests.qt.research_harness import (
    Script,
    scripted_model,
    search,
    show_window,
    type_question,
    watch_the_panel,
)
from tests.support.research_run import research_then_final
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config

WAIT_MS = 10_000


def layout(window: MainWindow) -> tuple[QRect, int, int, int, int]:
    """Where Send/Stop is in the window, the research panel's and the transcript's widths, the
    window's, and where the panel's lists (activity, evidence) start."""
    button, lists = window.composer.button, window.panel.lists
    return (
        QRect(button.mapTo(window, button.rect().topLeft()), button.size()),
        window.panel.width(),
        window.transcript.width(),
        window.width(),
        lists.mapTo(window, lists.rect().topLeft()).y(),
    )


ANSWERED = [
    Step(calls=[search("granite")]),
    Step(calls=[search("quokka")]),
    Step(calls=[search("ledger")]),
    Step("Granite [1], a quokka [2] and a ledger [3]."),
]
#: Patience runs out (two rounds find nothing new), and the final stage writes the answer.
FINAL_STAGE = research_then_final(
    lambda _n: Step(calls=[search("granite")]), "Granite, a quokka and a ledger [1]."
)


@pytest.mark.parametrize("script", [ANSWERED, FINAL_STAGE], ids=["answered", "final stage"])
def test_send_stop_and_the_panel_stay_put_through_a_reply(
    qtbot: QtBot, research_store: SettingsStore, script: Script
) -> None:
    research_store.set("chat.research_no_progress_rounds", 2)
    model = scripted_model(ScriptedProvider(script))
    window = build_window(research_store, SecretStore(), provider_factory=model, downloads=False)
    show_window(qtbot, window)
    window.resize(900, 650)
    qtbot.waitUntil(lambda: window.width() == 900)
    watch = QTimer()
    watch.setSingleShot(True)
    with qtbot.waitSignal(watch.timeout):  # the layout settles
        watch.start(200)
    before = layout(window)
    assert window.composer.button.text() == "&Send"

    seen: set[tuple[QRect, int, int, int, int]] = set()
    figures: set[str] = set()

    def look() -> None:
        seen.add(layout(window))
        figures.add(window.panel.token_text.text())

    window.bridge.sig_reply_event.connect(lambda _event: look())
    sampler = QTimer()
    sampler.timeout.connect(look)
    sampler.start(10)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "What is there?")
        assert window.composer.button.text() == "S&top"
    qtbot.waitUntil(lambda: "a ledger" in window.transcript.toPlainText(), timeout=WAIT_MS)
    with qtbot.waitSignal(watch.timeout):
        watch.start(200)
    sampler.stop()

    assert any("reserved" in shown for shown in figures)  # the longest line was shown
    assert seen == {before}
    assert layout(window) == before


def test_a_long_line_keeps_its_room_and_is_whole_in_its_tooltip(qtbot: QtBot) -> None:
    label = FittedLabel(2)
    qtbot.addWidget(label)
    label.resize(200, label.height())
    label.show()
    height = label.height()
    query = "Searching the workspace for '" + "harbour light keeper " * 20 + "'…"
    label.setText(query)
    narrow = label.text()
    assert narrow.endswith("…") and query.startswith(narrow[:-1])
    lines = label.fontMetrics().boundingRect(
        QRect(0, 0, label.contentsRect().width(), 10_000), Qt.TextFlag.TextWordWrap.value, narrow
    )
    assert lines.height() <= 2 * label.fontMetrics().lineSpacing()
    assert label.whole == query and html.unescape(label.toolTip()) == f"<p>{query}</p>"
    label.resize(600, height)
    qtbot.waitUntil(lambda: label.width() == 600)
    assert len(label.text()) > len(narrow) and label.height() == height  # more, in the same room
    label.setText("Done.")
    assert (label.text(), label.height()) == ("Done.", height)


def test_the_clock_says_not_started_until_the_time_limit_is_known(qtbot: QtBot) -> None:
    """Before the first budget update the panel once showed "0.0 s of 1.0 s", a limit nobody set."""
    panel = ResearchPanel()
    qtbot.addWidget(panel)
    panel.begin("Updating the workspace index…")
    panel.apply(ev.ReplyStarted(0.0, "Q?", make_config({}), "scripted"))
    watch_the_panel(qtbot, ticks=2)
    assert panel.time_bar.format() == "not started"
    panel.apply(ev.BudgetUpdate(0.5, 0.5, 300.0, False, 0, 0, 65_536, 0, 4, 0, 1))
    assert panel.time_bar.format().endswith("of 5:00 min")
