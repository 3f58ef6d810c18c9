"""A real X display for end-to-end runs and screenshots: Xvfb on a display number it picks."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def xvfb(width: int = 1280, height: int = 800) -> Iterator[str]:
    """Start Xvfb and yield its ``DISPLAY``; it is stopped afterwards."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
            str(write_end),
            "-screen",
            "0",
            f"{width}x{height}x24",
            "-nolisten",
            "tcp",
            "-noreset",
        ],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        # Xvfb writes the display number once it accepts connections.
        with os.fdopen(read_end, "rb") as pipe:
            number = pipe.readline().strip().decode()
        if not number:
            raise RuntimeError("Xvfb did not start")
        yield f":{number}"
    finally:
        process.terminate()
        process.wait(timeout=30)
