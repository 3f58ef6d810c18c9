"""PDF text, and page images for OCR, with pypdfium2 (PDFium, the PDF engine of Chromium).

PDFium was chosen over pypdf by measurement (``bench/bench_workspace.py`` prints both): it takes
the text of the sample report about four times faster, and it can render a page, which OCR needs.
Text is taken page by page and the line where each page starts is kept, so citations can name the
page. A page that has content but no text (a scanned image) is recognised with OCR where it is
enabled, and reported otherwise: a scan is never indexed as silently empty.
"""

from __future__ import annotations

import logging

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.text import Extracted, LineWriter, split_lines

log = logging.getLogger(__name__)

#: Pages are drawn at this resolution for OCR (dots per inch).
_OCR_DPI = 200


def read_pdf(data: bytes, stem: str) -> Extracted:
    import pypdfium2 as pdfium  # noqa: PLC0415 - imported in the reader worker

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise DocumentError("The PDF is encrypted with a password.") from error
        raise DocumentError(f"The PDF cannot be read ({error}).") from error
    try:
        return _pages(document, stem)
    finally:
        document.close()


def _pages(document: object, stem: str) -> Extracted:
    import pypdfium2 as pdfium  # noqa: PLC0415

    assert isinstance(document, pdfium.PdfDocument)
    writer = LineWriter()
    unreadable = 0
    without_text: list[int] = []
    gave_up: list[int] = []
    recognised = 0
    count = len(document)
    for number in range(1, count + 1):
        writer.page()
        page_lines: tuple[str, ...] = ()
        try:
            page = document[number - 1]
            try:
                textpage = page.get_textpage()
                page_lines = split_lines(textpage.get_text_range())
                textpage.close()
                if not any(line.strip() for line in page_lines) and _has_content(page):
                    if ocr.why_not() or recognised >= ocr.MAX_PAGES:
                        without_text.append(number)
                    else:
                        recognised += 1
                        text = ocr.recognise(page.render(scale=_OCR_DPI / 72).to_pil())
                        if text is None:
                            gave_up.append(number)
                        else:
                            page_lines = split_lines(text)
            finally:
                page.close()
        except pdfium.PdfiumError as error:  # one bad page must not cost the others
            log.debug("PDF page %d unreadable: %s", number, error)
            unreadable += 1
        writer.lines.extend(page_lines or ("",))
    if count and unreadable == count:
        raise DocumentError("No page of the PDF could be read.")
    title = _title(document)
    gaps = _gaps(count, without_text, gave_up)
    return writer.result(title or writer.first_text() or stem, encoding="pdf", gaps=gaps)


def _has_content(page: object) -> bool:
    """Whether a page draws anything at all: a blank page is no scan."""
    objects = getattr(page, "get_objects", None)
    if objects is None:
        return True
    return next(iter(objects(max_depth=1)), None) is not None


def _title(document: object) -> str | None:
    try:
        metadata = document.get_metadata_dict(skip_empty=True)  # type: ignore[attr-defined]
    except Exception:  # broken metadata is common and harmless
        return None
    title = str(metadata.get("Title", "")).strip()
    return title if title and title.lower() != "untitled" else None


def _gaps(count: int, without_text: list[int], gave_up: list[int]) -> str:
    parts = []
    if without_text:
        what = (
            "it has no text layer"
            if len(without_text) == count
            else (f"{page_list(without_text)} of {count} have no text layer")
        )
        parts.append(f"{what} (a scan?); {ocr.why_not() or 'OCR stopped at its page limit'}")
    if gave_up:
        parts.append(f"OCR gave up on {page_list(gave_up)} at its time limit")
    return "; ".join(parts)


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


def read_image(data: bytes, stem: str) -> Extracted:
    """An image's text by OCR, frame by frame (a multi-page TIFF is a scan of several pages)."""
    from PIL import Image, ImageSequence, UnidentifiedImageError  # noqa: PLC0415

    reason = ocr.why_not()
    if reason:
        return LineWriter().result(
            stem, encoding="image", gaps=f"an image has no text layer; {reason}"
        )
    import io  # noqa: PLC0415

    writer = LineWriter()
    gave_up: list[int] = []
    try:
        with Image.open(io.BytesIO(data)) as image:
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if number > ocr.MAX_PAGES:
                    break
                writer.page()
                text = ocr.recognise(frame.convert("RGB"))
                if text is None:
                    gave_up.append(number)
                writer.lines.extend(split_lines(text or "") or ("",))
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError) as error:
        raise DocumentError(f"the image cannot be read ({error})") from error
    pages = len(writer.page_starts)
    if pages == 1:
        writer.page_starts.clear()
    gaps = f"OCR gave up on {page_list(gave_up)} at its time limit" if gave_up else ""
    if not gaps and not any(line.strip() for line in writer.lines):
        gaps = "OCR found no text in the image"
    return writer.result(writer.first_text() or stem, encoding="image", gaps=gaps)
