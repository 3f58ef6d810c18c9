"""The activity list's view: the table of :class:`~.activity.ActivityModel`, which follows the
newest row, and leads from a call to the evidence it found.

Rows are all one height (a fixed vertical header), so a view of thousands of rows lays out in
constant time per update; the words of a call stand in under its round's title.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.ui.research_panel.activity import COLUMNS, EVIDENCE_IDS_ROLE, ActivityModel

INDENT = 14  # pixels a call's words stand in from its round's title

Index = QModelIndex | QPersistentModelIndex


class _Indented(QStyledItemDelegate):
    """Indents a call's first cell under its round's title."""

    def __init__(self, model: ActivityModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._model = model

    def initStyleOption(self, option: QStyleOptionViewItem, index: Index) -> None:
        super().initStyleOption(option, index)
        if index.column() == 0 and not self._model.is_round(index):
            option.rect = option.rect.adjusted(INDENT, 0, 0, 0)


class ActivityView(QTableView):
    """The activity list: follows the newest row while the person has not scrolled away.

    Enter or a double-click on a call that added evidence emits :attr:`sig_evidence_chosen` with
    the first piece's number.
    """

    sig_evidence_chosen = Signal(int)

    def __init__(self, model: ActivityModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._activity = model
        self.setObjectName("activityList")
        self.setAccessibleName("Research activity")
        self.setAccessibleDescription(
            "Tool calls and model requests by round; Enter on a call that found evidence shows it"
        )
        self.setModel(model)
        self.setItemDelegate(_Indented(model, self))
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setCornerButtonEnabled(False)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # rows never measured one by one
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setAccessibleName("Activity columns")
        header.setHighlightSections(False)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        metrics = self.fontMetrics()
        for column, sample in ((1, "not executed"), (2, "+88 · [88]")):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, metrics.horizontalAdvance(sample) + 18)
        self._follow = True
        model.rowsAboutToBeInserted.connect(self._before_insert)
        model.rowsInserted.connect(self._inserted)
        model.modelReset.connect(self._reset)
        model.sig_flushed.connect(self._flushed)
        self.activated.connect(self._activated)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange):
            self._activity.refresh_style()

    @Slot(QModelIndex, int, int)
    def _before_insert(self, parent: QModelIndex, first: int, last: int) -> None:
        del parent, first, last
        bar = self.verticalScrollBar()
        self._follow = bar.value() >= bar.maximum() - 2  # was the newest row in view?

    @Slot(QModelIndex, int, int)
    def _inserted(self, parent: QModelIndex, first: int, last: int) -> None:
        del parent
        self._span(first, last)

    @Slot()
    def _reset(self) -> None:
        self.clearSpans()
        self._span(0, self._activity.rowCount() - 1)

    def _span(self, first: int, last: int) -> None:
        """A round's title and a request's tokens read across the whole width."""
        for row in range(first, last + 1):
            if self._activity.is_wide(row):
                self.setSpan(row, 0, 1, len(COLUMNS))

    @Slot()
    def _flushed(self) -> None:
        if self._follow:
            self.scrollToBottom()

    @Slot(QModelIndex)
    def _activated(self, index: QModelIndex) -> None:
        ids = index.data(EVIDENCE_IDS_ROLE)
        if ids:
            self.sig_evidence_chosen.emit(int(ids[0]))


def titled_stack(views: Iterable[tuple[str, QWidget]]) -> QSplitter:
    """Views one above the other, each under its title (whose mnemonic focuses it), resizable."""
    stack = QSplitter(Qt.Orientation.Vertical)
    stack.setChildrenCollapsible(False)
    for title, view in views:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        label = QLabel(title)
        label.setBuddy(view)
        layout.addWidget(label)
        layout.addWidget(view, 1)
        stack.addWidget(box)
        stack.setStretchFactor(stack.count() - 1, 1)
    return stack
