"""The preferences dialog, driven as a person would: typing, clicking, confirming."""

from __future__ import annotations

import threading
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QPushButton,
    QWidget,
)
from pytestqt.qtbot import QtBot

from imprint_desktop.settings import schema
from imprint_desktop.settings.secrets import SERVICE, SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.preferences.dialog import PreferencesDialog
from imprint_desktop.ui.preferences.editors import (
    EDITORS,
    BoolEditor,
    ChoiceEditor,
    LineEditor,
    NumberEditor,
    SecretEditor,
)
from tests.support.memory_keyring import LockedKeyring, MemoryKeyring


def button(dialog: PreferencesDialog, which: QDialogButtonBox.StandardButton) -> QPushButton:
    return dialog.buttons.button(which)


OK = QDialogButtonBox.StandardButton.Ok
APPLY = QDialogButtonBox.StandardButton.Apply
CANCEL = QDialogButtonBox.StandardButton.Cancel


def type_into_spin(qtbot: QtBot, dialog: PreferencesDialog, key: str, text: str) -> None:
    editor = dialog.editor(key)
    assert isinstance(editor, NumberEditor)
    dialog.show_section(schema.get(key).section)
    editor.spin.setFocus()
    editor.spin.selectAll()
    qtbot.keyClicks(editor.spin, text)


def answer_next_message_box(choice: QMessageBox.StandardButton) -> list[str]:
    """Press ``choice`` in the next modal message box, as a person would; returns its text."""
    seen: list[str] = []

    def press() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, press)
            return
        seen.append(box.text())
        box.button(choice).click()

    QTimer.singleShot(0, press)
    return seen


def test_every_setting_has_an_editor_with_an_accessible_name(dialog: PreferencesDialog) -> None:
    assert set(EDITORS) | {schema.Kind.SECRET} == set(schema.Kind)
    for setting in schema.SETTINGS:
        editor = dialog.editor(setting.key)
        # The control a person tabs to and types in says which setting it edits.
        named = [
            child
            for child in editor.findChildren(QWidget)
            if child.accessibleName() == setting.title
        ]
        assert named, setting.key
        assert all(child.focusPolicy() & Qt.FocusPolicy.TabFocus for child in named), setting.key
        # So does every other control beside it that a person tabs to (Browse…, Show).
        for button in editor.findChildren(QAbstractButton):
            if button.focusPolicy() & Qt.FocusPolicy.TabFocus:
                assert button.accessibleName().endswith(setting.title), setting.key
        assert dialog.reset_button(setting.key).accessibleName()


def test_spin_boxes_carry_the_bounds(dialog: PreferencesDialog) -> None:
    for setting in schema.SETTINGS:
        editor = dialog.editor(setting.key)
        if isinstance(editor, NumberEditor):
            assert (editor.spin.minimum(), editor.spin.maximum()) == (
                setting.minimum,
                setting.maximum,
            )


