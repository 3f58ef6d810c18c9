"""Files and document readers that misbehave, for the indexing tests.

:func:`slow_pdf` writes a real, valid PDF that takes PDFium seconds a page (and pypdf minutes):
every page shares one small compressed content stream that inflates to millions of text
operators. The readers stand in for the document libraries inside the worker process
(``ExtractionLimits.reader``; the worker imports them by name) to make a file hang, exhaust memory
or kill the worker, whichever the test needs.
"""

from __future__ import annotations

import os
import threading
import zlib

from imprint_desktop.core.workspace import Extracted, extract
from imprint_desktop.core.workspace.formats import ocr

#: Files whose bytes hold this marker make the readers below misbehave; others are read normally.
MARKER = b"%IMPRINT-HOSTILE"


def slow_pdf(pages: int = 24, operators: int = 500_000) -> bytes:
    """A well-formed PDF of ``pages`` pages, each drawing ``operators`` text operators from the
    same content stream: about 40 KB on disk, 16 MB of operators per page once inflated, over a
    second of PDFium's time per page, so more than the default limit for the whole file."""
    content = b"BT /F1 12 Tf 10 10 Td (x) Tj ET\n" * operators
    stream = zlib.compress(content, 9)
    font = 3 + pages + 1
    contents = 3 + pages
    kids = " ".join(f"{3 + number} 0 R" for number in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        *(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {contents} 0 R >>"
            ).encode()
            for _ in range(pages)
        ),
        f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode()
        + stream
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    table = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{table}\n%%EOF\n".encode()
    return bytes(out)


def hanging(name: str, data: bytes) -> Extracted:
    """Never returns for a marked file (as a parser stuck in a loop would)."""
    if MARKER in data:
        threading.Event().wait()
    return extract(name, data)


def memory_hungry(name: str, data: bytes) -> Extracted:
    """Allocates without end for a marked file, until the worker's memory limit stops it."""
    if MARKER in data:
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    return extract(name, data)


def crashing(name: str, data: bytes) -> Extracted:
    """Takes the worker process down for a marked file (as a crash in native code would)."""
    if MARKER in data:
        os._exit(70)
    return extract(name, data)


def nonsense(name: str, data: bytes) -> Extracted:
    """Answers for a marked file with page starts that are not numbers (as a subverted worker
    might): the index must refuse the answer, not trust it."""
    if MARKER in data:
        return Extracted("Odd", ("text",), ("not a line number",))  # type: ignore[arg-type]
    return extract(name, data)


def slow_pages(name: str, data: bytes) -> Extracted:
    """Works on a marked file page by page, announcing each page as OCR does and taking a second
    over it: longer in all than the file's own time limit, never longer than a page's."""
    if MARKER in data:
        for _page in range(3):
            ocr.announce_page()
            threading.Event().wait(1.0)  # the work of one page
    return extract(name, data)
