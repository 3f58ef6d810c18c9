"""Composition root of the window: the QApplication, the qasync loop, wiring and shutdown."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from imprint_desktop import APP_ID, APP_NAME, __version__
from imprint_desktop.core import resources
from imprint_desktop.engine.downloads import DownloadManager
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


def build_window(store: SettingsStore, secrets: SecretStore) -> MainWindow:
    """The main window wired to the settings; also used by the Qt tests."""
    app = create_application()
    apply_theme(app, str(store.get("ui.theme")))

    def settings_changed(keys: frozenset[str]) -> None:
        if "ui.theme" in keys:
            apply_theme(app, str(store.get("ui.theme")))

    store.subscribe(settings_changed)
    window = MainWindow(store, secrets)
    downloads = DownloadManager(store.snapshot, window)
    window.attach_downloads(downloads)
    downloads.restore()  # paused or failed downloads of an earlier run come back to the queue
    app.aboutToQuit.connect(downloads.shutdown)
    return window


def run(
    config: Path | None = None, quit_after: float | None = None, screenshot: Path | None = None
) -> int:
    """Open the window and run until it closes; returns the exit code."""
    app = create_application()
    store = SettingsStore(config)
    window = build_window(store, SecretStore())
    window.show()
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
