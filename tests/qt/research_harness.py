"""The real window on the real engine thread, with a scripted model and a small workspace."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.app import build_window
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.providers.base import CompletionRequest, Provider
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.research_panel.panel import TICK_MS
from tests.support.scripted_provider import ScriptedProvider, Step

Script = Sequence[Step] | Callable[[CompletionRequest], Step]


def write_corpus(root: Path) -> Path:
    """Three documents whose words never overlap, so each search finds exactly one passage."""
    files = {
        "alpha.md": "# Alpha\n\nThe harbour wall was rebuilt in granite.\n",
        "beta.txt": "Beta notes.\n\nThe master kept a ledger of ships.\n",
        "deep/gamma.md": "# Gamma\n\nA quokka was seen near the pier once.\n",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def search(query: str) -> tuple[str, dict[str, Any]]:
    return ("search_workspace", {"query": query})


def ask(question: str) -> tuple[str, dict[str, Any]]:
    return ("ask_user", {"question": question})


class Opened:
    """A window and the scripted model behind it."""

    def __init__(self, window: MainWindow, provider: ScriptedProvider) -> None:
        self.window = window
        self.provider = provider


def scripted_model(provider: ScriptedProvider) -> Callable[..., Any]:
    """A provider factory for :func:`build_window` that answers with ``provider``."""

    async def scripted(
        settings: object, http: httpx.AsyncClient, api_key: str | None, cancel: CancelToken
    ) -> Provider:
        del settings, http, api_key, cancel
        return provider

    return scripted


def show_window(qtbot: QtBot, window: MainWindow) -> MainWindow:
    """Show ``window`` and make it the active one (shortcuts go to the active window)."""
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    return window


def open_window(
    qtbot: QtBot,
    store: SettingsStore,
    script: Script = (),
    *,
    factory: Callable[..., Any] | None = None,
) -> Opened:
    provider = ScriptedProvider(script)
    model = factory or scripted_model(provider)
    window = build_window(store, SecretStore(), provider_factory=model)
    return Opened(show_window(qtbot, window), provider)


def type_question(qtbot: QtBot, window: MainWindow, text: str) -> None:
    """Type into the composer and press Enter, as a person would."""
    window.composer.edit.setFocus()
    qtbot.keyClicks(window.composer.edit, text)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)


def watch_the_panel(qtbot: QtBot, ticks: int) -> None:
    """Wait as long as the research panel takes to redraw its clock ``ticks`` times (it redraws
    every ``TICK_MS``), as a person watching it would, on a timer of the test's own."""
    watch = QTimer()
    watch.setSingleShot(True)
    watch.setInterval(ticks * TICK_MS + TICK_MS // 2)
    with qtbot.waitSignal(watch.timeout, timeout=10_000):
        watch.start()
