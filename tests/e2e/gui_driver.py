"""Driving the real window in a subprocess on Xvfb: keyboard through xdotool, state through events.

The app prints one JSON line per interesting moment when ``IMPRINT_GUI_EVENTS=1`` (see
``imprint_desktop.app.report``); the driver blocks on reading the next line, so nothing sleeps.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.display import screenshot as save_screen


class GuiProcess:
    """``python -m imprint_desktop gui`` on ``display``, with its events on a pipe."""

    def __init__(self, display: str, env: dict[str, str], log: Path) -> None:
        assert shutil.which("xdotool"), "install xdotool (scripts/system-deps.sh test)"
        self.display = display
        self.log = log
        self._stderr = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "imprint_desktop", "gui"],
            env={**env, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "IMPRINT_GUI_EVENTS": "1"},
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.seen: list[dict[str, Any]] = []

    def wait_for(self, event: str, timeout: float = 60, **match: object) -> dict[str, Any]:
        """The next event named ``event`` (whose fields equal ``match``); fails on timeout/exit."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"no {event!r} within {timeout} s; saw {self.seen[-8:]}")
                line = self.process.stdout.readline()
                if not line:
                    raise AssertionError(
                        f"the app exited ({self.process.wait()}) before {event!r}: "
                        + self.log.read_text(encoding="utf-8")[-3000:]
                    )
                if not line.startswith("{"):
                    continue
                payload: dict[str, Any] = json.loads(line)
                self.seen.append(payload)
                if payload["event"] == event and all(payload.get(k) == v for k, v in match.items()):
                    return payload

    def xdotool(self, *args: str) -> str:
        return subprocess.run(
            ["xdotool", *args],
            env={**os.environ, "DISPLAY": self.display},
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    def focus_window(self) -> None:
        window = self.xdotool("search", "--sync", "--onlyvisible", "--name", "^Imprint$")
        self.xdotool("windowfocus", "--sync", window.splitlines()[0])

    def type_line(self, text: str) -> None:
        """Type ``text`` into the focused widget and press Enter."""
        self.xdotool("type", "--delay", "15", text)
        self.xdotool("key", "Return")

    def screenshot(self, path: Path) -> Path:
        """The whole screen as a PNG, read from Xvfb's own screen file (no other program)."""
        return save_screen(self.display, path)

    def quit(self) -> int:
        """Ctrl+Q, as a person would; returns the exit code."""
        self.xdotool("key", "ctrl+q")
        try:
            return self.process.wait(timeout=30)
        finally:
            self._close_pipes()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._close_pipes()

    def close(self) -> None:
        """Whatever happened: the process is gone and its pipes are closed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process.stdout is not None and not self.process.stdout.closed:
            self.process.stdout.close()
        self._stderr.close()
