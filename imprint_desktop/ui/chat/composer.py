"""The composer: where a question is typed, and the button that sends it or stops the reply.

Enter sends, Shift+Enter starts a new line, Esc stops a running reply. While a reply runs the Send
button becomes Stop (same place, same shortcut path), so the person never hunts for it. The box
stays editable during a reply: the next question can be written while the answer arrives.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QWidget


class QuestionEdit(QPlainTextEdit):
    """A plain-text box where Enter means "send" and Esc means "stop"."""

    sig_submit_requested = Signal()
    sig_stop_requested = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, modifiers = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if modifiers & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.sig_submit_requested.emit()
            event.accept()
            return
        if key == Qt.Key.Key_Escape:
            self.sig_stop_requested.emit()
            event.accept()
            return
        super().keyPressEvent(event)


_LABELS = {False: "&Send", True: "S&top"}  # the button's, while idle and while a reply runs


class Composer(QWidget):
    """Question box plus Send/Stop."""

    sig_question_sent = Signal(str)
    sig_stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = QuestionEdit()
        self.edit.setObjectName("questionBox")
        self.edit.setAccessibleName("Question")
        self.edit.setAccessibleDescription("Enter sends, Shift+Enter starts a new line, Esc stops")
        self.edit.setPlaceholderText(
            "Ask about your documents…  (Enter sends, Shift+Enter: new line)"
        )
        self.edit.setTabChangesFocus(True)
        self.edit.setFixedHeight(self.edit.fontMetrics().lineSpacing() * 4 + 16)
        self.button = QPushButton(_LABELS[False])
        self.button.setObjectName("sendButton")
        self.button.setAccessibleName("Send question")
        self.button.setDefault(False)
        self.button.clicked.connect(self._clicked)
        # As wide as its widest label: Send and Stop are one button in one place, and the first
        # click on Stop must land where Send was.
        widths = []
        for label in _LABELS.values():
            self.button.setText(label)
            widths.append(self.button.sizeHint().width())
        self.button.setFixedWidth(max(widths))
        self.button.setText(_LABELS[False])
        self.edit.sig_submit_requested.connect(self.submit)
        self.edit.sig_stop_requested.connect(self.sig_stop_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignBottom)
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def set_running(self, running: bool) -> None:
        """Send while idle, Stop while a reply runs."""
        self._running = running
        self.button.setText(_LABELS[running])
        self.button.setAccessibleName("Stop the reply" if running else "Send question")
        self.button.setToolTip("Stop (Esc)" if running else "Send (Enter)")

    @Slot()
    def submit(self) -> None:
        """Send the question (a running reply is superseded by it)."""
        text = self.edit.toPlainText().strip()
        if not text:
            return
        self.edit.clear()
        self.sig_question_sent.emit(text)

    @Slot()
    def _clicked(self) -> None:
        if self._running:
            self.sig_stop_requested.emit()
        else:
            self.submit()
