"""GPU layers in the preferences (issue 41, item 14): "auto" is shown and typed as a word, and a
number the person types replaces it; typed keystrokes, as in test_typed_input."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from imprint_desktop.ui.preferences.dialog import PreferencesDialog
from tests.qt.preferences.test_typed_input import (
    can_save,
    leave,
    retype,
    shown_message,
    shown_text,
)

KEY = "model.n_gpu_layers"


def test_gpu_layers_show_auto_and_take_a_number_or_auto_again(
    qtbot: QtBot, dialog: PreferencesDialog
) -> None:
    assert shown_text(dialog, KEY) == "auto"

    leave(qtbot, retype(qtbot, dialog, KEY, "12"))
    assert shown_text(dialog, KEY) == "12"
    assert shown_message(dialog, KEY) is None and can_save(dialog)
    assert dialog.pending_changes() == {KEY: 12}

    leave(qtbot, retype(qtbot, dialog, KEY, "auto"))
    assert shown_text(dialog, KEY) == "auto"
    assert shown_message(dialog, KEY) is None
    assert dialog.pending_changes() == {}

    leave(qtbot, retype(qtbot, dialog, KEY, "many"))
    message = shown_message(dialog, KEY)
    assert message is not None and "auto, or between 0 and 1000" in message
    assert not can_save(dialog)
