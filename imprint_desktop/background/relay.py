"""The one way a payload made on another thread reaches the GUI thread.

A :class:`Relay` is created on the GUI thread; work on the loop thread or a worker pool emits
``sig_payload`` from there, and Qt delivers it queued, on the GUI thread, to whatever the owner
connected (the bridge, the download manager). The payloads are frozen dataclasses, so
nothing is shared mutably across the threads.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class Relay(QObject):
    """Emitted on a background thread; its GUI-thread owner receives the payload queued."""

    sig_payload = Signal(object)
