"""Fixtures for the widget tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication

from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore


@pytest.fixture(autouse=True)
def gui_loop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """The qasync loop on the GUI thread, as the app runs it (``app.run``).

    The app enters it with ``run_forever``, which runs Qt's event loop; here pytest-qt's waits
    (``waitUntil``, ``waitSignal``) run Qt's event loop, so the loop is only marked as this
    thread's running loop. Tasks still pending at the end (a widget closed by qtbot cancels its
    own) are cancelled and let finish before the loop closes.
    """
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    asyncio._set_running_loop(loop)
    try:
        yield loop
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        for _ in range(100):  # each round runs the callbacks that are due now; no waiting
            if all(task.done() for task in pending):
                break
            qapp.processEvents()
        asyncio._set_running_loop(None)
        asyncio.set_event_loop(None)
        loop.close()
        assert all(task.done() for task in pending), f"GUI tasks left running: {pending}"


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "config.toml"


@pytest.fixture
def store(config_path: Path) -> SettingsStore:
    return SettingsStore(config_path, environ={})


@pytest.fixture
def research_store(store: SettingsStore, tmp_path: Path) -> SettingsStore:
    """The settings with a small corpus of documents as the workspace."""
    from tests.qt.research_harness import write_corpus

    store.set("workspace.path", str(write_corpus(tmp_path / "corpus")))
    return store


@pytest.fixture
def secrets() -> SecretStore:
    return SecretStore()  # the autouse in-memory keyring
