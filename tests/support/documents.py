"""Real documents of every format the workspace reads, written by each format's own library.

Tests and benchmarks call these to get files a person could have made: a Word file with headings
and a table, a workbook with named sheets, a slide deck with notes, their OpenDocument
counterparts, an EPUB, an RTF, and scans (a PDF page or an image holding only a picture of text).
Each writer takes the content as plain data, so a test states its facts where it checks them.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

#: A font every test machine has (fonts-dejavu-core, in scripts/system-deps.sh), for scans.
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

Table = Sequence[Sequence[object]]


def docx_file(
    path: Path,
    title: str,
    sections: Sequence[tuple[str, str]],
    table: Table = (),
) -> Path:
    """A Word file: ``title`` as its Title, then each (heading, paragraph), then ``table``."""
    import docx

    document = docx.Document()
    document.add_heading(title, 0)
    for heading, text in sections:
        if heading:
            document.add_heading(heading, 1)
        for paragraph in text.split("\n\n"):
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = str(value)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def xlsx_file(path: Path, sheets: Sequence[tuple[str, Table]]) -> Path:
    """A workbook with one sheet per (name, rows); ``None`` leaves a cell empty."""
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets:
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    path.parent.mkdir(parents=True, exist_ok=True)
    workbook.save(str(path))
    return path


def pptx_file(path: Path, slides: Sequence[tuple[str, str, str]]) -> Path:
    """A presentation with one slide per (title, body, speaker notes)."""
    import pptx

    presentation = pptx.Presentation()
    for title, body, notes in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    path.parent.mkdir(parents=True, exist_ok=True)
    presentation.save(str(path))
    return path


def _odf_table(name: str, rows: Table) -> object:
    from odf import table, text

    grid = table.Table(name=name)
    for row in rows:
        line = table.TableRow()
        grid.addElement(line)
        for value in row:
            cell = table.TableCell()
            if value is not None:
                cell.addElement(text.P(text=str(value)))
            line.addElement(cell)
    return grid


def odt_file(
    path: Path, title: str, sections: Sequence[tuple[str, str]], table: Table = ()
) -> Path:
    from odf import text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    document.text.addElement(text.H(outlinelevel=1, text=title))
    for heading, body in sections:
        if heading:
            document.text.addElement(text.H(outlinelevel=2, text=heading))
        for paragraph in body.split("\n\n"):
            document.text.addElement(text.P(text=paragraph))
    if table:
        document.text.addElement(_odf_table("Table1", table))
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def ods_file(path: Path, sheets: Sequence[tuple[str, Table]]) -> Path:
    from odf.opendocument import OpenDocumentSpreadsheet

    document = OpenDocumentSpreadsheet()
    for name, rows in sheets:
        document.spreadsheet.addElement(_odf_table(name, rows))
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def odp_file(path: Path, slides: Sequence[tuple[str, str]]) -> Path:
    """A presentation with one page per (title, body)."""
    from odf import draw, style, text
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation

    document = OpenDocumentPresentation()
    layout = style.PageLayout(name="Layout")
    document.automaticstyles.addElement(layout)
    master = style.MasterPage(name="Default", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for number, (title, body) in enumerate(slides, start=1):
        page = draw.Page(name=f"page{number}", masterpagename=master)
        document.presentation.addElement(page)
        for kind, words, top in (("title", title, "1cm"), ("outline", body, "5cm")):
            frame = draw.Frame(width="20cm", height="3cm", x="1cm", y=top)
            frame.setAttrNS(PRESENTATIONNS, "class", kind)
            page.addElement(frame)
            box = draw.TextBox()
            frame.addElement(box)
            box.addElement(text.P(text=words))
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def epub_file(path: Path, title: str, chapters: Sequence[tuple[str, str]], date: str = "") -> Path:
    """An EPUB with one chapter per (heading, paragraph)."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"imprint-{path.stem}")
    book.set_title(title)
    book.set_language("en")
    if date:
        book.add_metadata("DC", "date", date)
    items = []
    for number, (heading, body) in enumerate(chapters, start=1):
        chapter = epub.EpubHtml(title=heading, file_name=f"chapter{number}.xhtml")
        chapter.content = f"<html><body><h1>{heading}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        items.append(chapter)
    book.spine = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    path.parent.mkdir(parents=True, exist_ok=True)
    epub.write_epub(str(path), book)
    return path


def rtf_file(path: Path, paragraphs: Sequence[str]) -> Path:
    body = "".join(
        paragraph.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}") + "\\par\n"
        for paragraph in paragraphs
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\\f0\\pard\n" + body + "}", "ascii"
    )
    return path


def text_image(lines: Sequence[str], *, size: int = 40) -> object:
    """A white page image with ``lines`` drawn in black, as a scanner would give it."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(FONT), size)
    image = Image.new("RGB", (1400, 120 + len(lines) * size * 2), "white")
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((60, 60 + number * size * 2), line, fill="black", font=font)
    return image


def scanned_pdf(path: Path, pages: Sequence[Sequence[str]]) -> Path:
    """A PDF whose pages are only pictures of text: no text layer, as a scanner makes them."""
    images = [text_image(lines) for lines in pages]
    path.parent.mkdir(parents=True, exist_ok=True)
    first, *rest = images
    first.save(str(path), "PDF", resolution=150.0, save_all=True, append_images=rest)  # type: ignore[attr-defined]
    return path


def scanned_image(path: Path, lines: Sequence[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text_image(lines).save(str(path))  # type: ignore[attr-defined]
    return path


def zip_bomb(path: Path, member_bytes: int = 64 * 1024 * 1024) -> Path:
    """A file named like an Office document that is a ZIP of one member of ``member_bytes`` zeros:
    a few kilobytes on disk."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as container:
        container.writestr("[Content_Types].xml", "<Types/>")
        with container.open("word/document.xml", "w") as member:
            chunk = bytes(1024 * 1024)
            for _ in range(member_bytes // len(chunk)):
                member.write(chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


def pdf_file(path: Path, title: str, sections: Sequence[tuple[str, str]]) -> Path:
    """A PDF with a text layer: ``title`` in its metadata and as a heading, then each (heading,
    paragraph). Written by fpdf2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    for heading, text in sections:
        if heading:
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for paragraph in text.split("\n\n"):
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path
