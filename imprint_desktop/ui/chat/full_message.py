"""A whole message, however big, in a window of its own: *Show all* in the transcript opens it.

The transcript lays out only a bounded part of a message (:mod:`.transcript_bounds`); this shows
all of it with widgets that lay out only what is in view, so a 10,000-row table or a 2 MB line
opens at once and scrolls smoothly:

* each table of the message in a :class:`QTableView` over a model that splits a row into cells
  only when the row is shown;
* the text, as written, in a read-only :class:`QPlainTextEdit` (which lays out the lines in view),
  a line longer than :data:`SEGMENT_CHARS` shown as several lines of that length so no single line
  is ever laid out whole.

It is plain text throughout: nothing in it is parsed as Markdown or HTML, so nothing in it links,
loads or runs.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFontDatabase, QTextOption
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QPlainTextEdit,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.ui.chat.transcript_bounds import Table, tables

#: The longest line the text view lays out; longer lines continue on the next line.
SEGMENT_CHARS = 4_000
#: The most characters of one cell the table view draws (it elides the rest anyway).
CELL_CHARS = 1_000
#: The most tables given a tab of their own.
MAX_TABLES = 20

_Index = QModelIndex | QPersistentModelIndex


def segmented(text: str, width: int = SEGMENT_CHARS) -> str:
    """``text`` with every line longer than ``width`` cut into lines of ``width`` characters."""
    if all(len(line) <= width for line in text.split("\n")):
        return text
    return "\n".join(
        "\n".join(line[start : start + width] for start in range(0, len(line), width)) or line
        for line in text.split("\n")
    )


class TableModel(QAbstractTableModel):
    """One Markdown table, its rows split into cells as they are shown."""

    def __init__(self, table: Table, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = table
        self._row = -1
        self._cells: tuple[str, ...] = ()

    def rowCount(self, parent: _Index | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.table.rows)

    def columnCount(self, parent: _Index | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else max(1, len(self.table.header))

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if role != Qt.ItemDataRole.DisplayRole or not index.isValid():
            return None
        if index.row() != self._row:  # a row's cells are asked for one after another
            self._row, self._cells = index.row(), self.table.row_cells(index.row())
        text = self._cells[index.column()] if index.column() < len(self._cells) else ""
        return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> object:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1)
        header = self.table.header
        text = header[section] if section < len(header) else ""
        return text[:CELL_CHARS]


class FullMessage(QDialog):
    """The whole of one message: its tables, each in a table view, and its text."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setAccessibleName(f"{title}, in full")
        self.resize(900, 640)
        self.tabs = QTabWidget()
        self.tables: list[QTableView] = []
        for number, table in enumerate(tables(text, MAX_TABLES), start=1):
            view = QTableView()
            view.setObjectName(f"fullTable{number}")
            view.setModel(TableModel(table, view))
            view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            view.setWordWrap(False)
            view.setAccessibleName(f"Table {number}")
            noun = "row" if len(table.rows) == 1 else "rows"
            self.tabs.addTab(view, f"Table {number} · {len(table.rows):,} {noun}")
            self.tables.append(view)
        self.text = QPlainTextEdit()
        self.text.setObjectName("fullText")
        self.text.setAccessibleName("The message's text")
        self.text.setReadOnly(True)
        self.text.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont))
        self.text.setPlainText(segmented(text))
        self.tabs.insertTab(0, self.text, "&Text")
        self.tabs.setCurrentIndex(1 if self.tables else 0)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
