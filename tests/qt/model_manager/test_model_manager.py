"""The Model Manager window driven like a person would, against a hub on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState
from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.core.models import DownloadOptions, Machine, Verdict, load_catalogue
from imprint_desktop.core.models.embedders import load_embedders
from imprint_desktop.core.workspace.embedding import AUTO
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.download_status import DownloadStatusWidget
from imprint_desktop.ui.model_manager.window import ModelManagerWindow
from tests.support.hub_server import STARTER_REPO, HubServer, serve_recommended, starter_hub

MB = 1 << 20
GB = 1 << 30
#: Four fast cores and 16 GiB free: Qwen3 4B is the best fit, Qwen3 8B runs slowly.
LAPTOP = Machine(available_memory=16 * GB, cpu_cores=4, fast_cpu=True, gpu=None, disk_free=200 * GB)


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with starter_hub() as server:
        serve_recommended(server)
        yield server


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


@pytest.fixture
def manager(hub: HubServer, cache: Path, store: SettingsStore) -> Iterator[DownloadManager]:
    downloads = DownloadManager(
        store.config,
        environ={"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)},
        options=DownloadOptions(backoff_initial=0.01, backoff_max=0.05),
        probe=lambda _folder, _threads: LAPTOP,
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

    window.tabs.setCurrentWidget(window.installed.parentWidget())
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


# --- Recommended ------------------------------------------------------------------------------


def recommended_listed(qtbot: QtBot, window: ModelManagerWindow) -> None:
    page = window.recommended
    qtbot.waitUntil(lambda: page.table.rowCount() == len(load_catalogue()), timeout=10_000)


def test_the_manager_opens_on_the_recommended_list_before_any_search(
    qtbot: QtBot, window: ModelManagerWindow, hub: HubServer
) -> None:
    page = window.recommended
    assert window.tabs.currentWidget() is page
    assert window.tabs.tabText(0) == "Re&commended"
    recommended_listed(qtbot, window)
    assert not [r for r in hub.requests if r.path.startswith("/api/models")], "no search yet"
    assert page.summary.text().startswith("Best fit for this computer: Qwen3 4B.\nJudged for 4 CPU")
    names = [page.table.item(row, 0).text() for row in range(page.table.rowCount())]
    assert names[:2] == ["Qwen3 8B  (more capable, slower)", "Qwen3 4B  (best fit)"]
    assert "Llama 3.2 3B Instruct  (lighter, faster)" in names
    entry = page.selected()
    assert entry is not None and entry.model.id == "qwen3-4b", "the best fit is selected"
    assert page.table.item(1, 0).font().bold()
    assert [page.table.item(1, column).text() for column in (1, 2)] == ["2.3 GiB", "Runs well"]
    assert page.table.item(1, 3).text() == entry.fit.reason
    assert page.table.item(0, 2).text() == "Runs slowly"
    assert entry.model.good_at in page.details.text()
    assert page.download_button.isEnabled() and not page.use_button.isEnabled()


def test_download_from_the_list_verify_and_switch(
    qtbot: QtBot, window: ModelManagerWindow, store: SettingsStore, hub: HubServer
) -> None:
    page = window.recommended
    recommended_listed(qtbot, window)
    store.update({"model.path": "/models/starter.gguf"})
    qtbot.mouseClick(page.download_button, Qt.MouseButton.LeftButton)
    assert "Downloading Qwen3 4B (2.3 GiB)" in window.message.text()
    assert "keeps using starter.gguf until it is verified" in window.message.text()
    assert not page.download_button.isEnabled(), "one download of it at a time"
    [offer] = page.offers
    qtbot.waitUntil(lambda: offer.box is not None and offer.box.isVisible(), timeout=60_000)
    assert offer.box.parent() is window, "the question is asked in the manager's window"
    assert page.table.item(1, 4).text() == "Installed"
    assert store.get("model.path") == "/models/starter.gguf", "nothing changes before the answer"

    with qtbot.waitSignal(offer.sig_switched, timeout=5000) as switched:
        qtbot.mouseClick(offer.switch_button, Qt.MouseButton.LeftButton)
    path = str(switched.args[0])
    assert store.get("model.path") == path and path.endswith("/Qwen3-4B-Q4_K_M.gguf")
    assert "Qwen3-4B-Q4_K_M.gguf is now the model used for research" in window.message.text()
    qtbot.waitUntil(lambda: page.table.item(1, 4).text() == "In use", timeout=10_000)
    assert page.offers == []
    assert page.selected() is not None and page.use_button.isEnabled()
    assert not page.download_button.isEnabled(), "it is here already"
    assert [r for r in hub.byte_requests() if r.status in (200, 206)]


def test_kept_then_used_from_the_list(
    qtbot: QtBot, window: ModelManagerWindow, store: SettingsStore
) -> None:
    page = window.recommended
    recommended_listed(qtbot, window)
    page.select("llama-3.2-3b")
    qtbot.mouseClick(page.download_button, Qt.MouseButton.LeftButton)
    [offer] = page.offers
    qtbot.waitUntil(lambda: offer.box is not None and offer.box.isVisible(), timeout=60_000)
    qtbot.mouseClick(offer.keep_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "is ready; Imprint keeps using" in window.message.text())
    assert store.get("model.path") == ""
    assert page.use_button.isEnabled(), "the verified file can be used at once"

    def listed_as_installed() -> bool:  # after the list is judged again
        chosen = page.selected()
        return chosen is not None and chosen.installed is not None

    qtbot.waitUntil(listed_as_installed, timeout=10_000)
    entry = page.selected()
    assert entry is not None and entry.model.id == "llama-3.2-3b" and entry.installed
    assert page.table.item(3, 4).text() == "Installed"
    qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
    assert store.get("model.path") == str(entry.installed)
    assert window.message.text() == "Llama 3.2 3B Instruct is now used for research."


def test_a_model_that_does_not_fit_is_not_offered_for_download(
    qtbot: QtBot, hub: HubServer, cache: Path, store: SettingsStore
) -> None:
    crowded = Machine(
        available_memory=16 * GB, cpu_cores=4, fast_cpu=True, gpu=None, disk_free=3 * GB
    )
    manager = DownloadManager(
        store.config,
        environ={"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)},
        probe=lambda _folder, _threads: crowded,
    )
    view = ModelManagerWindow(manager, store)
    qtbot.addWidget(view)
    view.show()
    recommended_listed(qtbot, view)
    page = view.recommended
    page.select("qwen3-8b")
    entry = page.selected()
    assert entry is not None and entry.fit.verdict is Verdict.DOES_NOT_FIT
    assert page.table.item(0, 2).text() == "Does not fit"
    assert "disk space" in page.table.item(0, 3).text()
    assert not page.download_button.isEnabled()
    view.close()
    assert manager.shutdown(30_000)


def test_what_the_hub_says_is_shown_as_text(qtbot: QtBot, window: ModelManagerWindow) -> None:
    """Repository names, file names and error messages come from the hub (any server at
    HF_ENDPOINT): markup in them stays text in labels and tooltips."""
    hostile = '<img src="file:///dev/zero"><b>bold</b>'
    window.say(f"{hostile}: failed")
    assert window.message.textFormat() == Qt.TextFormat.PlainText
    assert window.repo_label.textFormat() == Qt.TextFormat.PlainText
    find_starter(qtbot, window)
    assert window.repo_label.text().startswith(STARTER_REPO)  # the name, not markup around it
    item = DownloadItem("d1", "org/x", "x.gguf", 10, state=DownloadState.FAILED, message=hostile)
    window.queue.show_item(item)
    tip = window.queue.table.item(0, 2).toolTip()
    assert tip.startswith("<p>") and "<img" not in tip and "&lt;img" in tip


def test_an_embedding_model_is_downloaded_and_used_for_search(
    qtbot: QtBot, window: ModelManagerWindow, store: SettingsStore
) -> None:
    page = window.recommended
    recommended_listed(qtbot, window)
    table = page.embedder_table
    qtbot.waitUntil(lambda: table.rowCount() == len(load_embedders()), timeout=10_000)
    assert table.item(0, 0).text() == "Nomic Embed Text v1.5"
    assert [table.item(0, column).text() for column in (1, 2)] == ["139.4 MiB", "Runs well"]
    # The default searches by the sentence encoder once it has embedded the workspace: the
    # built-in alone is a choice.
    assert store.get("workspace.embedder") == AUTO and page.builtin_button.isEnabled()
    table.selectRow(0)
    assert page.embedder_download_button.isEnabled() and not page.embedder_use_button.isEnabled()

    qtbot.mouseClick(page.embedder_download_button, Qt.MouseButton.LeftButton)
    assert "Downloading Nomic Embed Text v1.5" in window.message.text()
    qtbot.waitUntil(page.embedder_use_button.isEnabled, timeout=60_000)
    assert store.get("workspace.embedder") == AUTO, "nothing changes before it is chosen"
    qtbot.mouseClick(page.embedder_use_button, Qt.MouseButton.LeftButton)
    path = Path(str(store.get("workspace.embedder")))
    assert path.name == "nomic-embed-text-v1.5.Q8_0.gguf" and path.is_file()
    assert "now finds passages by meaning" in window.message.text()
    qtbot.waitUntil(lambda: table.item(0, 4).text() == "Used for search", timeout=10_000)

    assert page.builtin_button.isEnabled()
    qtbot.mouseClick(page.builtin_button, Qt.MouseButton.LeftButton)
    assert store.get("workspace.embedder") == ""
    qtbot.waitUntil(lambda: table.item(0, 4).text() == "Installed", timeout=10_000)


def test_the_sentence_encoder_is_chosen_for_search_with_one_click(
    qtbot: QtBot, window: ModelManagerWindow, store: SettingsStore
) -> None:
    """The encoder comes with Imprint: the default uses it once it has embedded the workspace in
    the background; the built-in alone is one click away, and the encoder alone one more."""
    page = window.recommended
    recommended_listed(qtbot, window)
    assert store.get("workspace.embedder") == AUTO
    assert page.builtin_button.isEnabled() and not page.encoder_button.isEnabled()
    qtbot.mouseClick(page.builtin_button, Qt.MouseButton.LeftButton)
    assert store.get("workspace.embedder") == ""
    qtbot.waitUntil(page.encoder_button.isEnabled, timeout=10_000)
    assert not page.builtin_button.isEnabled(), "it is the one in use"
    qtbot.mouseClick(page.encoder_button, Qt.MouseButton.LeftButton)
    assert store.get("workspace.embedder") == "all-minilm-l6-v2"
    assert "sentence encoder all-MiniLM-L6-v2 now finds passages" in window.message.text()
    qtbot.waitUntil(page.builtin_button.isEnabled, timeout=10_000)
    assert not page.encoder_button.isEnabled(), "it is the one in use"
    qtbot.mouseClick(page.builtin_button, Qt.MouseButton.LeftButton)
    assert store.get("workspace.embedder") == ""
    qtbot.waitUntil(page.encoder_button.isEnabled, timeout=10_000)
