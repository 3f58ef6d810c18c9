"""Optical character recognition with Debian's ``tesseract-ocr``, through pytesseract.

Only the reader worker recognises text (:mod:`..isolation` configures it there): a page image is
handed to the ``tesseract`` program with its own time limit per page, and before each page the
worker tells the index it is still working, so a long scan gets time page by page rather than one
guess for the whole file. A file is bounded too: OCR reads at most ``max_pages`` pages (or
frames) of one file and spends at most ``file_seconds`` on it in all, so a scan of hundreds of
pages, or a TIFF of hundreds of frames, costs minutes at most; what is left unread is reported
(:func:`spent` says why). OCR is a setting (``workspace.ocr``); it takes effect where the program
is installed, and a file read without it says so in the index report.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Images are recognised at most this many per file (pages of a scan, frames of a TIFF) ...
MAX_PAGES = 100
#: ... and for at most this long in all.
FILE_SECONDS = 300.0
#: Less time than this left for a file is not worth starting tesseract for.
_LEAST_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class OcrSettings:
    enabled: bool = False
    page_seconds: float = 30.0
    language: str = "eng"
    file_seconds: float = FILE_SECONDS
    max_pages: int = MAX_PAGES


@dataclass(slots=True)
class _File:
    """What OCR has spent on the file being read."""

    pages: int = 0
    seconds: float = 0.0


_settings = OcrSettings()
_announce: Callable[[float], None] | None = None
_file = _File()


def configure(settings: OcrSettings, announce: Callable[[float], None] | None = None) -> None:
    """Set, in the worker, whether and how pages are recognised, and who is told before each."""
    global _settings, _announce
    _settings, _announce = settings, announce


def begin_file() -> None:
    """A new file starts: its own pages and time for OCR."""
    _file.pages, _file.seconds = 0, 0.0


def spent() -> str:
    """Why OCR reads no more pages of this file (its bounds per file), or empty while it may."""
    if _file.pages >= _settings.max_pages:
        return f"OCR reads at most {_settings.max_pages:,} pages of one file"
    if _file.seconds > _settings.file_seconds - _LEAST_SECONDS:
        return f"OCR spends at most {_settings.file_seconds:,.0f} s on one file"
    return ""


def page_allowance() -> float:
    """The longest the next page may take: its own limit, or what is left of the file's."""
    return max(min(_settings.page_seconds, _settings.file_seconds - _file.seconds), 0.0)


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


def announce_page(seconds: float | None = None) -> None:
    """Tell the index a page is starting: the file gets that page's allowance (``seconds``,
    the page's limit unless given) from now."""
    if _announce is not None:
        _announce((_settings.page_seconds if seconds is None else seconds) + 5.0)


def recognise(image: Any) -> str | None:
    """The text of a PIL image, or None when tesseract gave up at the page's time limit or the
    file's bounds (:func:`spent`) leave it no time."""
    found = _page(
        lambda tesseract, seconds: tesseract.image_to_string(
            image, lang=_settings.language, timeout=seconds
        )
    )
    return None if found is None else str(found)


def _page(read: Callable[[Any, float], Any]) -> Any:
    """``read(pytesseract, seconds)`` for one page, within the file's bounds and counted against
    them; None when they leave no time or tesseract gave up at the page's limit."""
    if spent():
        return None
    import pytesseract  # noqa: PLC0415 - imported only where pages are recognised

    seconds = page_allowance()
    announce_page(seconds)
    _file.pages += 1
    started = time.monotonic()
    try:
        return read(pytesseract, seconds)
    except RuntimeError:  # pytesseract's word for "the time limit passed"
        return None
    finally:
        _file.seconds += time.monotonic() - started


@dataclass(frozen=True, slots=True)
class Word:
    """A word tesseract read, its box in the image's pixels, and the line it is on."""

    text: str
    left: int
    top: int
    right: int
    bottom: int
    line: tuple[int, int, int]  # block, paragraph, line


def words(image: Any) -> list[Word] | None:
    """The words of a PIL image with their boxes (for marking a sentence on a scan), or None
    when tesseract gave up or the file's bounds leave it no time; under the same bounds as
    :func:`recognise`."""
    if why_not():
        return None
    found = _page(
        lambda tesseract, seconds: tesseract.image_to_data(
            image, lang=_settings.language, timeout=seconds, output_type=tesseract.Output.DICT
        )
    )
    if found is None:
        return None
    return [
        Word(
            str(text),
            int(left),
            int(top),
            int(left) + int(width),
            int(top) + int(height),
            (int(block), int(paragraph), int(line)),
        )
        for text, left, top, width, height, block, paragraph, line in zip(
            found["text"],
            found["left"],
            found["top"],
            found["width"],
            found["height"],
            found["block_num"],
            found["par_num"],
            found["line_num"],
            strict=True,
        )
        if str(text).strip()
    ]
