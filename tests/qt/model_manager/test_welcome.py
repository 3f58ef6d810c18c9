"""The welcome of a first run, driven from the keyboard as a person would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QWidget,
)
from pytestqt.qtbot import QtBot

from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.core import resources
from imprint_desktop.core.models import DownloadOptions, Machine, ModelLayout, ModelLibrary
from imprint_desktop.core.resources import starter_model_path
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.model_switch import ModelSwitchOffer
from imprint_desktop.ui.model_manager.welcome import (
    WelcomeChoice,
    WelcomeDialog,
    WelcomeResult,
    maybe_show_welcome,
    needs_welcome,
)
from tests.support.hub_server import HubServer, serve_recommended, starter_hub

GB = 1 << 30
#: A laptop with four fast cores and 16 GiB free: Qwen3 4B runs well on it, Qwen3 8B slowly.
LAPTOP = Machine(available_memory=16 * GB, cpu_cores=4, fast_cpu=True, gpu=None, disk_free=200 * GB)


@pytest.fixture
def starter(tmp_path: Path) -> Path:
    path = tmp_path / "starter.gguf"
    path.write_bytes(b"GGUF stand-in")
    return path


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    folder = tmp_path / "sample-workspace"
    folder.mkdir()
    return folder


def show(qtbot: QtBot, dialog: WelcomeDialog) -> WelcomeDialog:
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()  # focus and mnemonics belong to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dialog)
    return dialog


def test_a_first_run_without_a_model_needs_the_welcome(config_path: Path) -> None:
    assert needs_welcome(SettingsStore(config_path, environ={}))
    chosen_by_env = SettingsStore(config_path, environ={"IMPRINT_MODEL_PATH": "/m/x.gguf"})
    assert not needs_welcome(chosen_by_env)
    assert not needs_welcome(
        SettingsStore(config_path, environ={"IMPRINT_MODEL_PROVIDER": "remote"})
    )
    config_path.write_text("schema_version = 1\n", encoding="utf-8")
    assert not needs_welcome(SettingsStore(config_path, environ={}))


def test_enter_takes_the_starter_model_and_the_sample_workspace(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    assert dialog.starter_option.isChecked() and dialog.starter_option.hasFocus()
    assert not dialog.remote_fields.isEnabled()

    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.keyClick(dialog.starter_option, Qt.Key.Key_Return)

    assert dialog.result_value == WelcomeResult(WelcomeChoice.STARTER, sample_workspace=True)
    assert store.get("model.provider") == "local"
    assert store.get("model.path") == ""  # the starter model
    assert store.get("workspace.path") == str(sample)
    assert not needs_welcome(SettingsStore(store.path, environ={}))


def test_a_remote_server_is_chosen_with_arrows_and_typing(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    qtbot.keyClick(dialog.starter_option, Qt.Key.Key_Down)
    qtbot.keyClick(dialog.manager_option, Qt.Key.Key_Down)
    assert dialog.remote_option.isChecked() and dialog.remote_fields.isEnabled()
    qtbot.keyClick(dialog, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # &Server address
    assert dialog.server_url.hasFocus()
    dialog.server_url.selectAll()
    qtbot.keyClicks(dialog.server_url, "http://10.0.0.5:8000/v1")
    qtbot.keyClick(dialog, Qt.Key.Key_M, Qt.KeyboardModifier.AltModifier)  # &Model name
    qtbot.keyClicks(dialog.server_model, "qwen3-8b")
    qtbot.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)  # sample &workspace
    qtbot.waitUntil(lambda: not dialog.sample_option.isChecked())  # a mnemonic animates its click

    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.keyClick(dialog.server_model, Qt.Key.Key_Return)

    assert dialog.result_value == WelcomeResult(WelcomeChoice.REMOTE, sample_workspace=False)
    assert store.get("model.provider") == "remote"
    assert store.get("remote.base_url") == "http://10.0.0.5:8000/v1"
    assert store.get("remote.model") == "qwen3-8b"
    assert store.get("workspace.path") == ""


def test_a_bad_server_address_is_explained_and_nothing_is_saved(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    dialog.remote_option.setChecked(True)
    dialog.server_url.setText("not a server")
    qtbot.keyClick(dialog.server_url, Qt.Key.Key_Return)

    assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted
    assert dialog.problem.isVisible() and dialog.problem.text().startswith("Server address: ")
    assert dialog.server_url.hasFocus()
    assert not store.path.exists()


def test_not_now_ends_the_first_run_without_choosing(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    with qtbot.waitSignal(dialog.rejected, timeout=2000):
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)

    assert dialog.result_value.choice is WelcomeChoice.LATER
    assert store.path.exists() and store.get("model.path") == ""
    assert not needs_welcome(SettingsStore(store.path, environ={}))


def test_without_the_starter_model_the_model_manager_is_offered(
    qtbot: QtBot, store: SettingsStore
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=None, sample_workspace=None))
    assert not dialog.starter_option.isEnabled() and "not installed" in dialog.starter_option.text()
    assert dialog.manager_option.isChecked()
    assert not dialog.sample_option.isEnabled() and not dialog.sample_option.isChecked()

    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.keyClick(dialog.manager_option, Qt.Key.Key_Return)

    assert dialog.result_value.open_model_manager
    assert store.get("model.path") == "" and store.path.exists()


def test_every_control_has_an_accessible_name(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    controls = [
        w for w in dialog.findChildren(QWidget) if isinstance(w, QAbstractButton | QLineEdit)
    ]
    assert len(controls) >= 8
    assert [w for w in controls if not w.accessibleName()] == []


def test_maybe_show_welcome_shows_it_once(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path
) -> None:
    assert maybe_show_welcome(None, store, enabled=False) is None
    assert not store.path.exists()

    def press_enter() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, WelcomeDialog)
        qtbot.keyClick(dialog.start_button, Qt.Key.Key_Return)

    QTimer.singleShot(0, press_enter)
    result = maybe_show_welcome(None, store, starter_model=starter, sample_workspace=sample)

    assert result == WelcomeResult(WelcomeChoice.STARTER, sample_workspace=True)
    assert store.get("model.path") == ""  # the starter model
    assert maybe_show_welcome(None, store, starter_model=starter, sample_workspace=sample) is None


def test_a_settings_file_that_cannot_be_written_is_said_and_the_dialog_stays(
    qtbot: QtBot, tmp_path: Path, starter: Path, sample: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the settings folder should be", encoding="utf-8")
    store = SettingsStore(blocker / "config.toml", environ={})
    dialog = show(qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=sample))
    qtbot.keyClick(dialog.starter_option, Qt.Key.Key_Return)

    assert dialog.isVisible() and dialog.problem.isVisible()
    assert dialog.problem.text().startswith("Could not save the settings")


# --- downloading a recommended model ----------------------------------------------------------


@pytest.fixture
def hub() -> Iterator[HubServer]:
    """The starter model's bytes served under every recommended model's name."""
    with starter_hub() as server:
        serve_recommended(server)
        yield server


def download_manager(
    hub: HubServer, store: SettingsStore, cache: Path, machine: Machine = LAPTOP
) -> DownloadManager:
    return DownloadManager(
        store.config,
        environ={"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)},
        options=DownloadOptions(backoff_initial=0.01, backoff_max=0.05),
        probe=lambda _folder, _threads: machine,
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


@pytest.fixture
def downloads(hub: HubServer, store: SettingsStore, cache: Path) -> Iterator[DownloadManager]:
    manager = download_manager(hub, store, cache)
    yield manager
    assert manager.shutdown(30_000), "the download workers did not stop"


def click_radio(qtbot: QtBot, button: QAbstractButton) -> None:
    """Click a radio button on its circle, as a person does (a wide one ends at its text)."""
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton, pos=QPoint(8, button.height() // 2))


def words(label: QLabel) -> str:
    """A label's text as one line (the welcome breaks its text into lines itself)."""
    return " ".join(label.text().split())


