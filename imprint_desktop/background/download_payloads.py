"""The frozen values the download manager's signals carry to the GUI thread.

:class:`~imprint_desktop.background.downloads.DownloadManager` announces a download as a
:class:`DownloadItem` (one row of the queue), everything in flight as :class:`DownloadTotals` (the
status bar) and the end of every job on its workers as a :class:`JobEnded`. They live apart from
the manager so the queue's bookkeeping (:mod:`.download_book`) and the widgets that show them read
the same types without importing the threads that make them — as :mod:`.payloads` does for the
bridge.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from imprint_desktop.background.payloads import Outcome
from imprint_desktop.core.models import Phase


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
