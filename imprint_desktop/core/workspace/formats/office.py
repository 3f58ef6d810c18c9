"""Word, PowerPoint and Excel files (DOCX, PPTX, XLSX) with python-docx, python-pptx and openpyxl.

Each is read with the library made for it, keeping the structure a citation needs: a Word file's
headings become sections and its tables rows under their header; a presentation's slides become
places ("slide 4"), with the slide title as section and the speaker notes after the slide's text;
a workbook's sheets become places with their row numbers ("sheet Revenue, rows 2-9"), each row a
line naming its cells by the header row. Workbooks are opened read-only with cached values
(formulas as last computed), which streams rows instead of building the whole sheet in memory;
rows go to the writer as they are read, and reading stops where the writer's bounds do
(:class:`~.text.LineWriter`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from imprint_desktop.core.workspace.formats.archive import checked_zip
from imprint_desktop.core.workspace.formats.text import MAX_CHARS, Extracted, LineWriter, one_line

#: The core properties' dates in the templates python-docx and python-pptx make files from: every
#: file they make says it was written then.
_TEMPLATE_STAMPS = frozenset(
    (
        datetime(2013, 12, 23, 23, 15),  # python-docx
        datetime(2013, 1, 27, 9, 14, 16),  # python-pptx
        datetime(2013, 1, 27, 9, 15, 58),
    )
)
#: Rows read from one sheet; past this a sheet is reported as partly read.
MAX_SHEET_ROWS = 50_000
_MAX_COLUMNS = 200


def read_docx(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    checked_zip(data, "Word")
    import docx  # noqa: PLC0415 - imported when a Word file is met
    from docx.table import Table  # noqa: PLC0415
    from docx.text.paragraph import Paragraph  # noqa: PLC0415

    document = docx.Document(io.BytesIO(data))
    # Paragraph.style looks the style up in the styles part on every call (most of the reading
    # time of a long document); each style id's name is looked up once instead.
    styles = document.styles.element
    names: dict[str, str] = {}

    def name_of(style_id: str) -> str:
        if style_id not in names:
            element = styles.get_by_id(style_id)
            # The name as stored: lower case for built-in styles ("heading 1").
            names[style_id] = (element.name_val or "").lower() if element is not None else ""
        return names[style_id]

    writer = LineWriter(max_chars)
    title = ""
    for block in document.iter_inner_content():
        if writer.full:
            break
        if isinstance(block, Paragraph):
            style = name_of(block._p.style or "")
            level = _heading_level(style)
            if level is not None:
                title = title or (one_line(block.text) if level <= 1 else "")
                writer.heading(block.text, level)
            else:
                writer.paragraph(block.text, bullet="list" in style)
        elif isinstance(block, Table):
            writer.table(_docx_rows(block), merges=True)
    page_header: list[str] = []
    for section in document.sections:  # headers and footers often carry the date and status
        for part, header in ((section.header, True), (section.footer, False)):
            if not part.is_linked_to_previous:
                for paragraph in part.paragraphs:
                    writer.paragraph(paragraph.text)
                    if header:
                        page_header.append(paragraph.text)
    properties = document.core_properties
    stated = one_line(properties.title or "")
    return writer.result(
        stated or title or writer.first_text() or stem,
        encoding="docx",
        properties_date=_properties_date(properties),
        page_header=" ".join(page_header),
    )


def _properties_date(properties: Any) -> datetime | None:
    """When the file's core properties say it was last changed (else made), unless that is the
    stamp of a library's own template, which says nothing of the document."""
    for value in (properties.modified, properties.created):
        if isinstance(value, datetime) and value.replace(tzinfo=None) not in _TEMPLATE_STAMPS:
            return value
    return None


def _heading_level(style: str) -> int | None:
    """The heading level a (lower-case) style name gives a paragraph, or None for body text."""
    if style == "title":
        return 1
    if style.startswith("heading"):
        digits = style.removeprefix("heading").strip()
        return int(digits) if digits.isdigit() else 1
    return None


def _docx_rows(table: Any) -> Iterable[Iterable[str]]:
    """A table's rows, each cell's text taken only when the writer asks for it."""
    for row in table.rows:
        yield (cell.text for cell in row.cells[:_MAX_COLUMNS])


def read_pptx(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    checked_zip(data, "PowerPoint")
    import pptx  # noqa: PLC0415 - imported when a presentation is met

    presentation = pptx.Presentation(io.BytesIO(data))
    writer = LineWriter(max_chars)
    first_title = ""
    for number, slide in enumerate(presentation.slides, start=1):
        if not writer.place(f"slide {number}", kind="slides"):
            break
        heading = ""
        shapes = list(slide.shapes)
        title_shape = slide.shapes.title
        if title_shape is not None and title_shape.has_text_frame:
            heading = one_line(title_shape.text_frame.text)
        writer.heading(f"Slide {number}: {heading}" if heading else f"Slide {number}", 2)
        first_title = first_title or heading
        for shape in _flattened(shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False):
                writer.table(
                    (cell.text for cell in row.cells[:_MAX_COLUMNS]) for row in shape.table.rows
                )
            elif getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:
                    text = "".join(run.text for run in paragraph.runs)
                    writer.paragraph(text, bullet=paragraph.level > 0)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                writer.paragraph(f"Speaker notes: {notes.text}")
    properties = presentation.core_properties
    stated = one_line(properties.title or "")
    return writer.result(
        stated or first_title or stem,
        encoding="pptx",
        properties_date=_properties_date(properties),
    )


def _flattened(shapes: Iterable[Any]) -> Iterable[Any]:
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            yield from _flattened(shape.shapes)
        else:
            yield shape


def read_xlsx(data: bytes, stem: str, max_chars: int = MAX_CHARS) -> Extracted:
    checked_zip(data, "Excel")
    import openpyxl  # noqa: PLC0415 - imported when a workbook is met

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    writer = LineWriter(max_chars)
    cut: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if not writer.place(f"sheet {sheet.title}", sheet=True, kind="sheets"):
                break
            writer.heading(f"Sheet {sheet.title}", 2)
            writer.numbered_table(_sheet_rows(sheet, cut))
        title = one_line(workbook.properties.title or "")
        stamped = _properties_date(workbook.properties)
    finally:
        workbook.close()
    gaps = ""
    if cut:
        gaps = f"only the first {MAX_SHEET_ROWS:,} rows of sheet(s) {', '.join(cut)} were read"
    return writer.result(title or stem, encoding="xlsx", properties_date=stamped, gaps=gaps)


def _sheet_rows(sheet: Any, cut: list[str]) -> Iterable[tuple[int, Iterable[str]]]:
    """A sheet's rows with their numbers, read as the writer takes them; a sheet cut at
    :data:`MAX_SHEET_ROWS` is named in ``cut``."""
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
        if number > MAX_SHEET_ROWS:
            cut.append(sheet.title)
            return
        yield number, (_cell(value) for value in values[:_MAX_COLUMNS])


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if hasattr(value, "isoformat"):
        return str(value.isoformat()).removesuffix("T00:00:00")
    return str(value)
