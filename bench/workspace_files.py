"""Write the Word, Excel and PDF files of a benchmark workspace, the same bytes on every rebuild.

Shared by bench/fresh-workspace-make.py, bench/civic-workspace-make.py and
bench/allotment-workspace-make.py, which keep their own content and fixed date and pass them in.
Every date stamped into a file (the zip entries' times and the document properties) is the given
stamp, so a rebuild with the same library versions gives the same bytes.

- :func:`write_docx`: a heading, a subtitle, paragraphs, one grid table and a closing paragraph
  (python-docx).
- :func:`write_xlsx`: a "Register" sheet of a header and rows, and a "Notes" sheet of one line a
  row (openpyxl).
- :func:`write_pdf`: A4 pages of headings, section titles, paragraphs and list items in the core
  font Helvetica, with a text layer (fpdf2).

Not a package module: a script in bench/ puts its own folder on ``sys.path`` and imports this by
name.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import docx
import openpyxl
from fpdf import FPDF

#: A cell of an Excel register row; None leaves the cell empty.
Cell = str | int | float | None

#: A block of a PDF page: its kind and its text. The kind is "h" (a heading), "s" (a section
#: title), "l" (a list item, written after "- ") or anything else (a paragraph).
PdfBlock = tuple[str, str]


def normalise_zip(path: Path, stamp: datetime) -> None:
    """Give an Office file's zip entries a fixed time and its core properties the fixed stamp."""
    with zipfile.ZipFile(path) as source:
        entries = [(info, source.read(info.filename)) for info in source.infolist()]
    iso = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for info, stored in entries:
            data = stored
            if info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                for tag in ("dcterms:created", "dcterms:modified"):
                    text = re.sub(rf"(<{tag}[^>]*>)[^<]*(</{tag}>)", rf"\g<1>{iso}\g<2>", text)
                data = text.encode("utf-8")
            fixed = zipfile.ZipInfo(info.filename, date_time=stamp.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            target.writestr(fixed, data)


def write_docx(
    path: Path,
    *,
    title: str,
    subtitle: str,
    paragraphs: Sequence[str],
    table: Sequence[Sequence[str]],
    closing: str,
    author: str,
    stamp: datetime,
) -> None:
    """Write a Word document: the title as a heading, then the subtitle and paragraphs, the table
    (its first row the header, in the "Table Grid" style) and the closing paragraph.

    The title is the document's title property too; the author made and last changed it at the
    stamp.
    """
    document = docx.Document()
    document.add_heading(title, level=1)
    document.add_paragraph(subtitle)
    for text in paragraphs:
        document.add_paragraph(text)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    grid.style = "Table Grid"
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    document.add_paragraph(closing)
    props = document.core_properties
    props.title = title
    props.author = author
    props.created = stamp
    props.modified = stamp
    props.last_modified_by = author
    props.revision = 1
    document.save(str(path))
    normalise_zip(path, stamp)


def write_xlsx(
    path: Path,
    *,
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    notes: Sequence[str],
    title: str,
    creator: str,
    stamp: datetime,
) -> None:
    """Write an Excel workbook: a "Register" sheet of the header and rows, then a "Notes" sheet
    with one note a row in its first column. The workbook was made and last changed at the stamp.
    """
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Register"
    sheet.append(list(header))
    for row in rows:
        sheet.append(list(row))
    notes_sheet = workbook.create_sheet("Notes")
    for note in notes:
        notes_sheet.append([note])
    workbook.properties.title = title
    workbook.properties.creator = creator
    workbook.properties.created = stamp
    workbook.properties.modified = stamp
    workbook.save(path)
    normalise_zip(path, stamp)


def write_pdf(
    path: Path,
    *,
    pages: Sequence[Sequence[PdfBlock]],
    title: str,
    author: str,
    stamp: datetime,
) -> None:
    """Write an A4 PDF with a text layer, one page for each list of blocks (a page that runs over
    breaks onto the next). Its creation date is the stamp, read as UTC.
    """
    pdf = FPDF(format="A4")
    pdf.set_creation_date(stamp.replace(tzinfo=UTC))
    pdf.set_title(title)
    pdf.set_author(author)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_margins(20, 20, 20)
    for page in pages:
        pdf.add_page()
        for kind, text in page:
            if kind == "h":
                pdf.set_font("Helvetica", "B", 18)
                pdf.multi_cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
            elif kind == "s":
                pdf.ln(4)
                pdf.set_font("Helvetica", "B", 13)
                pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
            elif kind == "l":
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 6, "- " + text, new_x="LMARGIN", new_y="NEXT")
            else:
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
    pdf.output(str(path))
