"""``imprint desktop-integration``: the menu entry and icons, installed per user and removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from imprint_desktop.commands import desktop

ROOT = Path(__file__).resolve().parents[3]


def _cli(data_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    return subprocess.run(
        [sys.executable, "-m", "imprint_desktop", "desktop-integration", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux desktops only")
def test_install_then_uninstall_through_the_command_line(tmp_path: Path) -> None:
    data_home = tmp_path / "share"
    result = _cli(data_home, "install")
    assert result.returncode == 0, result.stderr
    entry = data_home / "applications" / "imprint-desktop.desktop"
    icons = sorted((data_home / "icons" / "hicolor").glob("*/apps/imprint-desktop.png"))
    assert entry.is_file()
    assert [p.parent.parent.name for p in icons] == ["128x128", "256x256", "48x48"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in icons)

    (data_home / "applications" / "someone-else.desktop").write_text("[Desktop Entry]\n")
    result = _cli(data_home, "uninstall")
    assert result.returncode == 0, result.stderr
    assert not entry.exists() and not any(data_home.rglob("imprint-desktop.png"))
    assert (data_home / "applications" / "someone-else.desktop").is_file()

    again = _cli(data_home, "uninstall")
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_the_entry_launches_this_installation(tmp_path: Path) -> None:
    written = desktop.install(tmp_path, ["/opt/Imprint App/imprint-gui"])
    text = written[0].read_text(encoding="utf-8")
    assert 'Exec="/opt/Imprint App/imprint-gui"\n' in text
    assert "TryExec=/opt/Imprint App/imprint-gui\n" in text
    assert "Icon=imprint-desktop\n" in text and "Name=Imprint\n" in text


def test_the_entry_is_valid(tmp_path: Path) -> None:
    validate = shutil.which("desktop-file-validate")
    assert validate, "install desktop-file-utils (scripts/system-deps.sh test does)"
    entry = desktop.install(tmp_path, [sys.executable, "-m", "imprint_desktop"])[0]
    result = subprocess.run([validate, str(entry)], capture_output=True, text=True)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 0 and not errors, result.stdout + result.stderr


def test_data_home_follows_xdg_only_when_absolute(tmp_path: Path) -> None:
    assert desktop.data_home({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path
    assert desktop.data_home({"XDG_DATA_HOME": "relative/share"}) == (
        Path.home() / ".local" / "share"
    )
    assert desktop.data_home({}) == Path.home() / ".local" / "share"
