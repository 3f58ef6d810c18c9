"""Nothing moves under the pointer while a reply runs (issue 41, item 4).

In a window of a laptop's size, a reply's figures ("2,068 used + 4,136 reserved of 65,536 (59,332
left)") once widened the research panel by about 45 px and pushed Send/Stop to the left, so a first
click on Stop missed. The real window, a scripted model: where Send/Stop is and how wide the panel
is are watched through the whole reply (every event, and every 10 ms). The window has no download
manager, so the starter model's offer of a better model (a line of its own under the transcript,
shown once a reply has ended) stays out of it.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QTimer
from pytestqt.qtbot import QtBot

from imprint_desktop.app import build_window
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import scripted_model, search, show_window, type_question
from tests.support.scripted_provider import ScriptedProvider, Step

WAIT_MS = 10_000


def layout(window: MainWindow) -> tuple[QRect, int, int, int]:
    """Where Send/Stop is in the window, and the research panel's and the transcript's widths."""
    button = window.composer.button
    return (
        QRect(button.mapTo(window, button.rect().topLeft()), button.size()),
        window.panel.width(),
        window.transcript.width(),
        window.width(),
    )


def test_send_stop_and_the_panel_stay_put_through_a_reply(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    script = [
        Step(calls=[search("granite")]),
        Step(calls=[search("quokka")]),
        Step(calls=[search("ledger")]),
        Step("Granite [1], a quokka [2] and a ledger [3]."),
    ]
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

    seen: set[tuple[QRect, int, int, int]] = set()
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
    qtbot.waitUntil(lambda: "ledger" in window.transcript.toPlainText(), timeout=WAIT_MS)
    with qtbot.waitSignal(watch.timeout):
        watch.start(200)
    sampler.stop()

    assert any("reserved" in shown for shown in figures)  # the longest line was shown
    assert seen == {before}
    assert layout(window) == before
