"""The Model Manager window driven like a person would, against a hub on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from imprint_desktop.core.models import DownloadOptions
from imprint_desktop.engine.downloads import DownloadItem, DownloadManager, DownloadState
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.download_status import DownloadStatusWidget
from imprint_desktop.ui.model_manager import ModelManagerWindow
from tests.support.hub_server import STARTER_REPO, HubServer, starter_hub

MB = 1 << 20


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with starter_hub() as server:
        yield server


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


@pytest.fixture
def manager(hub: HubServer, cache: Path, store: SettingsStore) -> Iterator[DownloadManager]:
    downloads = DownloadManager(
        store.snapshot,
        environ={"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)},
        options=DownloadOptions(backoff_initial=0.01, backoff_max=0.05),
    )
    yield downloads
    hub.faults.release.set()
    assert downloads.shutdown(30_000), "the download workers did not stop"


@pytest.fixture
def window(
    qtbot: QtBot, manager: DownloadManager, store: SettingsStore
) -> Iterator[ModelManagerWindow]:
    view = ModelManagerWindow(manager, store)
    qtbot.addWidget(view)
    view.show()
    yield view


def state_is(state: DownloadState) -> object:
    return lambda item: isinstance(item, DownloadItem) and item.state is state


def find_starter(qtbot: QtBot, window: ModelManagerWindow) -> None:
    window.search_box.setText("smol")
    qtbot.mouseClick(window.search_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.results.rowCount() == 1, timeout=10_000)
    assert window.results.item(0, 0).text() == STARTER_REPO
    window.results.selectRow(0)
    qtbot.waitUntil(lambda: window.files.rowCount() == 1, timeout=10_000)
    window.files.selectRow(0)


def test_find_download_use_and_remove(
    qtbot: QtBot, window: ModelManagerWindow, manager: DownloadManager, store: SettingsStore
) -> None:
    status = DownloadStatusWidget(manager)
    qtbot.addWidget(status)
    shown: list[bool] = []
    manager.sig_downloads_totals.connect(lambda totals: shown.append(status.isVisibleTo(None)))

    find_starter(qtbot, window)
    assert window.files.item(0, 1).text() == "Q4_1"
    assert window.files.item(0, 2).text() == "93.8 MiB"
    assert window.files.item(0, 3).text().startswith("fits: needs")

    with qtbot.waitSignal(
        manager.sig_download_changed, timeout=60_000, check_params_cb=state_is(DownloadState.DONE)
    ):
        qtbot.mouseClick(window.download_button, Qt.MouseButton.LeftButton)
        assert window.tabs.currentWidget() is window.queue
    assert window.queue.table.item(0, 2).text().startswith("Verified")
    assert True in shown, "the status bar showed the download while it ran"
    assert not status.isVisibleTo(None), "and hides itself when nothing runs"

    window.tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: window.installed.rowCount() == 2, timeout=10_000)
    sources = [window.installed.item(row, 1).text() for row in range(2)]
    assert sources == ["starter", "hf-cache"]
    window.installed.selectRow(0)
    assert not window.remove_button.isEnabled(), "the starter model cannot be removed"
    window.installed.selectRow(1)
    downloaded = window.selected_installed()
    assert downloaded is not None
    opened: list[Path] = []
    window.open_folder = opened.append
    qtbot.mouseClick(window.folder_button, Qt.MouseButton.LeftButton)
    assert opened == [downloaded.path.parent]

    qtbot.mouseClick(window.use_button, Qt.MouseButton.LeftButton)
    assert store.get("model.path") == str(downloaded.path)
    assert store.get("model.provider") == "local"

    questions: list[str] = []
    window.confirm = lambda question: questions.append(question) or True
    qtbot.waitUntil(lambda: window.installed.rowCount() == 2, timeout=10_000)
    window.installed.selectRow(1)
    qtbot.mouseClick(window.remove_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "freeing 93.8 MiB" in window.message.text(), timeout=10_000)
    assert "delete 93.8 MiB" in questions[0]
    qtbot.waitUntil(lambda: window.installed.rowCount() == 1, timeout=10_000)
    assert not downloaded.path.exists()


def test_pause_resume_and_cancel_from_the_queue(
    qtbot: QtBot, window: ModelManagerWindow, manager: DownloadManager, hub: HubServer, cache: Path
) -> None:
    hub.faults.stall_after = 8 * MB
    find_starter(qtbot, window)
    qtbot.mouseClick(window.download_button, Qt.MouseButton.LeftButton)
    assert hub.faults.stalled.wait(30)
    queue = window.queue
    queue.table.selectRow(0)
    assert queue.pause_button.isEnabled() and not queue.resume_button.isEnabled()
    with qtbot.waitSignal(
        manager.sig_download_changed, timeout=10_000, check_params_cb=state_is(DownloadState.PAUSED)
    ):
        qtbot.mouseClick(queue.pause_button, Qt.MouseButton.LeftButton)
    assert queue.resume_button.isEnabled() and not queue.pause_button.isEnabled()
    assert [p.stat().st_size > 0 for p in cache.rglob("*.incomplete")] == [True]

    hub.faults.release.set()
    hub.faults.stall_after = 40 * MB
    hub.faults.stalled.clear()
    hub.faults.release.clear()
    qtbot.mouseClick(queue.resume_button, Qt.MouseButton.LeftButton)
    assert hub.faults.stalled.wait(30)
    assert hub.byte_requests()[-1].range is not None, "resume asked for the missing range only"
    with qtbot.waitSignal(manager.sig_download_removed, timeout=10_000):
        qtbot.mouseClick(queue.cancel_button, Qt.MouseButton.LeftButton)
    assert queue.table.rowCount() == 0
    assert not list(cache.rglob("*.incomplete")), "cancel removed the partial"


def test_downloads_go_on_after_the_window_closes(
    qtbot: QtBot, window: ModelManagerWindow, manager: DownloadManager
) -> None:
    find_starter(qtbot, window)
    with qtbot.waitSignal(
        manager.sig_download_changed, timeout=60_000, check_params_cb=state_is(DownloadState.DONE)
    ):
        qtbot.mouseClick(window.download_button, Qt.MouseButton.LeftButton)
        window.close()


def test_a_failure_is_said_in_the_window(
    qtbot: QtBot, window: ModelManagerWindow, hub: HubServer
) -> None:
    window.search_box.setText("smol")
    qtbot.mouseClick(window.search_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.results.rowCount() == 1, timeout=10_000)
    del hub.repos[STARTER_REPO]  # gone between the search and the click
    window.results.selectRow(0)
    qtbot.waitUntil(lambda: "no such repository" in window.message.text(), timeout=10_000)
    assert window.files.rowCount() == 0
    assert not window.download_button.isEnabled()


def test_main_window_opens_the_manager_with_ctrl_m(
    qtbot: QtBot, store: SettingsStore, secrets: SecretStore
) -> None:
    from imprint_desktop.app import build_window

    main = build_window(store, secrets)
    qtbot.addWidget(main)
    main.show()
    assert main.models_action.shortcut().toString() == "Ctrl+M"
    main.models_action.trigger()
    assert main.model_manager is not None and main.model_manager.isVisible()
    assert main.download_status.parent() is not None
    main.close()  # joins the download workers
