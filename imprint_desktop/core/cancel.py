"""Cooperative cancellation that works across threads.

The GUI thread (Stop), a signal handler (SIGINT) or a test calls :meth:`CancelToken.cancel`; the
engine checks :attr:`CancelToken.cancelled` at its yield points, llama.cpp's abort callback reads it
between decode steps, and callbacks registered with :meth:`CancelToken.on_cancel` wake whatever is
waiting (for example ``loop.call_soon_threadsafe(task.cancel)`` for an awaited HTTP read).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from imprint_desktop.core.errors import Cancelled


class CancelToken:
    """Set once, never reset. Safe to use from any thread."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Ask everything that holds this token to stop; callbacks run once, on this thread."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancel (now, if already cancelled); returns a remover."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled("Stopped.")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` passes; True when cancelled."""
        return self._event.wait(timeout)

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
