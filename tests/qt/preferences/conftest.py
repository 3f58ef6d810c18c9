"""The preferences dialog, shown with the test's own settings and in-memory keyring."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.preferences.dialog import PreferencesDialog


@pytest.fixture
def dialog(qtbot: QtBot, store: SettingsStore, secrets: SecretStore) -> PreferencesDialog:
    window = PreferencesDialog(store, secrets)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window
