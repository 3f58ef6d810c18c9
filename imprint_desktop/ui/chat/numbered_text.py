"""Read-only plain text with line numbers in a gutter and a rule where each page starts.

The source viewer numbers lines the way citations do (``lines 10-14``), so the person can check a
citation against the document at a glance; a PDF's page text shows where each page begins.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Slot
from PySide6.QtGui import QFontDatabase, QPainter, QPaintEvent, QPalette, QPen, QResizeEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class NumberedText(QPlainTextEdit):
    """Read-only plain text, numbered; ``page_starts`` (1-based lines) draws the page rules."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.page_starts: tuple[int, ...] = ()
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._fit_gutter)
        self.updateRequest.connect(self._scroll_gutter)
        self._fit_gutter()

    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 16 + self.fontMetrics().horizontalAdvance("9") * digits

    @Slot()
    def _fit_gutter(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    @Slot(QRect, int)
    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        area = self.contentsRect()
        self._gutter.setGeometry(QRect(area.left(), area.top(), self.gutter_width(), area.height()))

    def visible_blocks(self) -> list[tuple[int, int, int]]:
        """(block number, top, bottom) of each block in view, in viewport coordinates."""
        shown = []
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        while block.isValid() and top <= self.viewport().height():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible():
                shown.append((block.blockNumber(), top, bottom))
            block, top = block.next(), bottom
        return shown

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.color(QPalette.ColorRole.AlternateBase))
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        height = self.fontMetrics().height()
        for number, top, _bottom in self.visible_blocks():
            painter.drawText(
                0,
                top,
                self._gutter.width() - 6,
                height,
                Qt.AlignmentFlag.AlignRight,
                str(number + 1),
            )

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if len(self.page_starts) < 2:
            return
        starts = {line - 1: page for page, line in enumerate(self.page_starts, start=1)}
        painter = QPainter(self.viewport())
        pen = QPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        width = self.viewport().width()
        for number, top, _bottom in self.visible_blocks():
            page = starts.get(number)
            if page is not None and page > 1:
                painter.drawLine(0, top, width, top)
                painter.drawText(
                    QRect(0, top, width - 8, self.fontMetrics().height()),
                    Qt.AlignmentFlag.AlignRight,
                    f"page {page}",
                )


class _Gutter(QWidget):
    def __init__(self, text: NumberedText) -> None:
        super().__init__(text)
        self._text = text

    def sizeHint(self) -> QSize:
        return QSize(self._text.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self._text.paint_gutter(event)