def test_out_of_range_input_shows_a_message_and_disables_ok(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    key = "chat.research_timeout_sec"
    type_into_spin(qtbot, dialog, key, "5")
    message = dialog.message(key)
    assert message.isVisible()
    assert message.text() == "Must be between 10 and 3600 s (got 5)."
    assert not button(dialog, OK).isEnabled() and not button(dialog, APPLY).isEnabled()
    assert dialog.reset_button(key).isEnabled()

    qtbot.keyClicks(dialog.editor(key).spin, "0")  # now "50": valid
    assert not message.isVisible()
    assert button(dialog, OK).isEnabled() and button(dialog, APPLY).isEnabled()


def test_typing_above_the_maximum_is_explained_not_swallowed(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    key = "chat.research_no_progress_rounds"
    type_into_spin(qtbot, dialog, key, "25")
    assert dialog.message(key).text() == "Must be between 2 and 20 rounds (got 25)."
    assert not button(dialog, OK).isEnabled()


def test_invalid_text_setting_is_explained(qtbot: QtBot, dialog: PreferencesDialog) -> None:
    key = "remote.base_url"
    dialog.show_section("remote")
    editor = dialog.editor(key)
    assert isinstance(editor, LineEditor)
    editor.line.selectAll()
    qtbot.keyClicks(editor.line, "localhost:8080")
    assert "http:// or https://" in dialog.message(key).text()
    assert not button(dialog, OK).isEnabled()


def test_ok_saves_and_closes(
    qtbot: QtBot, dialog: PreferencesDialog, store: SettingsStore, config_path: Path
) -> None:
    type_into_spin(qtbot, dialog, "chat.research_timeout_sec", "120")
    theme = dialog.editor("ui.theme")
    assert isinstance(theme, ChoiceEditor)
    theme.combo.setCurrentIndex(theme.combo.findData("dark"))
    with qtbot.waitSignal(dialog.sig_settings_applied) as applied:
        qtbot.mouseClick(button(dialog, OK), Qt.MouseButton.LeftButton)
    assert applied.args == [frozenset({"chat.research_timeout_sec", "ui.theme"})]
    assert not dialog.isVisible()
    assert store.get("chat.research_timeout_sec") == 120 and store.get("ui.theme") == "dark"
    assert SettingsStore(config_path, environ={}).get("chat.research_timeout_sec") == 120


def test_cancel_discards(
    qtbot: QtBot, dialog: PreferencesDialog, store: SettingsStore, config_path: Path
) -> None:
    type_into_spin(qtbot, dialog, "chat.research_timeout_sec", "120")
    grammar = dialog.editor("model.tool_call_grammar")
    assert isinstance(grammar, BoolEditor)
    grammar.check.click()
    with qtbot.assertNotEmitted(dialog.sig_settings_applied):
        qtbot.mouseClick(button(dialog, CANCEL), Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()
    assert store.get("chat.research_timeout_sec") == 300
    assert store.get("model.tool_call_grammar") is False
    assert not config_path.exists()


def test_apply_is_enabled_only_with_changes(qtbot: QtBot, dialog: PreferencesDialog) -> None:
    assert not button(dialog, APPLY).isEnabled()
    type_into_spin(qtbot, dialog, "chat.max_tokens", "4096")
    assert button(dialog, APPLY).isEnabled()
    qtbot.mouseClick(button(dialog, APPLY), Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and not button(dialog, APPLY).isEnabled()


def test_field_reset_is_enabled_only_when_different_from_default(
    qtbot: QtBot, store: SettingsStore, secrets: SecretStore, config_path: Path
) -> None:
    store.set("model.n_ctx", 4096)
    dialog = PreferencesDialog(store, secrets)
    qtbot.addWidget(dialog)
    dialog.show()
    reset = dialog.reset_button("model.n_ctx")
    assert reset.isEnabled()
    assert not dialog.reset_button("model.n_batch").isEnabled()
    editor = dialog.editor("model.n_ctx")
    assert isinstance(editor, NumberEditor) and editor.spin.value() == 4096
    qtbot.mouseClick(reset, Qt.MouseButton.LeftButton)
    assert editor.spin.value() == 8192 and not reset.isEnabled()
    assert store.get("model.n_ctx") == 4096, "nothing is saved before OK or Apply"
    qtbot.mouseClick(button(dialog, APPLY), Qt.MouseButton.LeftButton)
    assert store.get("model.n_ctx") == 8192
    assert "n_ctx" not in config_path.read_text(), "a reset removes the override"


def _change_research_and_model(qtbot: QtBot, dialog: PreferencesDialog) -> None:
    type_into_spin(qtbot, dialog, "chat.research_timeout_sec", "120")
    type_into_spin(qtbot, dialog, "model.n_ctx", "4096")


def test_restore_page_defaults_after_confirmation(qtbot: QtBot, dialog: PreferencesDialog) -> None:
    _change_research_and_model(qtbot, dialog)
    dialog.show_section("chat")
    seen = answer_next_message_box(QMessageBox.StandardButton.RestoreDefaults)
    qtbot.mouseClick(dialog.restore_page_button, Qt.MouseButton.LeftButton)
    assert seen and "Research page" in seen[0]
    assert dialog.editor("chat.research_timeout_sec").value() == 300
    assert dialog.editor("model.n_ctx").value() == 4096, "other pages are left alone"


def test_restore_all_defaults_can_be_cancelled_or_confirmed(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    _change_research_and_model(qtbot, dialog)
    answer_next_message_box(QMessageBox.StandardButton.Cancel)
    qtbot.mouseClick(dialog.restore_all_button, Qt.MouseButton.LeftButton)
    assert dialog.editor("chat.research_timeout_sec").value() == 120

    answer_next_message_box(QMessageBox.StandardButton.RestoreDefaults)
    qtbot.mouseClick(dialog.restore_all_button, Qt.MouseButton.LeftButton)
    assert dialog.editor("chat.research_timeout_sec").value() == 300
    assert dialog.editor("model.n_ctx").value() == 8192
    assert dialog.pending_changes() == {}


def test_restart_notice_for_settings_that_need_one(qtbot: QtBot, dialog: PreferencesDialog) -> None:
    assert not dialog.restart_notice.isVisible()
    dialog.show_section("network")
    proxy = dialog.editor("network.proxy")
    assert isinstance(proxy, LineEditor)
    qtbot.keyClicks(proxy.line, "http://127.0.0.1:3128")
    assert dialog.restart_notice.isVisible() and "Proxy" in dialog.restart_notice.text()
    qtbot.mouseClick(button(dialog, APPLY), Qt.MouseButton.LeftButton)
    assert dialog.restart_notice.isVisible(), "still true after saving, until a restart"


def test_secret_field_writes_the_keyring_not_the_file(
    qtbot: QtBot, dialog: PreferencesDialog, memory_keyring: MemoryKeyring, config_path: Path
) -> None:
    dialog.show_section("remote")
    editor = dialog.editor("remote.api_key")
    assert isinstance(editor, SecretEditor)
    assert "Memory" in editor.toolTip() and SERVICE in editor.toolTip()
    qtbot.keyClicks(editor.line, "sk-typed-in")
    assert button(dialog, APPLY).isEnabled()
    qtbot.mouseClick(button(dialog, APPLY), Qt.MouseButton.LeftButton)
    assert memory_keyring.passwords == {(SERVICE, "remote.api_key"): "sk-typed-in"}
    assert not config_path.exists() or "sk-typed-in" not in config_path.read_text()
    assert editor.line.text() == "" and "Stored" in editor.line.placeholderText()

    remove = dialog.reset_button("remote.api_key")
    assert remove.isEnabled()
    qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(button(dialog, OK), Qt.MouseButton.LeftButton)
    assert memory_keyring.passwords == {}


class _SlowKeyring(MemoryKeyring):
    """A keyring that answers only when the test lets it (a locked one, waiting for its prompt)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.answer = threading.Event()

    def get_password(self, service: str, username: str) -> str | None:
        password = super().get_password(service, username)  # read now, answer later
        self.asked.set()
        assert self.answer.wait(timeout=30), "the test never let the keyring answer"
        return password


def test_a_slow_keyring_does_not_hold_up_the_dialog(qtbot: QtBot, store: SettingsStore) -> None:
    slow = _SlowKeyring()
    slow.passwords[(SERVICE, "remote.api_key")] = "sk-stored"
    keyring.set_keyring(slow)
    dialog = PreferencesDialog(store, SecretStore())  # returns while the keyring is still asked
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section("remote")
    editor = dialog.editor("remote.api_key")
    assert isinstance(editor, SecretEditor)
    assert editor.checking and editor.line.placeholderText() == "Checking the keyring…"
    assert not dialog.reset_button("remote.api_key").isEnabled()
    slow.answer.set()
    qtbot.waitUntil(lambda: not editor.checking, timeout=10_000)
    assert editor.stored and "Stored" in editor.line.placeholderText()
    assert dialog.reset_button("remote.api_key").isEnabled()


def test_a_key_saved_before_the_keyring_answers_is_not_undone_by_the_answer(
    qtbot: QtBot, store: SettingsStore
) -> None:
    slow = _SlowKeyring()
    keyring.set_keyring(slow)
    dialog = PreferencesDialog(store, SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section("remote")
    editor = dialog.editor("remote.api_key")
    assert isinstance(editor, SecretEditor)
    qtbot.waitUntil(slow.asked.is_set, timeout=10_000)  # it read "none stored"
    qtbot.keyClicks(editor.line, "sk-new")
    qtbot.mouseClick(button(dialog, APPLY), Qt.MouseButton.LeftButton)
    assert not dialog.tasks.idle, "the check begun before the save is still waiting"
    slow.answer.set()  # now the check, begun before the save, reports "none stored"
    qtbot.waitUntil(lambda: dialog.tasks.idle, timeout=10_000)  # the stale answer arrived
    assert slow.passwords == {(SERVICE, "remote.api_key"): "sk-new"}
    assert editor.stored and "Stored" in editor.line.placeholderText()


def test_closing_the_dialog_stops_waiting_for_the_keyring_and_reopening_asks_again(
    qtbot: QtBot, store: SettingsStore
) -> None:
    slow = _SlowKeyring()
    slow.passwords[(SERVICE, "remote.api_key")] = "sk-stored"
    keyring.set_keyring(slow)
    dialog = PreferencesDialog(store, SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    editor = dialog.editor("remote.api_key")
    assert isinstance(editor, SecretEditor) and editor.checking
    qtbot.waitUntil(slow.asked.is_set, timeout=10_000)
    qtbot.mouseClick(button(dialog, CANCEL), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.tasks.idle, timeout=10_000)  # cancelled, the keyring still busy
    assert editor.checking, "nothing answered while the dialog was closed"
    dialog.show()
    assert not dialog.tasks.idle, "shown again, the dialog asks the keyring again"
    slow.answer.set()
    qtbot.waitUntil(lambda: not editor.checking, timeout=10_000)
    assert editor.stored and "Stored" in editor.line.placeholderText()
    qtbot.waitUntil(lambda: dialog.tasks.idle, timeout=10_000)


def test_a_keyring_that_cannot_be_read_is_explained_in_the_field(
    qtbot: QtBot, store: SettingsStore
) -> None:
    keyring.set_keyring(LockedKeyring())
    dialog = PreferencesDialog(store, SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section("remote")
    message = dialog.message("remote.api_key")
    qtbot.waitUntil(message.isVisible, timeout=10_000)
    assert "locked" in message.text()
    assert not dialog.editor("remote.api_key").isEnabled()


class _BrokenSecrets(SecretStore):
    """A secret store with a fault of its own: ``has`` fails in a way no one foresaw."""

    def has(self, key: str) -> bool:
        raise ValueError("a fault inside the secret store")


def test_an_unforeseen_failure_of_the_keyring_check_is_a_sentence_in_the_field(
    qtbot: QtBot, store: SettingsStore, caplog: pytest.LogCaptureFixture
) -> None:
    dialog = PreferencesDialog(store, _BrokenSecrets())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section("remote")
    message = dialog.message("remote.api_key")
    qtbot.waitUntil(message.isVisible, timeout=10_000)
    assert message.text().startswith("Imprint could not ask the keyring whether a key is stored")
    assert "ValueError" in message.text() and "a fault inside" not in message.text()
    assert "a fault inside the secret store" in caplog.text  # the detail is in the log


def test_without_a_keyring_the_secret_field_explains_and_refuses(
    qtbot: QtBot, store: SettingsStore
) -> None:
    keyring.set_keyring(fail.Keyring())
    dialog = PreferencesDialog(store, SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section("remote")
    assert not dialog.editor("remote.api_key").isEnabled()
    assert "No secure system keyring" in dialog.message("remote.api_key").text()
    assert dialog.message("remote.api_key").isVisible()


def test_environment_override_is_shown(qtbot: QtBot, config_path: Path) -> None:
    store = SettingsStore(config_path, environ={"IMPRINT_MODEL_N_CTX": "2048"})
    dialog = PreferencesDialog(store, SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.editor("model.n_ctx").value() == 8192, "the editor shows the saved value"
    page_text = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert "IMPRINT_MODEL_N_CTX" in page_text


def test_a_failed_save_is_shown_and_nothing_is_lost(
    qtbot: QtBot, dialog: PreferencesDialog, store: SettingsStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imprint_desktop.core.errors import SettingsWriteError

    def refuse(_changes: object) -> None:
        raise SettingsWriteError("Could not save settings: No space left on device.")

    monkeypatch.setattr(store, "update", refuse)
    type_into_spin(qtbot, dialog, "chat.max_tokens", "4096")
    seen = answer_next_message_box(QMessageBox.StandardButton.Ok)
    qtbot.mouseClick(button(dialog, OK), Qt.MouseButton.LeftButton)
    assert seen and "No space left" in seen[0]
    assert dialog.isVisible(), "the dialog stays open with the edits"
    assert dialog.editor("chat.max_tokens").value() == 4096
