"""A cited PDF page drawn by the isolated reader, with the quoted sentence's boxes on it."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.pdf_page import (
    Box,
    PageRequest,
    RenderedPage,
    matched_span,
)
from imprint_desktop.core.workspace.isolation import ExtractionLimits
from imprint_desktop.core.workspace.reader import DocumentReader
from tests.support.documents import scanned_image, scanned_pdf
from tests.support.pdf_pages import SENTENCE, hanging_renderer, huge_page_pdf, two_page_pdf

SCALE = 1.5


def char_boxes(data: bytes, page_number: int, sentence: str) -> list[Box]:
    """Each character box of ``sentence`` on the page, in the pixels of an image at SCALE
    (read here, in the test, straight from the text layer)."""
    document = pdfium.PdfDocument(data)
    page = document[page_number - 1]
    height = page.get_height()
    textpage = page.get_textpage()
    found = textpage.search(sentence, match_case=True).get_next()
    assert found is not None
    start, count = found
    boxes = []
    for index in range(start, start + count):
        left, bottom, right, top = textpage.get_charbox(index)
        if right > left:  # a space has no box
            boxes.append(
                Box(left * SCALE, (height - top) * SCALE, right * SCALE, (height - bottom) * SCALE)
            )
    textpage.close()
    page.close()
    document.close()
    return boxes


def inside(inner: Box, outer: Box, slack: float = 2.0) -> bool:
    return (
        inner.left >= outer.left - slack
        and inner.right <= outer.right + slack
        and inner.top >= outer.top - slack
        and inner.bottom <= outer.bottom + slack
    )


def test_the_page_is_drawn_in_the_worker_with_boxes_over_the_sentences_characters(
    tmp_path: Path,
) -> None:
    data = two_page_pdf(tmp_path / "log.pdf").read_bytes()
    with DocumentReader() as reader:
        page = reader.render("log.pdf", data, PageRequest(2, SCALE, ("not on this page", SENTENCE)))
    assert (page.page, page.page_count, page.found) == (2, 3, 1)
    image = Image.open(io.BytesIO(page.png))
    assert image.format == "PNG" and image.size == (page.width, page.height)
    assert page.width == pytest.approx(210 / 25.4 * 72 * SCALE, abs=2)  # an A4 page
    chars = char_boxes(data, 2, SENTENCE)
    assert page.boxes and chars
    for char in chars:  # every character of the sentence is under a box
        assert any(inside(char, box) for box in page.boxes), char
    span = Box(
        min(c.left for c in chars),
        min(c.top for c in chars),
        max(c.right for c in chars),
        max(c.bottom for c in chars),
    )
    for box in page.boxes:  # and no box reaches past the sentence (nor off the page)
        assert inside(box, span)
        assert 0 <= box.left < box.right <= page.width and 0 <= box.top < box.bottom <= page.height
    # Near the top of the page, where the sentence is: the viewer scrolls there.
    assert page.boxes[0].top < page.height / 4


def test_an_excerpt_with_its_lines_joined_or_shortened_still_finds_its_place(
    tmp_path: Path,
) -> None:
    data = two_page_pdf(tmp_path / "log.pdf").read_bytes()
    excerpt = "… logged a cormorant\nnesting under the gallery rail …"
    with DocumentReader() as reader:
        page = reader.render("log.pdf", data, PageRequest(2, SCALE, (excerpt,)))
        missing = reader.render("log.pdf", data, PageRequest(1, SCALE, (excerpt,)))
    assert page.found == 0 and page.boxes
    wanted = char_boxes(data, 2, "logged a cormorant nesting under the gallery rail")
    assert all(any(inside(char, box) for box in page.boxes) for char in wanted)
    assert missing.png and missing.boxes == () and missing.found == -1  # page 1 lacks it


def test_a_page_too_large_to_draw_is_refused_with_a_reason_and_the_text_still_reads(
    tmp_path: Path,
) -> None:
    data = huge_page_pdf(tmp_path / "poster.pdf").read_bytes()
    with DocumentReader() as reader:
        with pytest.raises(DocumentError, match=r"too large to draw .*14,400 × 14,400 pixels"):
            reader.render("poster.pdf", data, PageRequest(1, 1.0, (SENTENCE,)))
        small = reader.render("poster.pdf", data, PageRequest(1, 0.1, (SENTENCE,)))
        assert (small.width, small.height) == (1440, 1440) and small.found == 0
        assert SENTENCE in "\n".join(reader.read("poster.pdf", data).lines)
        with pytest.raises(DocumentError, match="no page 2"):
            reader.render("poster.pdf", data, PageRequest(2, 0.1))
        with pytest.raises(DocumentError, match="no pages to draw"):
            reader.render("notes.docx", data, PageRequest(1, 1.0))


def test_a_page_whose_drawing_hangs_is_stopped_at_the_files_time_and_the_text_still_reads(
    tmp_path: Path,
) -> None:
    data = two_page_pdf(tmp_path / "log.pdf").read_bytes()
    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, renderer=hanging_renderer)
    with DocumentReader(limits) as reader:
        with pytest.raises(DocumentError, match=r"drawing its page 2 took longer than 1 s"):
            reader.render("log.pdf", data, PageRequest(2, SCALE, (SENTENCE,)))
        assert SENTENCE in " ".join(reader.read("log.pdf", data).lines)


def test_the_longest_run_of_the_sentences_words_is_matched() -> None:
    text = "One two three. Four five six seven."
    words = [(0, 3, "one"), (4, 7, "two"), (8, 13, "three"), (15, 19, "four")]
    words += [(20, 24, "five"), (25, 28, "six"), (29, 34, "seven")]
    assert matched_span(words, "FOUR, five six!") == (15, 28)
    assert text[slice(*matched_span(words, "two three four five") or (0, 0))] == (
        "two three. Four five"
    )
    assert matched_span(words, "two seven") is None  # no run: chance, not the sentence
    assert matched_span(words, "six") == (25, 28)  # a one-word sentence, whole
    assert matched_span(words, "") is None


needs_tesseract = pytest.mark.skipif(
    not ocr.tesseract_installed(), reason="the tesseract program is not installed"
)
SCAN_LINES = ["Gannet Point light, the keeper's log.", SENTENCE, "The relief boat came twice."]


def ocr_boxes_cover_the_sentence(page: RenderedPage) -> None:
    """One box, on the sentence's line (the second of SCAN_LINES), across most of its width."""
    assert page.found == 0 and len(page.boxes) == 1, page.boxes
    (box,) = page.boxes
    line_top = (60 + 80) / 1400 * page.width  # where text_image draws the second line
    assert abs(box.top - line_top) < 12 * page.width / 1400
    assert box.left < 100 * page.width / 1400 and box.right > 700 * page.width / 1400


