"""The TOML settings store: round trip, overrides only, atomic writes, env, broken files."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import tomlkit

from imprint_desktop.core.errors import SettingsWriteError, SettingValueError, UnknownSettingError
from imprint_desktop.settings import store as store_module
from imprint_desktop.settings.store import SettingsStore, Source

HAND_WRITTEN = """\
# My Imprint settings
# (kept by hand)

[chat]
# shorter research while testing
research_timeout_sec = 60   # one minute
max_tool_iters = 8

[experimental]
flux_capacitor = "on"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "absent.toml", environ={})
    assert store.get("chat.research_timeout_sec") == 300
    assert store.source("chat.research_timeout_sec") is Source.DEFAULT
    assert store.problems == ()
    assert not (tmp_path / "absent.toml").exists(), "reading must never create the file"


def test_default_path_comes_from_the_config_dir(isolated_dirs: Path) -> None:
    store = SettingsStore(environ={})
    store.set("ui.theme", "dark")
    assert (isolated_dirs / "config" / "config.toml").is_file()


def test_file_values_are_read(config: Path) -> None:
    store = SettingsStore(config, environ={})
    assert store.get("chat.research_timeout_sec") == 60
    assert store.source("chat.research_timeout_sec") is Source.FILE
    assert store.problems == ()  # the retired and unknown keys are not problems


def test_round_trip_keeps_comments_unknown_and_retired_keys(config: Path) -> None:
    store = SettingsStore(config, environ={})
    store.set("chat.research_token_budget", 4096)
    store.set("ui.theme", "dark")
    store.reset("chat.research_timeout_sec")
    text = config.read_text(encoding="utf-8")
    for kept in (
        "# My Imprint settings",
        "# (kept by hand)",
        "# shorter research while testing",
        "max_tool_iters = 8",
        "[experimental]",
        'flux_capacitor = "on"',
    ):
        assert kept in text
    assert "research_timeout_sec" not in text
    document = tomlkit.parse(text)
    assert document["schema_version"] == store_module.SCHEMA_VERSION
    assert document["chat"]["research_token_budget"] == 4096  # type: ignore[index]
    assert document["ui"]["theme"] == "dark"  # type: ignore[index]
    assert text.startswith("# My Imprint settings\n# (kept by hand)\n")
    # Another store reading the file sees exactly the saved state.
    again = SettingsStore(config, environ={})
    assert again.get("chat.research_token_budget") == 4096
    assert again.get("chat.research_timeout_sec") == 300


