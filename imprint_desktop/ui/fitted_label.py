"""Lines of text that keep their room whatever they say: nothing moves when they change.

What the research panel says changes many times a reply (what research is doing now, the figures,
why it stopped), and the toolbar's line of index problems is as long as the problems are. A label
sized by its text would widen the panel or the window (moving the transcript and Send/Stop) or push
what is below it down a line and back (moving the row under the pointer). A :class:`FittedLabel`
wraps within the width it is given and keeps the room of a fixed number of lines: what would take
more is cut with "…" and is whole in the tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget

from imprint_desktop.ui.inert import tooltip


class FittedLabel(QLabel):
    """A plain-text label of ``lines`` lines at most, always that tall: longer text is cut with
    "…" to what fits at its width (again when it is resized), and is whole in its tooltip and in
    :attr:`whole`."""

    def __init__(self, lines: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)  # it may quote what the model wrote
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._lines = lines
        self.whole = ""
        self.setFixedHeight(lines * self.fontMetrics().lineSpacing())

    def setText(self, text: str) -> None:
        """Show ``text``, cut to the lines there is room for."""
        self.whole = text
        self.setToolTip(tooltip(text) if text else "")
        self._fit()

    def clear(self) -> None:
        self.setText("")

    def sizeHint(self) -> QSize:
        """One line: as wide as its whole text (up to a limit), so a row of widgets gives it room
        for all of it when there is room."""
        hint = super().sizeHint()
        if self._lines == 1:
            hint.setWidth(min(self.fontMetrics().horizontalAdvance(self.whole) + 4, 480))
        return QSize(hint.width(), self.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        text = self.whole
        if not self._fits(text):
            low, high = 0, len(text)  # the longest start of the text that fits with "…"
            while low < high:
                middle = (low + high + 1) // 2
                if self._fits(text[:middle].rstrip() + "…"):
                    low = middle
                else:
                    high = middle - 1
            text = text[:low].rstrip() + "…"
        if text != self.text():
            super().setText(text)

    def _fits(self, text: str) -> bool:
        width = max(1, self.contentsRect().width())
        flags = int(Qt.TextFlag.TextWordWrap.value)
        needed = self.fontMetrics().boundingRect(QRect(0, 0, width, 1 << 20), flags, text)
        return needed.height() <= self._lines * self.fontMetrics().lineSpacing()
