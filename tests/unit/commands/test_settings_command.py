"""`imprint settings` in-process: the contract of DESIGN §4 for list / get / set / reset."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import tomlkit

from imprint_desktop import cli
from imprint_desktop.settings import schema
from imprint_desktop.settings.secrets import SERVICE
from tests.support.memory_keyring import MemoryKeyring


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["settings", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def config_file(isolated_dirs: Path) -> Path:
    return isolated_dirs / "config" / "config.toml"


def test_list_json_describes_every_setting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IMPRINT_CHAT_MAX_TOKENS", "512")
    assert run(capsys, "set", "ui.theme", "dark")[0] == 0
    code, out, err = run(capsys, "list", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)
    assert list(rows) == [setting.key for setting in schema.SETTINGS]
    for row in rows.values():
        assert {"value", "default", "min", "max", "description", "source"} <= set(row)
    timeout = rows["chat.research_timeout_sec"]
    assert (timeout["value"], timeout["default"], timeout["min"], timeout["max"]) == (
        300,
        300,
        10,
        3600,
    )
    assert timeout["source"] == "default"
    assert rows["ui.theme"]["value"] == "dark" and rows["ui.theme"]["source"] == "file"
    assert rows["chat.max_tokens"]["value"] == 512 and rows["chat.max_tokens"]["source"] == "env"
    assert rows["remote.api_key"]["value"] is None and rows["remote.api_key"]["stored"] is False


def test_list_text_shows_values_sources_and_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert "chat.research_timeout_sec = 300  (default; between 10 and 3600 s)" in out
    assert "remote.api_key = (not set)" in out


def test_set_get_reset(capsys: pytest.CaptureFixture[str], config_file: Path) -> None:
    code, out, _ = run(capsys, "set", "chat.research_timeout_sec", "60")
    assert (code, out) == (0, "chat.research_timeout_sec = 60\n")
    assert tomlkit.parse(config_file.read_text())["chat"]["research_timeout_sec"] == 60  # type: ignore[index]
    assert run(capsys, "get", "chat.research_timeout_sec")[:2] == (0, "60\n")
    code, out, _ = run(capsys, "reset", "chat.research_timeout_sec")
    assert code == 0 and "300 (default)" in out
    assert "research_timeout_sec" not in config_file.read_text()


def test_set_out_of_bounds_exits_2_naming_key_and_bounds(
    capsys: pytest.CaptureFixture[str], config_file: Path
) -> None:
    code, out, err = run(capsys, "set", "chat.research_timeout_sec", "5")
    assert code == 2 and out == ""
    assert "chat.research_timeout_sec" in err and "between 10 and 3600" in err
    assert not config_file.exists()
    code, _, err = run(capsys, "set", "chat.temperature", "warm")
    assert code == 2 and "chat.temperature" in err


def test_unknown_key_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "get", "chat.max_tool_iters")
    assert code == 2 and "no setting named 'chat.max_tool_iters'" in err


def test_restart_settings_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "set", "network.proxy", "http://127.0.0.1:3128")
    assert code == 0 and "Restart Imprint" in out


def test_env_override_is_explained_on_set(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IMPRINT_UI_THEME", "light")
    code, _, err = run(capsys, "set", "ui.theme", "dark")
    assert code == 0 and "IMPRINT_UI_THEME is set and overrides" in err
    assert run(capsys, "get", "ui.theme")[:2] == (0, "light\n")


def test_reset_all_keeps_api_keys(
    capsys: pytest.CaptureFixture[str], memory_keyring: MemoryKeyring, config_file: Path
) -> None:
    memory_keyring.set_password(SERVICE, "remote.api_key", "sk-keep")
    assert run(capsys, "set", "model.n_ctx", "4096")[0] == 0
    code, out, _ = run(capsys, "reset", "--all")
    assert code == 0 and "kept" in out
    assert "n_ctx" not in config_file.read_text()
    assert memory_keyring.passwords == {(SERVICE, "remote.api_key"): "sk-keep"}


def test_api_key_goes_to_the_keyring_never_to_the_file_or_output(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    memory_keyring: MemoryKeyring,
    config_file: Path,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-from-stdin\n"))
    code, out, err = run(capsys, "set", "remote.api_key", "-")
    assert code == 0 and "Stored remote.api_key" in out and err == ""
    assert memory_keyring.passwords == {(SERVICE, "remote.api_key"): "sk-from-stdin"}
    assert not config_file.exists()
    for args in (("get", "remote.api_key"), ("list",), ("list", "--json")):
        code, out, err = run(capsys, *args)
        assert code == 0 and "sk-from-stdin" not in out + err
    code, out, _ = run(capsys, "get", "remote.api_key")
    assert code == 0 and "(stored in MemoryKeyring" in out
    code, _, err = run(capsys, "set", "remote.api_key", "sk-on-the-command-line")
    assert code == 0 and "shell history" in err
    assert run(capsys, "reset", "remote.api_key")[0] == 0
    assert memory_keyring.passwords == {}


def test_no_keyring_is_an_error_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    import keyring
    from keyring.backends import fail

    keyring.set_keyring(fail.Keyring())
    code, _, err = run(capsys, "set", "remote.api_key", "sk-x")
    assert code == 1 and "No secure system keyring" in err
    code, out, _ = run(capsys, "list")
    assert code == 0 and "remote.api_key = (keyring unavailable)" in out


def test_broken_config_still_lists_and_is_left_alone(
    capsys: pytest.CaptureFixture[str], config_file: Path
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text("[chat\nresearch_timeout_sec = 60\n")
    code, out, err = run(capsys, "list", "--json")
    assert code == 0 and json.loads(out)["chat.research_timeout_sec"]["value"] == 300
    assert "not valid TOML" in err
    assert config_file.read_text() == "[chat\nresearch_timeout_sec = 60\n"


def test_config_option_picks_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    assert run(capsys, "--config", str(other), "set", "ui.theme", "dark")[0] == 0
    assert 'theme = "dark"' in other.read_text()
