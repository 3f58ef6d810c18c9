"""Where a document's bytes become text: a PDF, an Office file, an e-book or an image in the
isolated worker, plain text, Markdown and HTML here.

Indexing a folder and reading one document for a tool make the same choice, so it is made once, by
:class:`DocumentReader`: a PDF or a ZIP-based format may make its parser loop, run out of memory or
crash, so it is read by :class:`~.isolation.IsolatedExtractor` under the workspace's
:class:`~.isolation.ExtractionLimits` and can be stopped; text formats are parsed in this process,
in time proportional to their size.
Each caller keeps its own words for a failure (the index records a reason per file, a tool call
names the file in a sentence).
"""

from __future__ import annotations

import threading

from imprint_desktop.core.workspace.extract import ISOLATED, Extracted, extract, format_for
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.isolation import (
    DEFAULT_LIMITS,
    ExtractionLimits,
    IsolatedExtractor,
    Stop,
)


class DocumentReader:
    """Reads documents, starting the worker at the first file that needs it and keeping it.

    Any thread may read; isolated formats go through the one worker one at a time. Close it (or
    use ``with``) to stop the worker: leaving the ``with`` block on an error kills it without
    waiting.
    """

    def __init__(self, limits: ExtractionLimits = DEFAULT_LIMITS) -> None:
        self._pdfs = IsolatedExtractor(limits)
        self._lock = threading.Lock()  # one file at a time through the one worker

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

    def read(self, name: str, data: bytes, cancel: Stop | None = None) -> Extracted:
        """The text of ``data``, a file called ``name`` (its suffix says the format).

        An isolated format raises :class:`~imprint_desktop.core.errors.DocumentError` saying why
        it cannot be read (:class:`~.isolation.PdfReaderUnavailableError` when the worker cannot
        start, no fault of the file), and :class:`~imprint_desktop.core.errors.Cancelled` as soon
        as ``cancel`` is set. Other formats raise what :func:`~.extract.extract` raises.
        """
        if self.isolated(name):
            with self._lock:
                return self._pdfs.extract(name, data, cancel)
        return extract(name, data)
