"""The toolbar's model picker shows the model the settings choose, whichever way it was chosen."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from imprint_desktop.core import resources
from imprint_desktop.core.models.library import InstalledModel, Source
from imprint_desktop.settings import schema
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.toolbar import ModelPicker


def picker(qtbot: QtBot, store: SettingsStore) -> ModelPicker:
    shown = ModelPicker(store)
    qtbot.addWidget(shown)
    return shown


def entries(shown: ModelPicker) -> list[str]:
    return [shown.itemText(index) for index in range(shown.count()) if shown.itemText(index)]


def installed(path: Path) -> InstalledModel:
    return InstalledModel(path.name, path, (path,), 1, Source.FOLDER)


def test_an_empty_model_path_is_the_starter_model(qtbot: QtBot, store: SettingsStore) -> None:
    shown = picker(qtbot, store)
    assert shown.currentText() == f"Starter: {resources.STARTER_NAME}"
    server = schema.get("remote.base_url").default
    assert entries(shown)[:2] == [f"Starter: {resources.STARTER_NAME}", f"Remote server: {server}"]


def test_a_model_file_not_installed_gets_its_own_entry(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    store.update({"model.path": str(tmp_path / "mine.gguf")})
    shown = picker(qtbot, store)
    assert shown.currentText() == "mine.gguf"
    shown.set_installed((installed(tmp_path / "mine.gguf"),))
    assert entries(shown).count("mine.gguf") == 1 and shown.currentText() == "mine.gguf"
    shown.activated.emit(0)  # the starter model
    assert store.get("model.path") == "" and shown.currentIndex() == 0


def test_a_server_chosen_is_the_remote_entry(qtbot: QtBot, store: SettingsStore) -> None:
    store.update({"model.provider": "remote", "remote.base_url": "http://llm.example:9000/v1"})
    shown = picker(qtbot, store)
    assert shown.currentText() == "Remote server: http://llm.example:9000/v1"
