"""Fixtures for every test: private config and data dirs, an in-memory keyring, no stray threads."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from tests.support.memory_keyring import MemoryKeyring

# Qt tests run offscreen unless a test asks for a real display (e2e under Xvfb).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets its own config and data folders and no IMPRINT_* variables of the caller."""
    for name in list(os.environ):
        if name.startswith("IMPRINT_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("IMPRINT_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(home / "data"))
    yield home


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    """The process-wide keyring is an in-memory one unless a test brings a real one."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def logging_as_found() -> Iterator[None]:
    """A test that runs the command line in-process (which quiets Imprint's loggers unless
    --verbose) leaves logging as it found it, so the next test's caplog sees what it expects."""
    logger = logging.getLogger("imprint_desktop")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves a thread running: every background job must end and be joined."""
    before = set(threading.enumerate())
    yield
    leaked = [
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.is_alive() and not thread.daemon
    ]
    for thread in leaked:
        thread.join(timeout=5)
    still_running = [thread.name for thread in leaked if thread.is_alive()]
    assert not still_running, f"threads left running: {still_running}"
    # Loop threads are QThreads, not Python threads; their module keeps a registry of the live ones.
    # Only look when it was imported at all, so the tests without Qt never load it.
    loop_thread = sys.modules.get("imprint_desktop.background.loop_thread")
    if loop_thread is not None:
        names = loop_thread.stop_running_loop_threads()  # stopped, so the next test starts clean
        assert not names, f"loop threads left running: {names}"
