"""Composition root of the window: the QApplication, the qasync loop, wiring and shutdown."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from imprint_desktop import APP_ID, APP_NAME, __version__
from imprint_desktop.core import resources
from imprint_desktop.engine.bridge import EngineBridge
from imprint_desktop.engine.downloads import DownloadManager
from imprint_desktop.engine.work import ProviderFactory
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.theme import apply_theme


def create_application(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setOrganizationName(APP_NAME)
    app.setDesktopFileName(APP_ID)
    app.setWindowIcon(QIcon(str(resources.resource("icons", "imprint.svg"))))
    return app


def _api_key_reader(secrets: SecretStore) -> Callable[[], str | None]:
    """Reads the remote API key on the engine's worker thread (a keyring call may block)."""

    def read() -> str | None:
        return secrets.get("remote.api_key") if secrets.available() else None

    return read


def build_window(
    store: SettingsStore,
    secrets: SecretStore,
    *,
    provider_factory: ProviderFactory | None = None,
    history_path: Path | None = None,
    warm_up: bool = False,
) -> MainWindow:
    """The main window wired to the settings and the engine; also used by the Qt tests.

    ``provider_factory`` replaces the real model (tests use a scripted one); ``warm_up`` loads the
    model and indexes the workspace at once, so the first question does not wait for either.
    """
    app = create_application()
    apply_theme(app, str(store.get("ui.theme")))

    def settings_changed(keys: frozenset[str]) -> None:
        if "ui.theme" in keys:
            apply_theme(app, str(store.get("ui.theme")))

    store.subscribe(settings_changed)
    bridge = EngineBridge(
        store.snapshot,
        api_key=_api_key_reader(secrets),
        provider_factory=provider_factory,
        history_path=history_path,
    )
    window = MainWindow(store, secrets, bridge)
    bridge.setParent(window)
    downloads = DownloadManager(store.snapshot, window)
    window.attach_downloads(downloads)
    downloads.restore()  # paused or failed downloads of an earlier run come back to the queue
    app.aboutToQuit.connect(downloads.shutdown)
    app.aboutToQuit.connect(bridge.shutdown)
    if warm_up:
        bridge.load_model()
        bridge.index_workspace()
    return window


def run(
    config: Path | None = None, quit_after: float | None = None, screenshot: Path | None = None
) -> int:
    """Open the window and run until it closes; returns the exit code."""
    app = create_application()
    store = SettingsStore(config)
    window = build_window(store, SecretStore(), warm_up=True)
    window.show()
    window.composer.edit.setFocus()
    if quit_after is not None:

        def finish() -> None:
            if screenshot is not None:
                window.grab().save(str(screenshot))
            window.close()

        QTimer.singleShot(int(quit_after * 1000), finish)

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        return int(loop.run_forever())


def main() -> int:
    """Entry point of the ``imprint-gui`` launcher (no console on Windows)."""
    return run()
