"""What the window says before any chat: settings problems, errors to act on, the welcome."""

from __future__ import annotations

from html import escape
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from imprint_desktop import APP_NAME
from imprint_desktop.core import resources
from imprint_desktop.core.chosen import chosen_model, chosen_workspace, sample_workspace
from imprint_desktop.settings.store import SettingsStore

#: What the starter model is good for, said wherever it is offered (the welcome, the model box).
STARTER_HONESTY = (
    "The starter model comes with Imprint so you can try it at once. It is very small: its "
    "answers are often wrong or miss what the passages say. A recommended model (Model → "
    "Models… → Recommended) researches far better."
)


def welcome_html(store: SettingsStore, starter: Path | bool | None) -> str:
    """The empty conversation's text: what to do, and what model and folder will be used.

    ``starter`` is the starter model's file, None when it is not installed, or True while that
    is still being checked (off the GUI thread: finding it scans the installed packages).
    """
    config = store.config()
    chosen = chosen_model(config)
    if chosen.remote:
        model = f"Remote server {chosen.server_address}"
        name = chosen.server_model
        model += f", model “{name}”" if name else ", the server's default model"
    elif chosen.file is not None:
        model = f"Local model {chosen.file}"
    elif starter is True:
        model = resources.STARTER_NAME
    elif starter is not None and starter is not False:
        model = f"{resources.STARTER_NAME}, {starter}"
    else:
        model = "No model yet: choose one in Preferences → Model"
    honest = ""
    if not chosen.remote and chosen.file is None and starter not in (None, False):
        honest = (
            "<p><i>The starter model is for trying Imprint: it is very small and often wrong. "
            "For answers you can rely on, get a recommended model in Model → Models… → "
            "Recommended.</i></p>"
        )
    folder = chosen_workspace(config.workspace.path)
    workspace = folder if folder is not None else f"Sample workspace, {sample_workspace()}"
    return (
        f"<h2>{APP_NAME}</h2>"
        "<p>Ask a question below; the model researches your documents and answers with "
        "sources.</p>"
        f"<p><b>Model:</b> {escape(str(model))}<br>"
        f"<b>Workspace:</b> {escape(str(workspace))}</p>{honest}"
    )


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
        self.setVisible(bool(messages))
        if messages:  # laying out rich text costs; most starts have nothing to say
            items = "".join(f"<li>{escape(message)}</li>" for message in messages)
            self.text.setText(f"<b>Some settings could not be used.</b><ul>{items}</ul>")

    def show_error(self, message: str) -> None:
        """One sentence about something that went wrong, with what to do about it."""
        self.text.setText(f"<b>{escape(message)}</b>")
        self.setVisible(True)
