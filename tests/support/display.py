"""A real X display for end-to-end runs and screenshots: Xvfb on a display number it picks.

Screenshots need no other program: Xvfb keeps its screen in a file (``-fbdir``, in the XWD
format), and :func:`screenshot` turns that file into a PNG.
"""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtGui import QImage

# The screen file of each display started by xvfb(), by DISPLAY name.
_SCREENS: dict[str, Path] = {}


@contextmanager
def xvfb(width: int = 1280, height: int = 800) -> Iterator[str]:
    """Start Xvfb and yield its ``DISPLAY``; it is stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="imprint-xvfb-") as screen_folder:
        read_end, write_end = os.pipe()
        process = subprocess.Popen(
            [
                "Xvfb",
                "-displayfd",
                str(write_end),
                "-screen",
                "0",
                f"{width}x{height}x24",
                "-fbdir",
                screen_folder,
                "-nolisten",
                "tcp",
                "-noreset",
            ],
            pass_fds=(write_end,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_end)
        display = ""
        try:
            # Xvfb writes the display number once it accepts connections.
            with os.fdopen(read_end, "rb") as pipe:
                number = pipe.readline().strip().decode()
            if not number:
                raise RuntimeError("Xvfb did not start")
            display = f":{number}"
            _SCREENS[display] = Path(screen_folder) / "Xvfb_screen0"
            yield display
        finally:
            _SCREENS.pop(display, None)
            process.terminate()
            process.wait(timeout=30)


def screenshot(display: str, path: Path) -> Path:
    """Save the whole screen of ``display`` (started by :func:`xvfb`) as a PNG at ``path``."""
    data = _SCREENS[display].read_bytes()
    # XWD: a header of big-endian 32-bit fields, the window name, a colour map, then the pixels.
    fields = struct.unpack_from(">25I", data)
    header_size, pixmap_format, width, height = fields[0], fields[2], fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line, colours = (
        fields[7],
        fields[11],
        fields[12],
        fields[19],
    )
    if (pixmap_format, bits_per_pixel, byte_order) != (2, 32, 0):
        raise RuntimeError(f"an Xvfb screen file this reader does not know: {fields}")
    start = header_size + 12 * colours
    pixels = data[start : start + bytes_per_line * height]
    # 32-bit little-endian pixels, blue first: QImage's RGB32 layout on this byte order.
    image = QImage(pixels, width, height, bytes_per_line, QImage.Format.Format_RGB32)
    if not image.copy().save(str(path), "PNG"):
        raise RuntimeError(f"could not write {path}")
    return path
