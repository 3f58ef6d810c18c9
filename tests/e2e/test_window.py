"""The real window on a real X display (Xvfb), started the way a person starts it."""

from __future__ import annotations

import shutil
from collections import Counter
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
    # The window's three panes (conversations, the chat, the research panel) each stand out from
    # the window's own colour (its left margin's) down most of its height: each is drawn, and
    # they are laid out side by side.
    backdrop = Counter(image.pixel(1, y) for y in range(image.height())).most_common(1)[0][0]
    for share in (0.1, 0.5, 0.9):
        x = int(image.width() * share)
        drawn = sum(image.pixel(x, y) != backdrop for y in range(image.height()))
        assert drawn > image.height() / 2, f"nothing drawn down the window at x={x}"


def test_broken_settings_do_not_stop_the_window(
    imprint: Imprint, display: str, isolated_dirs: Path
) -> None:
    config = isolated_dirs / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[[[ not toml", encoding="utf-8")
    result = imprint("gui", "--quit-after", "1", env=xcb_env(display))
    assert result.returncode == 0, result.stderr
    assert config.read_text(encoding="utf-8") == "[[[ not toml"
