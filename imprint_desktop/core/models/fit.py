"""Will a model fit in this machine's memory? A hint shown beside every file, never a verdict.

Running a GGUF model needs roughly its file size (the weights are memory-mapped and all touched)
plus the KV cache for the context window (``model.n_ctx``) plus a little working memory. That total
is compared with the memory available now, not the installed total: a browser full of tabs matters.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

#: Working buffers llama.cpp allocates beside weights and KV cache (compute graph, batch, logits).
WORKING_MEMORY = 256 * 1024 * 1024


class Fit(enum.Enum):
    FITS = "fits"  # comfortably: at most 80% of available memory
    TIGHT = "tight"  # fits, but little else will
    TOO_BIG = "too_big"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FitHint:
    fit: Fit
    needed_bytes: int
    available_bytes: int | None
    kv_known: bool  # False when the KV cache size could not be read from the model's header

    @property
    def text(self) -> str:
        needed = human_size(self.needed_bytes)
        estimate = "" if self.kv_known else " (context memory not known)"
        if self.available_bytes is None or self.fit is Fit.UNKNOWN:
            return f"needs ≈{needed}{estimate}"
        available = human_size(self.available_bytes)
        words = {Fit.FITS: "fits", Fit.TIGHT: "tight fit", Fit.TOO_BIG: "too big"}[self.fit]
        return f"{words}: needs ≈{needed} of {available} free{estimate}"


def available_memory() -> int | None:
    """Bytes of memory available to a new process now, or None when the system will not say."""
    meminfo = Path("/proc/meminfo")
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    return int(pages) * int(page_size) if pages > 0 and page_size > 0 else None


def fit_hint(file_bytes: int, kv_cache_bytes: int | None, available: int | None) -> FitHint:
    """Compare what a model needs at the configured context with ``available`` memory."""
    needed = file_bytes + (kv_cache_bytes or 0) + WORKING_MEMORY
    if available is None:
        fit = Fit.UNKNOWN
    elif needed <= available * 0.8:
        fit = Fit.FITS
    elif needed <= available:
        fit = Fit.TIGHT
    else:
        fit = Fit.TOO_BIG
    return FitHint(fit, needed, available, kv_known=kv_cache_bytes is not None)


def human_size(count: float) -> str:
    """``98362432`` → ``93.8 MiB``: binary units, as file managers and llama.cpp print them."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop returns at GiB
