"""The research record's chart: each budget used per round, as a share of that budget, with the
stop marked — drawn with pyqtgraph from
:func:`~imprint_desktop.core.research.record.chart.chart_series` and
:func:`~imprint_desktop.core.research.record.chart.chart_places`, the same series and places the
HTML report draws as SVG. The legend is under the plot, so the stop's label never falls on it.

pyqtgraph is imported when the first chart is made, not when the window starts: only the record
needs it. Colours come from the window's palette, and the chart is drawn again when the palette
changes, so it follows the light or dark theme while it is open.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from imprint_desktop.core.research.record.chart import (
    STOP_COLOUR,
    chart_places,
    chart_series,
    last_place,
    stop_label,
    stop_place,
)
from imprint_desktop.core.research.record.report import Report

log = logging.getLogger(__name__)
#: The top of the chart, as a multiple of the highest line's: the band above it holds the label of
#: the stop, where no line goes.
_BAND = 1.22


class BudgetChart(QWidget):
    """Time, tokens charged, tokens charged + reserved and patience per round (percent used)."""

    def __init__(self, report: Report, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Budgets used per round")
        self.series = chart_series(report)
        self.setAccessibleDescription(_describe(report))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._report = report
        self.plot_widget: Any = None
        self.plot: Any = None  # the plot in it, and beside it its legend
        self.legend: Any = None
        self.drawn_on: QColor | None = None  # the background the chart was drawn on
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._draw()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        base = self.palette().color(QPalette.ColorRole.Base)
        if event.type() == QEvent.Type.PaletteChange and self.drawn_on not in (None, base):
            self._draw()  # another theme

    def _draw(self) -> None:
        """Draw the chart in the palette's colours, in place of the one drawn before."""
        report, layout = self._report, self._layout
        if self.plot_widget is not None:
            layout.removeWidget(self.plot_widget)
            self.plot_widget.deleteLater()
        try:
            import pyqtgraph as pg  # type: ignore[import-untyped]  # noqa: PLC0415 - docstring
        except ImportError as error:  # a build without it (or without Qt's OpenGL module)
            log.warning("the budget chart cannot be drawn: %s", error)
            note = QLabel(f"The chart cannot be drawn here. {_describe(report)}.")
            note.setTextFormat(Qt.TextFormat.PlainText)
            note.setWordWrap(True)
            layout.addWidget(note)
            return
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        self.drawn_on = background
        foreground = palette.color(QPalette.ColorRole.Text)
        muted = palette.color(QPalette.ColorRole.PlaceholderText)

        self.plot_widget = pg.GraphicsLayoutWidget()
        self.plot_widget.setBackground(background)
        self.plot_widget.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        plot = self.plot = self.plot_widget.addPlot(row=0, col=0)
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        plot.showGrid(x=False, y=True, alpha=0.25)
        for side, words in (("bottom", "round"), ("left", "share of each budget used")):
            axis = plot.getAxis(side)
            axis.setPen(pg.mkPen(muted))
            axis.setTextPen(pg.mkPen(foreground))
            plot.setLabel(side, words, color=foreground.name())
        # The legend is under the plot, outside it: nothing drawn in the plot (a line, the stop's
        # label) can fall on it, and the plot keeps the chart's whole width.
        self.legend = pg.LegendItem(colCount=2, labelTextColor=foreground)
        self.legend.setPen(pg.mkPen(None))
        self.plot_widget.addItem(self.legend, row=1, col=0)
        self.plot_widget.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignHCenter)

        top = max([100.0, *(value for line in self.series for _, value in line.points)])
        top = 25.0 * -(-top // 25)  # up to the next quarter
        for line in self.series:
            style = Qt.PenStyle.DashLine if line.dashed else Qt.PenStyle.SolidLine
            curve = plot.plot(
                [r for r, _ in line.points],
                [v for _, v in line.points],
                pen=pg.mkPen(QColor(line.colour), width=2, style=style),
                symbol="o",
                symbolSize=5,
                symbolBrush=QColor(line.colour),
                symbolPen=None,
            )
            self.legend.addItem(curve, line.name)
        last = last_place(report)
        self._mark_stop(pg, plot, top, last)
        bottom = plot.getAxis("bottom")
        bottom.setTicks([list(chart_places(report)), []])
        bottom.setStyle(hideOverlappingLabels=False)  # "answer", "stopped" at the end, too
        quarters = [(p, f"{p}%") for p in range(0, int(top) + 1, 25)]
        plot.getAxis("left").setTicks([quarters, []])
        plot.setXRange(0, last, padding=0.08)
        # Room under 0 % for its name: the axis leaves out a name that would pass the plot's edge.
        plot.setYRange(-top * 0.08, top * _BAND, padding=0)
        layout.addWidget(self.plot_widget)

    def _mark_stop(self, pg: Any, plot: Any, top: float, last: int) -> None:
        """A dotted line where research stopped, and its label in the band above the highest
        line, reading away from the nearer edge (the legend is outside the plot)."""
        report = self._report
        self.stop_text: Any = None
        if report.stop_round is None:
            return
        colour = QColor(STOP_COLOUR)
        pen = pg.mkPen(colour, width=2, style=Qt.PenStyle.DotLine)
        self.stop_line = pg.InfiniteLine(pos=report.stop_round, angle=90, pen=pen)
        plot.addItem(self.stop_line)
        right = report.stop_round * 2 >= last
        words = f"{stop_label(report)} " if right else f" {stop_label(report)}"
        self.stop_text = pg.TextItem(words, color=colour, anchor=(1 if right else 0, 0))
        self.stop_text.setPos(report.stop_round, top * _BAND)  # hanging from the top
        plot.addItem(self.stop_text)

    def sizeHint(self) -> QSize:
        return QSize(560, 280)

    def minimumSizeHint(self) -> QSize:
        return QSize(320, 220)


def _describe(report: Report) -> str:
    """The chart in words, for a screen reader: where each budget ended."""
    parts = []
    for line in chart_series(report):
        if line.points:
            parts.append(f"{line.name} {line.points[-1][1]:.0f}%")
    where = f"; {stop_label(report)} {stop_place(report)}" if report.stop_round else ""
    return ", ".join(parts) + where
