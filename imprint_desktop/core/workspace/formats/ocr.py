"""Optical character recognition with Debian's ``tesseract-ocr``, through pytesseract.

Only the reader worker recognises text (:mod:`..isolation` configures it there): a page image is
handed to the ``tesseract`` program with its own time limit per page, and before each page the
worker tells the index it is still working, so a long scan gets time page by page rather than one
guess for the whole file. OCR is a setting (``workspace.ocr``); it takes effect where the program
is installed, and a file read without it says so in the index report.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Images are recognised at most this many per file (pages of a scan, frames of a TIFF).
MAX_PAGES = 200


@dataclass(frozen=True, slots=True)
class OcrSettings:
    enabled: bool = False
    page_seconds: float = 30.0
    language: str = "eng"


_settings = OcrSettings()
_announce: Callable[[float], None] | None = None


def configure(settings: OcrSettings, announce: Callable[[float], None] | None = None) -> None:
    """Set, in the worker, whether and how pages are recognised, and who is told before each."""
    global _settings, _announce
    _settings, _announce = settings, announce


@functools.cache
def tesseract_installed() -> bool:
    return shutil.which("tesseract") is not None


_OFF = "OCR is turned off (workspace.ocr)"
_MISSING = "OCR needs the tesseract program, which is not installed"


def why_not() -> str:
    """Why pages without text are not recognised, or empty when they are."""
    if not _settings.enabled:
        return _OFF
    if not tesseract_installed():
        return _MISSING
    return ""


def waits_for_ocr(reason: str) -> bool:
    """Whether a file's reason says it went unread only for want of OCR (see :func:`why_not`)."""
    return _OFF in reason or _MISSING in reason


def announce_page() -> None:
    """Tell the index a page is starting: the file gets that page's allowance from now."""
    if _announce is not None:
        _announce(_settings.page_seconds + 5.0)


def recognise(image: Any) -> str | None:
    """The text of a PIL image, or None when tesseract gave up at the page's time limit."""
    import pytesseract  # noqa: PLC0415 - imported only where pages are recognised

    announce_page()
    try:
        return str(
            pytesseract.image_to_string(
                image, lang=_settings.language, timeout=_settings.page_seconds
            )
        )
    except RuntimeError:  # pytesseract's word for "the time limit passed"
        return None
