"""A transcript (or a bare document) that writes down every resource it is asked for and loads
none of them."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QUrl
from PySide6.QtGui import QTextDocument

from imprint_desktop.ui.chat.view import ChatView


class _Recording:
    """Every resource asked for, written down in ``requests``; an empty one given back."""

    requests: list[str]

    def loadResource(self, kind: int, name: QUrl | str, /) -> object:
        self.requests.append(QUrl(name).toString())
        return QByteArray()


class RecordingView(_Recording, ChatView):
    """The transcript, with every resource it is asked for written down (and none loaded)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = []


class RecordingDocument(_Recording, QTextDocument):
    """A rich-text document, as a label or a tooltip lays one out, that records the same way."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = []
