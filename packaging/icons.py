"""Render Imprint's icon from ``resources/icons/imprint.svg`` into the formats platforms want.

* ``resources/icons/imprint.ico``: Windows (launchers, installer, Add/Remove Programs); one
  PNG-compressed image per size, which Windows reads since Vista.
* ``resources/linux/icons/<n>x<n>/imprint-desktop.png``: the hicolor theme sizes for Linux.

The files are committed with the SHA-256 of the SVG they were rendered from
(``resources/icons/imprint.svg.sha256``); build.py renders them again when one is missing or the SVG
changed (``python packaging/icons.py`` does it by hand). A hash rather than file times, because a
fresh clone gives every file the same time. Qt renders the SVG, so no imaging library is needed.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SVG = ROOT / "resources" / "icons" / "imprint.svg"
ICO = ROOT / "resources" / "icons" / "imprint.ico"
STAMP = ROOT / "resources" / "icons" / "imprint.svg.sha256"
LINUX_ICONS = ROOT / "resources" / "linux" / "icons"
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
PNG_SIZES = (48, 128, 256)
ICON_NAME = "imprint-desktop"


def outputs() -> list[Path]:
    return [ICO, *(LINUX_ICONS / f"{n}x{n}" / f"{ICON_NAME}.png" for n in PNG_SIZES)]


def _svg_hash() -> str:
    return hashlib.sha256(SVG.read_bytes()).hexdigest()


def stale() -> bool:
    """True when an output is missing or was rendered from another SVG."""
    if not STAMP.is_file() or STAMP.read_text(encoding="ascii").strip() != _svg_hash():
        return True
    return not all(path.is_file() for path in outputs())


def _render_png(size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt  # noqa: PLC0415
    from PySide6.QtGui import QImage, QPainter  # noqa: PLC0415
    from PySide6.QtSvg import QSvgRenderer  # noqa: PLC0415

    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"icons: cannot read {SVG}")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())


def ico_bytes(images: dict[int, bytes]) -> bytes:
    """An ICO file holding ``images`` (size → PNG bytes)."""
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = len(header) + 16 * len(images)
    entries, payload = b"", b""
    for size, png in sorted(images.items()):
        side = 0 if size >= 256 else size  # 0 means 256 in an ICO directory entry
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(png), offset)
        payload += png
        offset += len(png)
    return header + entries + payload


def render() -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication  # noqa: PLC0415

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    pngs = {size: _render_png(size) for size in sorted({*ICO_SIZES, *PNG_SIZES})}
    ICO.write_bytes(ico_bytes({size: pngs[size] for size in ICO_SIZES}))
    for size in PNG_SIZES:
        target = LINUX_ICONS / f"{size}x{size}" / f"{ICON_NAME}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pngs[size])
    STAMP.write_text(_svg_hash() + "\n", encoding="ascii")
    return outputs()


if __name__ == "__main__":
    for path in render():
        print(path.relative_to(ROOT))
