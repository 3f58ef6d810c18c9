"""The download queue's rows: the frozen values the download manager's signals carry, and what
each download shows as it is queued, runs, pauses, fails or ends.

:class:`~.manager.DownloadManager` announces a download as a :class:`DownloadItem` (one row of the
queue), everything in flight as :class:`DownloadTotals` (the status bar) and the end of every job on
its workers as a :class:`JobEnded`. :class:`DownloadBook` holds one :class:`DownloadItem` per
download and the journal record it resumes from; each of its methods applies one event to a row
and returns the row as it now is, for the manager to announce. The words a row shows for each state
("Verified", "Paused", "Paused; resume to continue") are chosen here.

Kept apart from the manager so the life of a row reads without the threads, the locks and the
progress timer around it, and so the widgets that show the rows read these types without importing
those threads. It is used on the GUI thread only, and has no Qt in it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from imprint_desktop.background.payloads import Outcome
from imprint_desktop.core.models import DownloadProgress, DownloadRecord, Phase


class DownloadState(enum.Enum):
    QUEUED = "queued"
    DOWNLOADING = "downloading"
    PAUSED = "paused"
    FAILED = "failed"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class DownloadItem:
    """One row of the download queue, as the UI shows it."""

    download_id: str
    repo_id: str
    name: str
    total_bytes: int
    done_bytes: int = 0
    state: DownloadState = DownloadState.QUEUED
    phase: Phase = Phase.QUEUED
    rate: float = 0.0
    eta: float | None = None
    message: str = ""
    path: str = ""

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def active(self) -> bool:
        return self.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)


@dataclass(frozen=True)
class DownloadTotals:
    """Everything in flight, summed: what the status bar shows."""

    active: int
    done_bytes: int
    total_bytes: int
    rate: float

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(frozen=True)
class JobEnded:
    """The one terminal event of a job on the download manager's workers.

    ``kind`` says which: a hub job (``search``, ``files``, ``installed``, ``remove``, ``import``,
    ``recommended``, ``resolve``, ``restore``, ``discard``) or a ``download``, whose ``job_id`` is
    its download id and whose ``value`` is ``(download id, partial discarded, verified path)``.
    """

    job_id: str
    kind: str
    outcome: Outcome
    value: object = None  # the result when finished
    message: str = ""  # a sentence for a person when failed


class DownloadBook:
    """Every download in the queue and its journal record, in the order they were added."""

    def __init__(self) -> None:
        self._items: dict[str, DownloadItem] = {}
        self._records: dict[str, DownloadRecord] = {}

    def items(self) -> list[DownloadItem]:
        return list(self._items.values())

    def item(self, download_id: str) -> DownloadItem | None:
        return self._items.get(download_id)

    def record(self, download_id: str) -> DownloadRecord | None:
        return self._records.get(download_id)

    def queue(self, record: DownloadRecord) -> tuple[DownloadItem, bool]:
        """``record`` is about to run: its row, and whether the queue showed it already (a
        download started again keeps its progress until the worker reports)."""
        ident = record.download_id
        self._records[ident] = record
        known = ident in self._items
        item = DownloadItem(ident, record.repo_id, record.name, record.total_bytes)
        if known:
            item = replace(self._items[ident], state=DownloadState.QUEUED, message="")
        self._items[ident] = item
        return item, known

    def requeue(self, download_id: str) -> DownloadItem:
        """A paused or failed download is about to run again."""
        return self._set(download_id, state=DownloadState.QUEUED, message="")

    def restore(self, record: DownloadRecord, done_bytes: int) -> DownloadItem | None:
        """A download a previous run left paused or failed; None when the queue has it already."""
        ident = record.download_id
        if ident in self._items:
            return None
        self._records[ident] = record
        state = DownloadState.FAILED if record.state == "failed" else DownloadState.PAUSED
        message = record.message or "Paused; resume to continue"
        item = DownloadItem(
            ident,
            record.repo_id,
            record.name,
            record.total_bytes,
            done_bytes,
            state,
            message=message,
        )
        self._items[ident] = item
        return item

    def progressed(self, download_id: str, event: DownloadProgress) -> DownloadItem:
        return self._set(
            download_id,
            state=DownloadState.DOWNLOADING,
            phase=event.phase,
            done_bytes=event.done_bytes,
            rate=event.rate,
            eta=event.eta,
            message=event.detail,
        )

    def finished(self, download_id: str, path: str) -> DownloadItem:
        """Downloaded and verified: the file is at ``path``."""
        return self._set(
            download_id,
            state=DownloadState.DONE,
            phase=Phase.DONE,
            path=path,
            done_bytes=self._items[download_id].total_bytes,
            rate=0.0,
            eta=None,
            message="Verified",
        )

    def paused(self, download_id: str) -> DownloadItem:
        return self._set(
            download_id, state=DownloadState.PAUSED, rate=0.0, eta=None, message="Paused"
        )

    def failed(self, download_id: str, message: str) -> DownloadItem:
        return self._set(
            download_id, state=DownloadState.FAILED, rate=0.0, eta=None, message=message
        )

    def forget(self, download_id: str) -> DownloadRecord | None:
        """Drop a cancelled download's row; its record, if the queue had one, to discard."""
        self._items.pop(download_id, None)
        return self._records.pop(download_id, None)

    def totals(self) -> DownloadTotals:
        active = [item for item in self._items.values() if item.active]
        return DownloadTotals(
            active=len(active),
            done_bytes=sum(item.done_bytes for item in active),
            total_bytes=sum(item.total_bytes for item in active),
            rate=sum(item.rate for item in active),
        )

    def _set(self, download_id: str, **changes: object) -> DownloadItem:
        item = replace(self._items[download_id], **changes)  # type: ignore[arg-type]
        self._items[download_id] = item
        return item
