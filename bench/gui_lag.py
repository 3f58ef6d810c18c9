"""How late the GUI thread runs a precise timer: the GUI benches' measure of a stalled window.

A timer fires every ``interval_ms``; each tick later than that by some amount means the thread was
busy for about that long. Used by ``bench_gui.py`` and ``bench_activity.py``.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QElapsedTimer, Qt, QTimer


class LagProbe:
    """Ticks on the GUI thread between :meth:`start` and :meth:`stop`, keeping each tick's lag."""

    def __init__(self, interval_ms: int, label: str = "") -> None:
        self.interval_ms = interval_ms
        self.lags: list[float] = []  # seconds each tick came late
        self._label = f"{label}: " if label else ""
        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._last = 0

    def start(self) -> None:
        self._clock.start()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def steady(self, settle_seconds: float) -> list[float]:
        """The lags after the first ``settle_seconds`` (all of them if there are no more)."""
        return self.lags[int(settle_seconds * 1000 / self.interval_ms) :] or self.lags

    def _tick(self) -> None:
        now = self._clock.nsecsElapsed()
        if self._last:
            self.lags.append(max(0.0, (now - self._last) / 1e9 - self.interval_ms / 1000))
            if os.environ.get("BENCH_DEBUG") and self.lags[-1] > 0.02:
                lag_ms = self.lags[-1] * 1000
                print(f"{self._label}lag {lag_ms:.0f} ms at {now / 1e9:.2f} s", file=sys.stderr)
        self._last = now