def with_picks(qtbot: QtBot, dialog: WelcomeDialog) -> WelcomeDialog:
    qtbot.waitUntil(lambda: len(dialog.pick_buttons) == 3, timeout=10_000)
    return dialog


@pytest.fixture
def welcome(
    qtbot: QtBot, store: SettingsStore, starter: Path, sample: Path, downloads: DownloadManager
) -> WelcomeDialog:
    """The welcome with its recommended models listed (on a 4-core laptop with 16 GiB free)."""
    dialog = WelcomeDialog(
        store, starter_model=starter, sample_workspace=sample, downloads=downloads
    )
    return with_picks(qtbot, show(qtbot, dialog))


def test_download_offers_the_best_fit_and_two_alternatives_with_size_and_fit(
    qtbot: QtBot, welcome: WelcomeDialog
) -> None:
    dialog = welcome
    titles = [button.text() for button, _entry in dialog.pick_buttons]
    assert titles == [
        "Qwen3 4B  ·  2.3 GiB  ·  Runs well  ·  best fit",
        "Qwen3 8B  ·  4.7 GiB  ·  Runs slowly  ·  more capable, slower",
        "Llama 3.2 3B Instruct  ·  1.9 GiB  ·  Runs well  ·  lighter, faster",
    ]
    best_button, best = dialog.pick_buttons[0]
    assert best_button.isChecked()
    assert best.fit.reason in best_button.accessibleDescription()
    assert best.model.good_at in best_button.accessibleDescription()
    assert not dialog.picks.isEnabled(), "the picks wait until Download is chosen"
    assert dialog.choice() is WelcomeChoice.STARTER

    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    assert dialog.picks.isEnabled() and dialog.choice() is WelcomeChoice.DOWNLOAD
    assert "uses the starter model until the file is verified" in words(dialog.picks_note)
    click_radio(qtbot, dialog.browse_option)
    assert dialog.choice() is WelcomeChoice.MODEL_MANAGER
    click_radio(qtbot, best_button)
    assert dialog.selected_pick() is best


