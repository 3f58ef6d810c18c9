"""The process survives many void Qt calls (PySide6 6.12 on 3.11 drops a None reference each)."""

from __future__ import annotations

import os
import subprocess
import sys

CALLS = """
import imprint_desktop.background  # the guard
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


TRANSCRIPT = """
from PySide6.QtWidgets import QApplication
app = QApplication([])
from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.chat.view import ChatView
view = ChatView()
view.resize(600, 400)
view.show()
for number in range(3_000):
    view.begin_live("Thinking…")
    view.append_text(f"Paragraph {number} with a [1] citation.\\n\\nAnd *more*")
    view._render_live()
    view.end_live(ChatMessage("assistant", f"Answer {number}."))
    if number % 100 == 99:
        view.show_messages(view.messages[-5:])
    app.processEvents()
print("alive")
"""


def test_the_transcript_alone_survives_thousands_of_renders() -> None:
    """Only the transcript's modules are imported (no ``background``, no window), as a test or a
    tool that shows a conversation would: the guard comes with the widgets."""
    result = subprocess.run(
        [sys.executable, "-c", TRANSCRIPT],
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "alive"
