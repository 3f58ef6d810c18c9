"""The welcome of a first run, driven from the keyboard as a person would."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDialog,
    QLineEdit,
    QWidget,
)
from pytestqt.qtbot import QtBot

from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.welcome import (
    WelcomeChoice,
    WelcomeDialog,
    WelcomeResult,
    maybe_show_welcome,
    needs_welcome,
)


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
    assert store.get("model.path") == str(starter)
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
    assert store.get("model.path") == str(starter)
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
