"""The workspace index's progress as a person reads it: in the toolbar's bar and the status bar.

An update goes in two steps (:class:`~imprint_desktop.background.payloads.IndexStage`): the new
and changed files are read (files done of all to read), then their passages get their vectors for
search by meaning (passages done of all). The workspace is *indexed* when both are done, and only
then does the status bar say so. After that, while no reply runs, a better embedder may improve
search by meaning: optional, and said so (search works meanwhile).

The bar's line says the step, how far it is, about how long is left (:class:`Pace`) and what the
folders' watch saw change meanwhile, waiting its turn (:func:`pending_words`); it is cut
with "…" to the bar's width (:class:`ElidedBar`), so it reads on one line at any window width, and
its tooltip says it whole with what the step is for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QProgressBar, QSizePolicy, QWidget

from imprint_desktop.background.payloads import IndexStage, IndexStatus, Outcome

#: Each step's name on the bar.
STEP_NAMES = {
    IndexStage.FILES: "Indexing 1/2 · reading files",
    IndexStage.MEANING: "Indexing 2/2 · search by meaning",
    IndexStage.IMPROVING: "Improving search (optional)",
}
#: What each step is for, in the bar's tooltip.
STEP_PURPOSES = {
    IndexStage.FILES: "Imprint reads the workspace's new and changed files into its index.",
    IndexStage.MEANING: (
        "The files are read and can be searched by their words already. Each passage now gets "
        "its meaning, so that search finds it in other words too."
    ),
    IndexStage.IMPROVING: (
        "The workspace is indexed: search works. While no reply runs, a better model reads the "
        "passages again to improve search by meaning; a question stops it, and it goes on after."
    ),
}
#: The bar's width changes in steps of this many pixels (:meth:`ElidedBar.sizeHint`).
_WIDTH_STEP = 48
#: How long a step must have run before the time it has left is guessed (seconds).
_PACE_AFTER = 1.0


def time_left_words(seconds: float) -> str:
    """ "about 20 s left", "about 3 min left", "about 2 h 10 min left"."""
    if seconds < 60:
        return f"about {max(5, 5 * math.ceil(seconds / 5))} s left"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min left"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min left" if rest else f"about {hours} h left"


def progress_line(status: IndexStatus, seconds_left: float | None = None) -> str:
    """One line for a status under way: "Indexing 1/2 · reading files: 3 of 14 · about 20 s
    left" (a job waiting for another Imprint says only that)."""
    if status.message:
        return status.message
    unit = "" if status.stage is IndexStage.FILES else " passages"
    line = f"{STEP_NAMES[status.stage]}: {status.done:,} of {status.total:,}{unit}"
    if seconds_left is not None:
        line = f"{line} · {time_left_words(seconds_left)}"
    return f"{line} · {pending_words(status.pending)}" if status.pending else line


def pending_words(pending: int) -> str:
    """What the folders' watch saw change that waits its turn: "3 changes waiting"."""
    return f"{pending:,} change{'s' if pending != 1 else ''} waiting"


class Pace:
    """How fast the step under way goes, from what it did since it was first seen: the time it
    has left, once it has run long enough to tell."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._step: tuple[str, IndexStage, int] | None = None
        self._start = (0.0, 0)  # when the step was first seen, and how far it was then

    def seconds_left(self, status: IndexStatus) -> float | None:
        """The time ``status``'s step has left, or None when it cannot be told yet."""
        now = self._clock()
        step = (status.root, status.stage, status.total)
        if step != self._step or status.done < self._start[1] or status.message:
            self._step, self._start = step, (now, status.done)
            return None
        began, done_then = self._start
        elapsed, done = now - began, status.done - done_then
        if elapsed < _PACE_AFTER or done <= 0:
            return None
        return (status.total - status.done) * elapsed / done

    def forget(self) -> None:
        """The step ended: the next one is timed from its own start."""
        self._step = None


class ElidedBar(QProgressBar):
    """A progress bar whose line is cut with "…" to the bar's width, never wrapped nor clipped;
    the whole line is its tooltip and accessible description."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextVisible(True)
        self.setMinimumWidth(120)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._laid_out = 0  # the width the row was last laid out for

    def text(self) -> str:
        whole = super().text()
        room = max(0, self.contentsRect().width() - 2 * self.fontMetrics().averageCharWidth())
        return self.fontMetrics().elidedText(whole, Qt.TextElideMode.ElideRight, room)

    def whole_text(self) -> str:
        """The line before it is cut to the bar's width."""
        return super().text()

    def sizeHint(self) -> QSize:
        wanted = self.fontMetrics().horizontalAdvance(self.whole_text()) + 24
        # In steps, so that a line a few characters longer or shorter (the time left, the files
        # done) lays the window out again only now and then: each layout of the row repaints
        # the window, up to 100 ms on a software display (bench/bench_folders.py).
        wanted = _WIDTH_STEP * math.ceil(wanted / _WIDTH_STEP)
        return QSize(max(self.minimumWidth(), min(wanted, 440)), super().sizeHint().height())

    def update_width(self) -> None:
        """Lay the row out again when the line wants another step of width, not otherwise."""
        width = self.sizeHint().width()
        if width != self._laid_out:
            self._laid_out = width
            self.updateGeometry()


def finished_line(status: IndexStatus, files_read: bool, problems: str) -> str:
    """What the status bar says when a step ends well ("" when it says nothing): "indexed" only
    when the files are read (``files_read``: the last update was not stopped half-way) and their
    passages have their vectors."""
    if status.outcome is not Outcome.FINISHED:
        return ""
    also = f" — {problems}" if problems else ""
    if status.stage is IndexStage.FILES:
        return f"Files read: {status.root}{also}. Preparing search by meaning…"
    if status.stage is IndexStage.MEANING:
        if not files_read:
            return f"Partly indexed: {status.root} (the rest is read before the next question)"
        return f"Workspace indexed: {status.root}{also}"
    return f"Search improved: {status.root}"