def test_only_overrides_are_stored(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    store = SettingsStore(path, environ={})
    store.set("chat.max_tokens", 4096)
    store.set("chat.max_tokens", 2048)  # the default again: no override left
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    assert "chat" not in document
    assert store.source("chat.max_tokens") is Source.DEFAULT


def test_reset_all_keeps_what_imprint_does_not_own(config: Path) -> None:
    store = SettingsStore(config, environ={})
    store.set("model.n_ctx", 4096)
    store.reset_all()
    text = config.read_text(encoding="utf-8")
    assert "n_ctx" not in text and "research_timeout_sec" not in text
    assert "max_tool_iters = 8" in text and "flux_capacitor" in text
    assert store.get("model.n_ctx") == 8192


def test_a_bad_value_is_refused_and_nothing_is_written(config: Path) -> None:
    before = config.read_bytes()
    store = SettingsStore(config, environ={})
    with pytest.raises(SettingValueError, match="between 10 and 3600"):
        store.update({"ui.theme": "dark", "chat.research_timeout_sec": 5})
    assert config.read_bytes() == before
    with pytest.raises(UnknownSettingError):
        store.set("chat.no_such_key", 1)


def test_failed_write_leaves_the_old_file_and_no_litter(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = config.read_bytes()
    store = SettingsStore(config, environ={})

    def disk_full(_descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module.os, "fsync", disk_full)
    with pytest.raises(SettingsWriteError, match=r"No space left on device.*unchanged"):
        store.set("ui.theme", "dark")
    assert config.read_bytes() == before
    assert sorted(path.name for path in config.parent.iterdir()) == ["config.toml"]
    assert store.get("ui.theme") == "system"  # the store did not pretend it saved


def test_write_replaces_the_file_in_one_step(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new text is complete on disk before it takes the file's name."""
    seen: list[tuple[str, str]] = []
    real_replace = Path.replace

    def watching_replace(self: Path, target: Path) -> Path:
        seen.append((self.read_text(encoding="utf-8"), Path(target).read_text(encoding="utf-8")))
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", watching_replace)
    SettingsStore(config, environ={}).set("ui.theme", "dark")
    staged, previous = seen[0]
    assert 'theme = "dark"' in staged and previous == HAND_WRITTEN
    assert config.read_text(encoding="utf-8") == staged


def test_a_change_made_by_another_process_is_not_lost(config: Path) -> None:
    first = SettingsStore(config, environ={})
    second = SettingsStore(config, environ={})
    second.set("model.n_ctx", 4096)
    first.set("ui.theme", "light")
    final = SettingsStore(config, environ={})
    assert final.get("model.n_ctx") == 4096 and final.get("ui.theme") == "light"


def test_env_overrides_win_and_are_reported_as_such(config: Path) -> None:
    store = SettingsStore(config, environ={"IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC": "90"})
    assert store.get("chat.research_timeout_sec") == 90
    assert store.source("chat.research_timeout_sec") is Source.ENV
    assert store.saved_value("chat.research_timeout_sec") == 60
    assert store.snapshot()["chat.research_timeout_sec"] == 90


def test_a_bad_env_value_is_ignored_and_reported(config: Path) -> None:
    store = SettingsStore(config, environ={"IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC": "9000"})
    assert store.get("chat.research_timeout_sec") == 60
    [problem] = store.problems
    assert problem.key == "chat.research_timeout_sec"
    assert "IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC" in problem.message and "3600" in problem.message


def test_the_retired_env_var_is_ignored_and_left_alone(config: Path) -> None:
    environ = {"IMPRINT_CHAT_MAX_TOOL_ITERS": "3"}
    store = SettingsStore(config, environ=environ)
    assert store.problems == ()
    assert "chat.max_tool_iters" not in store.snapshot()
    store.set("ui.theme", "dark")
    assert environ == {"IMPRINT_CHAT_MAX_TOOL_ITERS": "3"}
    assert "max_tool_iters = 8" in config.read_text(encoding="utf-8")


def test_bad_values_in_the_file_fall_back_to_defaults_with_reasons(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[chat]\nresearch_timeout_sec = 5\nresearch_no_progress_rounds = 6\n"
        "temperature = 'hot'\n[model]\nprovider = 'cloud'\n[ui]\ntheme = 'dark'\n",
        encoding="utf-8",
    )
    before = path.read_bytes()
    store = SettingsStore(path, environ={})
    problems = {problem.key: problem.message for problem in store.problems}
    assert set(problems) == {"chat.research_timeout_sec", "chat.temperature", "model.provider"}
    assert "between 10 and 3600 s (got 5)" in problems["chat.research_timeout_sec"]
    assert "default (300)" in problems["chat.research_timeout_sec"]
    assert store.get("chat.research_timeout_sec") == 300
    assert store.get("chat.research_no_progress_rounds") == 6  # good keys still apply
    assert store.get("ui.theme") == "dark"
    assert path.read_bytes() == before  # loading never rewrites
    store.set("chat.max_tokens", 1000)  # saving another key keeps the person's bad value to fix
    assert "research_timeout_sec = 5" in path.read_text(encoding="utf-8")


def test_a_section_that_is_not_a_table_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('chat = "fast"\n', encoding="utf-8")
    store = SettingsStore(path, environ={})
    assert [problem.key for problem in store.problems] == ["chat"]
    store.set("chat.max_tokens", 1000)
    assert SettingsStore(path, environ={}).get("chat.max_tokens") == 1000


def test_an_api_key_in_the_file_is_ignored_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[remote]\napi_key = "sk-plaintext"\n', encoding="utf-8")
    store = SettingsStore(path, environ={})
    [problem] = store.problems
    assert problem.key == "remote.api_key" and "keyring" in problem.message
    assert "sk-plaintext" not in problem.message
    assert "remote.api_key" not in store.snapshot()


@pytest.mark.parametrize(
    "content",
    [b"[chat\nresearch_timeout_sec = 60\n", b"\xff\xfe not utf-8 \x80", b"a = 1\na = 2\n"],
    ids=["syntax", "encoding", "duplicate-key"],
)
def test_a_broken_file_never_stops_us_and_is_backed_up_before_saving(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(content)
    store = SettingsStore(path, environ={})
    [problem] = store.problems
    assert problem.key is None and str(path) in problem.message
    assert store.get("chat.research_timeout_sec") == 300
    assert path.read_bytes() == content  # untouched by loading

    store.set("ui.theme", "dark")
    backups = list(tmp_path.glob("config.toml.broken-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == content
    assert SettingsStore(path, environ={}).get("ui.theme") == "dark"
    assert any(str(backups[0]) in problem.message for problem in store.problems)


def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.mkdir()  # a folder where the file should be: reading fails with an OSError
    store = SettingsStore(path, environ={})
    [problem] = store.problems
    assert "could not be read" in problem.message
    assert store.get("ui.theme") == "system"


def test_listeners_hear_about_changed_keys_only(config: Path) -> None:
    store = SettingsStore(config, environ={})
    heard: list[frozenset[str]] = []
    unsubscribe = store.subscribe(heard.append)
    store.update({"ui.theme": "dark", "chat.research_timeout_sec": 60})  # the second is unchanged
    store.set("ui.theme", "dark")
    unsubscribe()
    store.set("ui.theme", "light")
    assert heard == [frozenset({"ui.theme"})]
