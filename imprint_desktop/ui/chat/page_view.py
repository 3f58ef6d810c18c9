"""A cited PDF page as it looks, the quoted sentence marked on it, with page turning and zoom.

The page is drawn by the window's :class:`~imprint_desktop.core.workspace.reader.DocumentReader`
in its isolated worker (under the file's time and memory limits), never parsed here: this widget
gets a PNG and the sentence's rectangles (a
:class:`~imprint_desktop.core.workspace.formats.pdf_page.RenderedPage`) and lays the rectangles
over the image. Drawing happens on a thread and is collected by a timer,
the way the viewer reads the text; only the latest page asked for is shown ("latest wins"), so
turning pages quickly never shows a page out of order. A page that cannot be drawn (too large,
too slow, damaged) is refused with the reader's reason, and the text view stays one click away.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QPalette, QPen, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.core.workspace.formats.pdf_page import (
    MAX_PIXELS,
    MAX_SCALE,
    MIN_SCALE,
    PageRequest,
    RenderedPage,
    clamp_scale,
)

if TYPE_CHECKING:
    from imprint_desktop.core.workspace.reader import DocumentReader

DRAW_POLL_MS = 20
#: One press of + or − zooms by this factor.
ZOOM_STEP = 1.25
#: A scale of 1 draws a point as a pixel; "100 %" is a page at its printed size on a 96 dpi screen.
ACTUAL_SIZE = 96 / 72
#: The grey border around the page, in pixels.
PAGE_MARGIN = 8
#: How long the view waits after a resize before a page fitted to the width is drawn again.
REFIT_MS = 150


@dataclass(frozen=True, slots=True)
class PageFailure:
    """A page that could not be drawn, and the reader's reason."""

    page: int
    reason: str


