"""The Recommended list opens on its best fit, chosen and in sight, wherever it is in the list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.core.models import Machine, Role, load_catalogue
from imprint_desktop.core.models.recommended import recommend
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.window import ModelManagerWindow

GB = 1 << 30
#: Two slow cores and 2 GiB free: only the smallest model, the last of the list, fits.
SMALL = Machine(available_memory=2 * GB, cpu_cores=2, fast_cpu=False, gpu=None, disk_free=50 * GB)


@pytest.fixture
def manager(tmp_path: Path, store: SettingsStore) -> Iterator[DownloadManager]:
    downloads = DownloadManager(
        store.config,
        environ={"HF_HUB_CACHE": str(tmp_path / "hf-cache")},
        probe=lambda _folder, _threads: SMALL,
    )
    yield downloads
    assert downloads.shutdown(30_000), "the download workers did not stop"


def best_fit_in_sight(qtbot: QtBot, window: ModelManagerWindow) -> None:
    page = window.recommended
    table = page.table
    found = page.found
    assert found is not None and found.best is not None and found.best.role is Role.BEST
    best_row = found.entries.index(found.best)
    assert best_row == table.rowCount() - 1, "the case of the issue: the best fit is the last row"
    chosen = page.selected()
    assert chosen is not None and chosen.model.id == found.best.model.id
    assert table.currentRow() == best_row, "the keyboard starts from it too"

    def in_sight() -> bool:  # the whole row, once the window has laid itself out
        row = table.visualRect(table.model().index(best_row, 0))
        return table.viewport().rect().contains(row)

    qtbot.waitUntil(in_sight, timeout=5000)


@pytest.mark.parametrize("height", [600, 420])
def test_the_list_opens_on_its_best_fit_in_sight_when_it_is_the_last_row(
    qtbot: QtBot, manager: DownloadManager, store: SettingsStore, height: int
) -> None:
    """At the window's own size, and on a short screen."""
    window = ModelManagerWindow(manager, store)
    qtbot.addWidget(window)
    window.resize(980, height)
    window.show()
    qtbot.waitExposed(window)
    table = window.recommended.table
    qtbot.waitUntil(lambda: table.rowCount() == len(load_catalogue()), timeout=10_000)
    best_fit_in_sight(qtbot, window)
    if height < 600:
        assert table.verticalScrollBar().maximum() > 0, "the list is longer than it shows"


def test_a_list_filled_before_the_window_shows_opens_on_its_best_fit_too(
    qtbot: QtBot, manager: DownloadManager, store: SettingsStore
) -> None:
    """As when the chat's offer of a better model fills the list it judged itself."""
    window = ModelManagerWindow(manager, store)
    qtbot.addWidget(window)
    page = window.recommended
    found = recommend(load_catalogue(), SMALL, n_ctx=8192, time_budget=300)
    page.show_recommendations(found)
    window.resize(980, 420)
    window.show()
    qtbot.waitExposed(window)
    best_fit_in_sight(qtbot, window)
    assert page.table.verticalScrollBar().maximum() > 0, "the list is longer than it shows"
