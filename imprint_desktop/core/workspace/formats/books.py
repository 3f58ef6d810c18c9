"""E-books and rich text (EPUB, RTF) with ebooklib and striprtf.

An EPUB is a ZIP of XHTML chapters: ebooklib reads its package and spine (the reading order), and
each chapter goes through the same HTML reader as the workspace's web pages, so its headings become
sections; each chapter is a place ("chapter 3") and the book's own title and date are kept. RTF is
turned into plain text by striprtf; its paragraphs are kept as lines. Both stop where the
writer's bounds do (:class:`~.text.LineWriter`: text, and chapters).
"""

from __future__ import annotations

import io

from imprint_desktop.core.workspace.formats.archive import checked_zip
from imprint_desktop.core.workspace.formats.text import (
    MAX_CHARS,
    Extracted,
    LineWriter,
    decode,
    one_line,
    split_lines,
)
from imprint_desktop.core.workspace.html import html_to_text


def read_epub(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    checked_zip(data, "EPUB")
    from ebooklib import ITEM_DOCUMENT, epub  # noqa: PLC0415 - imported when a book is met

    book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
    writer = LineWriter(max_chars)
    chapter = 0
    for idref, _linear in book.spine:
        if writer.full:
            break
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ITEM_DOCUMENT:
            continue
        lines = split_lines(html_to_text(item.get_content()))
        if not any(line.strip() for line in lines):
            continue
        chapter += 1
        if not writer.place(f"chapter {chapter}", kind="chapters"):
            break
        for line in lines:
            if line.startswith("#"):
                writer.heading(line.lstrip("#").strip(), len(line) - len(line.lstrip("#")))
            else:
                writer.paragraph(line)
    title = _first(book.get_metadata("DC", "title"))
    date = _first(book.get_metadata("DC", "date"))
    return writer.result(
        title or writer.first_text() or stem, encoding="epub", properties_date=date
    )


def _first(values: list[tuple[object, object]]) -> str:
    for value, _attributes in values:
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return ""


def read_rtf(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    from striprtf.striprtf import rtf_to_text  # noqa: PLC0415 - imported when RTF is met

    text, _encoding = decode(data)
    plain = str(rtf_to_text(text, errors="replace"))  # type: ignore[no-untyped-call]
    writer = LineWriter(max_chars)
    for line in split_lines(plain):
        if writer.full:
            break
        writer.paragraph(line)
    return writer.result(writer.first_text() or stem, encoding="rtf")