class PageView(QWidget):
    """One PDF's pages, drawn one at a time by the reader's worker."""

    #: A page is shown. Payload: the :class:`RenderedPage`.
    sig_page_shown = Signal(object)
    #: A page could not be drawn. Payload: the :class:`PageFailure`.
    sig_page_refused = Signal(object)

    def __init__(
        self,
        reader: DocumentReader,
        name: str,
        data: bytes,
        *,
        page: int,
        sentences: tuple[str, ...],
        page_count: int = 0,
        stop: threading.Event | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._reader, self._name, self._data, self._stop = reader, name, data, stop
        self.sentences = sentences
        self.page_count = page_count  # known from the text; corrected by the first page drawn
        self.page = max(1, page)
        self.scale = 0.0  # the zoom of the page shown (set by the worker when it fits the width)
        self.fit_width = True
        self.shown: RenderedPage | None = None
        self.marks: list[QGraphicsRectItem] = []
        self._drawing: Future[RenderedPage | PageFailure] | None = None
        #: What was last asked of the worker, and what is shown: page, zoom or fitted width.
        self._asked: tuple[int, float, int] | None = None
        self._shown_as: tuple[int, float, int] | None = None

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._bar())
        self.scene = QGraphicsScene(self)
        self.image = QGraphicsPixmapItem()
        self.image.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.scene.addItem(self.image)
        self.canvas = QGraphicsView(self.scene)
        self.canvas.setObjectName("sourcePage")
        self.canvas.setAccessibleName("Page")
        self.canvas.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        # Always there: a page fitted to the width keeps its place, centred, whether or not it
        # is taller than the view (Qt centres as if a scroll bar that comes and goes were not).
        self.canvas.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.canvas.setBackgroundBrush(self.palette().color(QPalette.ColorRole.Mid))
        self.status = QLabel("Drawing the page…")
        self.status.setObjectName("pageStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        layout.addWidget(self.canvas, 1)
        self.setFocusProxy(self.canvas)

        self._poll = QTimer(self)
        self._poll.setInterval(DRAW_POLL_MS)
        self._poll.timeout.connect(self._check_drawing)
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.setInterval(REFIT_MS)
        self._refit.timeout.connect(self._draw)
        self._update_controls()

    def _bar(self) -> QHBoxLayout:
        """The page controls: previous, next, the page number; fit width, −, the zoom, +."""
        self.previous_button = _tool("◀ Pre&vious", "Previous page", self.previous_page)
        self.next_button = _tool("&Next ▶", "Next page", self.next_page)
        self.page_box = QSpinBox()
        self.page_box.setAccessibleName("Page number")
        self.page_box.setKeyboardTracking(False)
        self.page_box.valueChanged.connect(self.go_to)
        self.page_total = QLabel()
        self.fit_button = _tool("Fit &Width", "Fit the page to the width", self.fit_to_width)
        self.fit_button.setCheckable(True)
        self.zoom_out_button = _tool("−", "Zoom out", self.zoom_out)
        self.zoom_in_button = _tool("+", "Zoom in", self.zoom_in)
        self.zoom_label = QLabel()
        self.zoom_label.setAccessibleName("Zoom")
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        for widget in (self.previous_button, self.next_button, self.page_box, self.page_total):
            bar.addWidget(widget)
        bar.addStretch(1)
        for widget in (self.fit_button, self.zoom_out_button, self.zoom_label):
            bar.addWidget(widget)
        bar.addWidget(self.zoom_in_button)
        return bar

    # --- what the person does ---------------------------------------------------------------------

    def start(self) -> None:
        """Draw the first page once the view is laid out (so the page can fit its width)."""
        QTimer.singleShot(0, self, self._draw)

    @Slot()
    def previous_page(self) -> None:
        self.go_to(self.page - 1)

    @Slot()
    def next_page(self) -> None:
        self.go_to(self.page + 1)

    @Slot(int)
    def go_to(self, page: int) -> None:
        last = self.page_count or page
        page = min(max(page, 1), last)
        if page != self.page:
            self.page = page
            self._draw()
        self._update_controls()

    @Slot()
    def zoom_in(self) -> None:
        self.zoom_to(self.scale * ZOOM_STEP)

    @Slot()
    def zoom_out(self) -> None:
        self.zoom_to(self.scale / ZOOM_STEP)

    @Slot()
    def fit_to_width(self) -> None:
        self.fit_width = True
        self._draw()

    def zoom_to(self, scale: float) -> None:
        """Draw the page at ``scale`` pixels a point (within the zoom bounds)."""
        self.fit_width = False
        self.scale = clamp_scale(scale)
        self._draw()

    # --- drawing ----------------------------------------------------------------------------------

    def _room(self) -> int:
        """The width a page fitted to the view may have, in pixels (the scroll bar's room kept,
        so a page that needs one fits the same)."""
        canvas = self.canvas
        bar = canvas.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, canvas)
        return max(canvas.width() - 2 * canvas.frameWidth() - bar - 2 * PAGE_MARGIN, 100)

    def _wanted(self) -> tuple[int, float, int]:
        """The page to show: its number, and its zoom or, fitted, the width it must have."""
        if self.fit_width:
            return self.page, 0.0, self._room()
        return self.page, self.scale, 0

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.fit_width and self._shown_as is not None:
            self._refit.start()

    @Slot()
    def _draw(self) -> None:
        """Ask the worker for the page wanted; a drawing under way is let finish, and the latest
        wish is asked for when it does."""
        self._update_controls()
        if self._drawing is not None and not self._drawing.done():
            return  # asked again when it is done
        asked = self._wanted()
        if asked == self._shown_as:
            return
        self._asked = asked
        self.status.setText(f"Drawing page {self.page}…")
        self.status.show()
        ratio = self.devicePixelRatioF()
        page, scale, room = asked
        request = PageRequest(page, scale * ratio, self.sentences, round(room * ratio))
        drawing: Future[RenderedPage | PageFailure] = Future()
        reader, name, data, stop = self._reader, self._name, self._data, self._stop

        def draw() -> None:
            from imprint_desktop.core.errors import ImprintError  # noqa: PLC0415

            try:
                drawing.set_result(reader.render(name, data, request, stop))
            except ImprintError as error:
                drawing.set_result(PageFailure(request.page, str(error).rstrip(".")))
            except Exception as error:  # the viewer must never be left waiting
                drawing.set_result(PageFailure(request.page, f"it failed ({error})"))

        self._drawing = drawing
        threading.Thread(target=draw, name="source-page", daemon=True).start()
        self._poll.start()

    @Slot()
    def _check_drawing(self) -> None:
        drawing = self._drawing
        if drawing is None or not drawing.done():
            return
        self._poll.stop()
        result = drawing.result()
        if self._asked != self._wanted():
            self._draw()  # the person moved on meanwhile: the latest wins
            return
        if isinstance(result, PageFailure):
            self._refuse(result)
        else:
            self._shown_as = self._asked
            self._show(result)

    def _refuse(self, failure: PageFailure) -> None:
        self.status.setText(
            f"Page {failure.page} cannot be shown: {failure.reason}. The document's text is "
            "in the Text tab."
        )
        self.status.show()
        if self._shown_as is not None and self.shown is not None:
            # The page shown stays, and the controls say which page and zoom it is.
            page, _, room = self._shown_as
            self.page, self.scale, self.fit_width = page, self.shown.scale, room != 0
            self._shown_as = self._wanted()
            self._update_controls()
        self.sig_page_refused.emit(failure)

    def _show(self, page: RenderedPage) -> None:
        ratio = self.devicePixelRatioF()
        pixmap = QPixmap()
        if not pixmap.loadFromData(page.png, "PNG"):
            self._refuse(PageFailure(page.page, "its image could not be decoded"))
            return
        pixmap.setDevicePixelRatio(ratio)
        self.shown = replace(page, scale=page.scale / ratio, png=b"")  # its image is the pixmap
        self.scale = self.shown.scale
        self.page_count = page.page_count
        self.image.setPixmap(pixmap)
        for mark in self.marks:
            self.scene.removeItem(mark)
        shade = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        shade.setAlpha(90)
        edge = QColor(shade)
        edge.setAlpha(200)
        self.marks = []
        for box in page.boxes:
            rect = QRectF(box.left, box.top, box.right - box.left, box.bottom - box.top)
            mark = QGraphicsRectItem(
                QRectF(rect.topLeft() / ratio, rect.bottomRight() / ratio).adjusted(-2, -1, 2, 1)
            )
            mark.setBrush(QBrush(shade))
            mark.setPen(QPen(edge, 1))
            self.scene.addItem(mark)
            self.marks.append(mark)
        margin = PAGE_MARGIN
        self.scene.setSceneRect(
            self.image.boundingRect().adjusted(-margin, -margin, margin, margin)
        )
        self.status.hide()
        self._update_controls()
        if self.marks:  # the sentence in the middle, its first line's start in view
            first = self.marks[0].sceneBoundingRect()
            self.canvas.centerOn(first.center())
            self.canvas.ensureVisible(QRectF(first.topLeft(), first.topLeft()), 24, 24)
        else:
            self.canvas.verticalScrollBar().setValue(0)
        self.sig_page_shown.emit(page)

    def _update_controls(self) -> None:
        count = self.page_count
        self.page_box.blockSignals(True)
        self.page_box.setRange(1, max(count, self.page, 1))
        self.page_box.setValue(self.page)
        self.page_box.blockSignals(False)
        self.page_total.setText(f"of {count}" if count else "")
        self.previous_button.setEnabled(self.page > 1)
        self.next_button.setEnabled(not count or self.page < count)
        self.fit_button.setChecked(self.fit_width)
        self.zoom_out_button.setEnabled(self.scale > MIN_SCALE)
        self.zoom_in_button.setEnabled(self._can_zoom_in())
        self.zoom_label.setText(f"{self.scale / ACTUAL_SIZE:.0%}" if self.scale else "")

    def _can_zoom_in(self) -> bool:
        """Is there a larger zoom, and would the page drawn at it stay within the pixels a page
        may have (a poster of a page is drawn small, and + stops before it is refused)?"""
        if self.scale >= MAX_SCALE:
            return False
        if self.shown is None or not self.shown.scale:
            return True
        ratio = self.devicePixelRatioF()
        larger = clamp_scale(self.scale * ZOOM_STEP) * ratio
        points = self.shown.width * self.shown.height / (self.shown.scale * ratio) ** 2
        return points * larger**2 <= MAX_PIXELS

    @property
    def settled(self) -> bool:
        """Is the page shown the one wanted, at the zoom wanted, with nothing being drawn?"""
        idle = self._drawing is None or (self._drawing.done() and not self._poll.isActive())
        return idle and self._shown_as == self._wanted()

    def mark_visible(self) -> bool:
        """Is the first marked box of the sentence inside the visible part of the page?"""
        if not self.marks or not self.marks[0].isVisible():
            return False
        shown = self.canvas.mapToScene(self.canvas.viewport().rect()).boundingRect()
        return shown.contains(self.marks[0].sceneBoundingRect())


def _tool(text: str, name: str, slot: object) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setAccessibleName(name)
    button.setToolTip(name)
    button.clicked.connect(slot)
    return button
