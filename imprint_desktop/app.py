"""Composition root of the window: the QApplication, the qasync loop, wiring and shutdown.

Startup is ordered for a fast first paint: the window is built from light modules and shown; only
then does the heavy part start — the model store (for the download manager) is imported on a
helper thread and attached when ready, and the loop thread loads the model and indexes the
workspace. Nothing of that runs on the GUI thread before the person sees the window.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import qasync
from PySide6.QtCore import QElapsedTimer, QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from imprint_desktop import APP_ID, APP_NAME, __version__
from imprint_desktop.background.bridge import Bridge
from imprint_desktop.background.services import ProviderFactory
from imprint_desktop.core import resources
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow
from imprint_desktop.ui.model_manager.welcome import maybe_show_welcome, needs_welcome
from imprint_desktop.ui.theme import apply_theme

if TYPE_CHECKING:
    from imprint_desktop.background.downloads.manager import DownloadManager
    from imprint_desktop.settings.secrets import SecretStore


def new_secret_store() -> SecretStore:
    """The keyring-backed store, made when first needed (loading keyring is slow)."""
    from imprint_desktop.settings.secrets import SecretStore  # noqa: PLC0415

    return SecretStore()


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


def _api_key_reader(secrets: SecretStore | Callable[[], SecretStore]) -> Callable[[], str | None]:
    """Reads the remote API key on the loop thread (a keyring call may block)."""

    def read() -> str | None:
        store = secrets() if callable(secrets) else secrets
        return store.get("remote.api_key") if store.available() else None

    return read


def build_window(
    store: SettingsStore,
    secrets: SecretStore | Callable[[], SecretStore],
    *,
    provider_factory: ProviderFactory | None = None,
    history_path: Path | None = None,
    warm_up: bool = False,
    downloads: bool = True,
) -> MainWindow:
    """The main window wired to the settings and the engine; also used by the Qt tests.

    ``provider_factory`` replaces the real model (tests use a scripted one); ``warm_up`` loads the
    model and indexes the workspace at once, so the first question does not wait for either.
    ``downloads=False`` leaves the download manager to :func:`attach_downloads` (after showing).
    """
    app = create_application()
    apply_theme(app, store.config().ui.theme)

    def settings_changed(keys: frozenset[str]) -> None:
        if "ui.theme" in keys:
            apply_theme(app, store.config().ui.theme)

    store.subscribe(settings_changed)
    bridge = Bridge(
        store.config,
        api_key=_api_key_reader(secrets),
        provider_factory=provider_factory,
        history_path=history_path,
    )
    window = MainWindow(store, secrets, bridge)
    bridge.setParent(window)
    app.aboutToQuit.connect(bridge.shutdown)
    if downloads:
        window.set_starter(resources.starter_model_path())
        attach_downloads(window, store)
    if warm_up:
        bridge.load_model()
        bridge.index_workspace()
    return window


def attach_downloads(
    window: MainWindow, store: SettingsStore, manager: DownloadManager | None = None
) -> None:
    """The download manager (``manager``, when the welcome made it), its menu and status widget."""
    from imprint_desktop.background.downloads.manager import DownloadManager  # noqa: PLC0415 - heavy

    app = create_application()
    if manager is None:
        manager = DownloadManager(store.config, window)
    else:
        manager.setParent(window)
    window.attach_downloads(manager)
    manager.restore()  # paused or failed downloads of an earlier run come back to the queue
    app.aboutToQuit.connect(manager.shutdown)


class _FirstPaint(QObject):
    """Runs the heavy part of startup once the window has painted for the first time."""

    sig_imported = Signal(object)  # the starter model's path, or None

    def __init__(
        self, window: MainWindow, store: SettingsStore, downloads: DownloadManager | None = None
    ) -> None:
        super().__init__(window)
        self._window, self._store = window, store
        self._downloads = downloads  # made early by the welcome, to download at once
        self._started = False
        self.sig_imported.connect(self._attach)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self._started:
            self._started = True
            QTimer.singleShot(0, self._after_paint)
        return False

    def _after_paint(self) -> None:
        self._window.removeEventFilter(self)
        report("ready")
        self._window.bridge.load_model()
        self._window.bridge.index_workspace()

        def preload() -> None:  # imports and a package scan; every object is made on the GUI thread
            importlib.import_module("imprint_desktop.background.downloads.manager")
            importlib.import_module("imprint_desktop.settings.secrets")
            self.sig_imported.emit(resources.starter_model_path())

        threading.Thread(target=preload, name="imprint-preload", daemon=True).start()

    def _attach(self, starter: Path | None) -> None:
        self._window.set_starter(starter)
        attach_downloads(self._window, self._store, self._downloads)


#: The most of an answer an event line carries (its length is reported too).
REPORTED_CHARS = 10_000


def report(event: str, **fields: object) -> None:
    """One JSON line on stdout when ``IMPRINT_GUI_EVENTS=1``: how end-to-end tests follow the
    window without sleeping (they block on reading the next line)."""
    if os.environ.get("IMPRINT_GUI_EVENTS") == "1":
        print(json.dumps({"event": event, **fields}), flush=True)


def _report_events(window: MainWindow) -> None:
    from imprint_desktop.background import payloads as p  # noqa: PLC0415
    from imprint_desktop.core.research import events as ev  # noqa: PLC0415

    bridge = window.bridge

    def reply_event(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.ToolStarted):
            report("tool", name=payload.event.name)
        elif isinstance(payload.event, ev.QuestionAsked):
            report("question-asked", question=payload.event.question)

    def ended(payload: p.ReplyEnded) -> None:
        answer = payload.result.answer if payload.result else ""
        report(
            "reply-ended",
            outcome=payload.outcome.value,
            answer=answer[:REPORTED_CHARS],
            answer_chars=len(answer),
            message=payload.message,
        )

    def loaded(record: p.ConversationRecord) -> None:
        report(
            "conversation-loaded",
            replies=[
                {
                    "status": r.status,
                    "evidence": len(r.evidence),
                    "answer": (r.answer or "")[:REPORTED_CHARS],
                    "answer_chars": len(r.answer or ""),
                }
                for r in record.replies
            ],
        )

    bridge.sig_reply_opened.connect(lambda o: report("reply-opened", stored_id=o.stored_id))
    bridge.sig_reply_event.connect(reply_event)
    bridge.sig_reply_ended.connect(ended)
    bridge.sig_model_status.connect(
        lambda s: report("model", state=s.state.value, message=s.message)
    )
    bridge.sig_conversations_listed.connect(
        lambda c: report("conversations", count=len(c.conversations))
    )
    bridge.sig_conversation_loaded.connect(loaded)
    _report_stalls(window)


#: A GUI thread busy longer than this between two ticks of a 100 ms timer is reported as a stall.
STALL_REPORTED_MS = 500


def _report_stalls(window: MainWindow) -> None:
    """Report every time the GUI thread did not get back to its event loop for a while
    (``stall {seconds}``): end-to-end tests check that nothing freezes the window."""
    clock = QElapsedTimer()
    clock.start()
    ticks = QTimer(window)
    ticks.setInterval(100)
    last = [0]

    def tick() -> None:
        now = clock.elapsed()
        late = now - last[0] - ticks.interval()
        last[0] = now
        if late > STALL_REPORTED_MS:
            report("stall", seconds=round(late / 1000, 2))

    ticks.timeout.connect(tick)
    ticks.start()


def open_main_window(
    store: SettingsStore,
    secrets: SecretStore | Callable[[], SecretStore],
    downloads: DownloadManager | None = None,
) -> MainWindow:
    """Show the window as a person starts it: first paint first, then the heavy startup work."""
    window = build_window(store, secrets, downloads=False)
    if os.environ.get("IMPRINT_GUI_EVENTS") == "1":
        _report_events(window)
    window.startup = _FirstPaint(window, store, downloads)  # type: ignore[attr-defined]
    window.show()
    window.composer.edit.setFocus()
    return window


def run(
    config: Path | None = None, quit_after: float | None = None, screenshot: Path | None = None
) -> int:
    """Open the window and run until it closes; returns the exit code."""
    app = create_application()
    store = SettingsStore(config)
    apply_theme(app, store.config().ui.theme)
    # First run: a short welcome (starter model, model manager or a server; sample workspace).
    # Scripted runs (--quit-after, the end-to-end event hook) never stop for it.
    scripted = quit_after is not None or os.environ.get("IMPRINT_GUI_EVENTS") == "1"
    downloads = None
    if not scripted and needs_welcome(store):
        # The welcome offers recommended models and starts the chosen download at once.
        from imprint_desktop.background.downloads.manager import DownloadManager  # noqa: PLC0415 - heavy

        downloads = DownloadManager(store.config)
    welcome = maybe_show_welcome(None, store, enabled=not scripted, downloads=downloads)
    window = open_main_window(store, new_secret_store, downloads)
    if welcome is not None and welcome.open_model_manager:
        # The manager needs the download machinery, which attaches after the first paint.
        window.startup.sig_imported.connect(  # type: ignore[attr-defined]
            lambda _starter: window.open_model_manager(), Qt.ConnectionType.QueuedConnection
        )
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
