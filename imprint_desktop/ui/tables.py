"""The model windows' lists: read-only tables whose rows are chosen whole, one at a time.

The model manager's Recommended, Find and Installed tabs and its download queue each show a list
this way, the first cell of a row holding what the row stands for (a model id, a repository, a
file, a download id). These are the few lines each of them would otherwise repeat: how such a
table is made, a cell, and which row is chosen.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem


def list_table(columns: Sequence[str], name: str) -> QTableWidget:
    """An empty table of ``columns``, named ``name`` (its object name), that nobody edits."""
    table = QTableWidget(0, len(columns))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(columns)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    return table


def cell(text: str, data: object = None, align_right: bool = False) -> QTableWidgetItem:
    """A cell showing ``text``; ``data`` is what the row stands for (on its first cell)."""
    item = QTableWidgetItem(text)
    if data is not None:
        item.setData(Qt.ItemDataRole.UserRole, data)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def chosen_data(table: QTableWidget) -> object:
    """What the chosen row stands for, or None when no row is chosen."""
    rows = table.selectionModel().selectedRows()
    item = table.item(rows[0].row(), 0) if rows else None
    return item.data(Qt.ItemDataRole.UserRole) if item is not None else None


def choose_row(table: QTableWidget, data: object) -> None:
    """Choose the row that stands for ``data`` (none when no row does)."""
    for row in range(table.rowCount()):
        item = table.item(row, 0)
        if item is not None and item.data(Qt.ItemDataRole.UserRole) == data:
            table.selectRow(row)


def append_row(table: QTableWidget, cells: Sequence[QTableWidgetItem]) -> int:
    """Add a row of ``cells`` under the others; returns its index."""
    row = table.rowCount()
    table.insertRow(row)
    for column, item in enumerate(cells):
        table.setItem(row, column, item)
    return row
