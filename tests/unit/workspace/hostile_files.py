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
from pathlib import Path

from imprint_desktop.core.workspace import Extracted, extract
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.text import MAX_CHARS

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


def hanging(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Never returns for a marked file (as a parser stuck in a loop would)."""
    if MARKER in data:
        threading.Event().wait()
    return extract(name, data, max_chars)


def memory_hungry(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Allocates without end for a marked file, until the worker's memory limit stops it."""
    if MARKER in data:
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    return extract(name, data, max_chars)


def crashing(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Takes the worker process down for a marked file (as a crash in native code would)."""
    if MARKER in data:
        os._exit(70)
    return extract(name, data, max_chars)


def nonsense(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Answers for a marked file with page starts that are not numbers (as a subverted worker
    might): the index must refuse the answer, not trust it."""
    if MARKER in data:
        return Extracted("Odd", ("text",), ("not a line number",))  # type: ignore[arg-type]
    return extract(name, data, max_chars)


def slow_pages(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Works on a marked file page by page, announcing each page as OCR does and taking a second
    over it: longer in all than the file's own time limit, never longer than a page's."""
    if MARKER in data:
        for _page in range(3):
            ocr.announce_page()
            threading.Event().wait(1.0)  # the work of one page
    return extract(name, data, max_chars)


def stuck_page(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Starts a page of a marked file as OCR does, and never finishes it (tesseract stuck)."""
    if MARKER in data:
        ocr.announce_page()
        threading.Event().wait()
    return extract(name, data, max_chars)


def announcing(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """For a marked file, writes this worker's pid to the path that follows the marker (so a
    test can watch the worker), then hangs."""
    if MARKER in data:
        path = data.split(MARKER, 1)[1].split(b"\n", 1)[0].strip().decode()
        Path(path + ".part").write_text(str(os.getpid()), encoding="ascii")
        Path(path + ".part").replace(path)
        threading.Event().wait()
    return extract(name, data, max_chars)


def leaves_a_page_image(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """For a marked file, writes a page image as OCR does (a temporary file), names its folder in
    the path after the marker, and hangs, as tesseract stuck on a page would."""
    import tempfile

    if MARKER in data:
        path = data.split(MARKER, 1)[1].split(b"\n", 1)[0].strip().decode()
        with tempfile.NamedTemporaryFile(prefix="tess_", suffix=".png", delete=False) as image:
            image.write(b"a page of the document")
        Path(path + ".part").write_text(image.name, encoding="utf-8")
        Path(path + ".part").replace(path)
        threading.Event().wait()
    return extract(name, data, max_chars)


def oversized(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """Answers for a marked file with far more text than it was allowed (as a subverted worker
    might): ``max_chars`` times the size given after the marker."""
    if MARKER in data:
        times = int(data.split(MARKER, 1)[1].split(b"\n", 1)[0])
        return Extracted("Big", ("x" * 100,) * (max_chars * times // 100 + 1))
    return extract(name, data, max_chars)


# --- documents that make far more work or text than their size -----------------------------------


def many_page_pdf(pages: int, *, text: bool = True) -> bytes:
    """A valid PDF of ``pages`` pages, each its own content stream drawing one short line of
    text ("page 17"), or nothing at all when ``text`` is false: work that grows with the pages."""
    font = 3 + 2 * pages
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{3 + 2 * n} 0 R" for n in range(pages))
            + f"] /Count {pages} >>"
        ).encode(),
    ]
    for number in range(1, pages + 1):
        content = f"BT /F1 12 Tf 72 720 Td (page {number}) Tj ET".encode() if text else b""
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 {font} 0 R >> >> "
                f"/Contents {4 + 2 * (number - 1)} 0 R >>"
            ).encode()
        )
        objects.append(
            f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
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


_ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'office:version="1.2"'
)


def _opendocument(mimetype: str, body: str) -> bytes:
    import io
    import zipfile

    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODF}>'
        f"<office:body>{body}</office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mimetype}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        package.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        package.writestr("META-INF/manifest.xml", manifest)
        package.writestr("content.xml", content)
    return buffer.getvalue()


def repeated_ods(sheets: int = 6, rows: int = 250, cell: str = "amplified " * 2) -> bytes:
    """A spreadsheet of a few kilobytes that asks for millions of cells: ``sheets`` sheets of
    ``rows`` row elements, each repeated 200 times (as often as a reader copies a row out), each
    one cell repeated a thousand times."""
    row = (
        '<table:table-row table:number-rows-repeated="200">'
        '<table:table-cell table:number-columns-repeated="1000" office:value-type="string">'
        f"<text:p>{cell}</text:p></table:table-cell></table:table-row>"
    )
    tables = "".join(
        f'<table:table table:name="S{number}">{row * rows}</table:table>'
        for number in range(1, sheets + 1)
    )
    return _opendocument(
        "application/vnd.oasis.opendocument.spreadsheet",
        f"<office:spreadsheet>{tables}</office:spreadsheet>",
    )


def empty_slides_odp(slides: int) -> bytes:
    """A presentation of ``slides`` empty pages: a few kilobytes, work that grows with them."""
    return _opendocument(
        "application/vnd.oasis.opendocument.presentation",
        f"<office:presentation>{'<draw:page/>' * slides}</office:presentation>",
    )


def shared_string_xlsx(rows: int = 800, columns: int = 200, size: int = 1000) -> bytes:
    """A workbook whose ``rows`` × ``columns`` cells all show one ``size``-character shared
    string: kilobytes on disk, ``rows * columns * size`` characters of text."""
    import io

    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Sheet")
    value = ("shared " * size)[:size]
    for _ in range(rows):
        sheet.append([value] * columns)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def many_frame_tiff(frames: int, text: str = "Frame") -> bytes:
    """A multi-page TIFF of ``frames`` small frames, each showing a word: OCR work per frame."""
    import io

    from PIL import Image, ImageDraw

    images = []
    for number in range(frames):
        image = Image.new("L", (240, 60), 255)
        ImageDraw.Draw(image).text((10, 20), f"{text} {number + 1}", fill=0)
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(buffer, format="TIFF", save_all=True, append_images=images[1:])
    return buffer.getvalue()
