"""The card that shows the model's ``ask_user`` question with a box for the answer.

It sits in the chat column, directly under the transcript, and takes the keyboard focus when it
appears: research time is paused until the person answers (DESIGN §1), so the answer box is the one
thing that matters at that moment.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout

from imprint_desktop.ui.inert import rich


class QuestionCard(QFrame):
    sig_answered = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("questionCard")
        self.setAccessibleName("Question from the model")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "#questionCard { border: 1px solid palette(highlight); border-radius: 6px; }"
        )
        self.question = QLabel()
        self.question.setWordWrap(True)
        self.question.setAccessibleName("The model asks")
        note = QLabel("<small>Research time is paused until you answer.</small>")
        self.answer = QLineEdit()
        self.answer.setAccessibleName("Your answer")
        self.answer.setPlaceholderText("Type your answer and press Enter")
        self.button = QPushButton("&Answer")
        self.button.setAccessibleName("Send answer")
        self.answer.returnPressed.connect(self._send)
        self.button.clicked.connect(self._send)
        row = QHBoxLayout()
        row.addWidget(self.answer, 1)
        row.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(note)
        layout.addLayout(row)
        self.hide()

    def ask(self, question: str) -> None:
        self.question.setText(f"<b>Imprint asks:</b> {rich(question)}")  # the model's words
        self.answer.clear()
        self.show()
        self.answer.setFocus()

    @Slot()
    def _send(self) -> None:
        text = self.answer.text().strip()
        if not text:
            return
        self.hide()
        self.sig_answered.emit(text)
