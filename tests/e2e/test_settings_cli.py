"""`imprint settings` as a person runs it, including broken and legacy config files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Imprint

LEGACY = """\
# written by an older Imprint
[chat]
max_tool_iters = 12
research_timeout_sec = 120
"""


def config_file(isolated_dirs: Path) -> Path:
    path = isolated_dirs / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_set_get_list_reset(imprint: Imprint) -> None:
    assert imprint("settings", "set", "chat.research_no_progress_rounds", "6").returncode == 0
    got = imprint("settings", "get", "chat.research_no_progress_rounds")
    assert (got.returncode, got.stdout) == (0, "6\n")
    listed = imprint("settings", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert rows["chat.research_no_progress_rounds"]["source"] == "file"
    assert imprint("settings", "reset", "--all").returncode == 0
    listed = imprint("settings", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert rows["chat.research_no_progress_rounds"] == rows["chat.research_no_progress_rounds"] | {
        "value": 4,
        "source": "default",
    }


def test_bad_value_exits_2_with_key_and_bounds(imprint: Imprint, isolated_dirs: Path) -> None:
    result = imprint("settings", "set", "chat.research_token_budget", "512")
    assert result.returncode == 2
    assert "chat.research_token_budget" in result.stderr and "1024 and 2,000,000" in result.stderr
    assert not config_file(isolated_dirs).exists()


def test_legacy_key_and_env_var_are_ignored_and_kept(imprint: Imprint, isolated_dirs: Path) -> None:
    path = config_file(isolated_dirs)
    path.write_text(LEGACY, encoding="utf-8")
    env = {"IMPRINT_CHAT_MAX_TOOL_ITERS": "3"}
    listing = imprint("settings", "list", "--json", env=env)
    assert listing.returncode == 0 and listing.stderr == ""
    rows = json.loads(listing.stdout)
    assert "chat.max_tool_iters" not in rows
    assert rows["chat.research_timeout_sec"]["value"] == 120
    assert imprint("settings", "set", "ui.theme", "dark", env=env).returncode == 0
    text = path.read_text(encoding="utf-8")
    assert "max_tool_iters = 12" in text and "# written by an older Imprint" in text


def test_broken_file_is_reported_used_as_defaults_and_backed_up(
    imprint: Imprint, isolated_dirs: Path
) -> None:
    path = config_file(isolated_dirs)
    broken = "[chat]\nresearch_timeout_sec = = 5\n"
    path.write_text(broken, encoding="utf-8")
    listing = imprint("settings", "get", "chat.research_timeout_sec")
    assert listing.returncode == 0 and listing.stdout == "300\n"
    assert "not valid TOML" in listing.stderr
    assert path.read_text(encoding="utf-8") == broken

    changed = imprint("settings", "set", "chat.research_timeout_sec", "90")
    assert changed.returncode == 0
    [backup] = path.parent.glob("config.toml.broken-*")
    assert backup.read_text(encoding="utf-8") == broken
    got = imprint("settings", "get", "chat.research_timeout_sec")
    assert (got.returncode, got.stdout) == (0, "90\n")


def test_out_of_bounds_value_in_file_falls_back_with_a_reason(
    imprint: Imprint, isolated_dirs: Path
) -> None:
    config_file(isolated_dirs).write_text("[chat]\nresearch_timeout_sec = 99999\n")
    result = imprint("settings", "get", "chat.research_timeout_sec")
    assert result.returncode == 0 and result.stdout == "300\n"
    assert "chat.research_timeout_sec must be between 10 and 3600 s (got 99999)" in result.stderr


def test_env_override_and_bad_env_value(imprint: Imprint) -> None:
    result = imprint(
        "settings",
        "get",
        "chat.research_timeout_sec",
        env={"IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC": "60"},
    )
    assert (result.returncode, result.stdout) == (0, "60\n")
    result = imprint(
        "settings",
        "get",
        "chat.research_timeout_sec",
        env={"IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC": "sixty"},
    )
    # A bad value in the environment is reported and the default used: not bad usage.
    assert (result.returncode, result.stdout) == (0, "300\n")
    assert "IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC" in result.stderr


def test_unknown_command_and_key_are_usage_errors(imprint: Imprint) -> None:
    assert imprint("settings", "frobnicate").returncode == 2
    assert imprint("settings", "get", "nope.nothing").returncode == 2
