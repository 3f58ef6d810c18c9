"""How work grows with the size of its input: proof of linear time that does not depend on how
fast the machine is.

A timed test ("under a second") passes on a fast machine and fails on a loaded one; a ratio does
not care. :func:`growth` measures the processor time of some work at a size and at ``factor`` times
that size, each repeated until it is long enough to measure, and returns the ratio: about
``factor`` for linear work, ``factor ** 2`` for quadratic, ``factor ** 3`` for cubic. Tests assert
it stays below ``2 * factor``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Each measurement repeats the work until it takes at least this much processor time.
_MEASURABLE_SECONDS = 0.03


def growth(work: Callable[[int], object], size: int, factor: int = 4) -> float:
    """Processor time of ``work(size * factor)`` over that of ``work(size)`` (best of three)."""
    runs = 1
    while _seconds(work, size, runs) < _MEASURABLE_SECONDS:
        runs *= 2
    small = min(_seconds(work, size, runs) for _ in range(3))
    large = min(_seconds(work, size * factor, runs) for _ in range(3))
    return large / small


def _seconds(work: Callable[[int], object], size: int, runs: int) -> float:
    started = time.process_time()
    for _ in range(runs):
        work(size)
    return time.process_time() - started
