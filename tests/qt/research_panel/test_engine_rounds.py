"""Research the engine drives for a small model shows in the window like a model's (issue 43):
its round in the activity list, with Imprint's own searches, and the rounds counted on the panel.
"""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from imprint_desktop.app import build_window
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import scripted_model, show_window, type_question
from tests.qt.research_panel.test_activity import rows_of
from tests.support.scripted_provider import ScriptedProvider, Step

WAIT_MS = 10_000
SMALL = 135_000_000  # the starter model: not offered the tools first


def test_the_engine_s_round_is_listed_with_its_searches(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    provider = ScriptedProvider([Step("Granite [1]."), Step("A ledger of ships [2].")])
    provider.parameters = SMALL
    window: MainWindow = show_window(
        qtbot,
        build_window(research_store, SecretStore(), provider_factory=scripted_model(provider)),
    )
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        type_question(
            qtbot, window, "What was the harbour wall rebuilt in and what did the master keep?"
        )
    result = ended.args[0].result
    assert result.stop_reason == "answered" and result.rounds >= 1

    rows = rows_of(window.panel.activity_model)
    titles = [what for what, _status, _new in rows if what.startswith(("Round", "Before"))]
    assert titles[0].startswith("Before the model")
    assert titles[1].startswith("Round 1 · 2 calls")  # each part searched
    assert len(titles) == 1 + result.rounds
    calls = [what for what, status, _new in rows if status == "ok"]
    assert "searched 'harbour wall rebuilt' (Imprint, before the model)" in calls
    assert "searched 'master keep' (Imprint, before the model)" in calls
    assert window.panel.counters.text().startswith(f"{result.rounds} rounds done")
    # The answer was written part by part: both requests, joined in the reply.
    assert len(provider.requests) == 2
    assert window.transcript.messages[-1].role == "assistant"