@needs_tesseract
def test_a_scanned_pdf_page_marks_the_sentence_where_ocr_reads_it(tmp_path: Path) -> None:
    data = scanned_pdf(tmp_path / "scan.pdf", [["A first page."], SCAN_LINES]).read_bytes()
    with DocumentReader() as reader:
        page = reader.render("scan.pdf", data, PageRequest(2, 0, (SENTENCE,), fit_width=700))
    assert (page.page, page.page_count, page.width) == (2, 2, 700)
    ocr_boxes_cover_the_sentence(page)


@needs_tesseract
def test_an_image_shows_as_its_page_with_the_sentence_marked(tmp_path: Path) -> None:
    data = scanned_image(tmp_path / "scan.png", SCAN_LINES).read_bytes()
    with DocumentReader() as reader:
        page = reader.render("scan.png", data, PageRequest(1, 1 / 0.75, (SENTENCE,)))
        assert (page.width, page.page_count) == (1400, 1)  # a pixel a pixel at 100 %
        ocr_boxes_cover_the_sentence(page)
        smaller = reader.render("scan.png", data, PageRequest(1, 0, ("nowhere",), fit_width=700))
    assert smaller.width == 700 and smaller.found == -1 and smaller.boxes == ()
    assert Image.open(io.BytesIO(smaller.png)).size == (700, smaller.height)


def test_without_ocr_a_scan_is_drawn_unmarked(tmp_path: Path) -> None:
    data = scanned_image(tmp_path / "scan.png", SCAN_LINES).read_bytes()
    with DocumentReader(ExtractionLimits(ocr=False)) as reader:
        page = reader.render("scan.png", data, PageRequest(1, 0, (SENTENCE,), fit_width=700))
    assert page.width == 700 and page.png and page.boxes == () and page.found == -1


def test_a_turned_and_cropped_page_is_marked_where_its_sentence_is_drawn(tmp_path: Path) -> None:
    document = pdfium.PdfDocument(two_page_pdf(tmp_path / "log.pdf").read_bytes())
    document[1].set_rotation(90)  # a quarter turn clockwise, as a landscape scan is stored
    document[1].set_cropbox(0, 400, 595, 842)  # the top half of the page only
    turned = io.BytesIO()
    document.save(turned)
    document.close()
    data = turned.getvalue()
    with DocumentReader() as reader:
        page = reader.render("log.pdf", data, PageRequest(2, 1.0, (SENTENCE,)))
    assert (page.width, page.height) == (442, 595) and page.found == 0
    (box,) = page.boxes
    assert box.bottom - box.top > 10 * (box.right - box.left)  # the line runs down the image
    # A quarter turn clockwise: the page's x runs down the image, its y to the right.
    source = pdfium.PdfDocument(data)
    textpage = source[1].get_textpage()
    start, count = textpage.search(SENTENCE, match_case=True).get_next()
    for index in range(start, start + count):
        left, bottom, right, top = textpage.get_charbox(index)
        if right > left:
            char = Box(bottom - 400, left, top - 400, right)
            assert inside(char, box), (char, box)
    textpage.close()
    source.close()