def test_get_started_downloads_at_once_keeps_the_starter_and_switches_when_verified(
    qtbot: QtBot, welcome: WelcomeDialog, store: SettingsStore, starter: Path, hub: HubServer
) -> None:
    dialog = welcome
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)

    result = dialog.result_value
    assert result.choice is WelcomeChoice.DOWNLOAD and result.sample_workspace
    assert result.model is not None and result.model.id == "qwen3-4b"
    assert store.get("model.path") == "", "the starter model until the file is verified"
    offer = dialog.switch_offer
    assert offer is not None
    qtbot.waitUntil(lambda: offer.box is not None and offer.box.isVisible(), timeout=60_000)
    assert store.get("model.path") == ""  # the starter model
    assert hub.byte_requests(), "the bytes came from the hub"
    assert "Qwen3 4B is downloaded and verified" in offer.box.text()
    assert f"keeps using {resources.STARTER_NAME}" in offer.box.informativeText()

    with qtbot.waitSignal(offer.sig_switched, timeout=5000) as switched:
        qtbot.mouseClick(offer.switch_button, Qt.MouseButton.LeftButton)
    path = Path(switched.args[0])
    assert store.get("model.path") == str(path) and store.get("model.provider") == "local"
    assert path.name == "Qwen3-4B-Q4_K_M.gguf" and "models--Qwen--Qwen3-4B-GGUF" in str(path)
    assert path.read_bytes()[:4] == b"GGUF"
    starter_file = starter_model_path()
    assert starter_file is not None and path.stat().st_size == starter_file.stat().st_size


def test_the_person_can_keep_the_current_model(
    qtbot: QtBot, welcome: WelcomeDialog, store: SettingsStore, starter: Path, cache: Path
) -> None:
    dialog = welcome
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    lighter, entry = dialog.pick_buttons[2]
    click_radio(qtbot, lighter)
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.keyClick(lighter, Qt.Key.Key_Return)
    assert dialog.result_value.model == entry.model
    offer = dialog.switch_offer
    assert offer is not None
    qtbot.waitUntil(lambda: offer.box is not None and offer.box.isVisible(), timeout=60_000)
    with qtbot.waitSignal(offer.sig_kept, timeout=5000) as kept:
        qtbot.keyClick(offer.box, Qt.Key.Key_Escape)
    assert store.get("model.path") == ""  # the starter model
    assert Path(kept.args[0]).name == entry.model.file
    layout = ModelLayout.from_config(store.config().downloads, {"HF_HUB_CACHE": str(cache)})
    installed = ModelLibrary(layout)
    assert entry.model.installed_name in {model.name for model in installed.installed()}


def test_a_download_that_cannot_start_is_said(
    qtbot: QtBot, welcome: WelcomeDialog, store: SettingsStore, starter: Path, hub: HubServer
) -> None:
    dialog = welcome
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    del hub.repos["Qwen/Qwen3-4B-GGUF"]  # gone from the hub since the list was made
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    offer = dialog.switch_offer
    assert offer is not None
    with qtbot.waitSignal(offer.sig_failed, timeout=10_000) as failed:
        pass
    assert "Qwen3 4B could not be downloaded" in failed.args[0]
    assert "no such repository" in failed.args[0]
    assert offer.failure_box is not None and offer.failure_box.isVisible()
    assert f"keeps using {resources.STARTER_NAME}" in offer.failure_box.informativeText()
    assert store.get("model.path") == ""  # the starter model
    offer.failure_box.close()


