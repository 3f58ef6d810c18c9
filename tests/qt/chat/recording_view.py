"""A transcript that writes down every resource it is asked for and loads none of them."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QUrl

from imprint_desktop.ui.chat.view import ChatView


class RecordingView(ChatView):
    """The transcript, with every resource it is asked for written down (and none loaded)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []

    def loadResource(self, kind: int, name: QUrl | str, /) -> object:
        self.requests.append(QUrl(name).toString())
        return QByteArray()
