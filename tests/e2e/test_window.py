"""The real window on a real X display (Xvfb), started the way a person starts it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tests.e2e.conftest import Imprint
from tests.support.display import xvfb

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    assert shutil.which("Xvfb"), "install Xvfb (the README's test command does)"
    with xvfb() as name:
        yield name


def xcb_env(display: str) -> dict[str, str]:
    return {"DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}


def test_window_opens_and_closes_cleanly(imprint: Imprint, display: str, tmp_path: Path) -> None:
    picture = tmp_path / "window.png"
    result = imprint(
        "gui", "--quit-after", "1.5", "--screenshot", str(picture), env=xcb_env(display)
    )
    assert result.returncode == 0, result.stderr
    image = QImage(str(picture))
    assert image.width() >= 600 and image.height() >= 400
    colours = {
        image.pixel(x, y) for x in range(0, image.width(), 17) for y in range(0, image.height(), 17)
    }
    assert len(colours) > 3, "the window drew something, not a blank rectangle"


def test_broken_settings_do_not_stop_the_window(
    imprint: Imprint, display: str, isolated_dirs: Path
) -> None:
    config = isolated_dirs / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[[[ not toml", encoding="utf-8")
    result = imprint("gui", "--quit-after", "1", env=xcb_env(display))
    assert result.returncode == 0, result.stderr
    assert config.read_text(encoding="utf-8") == "[[[ not toml"