def test_when_nothing_fits_the_model_manager_is_offered(
    qtbot: QtBot, store: SettingsStore, starter: Path, hub: HubServer, cache: Path
) -> None:
    small = Machine(available_memory=GB, cpu_cores=2, fast_cpu=True, gpu=None, disk_free=GB)
    manager = download_manager(hub, store, cache, small)
    dialog = show(
        qtbot, WelcomeDialog(store, starter_model=starter, sample_workspace=None, downloads=manager)
    )
    qtbot.waitUntil(lambda: "None of the recommended" in words(dialog.picks_status), timeout=10_000)
    assert "disk space" in words(dialog.picks_status)
    assert dialog.pick_buttons == []
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    assert dialog.browse_option.isChecked() and dialog.choice() is WelcomeChoice.MODEL_MANAGER
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert dialog.result_value.open_model_manager and dialog.switch_offer is None
    assert manager.shutdown(30_000)


def test_the_app_downloads_what_the_welcome_chose_and_its_window_switches(
    qtbot: QtBot, store: SettingsStore, secrets: SecretStore, hub: HubServer, cache: Path
) -> None:
    """The composition root: the welcome's download manager becomes the window's, and the switch
    is offered over the main window once the file is verified."""
    from imprint_desktop.app import open_main_window

    starter = starter_model_path()
    assert starter is not None
    manager = download_manager(hub, store, cache)

    def choose() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, WelcomeDialog)
        with_picks(qtbot, dialog)
        click_radio(qtbot, dialog.manager_option)
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, choose)
    result = maybe_show_welcome(
        None, store, starter_model=starter, sample_workspace=None, downloads=manager
    )
    assert result is not None and result.choice is WelcomeChoice.DOWNLOAD
    assert store.get("model.path") == ""  # the starter model

    window = open_main_window(store, secrets, manager)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.downloads is manager, timeout=30_000)
    assert manager.parent() is window

    def asked() -> QMessageBox | None:
        box = window.findChild(QMessageBox, "modelSwitchOffer")
        return box if box is not None and box.isVisible() else None

    qtbot.waitUntil(lambda: asked() is not None, timeout=60_000)
    box = asked()
    assert box is not None
    switch = next(b for b in box.buttons() if b.text() == "Use Qwen3 4B")
    qtbot.mouseClick(switch, Qt.MouseButton.LeftButton)
    assert str(store.get("model.path")).endswith("/Qwen3-4B-Q4_K_M.gguf")
    window.close()  # joins the engine and the download workers


def test_the_switch_offer_is_released_once_the_person_answers(
    qtbot: QtBot, welcome: WelcomeDialog, downloads: DownloadManager
) -> None:
    dialog = welcome
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    lighter, _entry = dialog.pick_buttons[2]
    click_radio(qtbot, lighter)
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.keyClick(lighter, Qt.Key.Key_Return)
    offer = dialog.switch_offer
    assert offer is not None and downloads.findChildren(ModelSwitchOffer) == [offer]
    qtbot.waitUntil(lambda: offer.box is not None and offer.box.isVisible(), timeout=60_000)
    box = offer.box
    assert box is not None
    with qtbot.waitSignals([offer.destroyed, box.destroyed], timeout=5000):
        qtbot.keyClick(box, Qt.Key.Key_Escape)
    assert downloads.findChildren(ModelSwitchOffer) == []
    assert dialog.switch_offer is None


def test_the_switch_offer_is_released_when_the_download_fails(
    qtbot: QtBot, welcome: WelcomeDialog, hub: HubServer, downloads: DownloadManager
) -> None:
    dialog = welcome
    qtbot.mouseClick(dialog.manager_option, Qt.MouseButton.LeftButton)
    del hub.repos["Qwen/Qwen3-4B-GGUF"]
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    offer = dialog.switch_offer
    assert offer is not None
    with qtbot.waitSignal(offer.destroyed, timeout=10_000):
        pass
    assert downloads.findChildren(ModelSwitchOffer) == []
    assert dialog.switch_offer is None
    for box in QApplication.topLevelWidgets():
        if box.objectName() == "modelDownloadFailed":
            box.close()  # the failure is still said, in a box of its own
