"""Download progress widgets: the status-bar summary and the queue of the model manager.

Both only listen to the signals of
:class:`~imprint_desktop.background.downloads.manager.DownloadManager`, which arrive coalesced
(about ten a second), so they repaint little and never touch the network or the disk.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState, DownloadTotals
from imprint_desktop.background.downloads.manager import DownloadManager
from imprint_desktop.core.models import human_size
from imprint_desktop.ui.inert import tooltip
from imprint_desktop.ui.tables import cell, chosen_data, list_table

_PROGRESS_STEPS = 1000


def describe(item: DownloadItem) -> str:
    """The status column: what a person wants to know about one download, in a few words."""
    if item.state is DownloadState.DOWNLOADING:
        if item.message:
            return item.message
        parts = [f"{human_size(item.done_bytes)} of {human_size(item.total_bytes)}"]
        if item.rate:
            parts.append(f"{human_size(item.rate)}/s")
        if item.eta is not None:
            parts.append(f"{int(item.eta) // 60}:{int(item.eta) % 60:02d} left")
        if item.phase.value not in ("downloading", "queued"):
            parts.append(item.phase.value)
        return ", ".join(parts)
    if item.state is DownloadState.DONE:
        return f"Verified, {human_size(item.total_bytes)}"
    if item.state is DownloadState.QUEUED:
        return "Waiting"
    return item.message or item.state.value.capitalize()


class DownloadStatusWidget(QWidget):
    """Overall download progress for the main window's status bar; hidden when nothing runs."""

    sig_open_requested = Signal()

    def __init__(self, manager: DownloadManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("downloadStatus")
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.bar = QProgressBar()
        self.bar.setRange(0, _PROGRESS_STEPS)
        self.bar.setMaximumWidth(160)
        self.bar.setTextVisible(False)
        self.open_button = QPushButton("Show")
        self.open_button.setFlat(True)
        self.open_button.clicked.connect(self.sig_open_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.open_button)
        manager.sig_downloads_totals.connect(self.show_totals)
        self.show_totals(manager.totals())

    @Slot(object)
    def show_totals(self, totals: DownloadTotals) -> None:
        if not totals.active:
            self.setVisible(False)
            return
        rate = f", {human_size(totals.rate)}/s" if totals.rate else ""
        noun = "download" if totals.active == 1 else "downloads"
        self.label.setText(
            f"{totals.active} {noun}: {human_size(totals.done_bytes)} of "
            f"{human_size(totals.total_bytes)}{rate}"
        )
        self.bar.setValue(int(totals.fraction * _PROGRESS_STEPS))
        self.setVisible(True)


class DownloadQueue(QWidget):
    """The manager's queue: one row per download with a progress bar, and pause/resume/cancel."""

    COLUMNS = ("Model", "Progress", "Status")

    def __init__(self, manager: DownloadManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._manager = manager
        self._rows: dict[str, int] = {}
        self.table = list_table(self.COLUMNS, "downloadQueue")
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 320)
        self.table.setColumnWidth(1, 180)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.pause_button = QPushButton("Pause")
        self.resume_button = QPushButton("Resume")
        self.cancel_button = QPushButton("Cancel")
        self.pause_button.clicked.connect(self._pause)
        self.resume_button.clicked.connect(self._resume)
        self.cancel_button.clicked.connect(self._cancel)
        buttons = QHBoxLayout()
        for button in (self.pause_button, self.resume_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.note = QLabel(
            "Downloads go on when this window is closed; the status bar shows their progress."
        )
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.note)
        manager.sig_download_added.connect(self.show_item)
        manager.sig_download_changed.connect(self.show_item)
        manager.sig_download_removed.connect(self.remove_item)
        for item in manager.items():
            self.show_item(item)
        self._update_buttons()

    def select(self, download_id: str) -> None:
        row = self._rows.get(download_id)
        if row is not None:
            self.table.selectRow(row)

    def selected_id(self) -> str | None:
        ident = chosen_data(self.table)
        return str(ident) if ident is not None else None

    @Slot(object)
    def show_item(self, item: DownloadItem) -> None:
        row = self._rows.get(item.download_id)
        if row is None:
            row = self.table.rowCount()
            self.table.insertRow(row)
            self._rows[item.download_id] = row
            self.table.setItem(row, 0, cell(f"{item.repo_id}/{item.name}", item.download_id))
            bar = QProgressBar()
            bar.setRange(0, _PROGRESS_STEPS)
            self.table.setCellWidget(row, 1, bar)
            self.table.setItem(row, 2, cell(""))
        progress = self.table.cellWidget(row, 1)
        assert isinstance(progress, QProgressBar)
        progress.setValue(int(item.fraction * _PROGRESS_STEPS))
        status = self.table.item(row, 2)
        assert status is not None
        status.setText(describe(item))
        status.setToolTip(tooltip(item.message or describe(item)))  # the message may be the hub's
        self._update_buttons()

    @Slot(object)
    def remove_item(self, download_id: str) -> None:
        row = self._rows.pop(download_id, None)
        if row is None:
            return
        self.table.removeRow(row)
        self._rows = {key: (r - 1 if r > row else r) for key, r in self._rows.items()}
        self._update_buttons()

    @Slot()
    def _update_buttons(self) -> None:
        ident = self.selected_id()
        item = self._manager.item(ident) if ident else None
        running = item is not None and item.active
        stopped = item is not None and item.state in (DownloadState.PAUSED, DownloadState.FAILED)
        self.pause_button.setEnabled(running)
        self.resume_button.setEnabled(stopped)
        self.cancel_button.setEnabled(running or stopped)

    @Slot()
    def _pause(self) -> None:
        if ident := self.selected_id():
            self._manager.pause(ident)

    @Slot()
    def _resume(self) -> None:
        if ident := self.selected_id():
            self._manager.resume(ident)

    @Slot()
    def _cancel(self) -> None:
        if ident := self.selected_id():
            self._manager.cancel(ident)
