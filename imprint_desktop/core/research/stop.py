"""The internal signal that research must stop, with the reason of DESIGN §1.

A stop is always raised (where it is met) and caught (by the engine, or by the part that carries
it out: a batch, a section worker, condensing); it is never returned as a value.
"""

from __future__ import annotations

from imprint_desktop.core.vocabulary import StopReason


class ResearchStop(Exception):  # noqa: N818 - control flow inside the engine, never escapes it
    def __init__(self, reason: StopReason, detail: str = "") -> None:
        super().__init__(reason)
        self.reason: StopReason = reason
        self.detail = detail
