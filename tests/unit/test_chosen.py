"""What the settings choose: the model (starter model when none) and the folder (sample workspace
when none), each decided in one place for every view."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core import resources
from imprint_desktop.core.chosen import (
    chosen_model,
    chosen_workspace,
    model_file,
    sample_workspace,
    workspace_folder,
)
from tests.support.settings import make_config

SECRET = "hunter2"


def test_no_model_file_is_the_starter_model() -> None:
    for empty in ("", "   "):
        chosen = chosen_model(make_config({"model.path": empty}))
        assert chosen.file is None and not chosen.remote
        assert chosen.describe() == resources.STARTER_NAME
        assert not chosen.uses_file(Path(empty))


def test_a_model_file_is_named_by_its_file_name(tmp_path: Path) -> None:
    path = tmp_path / "models" / "qwen2.5-3b-q4_k_m.gguf"
    chosen = chosen_model(make_config({"model.path": f" {path} "}))
    assert chosen.file == path
    assert chosen.describe() == "qwen2.5-3b-q4_k_m.gguf"
    assert chosen.uses_file(str(path)) and chosen.uses_file(path)
    assert not chosen.uses_file(tmp_path / "other.gguf")


def test_a_model_file_under_the_home_folder_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = make_config({"model.path": "~/m.gguf"})
    assert model_file(config.model.path) == tmp_path / "m.gguf"


def test_a_server_is_described_without_its_credentials() -> None:
    base_url = f"https://ada:{SECRET}@llm.example:8443/v1/?api_key={SECRET}#{SECRET}"
    chosen = chosen_model(
        make_config(
            {"model.provider": "remote", "remote.base_url": base_url, "remote.model": "qwen"}
        )
    )
    assert chosen.remote
    assert chosen.server == base_url, "what was set, for the settings' own views"
    assert chosen.server_address == "https://llm.example:8443/v1"
    assert chosen.describe() == "qwen on https://llm.example:8443/v1"


def test_a_server_without_a_model_name_uses_its_default_model() -> None:
    chosen = chosen_model(
        make_config({"model.provider": "remote", "remote.base_url": "http://127.0.0.1:8080/v1"})
    )
    assert chosen.describe() == "default model on http://127.0.0.1:8080/v1"
    assert chosen_model(make_config({"remote.base_url": ""})).server_address == ""


def test_the_local_file_is_kept_while_a_server_is_chosen(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    chosen = chosen_model(make_config({"model.provider": "remote", "model.path": str(path)}))
    assert chosen.remote and chosen.file == path and chosen.uses_file(path)


def test_no_workspace_folder_is_the_sample_workspace(tmp_path: Path) -> None:
    for empty in ("", "  "):
        assert chosen_workspace(empty) is None
        assert workspace_folder(empty) == sample_workspace()
    assert sample_workspace() == resources.resource("sample-workspace")
    chosen = make_config({"workspace.path": str(tmp_path)}).workspace.path
    assert chosen_workspace(chosen) == tmp_path == workspace_folder(chosen)
