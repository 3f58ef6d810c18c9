"""The model manager's search says at once, in one sentence, that the hub cannot be reached, and
the window goes on meanwhile (issue 41, item 7)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.core.models import Machine
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.window import ModelManagerWindow
from tests.support.dead_hosts import DEAD_HOSTS

GB = 1 << 30
LAPTOP = Machine(available_memory=16 * GB, cpu_cores=4, fast_cpu=True, gpu=None, disk_free=200 * GB)


@pytest.mark.parametrize("how", sorted(DEAD_HOSTS))
def test_a_search_without_the_hub_is_said_within_three_seconds(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, how: str
) -> None:
    with DEAD_HOSTS[how]() as url:
        manager = DownloadManager(
            store.config,
            environ={"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "hf-cache")},
            probe=lambda _folder, _threads: LAPTOP,
        )
        window = ModelManagerWindow(manager, store)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        window.tabs.setCurrentIndex(1)  # Find
        qtbot.keyClicks(window.search_box, "qwen")
        started = time.monotonic()
        qtbot.mouseClick(window.search_button, Qt.MouseButton.LeftButton)
        assert window.message.text() == "Searching…", "the window does not wait for the hub"

        def said() -> bool:
            return window.message.text().startswith("Could not search the model hub: ")

        qtbot.waitUntil(said, timeout=3000)
        assert time.monotonic() - started <= 3.0
        message = window.message.text()
        assert "\n" not in message and message.endswith("Check the network and the proxy settings.")
        assert ("refused" if how == "refused" else "did not answer") in message
        assert window.search_button.isEnabled(), "a search can be tried again"
        window.close()
        assert manager.shutdown(30_000)
