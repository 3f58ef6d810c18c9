"""PDF text, and page images for OCR, with pypdfium2 (PDFium, the PDF engine of Chromium).

PDFium was chosen over pypdf by measurement (``bench/bench_workspace.py`` prints both): it takes
the text of the sample report about four times faster, and it can render a page, which OCR needs.
Text is taken page by page and the line where each page starts is kept, so citations can name the
page. A page that has content but no text (a scanned image) is recognised with OCR where it is
enabled, and reported otherwise: a scan is never indexed as silently empty, nor is a PDF none of
whose pages holds any text, whether or not they draw a picture. At most
:data:`~.text.MAX_PARTS` pages are read, and a page's text is taken only as far as the document's
bound on text reaches (:class:`~.text.LineWriter`); OCR has its own bounds per page and per file
(:mod:`.ocr`).
"""

from __future__ import annotations

import logging

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.text import (
    MAX_CHARS,
    MAX_PARTS,
    Extracted,
    LineWriter,
    split_lines,
)

log = logging.getLogger(__name__)

#: Pages are drawn at this resolution for OCR (dots per inch).
_OCR_DPI = 200


def read_pdf(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    import pypdfium2 as pdfium  # noqa: PLC0415 - imported in the reader worker

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise DocumentError("it is a PDF locked with a password") from error
        log.info("PDF not opened: %s", error)
        raise DocumentError(
            "it could not be opened as a PDF: the file is damaged, or is not a PDF"
        ) from error
    try:
        return _pages(document, stem, LineWriter(max_chars))
    finally:
        document.close()


def _pages(document: object, stem: str, writer: LineWriter) -> Extracted:
    import pypdfium2 as pdfium  # noqa: PLC0415

    assert isinstance(document, pdfium.PdfDocument)
    unreadable = 0
    scans = _Scans()
    count = len(document)
    read = 0
    for number in range(1, count + 1):
        if number > MAX_PARTS:
            writer.stop(f"only its first {MAX_PARTS:,} of its {count:,} pages were read")
            break
        if not writer.page():
            break
        read = number
        page_lines: tuple[str, ...] = ()
        try:
            page = document[number - 1]
            try:
                page_lines = _page_text(page, writer.room)
                if not any(line.strip() for line in page_lines) and _has_content(page):
                    page_lines = scans.recognised(page, number)
            finally:
                page.close()
        except pdfium.PdfiumError as error:  # one bad page must not cost the others
            log.debug("PDF page %d unreadable: %s", number, error)
            unreadable += 1
        writer.text(page_lines or ("",))
    if count and unreadable == read:
        raise DocumentError("it is a PDF none of whose pages could be read (damaged?)")
    metadata = _metadata(document)
    title = str(metadata.get("Title", "")).strip()
    if title.lower() == "untitled":
        title = ""
    gaps = scans.gaps(read)
    if not gaps and not any(line.strip() for line in writer.lines):
        gaps = "no text was found on any of its pages"
    return writer.result(
        title or writer.first_text() or stem,
        encoding="pdf",
        properties_date=metadata.get("ModDate") or metadata.get("CreationDate"),
        gaps=gaps,
    )


def _page_text(page: object, room: int) -> tuple[str, ...]:
    """The text of a page, at most ``room`` characters of it (a page's text can be far larger
    than the file: one small drawing shown thousands of times)."""
    textpage = page.get_textpage()  # type: ignore[attr-defined]
    try:
        count = textpage.count_chars()
        return split_lines(textpage.get_text_range(0, max(min(count, room + 1), 0)))
    finally:
        textpage.close()


class _Scans:
    """The pages without a text layer: recognised with OCR while its bounds allow, and listed."""

    def __init__(self) -> None:
        self.without_text: list[int] = []
        self.gave_up: list[int] = []
        self.past_bounds: list[int] = []

    def recognised(self, page: object, number: int) -> tuple[str, ...]:
        if ocr.why_not():
            self.without_text.append(number)
            return ()
        if ocr.spent():
            self.past_bounds.append(number)
            return ()
        image = page.render(scale=_OCR_DPI / 72).to_pil()  # type: ignore[attr-defined]
        text = ocr.recognise(image)
        if text is None:
            (self.past_bounds if ocr.spent() else self.gave_up).append(number)
            return ()
        return split_lines(text)

    def gaps(self, count: int) -> str:
        parts = []
        if self.without_text:
            what = (
                "it has no text layer"
                if len(self.without_text) == count
                else f"{page_list(self.without_text)} of {count} have no text layer"
            )
            parts.append(f"{what} (a scan?); {ocr.why_not()}")
        if self.gave_up:
            parts.append(f"OCR gave up on {page_list(self.gave_up)} at its time limit")
        if self.past_bounds:
            parts.append(f"OCR did not read {page_list(self.past_bounds)}: {ocr.spent()}")
        return "; ".join(parts)


def _has_content(page: object) -> bool:
    """Whether a page draws anything at all: a blank page is no scan."""
    objects = getattr(page, "get_objects", None)
    if objects is None:
        return True
    return next(iter(objects(max_depth=1)), None) is not None


def _metadata(document: object) -> dict[str, str]:
    """The document's info (Title, ModDate, CreationDate…), empty when it cannot be read."""
    try:
        metadata = document.get_metadata_dict(skip_empty=True)  # type: ignore[attr-defined]
    except Exception:  # broken metadata is common and harmless
        return {}
    return {str(key): str(value) for key, value in metadata.items()}


def page_list(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` as "pages 1-3, 7"."""
    spans: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ("page " if len(numbers) == 1 else "pages ") + ", ".join(spans)


def read_image(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    """An image's text by OCR, frame by frame (a multi-page TIFF is a scan of several pages), as
    far as OCR's bounds for one file reach."""
    from PIL import Image, ImageSequence, UnidentifiedImageError  # noqa: PLC0415

    reason = ocr.why_not()
    if reason:
        return LineWriter().result(
            stem, encoding="image", gaps=f"an image has no text layer; {reason}"
        )
    import io  # noqa: PLC0415

    writer = LineWriter(max_chars)
    gave_up: list[int] = []
    frames = read = 0
    try:
        with Image.open(io.BytesIO(data)) as image:
            frames = int(getattr(image, "n_frames", 1))
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if ocr.spent() or not writer.page():
                    break
                read = number
                text = ocr.recognise(frame.convert("RGB"))
                if text is None:
                    gave_up.append(number)
                writer.text(split_lines(text or "") or ("",))
    except Image.DecompressionBombError as error:
        log.info("image refused: %s", error)
        raise DocumentError(
            "it is an image too large to read (more pixels than a page scan has)"
        ) from error
    except (UnidentifiedImageError, OSError) as error:
        log.info("image not opened: %s", error)
        raise DocumentError(
            "it could not be opened as an image: the file is damaged, or is not an image"
        ) from error
    if len(writer.page_starts) == 1:
        writer.page_starts.clear()
    parts = [f"OCR gave up on {_frames(gave_up, frames)} at its time limit"] if gave_up else []
    if read < frames and (why := ocr.spent()):
        parts.append(f"OCR read only the first {read:,} of its {frames:,} frames: {why}")
    gaps = "; ".join(parts)
    if not gaps and not any(line.strip() for line in writer.lines):
        gaps = "OCR found no text in the image"
    return writer.result(writer.first_text() or stem, encoding="image", gaps=gaps)


def _frames(numbers: list[int], frames: int) -> str:
    """Frames of an image as "frames 2-4", or "the image" when it has only one."""
    return "the image" if frames <= 1 else page_list(numbers).replace("page", "frame", 1)
