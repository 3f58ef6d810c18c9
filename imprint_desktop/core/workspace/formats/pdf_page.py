"""A PDF page (or a scan, an image) as it looks, and where a cited sentence lies on it (runs in
the reader worker).

The source viewer shows a cited PDF's page with the quoted sentence marked on it. Drawing a page
means parsing the PDF, so this runs where the text is taken, in the isolated worker
(:mod:`..isolation`) under its time and memory limits, never in the window's process: the window
gets a PNG and rectangles, nothing it must parse.

The sentence is found in the page's text layer by its words (case and punctuation aside, so an
excerpt whose lines were joined, or shortened with "…", still finds its place): the longest run of
the sentence's words on the page is taken, and the rectangles PDFium gives for that run's
characters (one a line of text) are returned in the image's pixels, top-left origin. Of several
candidate sentences (the excerpt, then the cited lines) the first found is marked.

A page without a text layer (a scan), and an image file (a frame a page), is marked where OCR
reads the sentence (:func:`~.ocr.words`, under OCR's bounds for one file): one box a line of the
words matched. Without OCR (turned off, tesseract missing) such a page is drawn unmarked.

A page is drawn at most :data:`MAX_PIXELS` large, whatever the zoom asked: a page made huge (a PDF
may declare a page hundreds of metres wide) is refused with a sentence, not drawn into gigabytes.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.formats import ocr

#: The largest page image drawn, in pixels (about 4,000 × 4,000; 64 MB as RGBA while drawing).
MAX_PIXELS = 16_000_000
#: A scan's page is drawn this large for OCR (200 dots an inch), whatever its zoom.
OCR_SCALE = 200 / 72
#: An image file's pixel is taken as this many points (96 pixels an inch, a screen's).
IMAGE_POINTS = 0.75
#: Zoom bounds, in pixels per PDF point (a point is 1/72 inch).
MIN_SCALE = 0.1
MAX_SCALE = 8.0
#: A run of fewer of a sentence's words than this is taken as chance, not the sentence.
MIN_WORDS = 5
#: Only the first words of a long candidate are matched (an excerpt can be a whole passage).
MAX_WORDS = 400

_WORD = re.compile(r"\w+")
_PUNCTUATION = frozenset(".,;:!?…)]'\"’”»")
_CLOSING = 3


@dataclass(frozen=True, slots=True)
class PageRequest:
    """Draw page ``page`` (1-based) at ``scale`` pixels per point, or ``fit_width`` pixels wide
    when that is given (the viewer does not know a page's size before it is drawn), and mark the
    first of ``sentences`` found on it."""

    page: int
    scale: float
    sentences: tuple[str, ...] = ()
    fit_width: int = 0


@dataclass(frozen=True, slots=True)
class Box:
    """A rectangle on the page image, in pixels from its top-left corner."""

    left: float
    top: float
    right: float
    bottom: float


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """One page drawn: its PNG, its place in the document and the marked sentence's boxes."""

    page: int
    page_count: int
    scale: float
    width: int  # pixels
    height: int
    png: bytes
    boxes: tuple[Box, ...] = ()
    found: int = -1  # which of the request's sentences was marked (-1: none)


def clamp_scale(scale: float) -> float:
    return min(max(scale, MIN_SCALE), MAX_SCALE)


def render_page(data: bytes, request: PageRequest) -> RenderedPage:
    """The page ``request`` asks for (of a PDF, or a frame of an image), drawn, and its
    sentence's boxes (raises :class:`DocumentError` with a reason a person can read)."""
    if b"%PDF-" not in data[:1024]:
        return _image_page(data, request)
    import pypdfium2 as pdfium  # noqa: PLC0415 - imported in the reader worker

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise DocumentError("it is a PDF locked with a password") from error
        raise DocumentError("it could not be opened as a PDF (damaged?)") from error
    try:
        count = len(document)
        if not 1 <= request.page <= count:
            raise DocumentError(f"it has no page {request.page} (it has {count})")
        page = document[request.page - 1]
        try:
            return _drawn(page, request, count)
        finally:
            page.close()
    except pdfium.PdfiumError as error:
        raise DocumentError(f"its page {request.page} could not be drawn (damaged?)") from error
    finally:
        document.close()


def _scale_for(request: PageRequest, width_points: float, height_points: float) -> float:
    """The zoom ``request`` asks for, within bounds; refused when the page would be too large."""
    scale = clamp_scale(request.fit_width / width_points if request.fit_width else request.scale)
    width, height = round(width_points * scale), round(height_points * scale)
    if width * height > MAX_PIXELS or width <= 0 or height <= 0:
        raise DocumentError(
            f"its page {request.page} is too large to draw at this size ({width:,} × "
            f"{height:,} pixels; at most {MAX_PIXELS / 1e6:.0f} million)"
        )
    return scale


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _drawn(page: Any, request: PageRequest, count: int) -> RenderedPage:
    width_points, height_points = page.get_size()
    scale = _scale_for(request, width_points, height_points)
    image = page.render(scale=scale).to_pil()
    width, height = image.size  # as drawn (rounded by PDFium)
    png = _png(image)
    boxes, found = _sentence_boxes(page, request.sentences, (width, height))
    if found < 0 and not _has_text(page):  # a scan: its words as OCR reads them
        if scale < OCR_SCALE and (width_points * height_points * OCR_SCALE**2 <= MAX_PIXELS):
            image = page.render(scale=OCR_SCALE).to_pil()
        boxes, found = _recognised_boxes(image, request.sentences, width / image.size[0])
    return RenderedPage(request.page, count, scale, width, height, png, boxes, found)


def _has_text(page: Any) -> bool:
    textpage = page.get_textpage()
    try:
        return bool(textpage.count_chars())
    finally:
        textpage.close()


def _image_page(data: bytes, request: PageRequest) -> RenderedPage:
    """A frame of an image file as a page (a pixel taken as :data:`IMAGE_POINTS` points), the
    sentence marked where OCR reads it."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415

    try:
        with Image.open(io.BytesIO(data)) as image:
            count = int(getattr(image, "n_frames", 1))
            if not 1 <= request.page <= count:
                raise DocumentError(f"it has no page {request.page} (it has {count})")
            image.seek(request.page - 1)
            frame = image.convert("RGB")
    except Image.DecompressionBombError as error:
        raise DocumentError("it is an image too large to draw") from error
    except (UnidentifiedImageError, OSError, EOFError) as error:
        raise DocumentError("it could not be opened as an image (damaged?)") from error
    width_points, height_points = frame.width * IMAGE_POINTS, frame.height * IMAGE_POINTS
    scale = _scale_for(request, width_points, height_points)
    size = (max(round(width_points * scale), 1), max(round(height_points * scale), 1))
    shown = frame if size == frame.size else frame.resize(size, Image.Resampling.LANCZOS)
    boxes, found = _recognised_boxes(frame, request.sentences, size[0] / frame.width)
    return RenderedPage(request.page, count, scale, *size, _png(shown), boxes, found)


def _recognised_boxes(
    image: Any, sentences: tuple[str, ...], factor: float
) -> tuple[tuple[Box, ...], int]:
    """The boxes of the first of ``sentences`` among the words OCR reads in ``image``, one box a
    line, in pixels ``factor`` times the image's; none when OCR is off or gives up."""
    words = ocr.words(image)
    if not words:
        return (), -1
    text, tokens, owner = "", [], []
    for index, word in enumerate(words):
        start = len(text)
        text += word.text + " "
        for match in _WORD.finditer(word.text):
            tokens.append((start + match.start(), start + match.end(), match.group().lower()))
            owner.append(index)
    for number, sentence in enumerate(sentences):
        span = matched_span(tokens, sentence)
        if span is None:
            continue
        chosen = [
            words[owner[i]]
            for i, (start, end, _) in enumerate(tokens)
            if start >= span[0] and end <= span[1]
        ]
        lines: dict[tuple[int, int, int], list[ocr.Word]] = {}
        for word in chosen:
            lines.setdefault(word.line, []).append(word)
        boxes = tuple(
            Box(
                min(word.left for word in line) * factor,
                min(word.top for word in line) * factor,
                max(word.right for word in line) * factor,
                max(word.bottom for word in line) * factor,
            )
            for line in lines.values()
        )
        return boxes, number
    return (), -1


def _sentence_boxes(
    page: Any, sentences: tuple[str, ...], size: tuple[int, int]
) -> tuple[tuple[Box, ...], int]:
    """The boxes of the first of ``sentences`` found on ``page``, in the pixels of its image
    ``size`` large."""
    from pypdfium2 import raw  # noqa: PLC0415

    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        text = "".join(chr(raw.FPDFText_GetUnicode(textpage.raw, i) or 32) for i in range(count))
        words = [
            (match.start(), match.end(), match.group().lower()) for match in _WORD.finditer(text)
        ]
        for number, sentence in enumerate(sentences):
            span = matched_span(words, sentence)
            if span is None:
                continue
            first, end = span
            while end < len(text) and end - span[1] < _CLOSING and text[end] in _PUNCTUATION:
                end += 1  # the sentence's closing marks: "rail." is marked with its full stop
            rects = textpage.count_rects(first, end - first)
            boxes = []
            for index in range(rects):
                x0, y0, x1, y1 = textpage.get_rect(index)
                corners = [_device(page, size, x, y) for x, y in ((x0, y0), (x1, y1))]
                xs, ys = [x for x, _ in corners], [y for _, y in corners]
                boxes.append(Box(min(xs), min(ys), max(xs), max(ys)))
            return tuple(boxes), number
        return (), -1
    finally:
        textpage.close()


def matched_span(words: list[tuple[int, int, str]], sentence: str) -> tuple[int, int] | None:
    """The characters (start, end) of the longest run of ``sentence``'s words among ``words``
    (each a page word's start, end and lowercase text); None when no run of :data:`MIN_WORDS`
    (or all of a shorter sentence) is there."""
    wanted = [word.lower() for word in _WORD.findall(sentence)][:MAX_WORDS]
    if not wanted or not words:
        return None
    need = min(MIN_WORDS, len(wanted))
    best, best_end = 0, 0
    previous = [0] * (len(wanted) + 1)
    for index, (_, _, word) in enumerate(words):
        current = [0] * (len(wanted) + 1)
        for position, other in enumerate(wanted, start=1):
            if word == other:
                current[position] = previous[position - 1] + 1
                if current[position] > best:
                    best, best_end = current[position], index
        previous = current
    if best < need:
        return None
    return words[best_end - best + 1][0], words[best_end][1]


def _device(page: Any, size: tuple[int, int], x: float, y: float) -> tuple[float, float]:
    """A point of the page (PDF units) in the image's pixels: PDFium's own transform, so the
    page's crop box and rotation are taken as the drawing took them."""
    import ctypes  # noqa: PLC0415

    from pypdfium2 import raw  # noqa: PLC0415

    device_x, device_y = ctypes.c_int(), ctypes.c_int()
    raw.FPDF_PageToDevice(
        page.raw,
        0,
        0,
        size[0],
        size[1],
        0,
        x,
        y,
        ctypes.byref(device_x),
        ctypes.byref(device_y),
    )
    return float(device_x.value), float(device_y.value)
