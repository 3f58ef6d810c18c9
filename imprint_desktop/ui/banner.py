"""A dismissable strip at the top of the window: settings problems, or an error to act on."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget


class ProblemsBanner(QFrame):
    """A dismissable strip that lists settings problems found at start-up."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemsBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "#problemsBanner { background: #fff4ce; color: #3d2e00; border: 1px solid #e0c36c; }"
        )
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open Preferences")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.clicked.connect(self.hide)
        buttons = QVBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.dismiss_button)
        buttons.addStretch(1)
        layout = QHBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addLayout(buttons)

    def show_problems(self, messages: list[str]) -> None:
        items = "".join(f"<li>{escape(message)}</li>" for message in messages)
        self.text.setText(f"<b>Some settings could not be used.</b><ul>{items}</ul>")
        self.setVisible(bool(messages))

    def show_error(self, message: str) -> None:
        """One sentence about something that went wrong, with what to do about it."""
        self.text.setText(f"<b>{escape(message)}</b>")
        self.setVisible(True)
