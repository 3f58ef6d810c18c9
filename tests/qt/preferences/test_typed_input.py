"""What a person types in the preferences dialog stays as typed, and the message beside it always
speaks of what the field shows: after Tab, Enter or another page, for every number and text field.

Typed keystrokes only (no setters), since the trouble was in what Qt does with typed text when an
edit ends: "5000" in the research time budget (10 to 3600 s) became "500" on Tab, while the
message still explained 5000 and OK stayed disabled.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QWidget
from pytestqt.qtbot import QtBot

from imprint_desktop.core.errors import SettingValueError
from imprint_desktop.settings import schema
from imprint_desktop.settings.schema import Kind, Setting
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.preferences.dialog import PreferencesDialog
from imprint_desktop.ui.preferences.editors import LineEditor, NumberEditor, TextEditor

NUMBERS = [setting for setting in schema.SETTINGS if setting.kind in (Kind.INT, Kind.FLOAT)]
TEXTS = [
    setting
    for setting in schema.SETTINGS
    if setting.kind in (Kind.STR, Kind.TEXT, Kind.FILE, Kind.FOLDER)
]
TIMEOUT = "chat.research_timeout_sec"


def typing_widget(dialog: PreferencesDialog, key: str) -> QWidget:
    editor = dialog.editor(key)
    if isinstance(editor, NumberEditor):
        return editor.spin
    if isinstance(editor, LineEditor):
        return editor.line
    assert isinstance(editor, TextEditor)
    return editor.text


def shown_text(dialog: PreferencesDialog, key: str) -> str:
    """The field's text as a person reads it, without a unit or thousands separators."""
    editor = dialog.editor(key)
    if isinstance(editor, NumberEditor):
        return editor.spin.cleanText().replace(editor.spin.locale().groupSeparator(), "")
    if isinstance(editor, LineEditor):
        return editor.line.text()
    assert isinstance(editor, TextEditor)
    return editor.text.toPlainText()


def retype(qtbot: QtBot, dialog: PreferencesDialog, key: str, text: str) -> QWidget:
    """Select all of the field and type ``text`` over it (Delete when it is empty)."""
    dialog.show_section(schema.get(key).section)
    widget = typing_widget(dialog, key)
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=2000)
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(widget, Qt.Key.Key_Delete)
    qtbot.keyClicks(widget, text)
    return widget


def leave(qtbot: QtBot, widget: QWidget) -> None:
    qtbot.keyClick(widget, Qt.Key.Key_Tab)
    assert not widget.hasFocus()


def can_save(dialog: PreferencesDialog) -> bool:
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()


def shown_message(dialog: PreferencesDialog, key: str) -> str | None:
    message = dialog.message(key)
    return message.text() if message.isVisible() else None


def test_a_number_above_the_maximum_stays_and_is_explained_after_tab(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    """The issue's own steps."""
    leave(qtbot, retype(qtbot, dialog, TIMEOUT, "5000"))
    assert shown_text(dialog, TIMEOUT) == "5000"
    assert shown_message(dialog, TIMEOUT) == "Must be between 10 and 3600 s (got 5000)."
    assert not can_save(dialog)

    leave(qtbot, retype(qtbot, dialog, TIMEOUT, "500"))
    assert shown_text(dialog, TIMEOUT) == "500"
    assert shown_message(dialog, TIMEOUT) is None
    assert can_save(dialog) and dialog.pending_changes() == {TIMEOUT: 500}


@pytest.mark.parametrize("setting", NUMBERS, ids=lambda setting: setting.key)
def test_every_number_field_keeps_what_was_typed_and_explains_it(
    qtbot: QtBot, dialog: PreferencesDialog, setting: Setting
) -> None:
    assert setting.maximum is not None and setting.minimum is not None
    key = setting.key
    # Ten times the maximum: on the way, its first digits were the maximum itself, a valid value.
    too_big = str(int(setting.maximum) * 10)
    for typed, reason in [
        (too_big, f"(got {too_big}"),
        ("", "(got '')"),
    ]:
        leave(qtbot, retype(qtbot, dialog, key, typed))
        assert shown_text(dialog, key) == typed
        message = shown_message(dialog, key)
        assert message is not None and reason in message, (typed, message)
        assert setting.bounds_text() in message
        assert not can_save(dialog)

    number = next(n for n in (setting.minimum + 1, setting.minimum + 2) if n != setting.default)
    leave(qtbot, retype(qtbot, dialog, key, setting.format(number)))
    assert setting.parse(shown_text(dialog, key)) == number  # 1 may show as 1.00
    assert shown_message(dialog, key) is None and can_save(dialog)
    assert dialog.pending_changes()[key] == number


def test_a_real_number_with_more_decimals_than_the_field_shows_is_explained(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    key = "chat.temperature"
    leave(qtbot, retype(qtbot, dialog, key, "0.125"))
    assert shown_text(dialog, key) == "0.125"
    assert shown_message(dialog, key) == "Must have at most 2 decimals (got 0.125)."
    assert not can_save(dialog)


def test_enter_on_a_refused_number_saves_nothing(
    qtbot: QtBot, dialog: PreferencesDialog, store: SettingsStore
) -> None:
    """Enter would press OK: had the field gone back to 500 first, 500 would have been saved."""
    widget = retype(qtbot, dialog, TIMEOUT, "5000")
    qtbot.keyClick(widget, Qt.Key.Key_Return)
    assert dialog.isVisible()
    assert shown_text(dialog, TIMEOUT) == "5000"
    assert shown_message(dialog, TIMEOUT) == "Must be between 10 and 3600 s (got 5000)."
    assert store.get(TIMEOUT) == 300


def test_another_page_and_back_keeps_a_refused_number(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    retype(qtbot, dialog, TIMEOUT, "5000")
    dialog.show_section("model")
    dialog.show_section("chat")
    assert shown_text(dialog, TIMEOUT) == "5000"
    assert shown_message(dialog, TIMEOUT) == "Must be between 10 and 3600 s (got 5000)."
    assert not can_save(dialog)


@pytest.mark.parametrize("setting", TEXTS, ids=lambda setting: setting.key)
def test_every_text_field_keeps_what_was_typed_and_explains_it(
    qtbot: QtBot, dialog: PreferencesDialog, setting: Setting
) -> None:
    key = setting.key
    for typed in ["../far away", "http://127.0.0.1:3128", ""]:
        leave(qtbot, retype(qtbot, dialog, key, typed))
        assert shown_text(dialog, key) == typed
        # The message is what the setting itself says of the text as typed, and only that.
        try:
            setting.coerce(typed.strip() if setting.kind is not Kind.TEXT else typed)
        except SettingValueError as problem:
            expected: str | None = problem.reason
        else:
            expected = None
        message = shown_message(dialog, key)
        if expected is None:
            assert message is None, (typed, message)
        else:
            assert message is not None
            assert message.rstrip(".").lower() == expected.rstrip(".").lower(), typed
        assert can_save(dialog) == (expected is None)
