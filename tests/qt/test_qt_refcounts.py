"""The process survives many void Qt calls (PySide6 6.12 on 3.11 drops a None reference each)."""

from __future__ import annotations

import os
import subprocess
import sys

CALLS = """
import imprint_desktop.engine  # the guard
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
label = QLabel()
for _ in range(50_000):
    label.setText("x")
    label.setVisible(False)
print("alive")
"""


def test_fifty_thousand_void_calls_do_not_kill_the_process() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CALLS],
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "alive"
