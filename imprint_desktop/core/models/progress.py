"""Progress of a download as people read it: bytes, a smoothed rate and an honest ETA.

The downloader calls :meth:`RateMeter.advance` for every chunk; the meter turns that into at most
``max_rate`` :class:`DownloadProgress` events a second (plus every phase change), so a fast link
never floods the callback, whatever runs behind it: the CLI's progress bar, or the download
manager's signal.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass


class Phase(enum.Enum):
    QUEUED = "queued"
    DOWNLOADING = "downloading"
    RETRYING = "retrying"
    VERIFYING = "verifying"
    CHECKING = "checking"  # the GGUF header of the finished file
    DONE = "done"


@dataclass(frozen=True)
class DownloadProgress:
    download_id: str
    done_bytes: int
    total_bytes: int
    rate: float  # bytes per second, smoothed; 0 until measured
    eta: float | None  # seconds, None while unknown
    phase: Phase
    file_index: int = 0
    file_count: int = 1
    detail: str = ""

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0


class RateMeter:
    """Turns byte counts into throttled, smoothed progress events."""

    def __init__(
        self,
        download: str,
        total: int,
        file_count: int,
        report: Callable[[DownloadProgress], None],
        *,
        max_rate: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.download = download
        self.total = total
        self.file_count = file_count
        self.file_index = 0
        self._report = report
        self._interval = 1.0 / max_rate
        self._clock = clock
        self._phase = Phase.QUEUED
        self._detail = ""
        self._rate = 0.0
        self._sample_time = clock()
        self._sample_bytes: int | None = None
        self._last_report = 0.0
        self._done = 0

    def phase(self, phase: Phase, done: int, detail: str = "") -> None:
        """Enter ``phase`` (always reported); a new transfer restarts the rate sample."""
        self._phase, self._detail, self._done = phase, detail, done
        if phase is Phase.DOWNLOADING:
            self._sample_time, self._sample_bytes = self._clock(), done
        self._emit(self._clock())

    def advance(self, done: int) -> None:
        self._done = done
        now = self._clock()
        if self._sample_bytes is None:
            self._sample_time, self._sample_bytes = now, done
        elapsed = now - self._sample_time
        if elapsed >= 0.5:
            current = (done - self._sample_bytes) / elapsed
            self._rate = current if self._rate == 0 else 0.6 * self._rate + 0.4 * current
            self._sample_time, self._sample_bytes = now, done
        if now - self._last_report >= self._interval or done >= self.total:
            self._emit(now)

    def _emit(self, now: float) -> None:
        self._last_report = now
        remaining = max(self.total - self._done, 0)
        eta = (
            remaining / self._rate if self._rate > 0 and self._phase is Phase.DOWNLOADING else None
        )
        self._report(
            DownloadProgress(
                self.download,
                self._done,
                self.total,
                self._rate,
                eta,
                self._phase,
                self.file_index,
                self.file_count,
                self._detail,
            )
        )
