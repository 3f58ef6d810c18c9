"""Where a document's bytes become text: a PDF, an Office file, an e-book or an image in the
isolated worker, plain text, Markdown and HTML here.

Indexing a folder and reading one document for a tool make the same choice, so it is made once, by
:class:`DocumentReader`: a PDF or a ZIP-based format may make its parser loop, run out of memory or
crash, so it is read by :class:`~.isolation.IsolatedExtractor` under the workspace's
:class:`~.isolation.ExtractionLimits` and can be stopped; text formats are parsed in this process,
in time proportional to their size. Either way a document gives at most the limits'
``max_text_chars`` of text (``workspace.max_text_mb``), and says so when it had more.
Each caller keeps its own words for a failure (the index records a reason per file, a tool call
names the file in a sentence).

A caller that reads the same file again and again (the model's ``read_document``, one range of
lines after another) passes the file's :class:`FileStamp`: the reader keeps what it extracted under
that stamp, whatever the format, and a file that has not changed since is not parsed again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.extract import (
    ISOLATED,
    Extracted,
    Format,
    extract,
    format_for,
)
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.pdf_page import PageRequest, RenderedPage
from imprint_desktop.core.workspace.isolation import (
    DEFAULT_LIMITS,
    ExtractionLimits,
    IsolatedExtractor,
    Stop,
)

#: How much extracted text a reader keeps for files read again (characters, all files together).
KEPT_CHARACTERS = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileStamp:
    """One file as it was when read: which file (device and inode) and its size and modification
    time. Extracted text kept under a stamp stays right until the file changes or is replaced."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileStamp:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class DocumentReader:
    """Reads documents, starting the worker at the first file that needs it and keeping it.

    Any thread may read; isolated formats go through the one worker one at a time. Close it (or
    use ``with``) to stop the worker: leaving the ``with`` block on an error kills it without
    waiting. Text read
    with a :class:`FileStamp` is kept (the most recently read first, up to ``kept_characters``).
    """

    def __init__(
        self, limits: ExtractionLimits = DEFAULT_LIMITS, *, kept_characters: int = KEPT_CHARACTERS
    ) -> None:
        self._pdfs = IsolatedExtractor(limits)
        self._lock = threading.Lock()  # one file at a time through the one worker
        self._kept: OrderedDict[tuple[str, FileStamp], tuple[Extracted, int]] = OrderedDict()
        self._kept_lock = threading.Lock()
        self._kept_characters = 0
        self._kept_limit = kept_characters

    def __enter__(self) -> DocumentReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        with self._lock:
            self._pdfs.__exit__(kind, *rest)

    def close(self) -> None:
        with self._lock:
            self._pdfs.close()

    @property
    def ocr_ready(self) -> bool:
        """Whether pages without text are recognised: OCR is on and tesseract is installed."""
        return self._pdfs.limits.ocr and ocr.tesseract_installed()

    @staticmethod
    def isolated(name: str) -> bool:
        """Whether a file called ``name`` is read in the worker: it may take long or never end."""
        return format_for(name) in ISOLATED

    def read(
        self, name: str, data: bytes, cancel: Stop | None = None, *, stamp: FileStamp | None = None
    ) -> Extracted:
        """The text of ``data``, a file called ``name`` (its suffix says the format); the text kept
        from an earlier read of the same ``stamp``, when there is one.

        An isolated format raises :class:`~imprint_desktop.core.errors.DocumentError` saying why
        it cannot be read (:class:`~.isolation.PdfReaderUnavailableError` when the worker cannot
        start, no fault of the file), and :class:`~imprint_desktop.core.errors.Cancelled` as soon
        as ``cancel`` is set. Other formats raise what :func:`~.extract.extract` raises.
        """
        key = (name, stamp) if stamp is not None else None
        if key is not None and (kept := self._recall(key)) is not None:
            return kept
        if self.isolated(name):
            with self._lock:
                document = self._pdfs.extract(name, data, cancel)
        else:
            document = extract(name, data, self._pdfs.limits.max_text_chars)
        if key is not None:
            self._keep(key, document)
        return document

    @staticmethod
    def drawable(name: str) -> bool:
        """Whether a file called ``name`` has pages :meth:`render` can draw (a PDF, an image)."""
        return format_for(name) in {Format.PDF, Format.IMAGE}

    def render(
        self, name: str, data: bytes, request: PageRequest, cancel: Stop | None = None
    ) -> RenderedPage:
        """A page of the PDF ``data`` drawn in the worker, with the boxes of the first of the
        request's sentences found on it; :class:`DocumentError` says why not (too large, too
        slow: the file's own time limit), :class:`~imprint_desktop.core.errors.Cancelled` on
        ``cancel``."""
        if not self.drawable(name):
            raise DocumentError(f"{name} has no pages to draw")
        with self._lock:
            return self._pdfs.render(name, data, request, cancel)

    def _recall(self, key: tuple[str, FileStamp]) -> Extracted | None:
        with self._kept_lock:
            entry = self._kept.get(key)
            if entry is None:
                return None
            self._kept.move_to_end(key)
            return entry[0]

    def _keep(self, key: tuple[str, FileStamp], document: Extracted) -> None:
        size = sum(map(len, document.lines)) + len(document.title)
        if size > self._kept_limit:
            return
        with self._kept_lock:
            if key in self._kept:
                return
            self._kept[key] = (document, size)
            self._kept_characters += size
            while self._kept_characters > self._kept_limit:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._kept_characters -= dropped
