"""The typed settings snapshot (``core/config.py``): generated from the schema, in step with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import UnknownSettingError
from imprint_desktop.settings import codegen, schema
from imprint_desktop.settings.schema import Kind
from imprint_desktop.settings.store import SettingsStore
from tests.support.settings import make_config, setting_values

NON_SECRET = [setting for setting in schema.SETTINGS if not setting.secret]
PYTHON_TYPES = {
    Kind.INT: int,
    Kind.FLOAT: float,
    Kind.BOOL: bool,
    Kind.STR: str,
    Kind.TEXT: str,
    Kind.CHOICE: str,
    Kind.FILE: str,
    Kind.FOLDER: str,
}


def test_the_checked_in_snapshot_is_what_the_generator_writes_now() -> None:
    assert codegen.TARGET.read_text(encoding="utf-8") == codegen.render(), f"run: {codegen.COMMAND}"


def test_the_generator_writes_a_module_the_formatter_leaves_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "config.py"
    monkeypatch.setattr(codegen, "TARGET", target)
    codegen.main()
    text = target.read_text(encoding="utf-8")
    assert text == codegen.render()
    assert str(target) in capsys.readouterr().out
    assert "do not edit" in text.splitlines()[2]
    assert all(len(line) <= 100 for line in text.splitlines())
    assert text.endswith("\n") and not text.endswith("\n\n")  # one final newline, as ruff writes
    compile(text, str(target), "exec")


@pytest.mark.parametrize("setting", NON_SECRET, ids=lambda setting: setting.key)
def test_every_setting_is_a_typed_field_of_its_section(setting: schema.Setting) -> None:
    defaults = make_config()
    section = getattr(defaults, setting.section)
    value = getattr(section, setting.name)
    assert value == setting.default
    assert type(value) is PYTHON_TYPES[setting.kind]


def test_the_snapshot_has_every_setting_and_no_secret() -> None:
    values = make_config().as_values()
    assert list(values) == [setting.key for setting in NON_SECRET]
    assert "remote.api_key" not in values
    sections = {field.name for field in dataclasses.fields(Config)}
    assert sections == {setting.section for setting in NON_SECRET}


def test_the_classes_have_no_defaults_of_their_own() -> None:
    """The schema is the only place defaults live."""
    classes = [Config, *(type(getattr(make_config(), name)) for name in schema_sections())]
    for cls in classes:
        for field in dataclasses.fields(cls):
            assert field.default is dataclasses.MISSING, f"{cls.__name__}.{field.name}"
            assert field.default_factory is dataclasses.MISSING, f"{cls.__name__}.{field.name}"


def schema_sections() -> list[str]:
    return sorted({setting.section for setting in NON_SECRET})


def test_values_go_through_the_snapshot_unchanged() -> None:
    values = setting_values(
        {"chat.temperature": 1, "model.provider": "remote", "workspace.path": "/data/docs"}
    )
    config = Config.from_values(values)
    assert config.chat.temperature == 1.0 and isinstance(config.chat.temperature, float)
    whole = Config.from_values(setting_values({"chat.research_timeout_sec": 30.0}))
    assert whole.chat.research_timeout_sec == 30 and type(whole.chat.research_timeout_sec) is int
    assert config.model.provider == "remote"
    assert config.workspace.path == "/data/docs"
    assert config.as_values() == values
    assert Config.from_values(config.as_values()) == config


def test_the_snapshot_is_frozen() -> None:
    config = make_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.chat.max_tokens = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("chat.max_tokens", "2048", TypeError),
        ("chat.max_tokens", True, TypeError),
        ("chat.max_tokens", 20.5, TypeError),
        ("chat.temperature", False, TypeError),
        ("chat.research_first", 1, TypeError),
        ("model.path", None, TypeError),
        ("model.provider", "cloud", ValueError),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_naming_its_key(
    key: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=key.replace(".", r"\.")):
        Config.from_values(setting_values({key: value}))


def test_a_missing_key_is_refused() -> None:
    values = setting_values()
    del values["network.proxy"]
    with pytest.raises(KeyError, match=r"network\.proxy"):
        Config.from_values(values)


def test_the_store_gives_the_snapshot_of_its_effective_values(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[chat]\nmax_tokens = 512\n[model]\nprovider = "remote"\n', encoding="utf-8")
    store = SettingsStore(path, environ={"IMPRINT_WORKSPACE_PATH": "/srv/docs"})
    config = store.config()
    assert config.chat.max_tokens == 512
    assert config.model.provider == "remote"
    assert config.workspace.path == "/srv/docs"
    assert config.chat.research_timeout_sec == schema.get("chat.research_timeout_sec").default
    assert config.as_values() == dict(store.snapshot())


def test_the_test_helper_refuses_a_key_the_schema_does_not_know() -> None:
    with pytest.raises(UnknownSettingError, match=r"chat\.max_token"):
        make_config({"chat.max_token": 5})
