"""A small widget of the research panel: a bar of two segments.

A token budget has two parts worth seeing at once — what is already charged and what the request in
flight has reserved — which a QProgressBar cannot draw, hence :class:`SegmentBar`. Its text is also
its accessible description, so a screen reader hears what a sighted person sees.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from imprint_desktop.core.research.record.report import seconds_text

__all__ = ["SegmentBar", "seconds_text"]


class SegmentBar(QWidget):
    """A horizontal bar: a solid first segment, a lighter second one, against a total."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # reachable by keyboard to be read out
        self.first = 0.0
        self.second = 0.0
        self.total = 1.0
        self.warn = False

    def set_values(self, first: float, second: float, total: float, description: str) -> None:
        changed = (first, second, total) != (self.first, self.second, self.total)
        self.first, self.second, self.total = first, second, max(total, 1e-9)
        self.setToolTip(description)
        self.setAccessibleDescription(description)
        if changed:
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(160, 12)

    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(rect, 3, 3)
        inner = rect.adjusted(1.5, 1.5, -1.5, -1.5)
        first = min(1.0, self.first / self.total)
        second = min(1.0 - first, self.second / self.total)
        colour = QColor("#c0392b") if self.warn else palette.color(QPalette.ColorRole.Highlight)
        painter.setPen(Qt.PenStyle.NoPen)
        if first > 0:
            painter.setBrush(colour)
            painter.drawRoundedRect(
                QRectF(inner.left(), inner.top(), inner.width() * first, inner.height()), 2, 2
            )
        if second > 0:
            light = QColor(colour)
            light.setAlpha(90)
            painter.setBrush(light)
            painter.drawRect(
                QRectF(
                    inner.left() + inner.width() * first,
                    inner.top(),
                    inner.width() * second,
                    inner.height(),
                )
            )
        if self.hasFocus():
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect, 3, 3)
        painter.end()
