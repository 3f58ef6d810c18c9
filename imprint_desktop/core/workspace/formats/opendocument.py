"""OpenDocument text, spreadsheets and presentations (ODT, ODS, ODP) with odfpy.

odfpy parses the package and gives its content as a tree of typed elements; this module walks that
tree in document order and writes what a citation needs: headings as sections, lists as bullets,
tables as rows under their header, a spreadsheet's tables as sheets with row numbers ("sheet
Budget, rows 2-9"), and a presentation's pages as slides ("slide 3"), with their speaker notes.
Repeated rows and columns (how OpenDocument stores a sheet's empty tail) are counted, not
expanded; repeats that hold text are written out as the writer takes them, up to its bounds on
text, sheets and slides (:class:`~.text.LineWriter`), and no further.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from imprint_desktop.core.workspace.formats.archive import checked_zip
from imprint_desktop.core.workspace.formats.text import MAX_CHARS, Extracted, LineWriter, one_line

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
_PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
_DC = "http://purl.org/dc/elements/1.1/"
_META = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"

#: Rows read from one sheet, and copies of one repeated row or cell that are written out.
MAX_SHEET_ROWS = 50_000
_MAX_REPEAT = 200
_MAX_COLUMNS = 200


def read_opendocument(data: bytes, stem: str, kind: str, max_chars: int = MAX_CHARS) -> Extracted:
    """``kind`` is ``odt``, ``ods`` or ``odp``."""
    checked_zip(data, "OpenDocument")
    from odf.opendocument import load  # noqa: PLC0415 - imported when such a file is met

    document = load(io.BytesIO(data))
    writer = LineWriter(max_chars)
    cut: list[str] = []
    if kind == "ods":
        for sheet in _children(document.spreadsheet, _TABLE, "table"):
            name = str(sheet.getAttrNS(_TABLE, "name") or "")
            if not writer.place(f"sheet {name}", sheet=True, kind="sheets"):
                break
            writer.heading(f"Sheet {name}", 2)
            writer.numbered_table(_table_rows(sheet, name, cut))
    elif kind == "odp":
        for number, page in enumerate(_children(document.presentation, _DRAW, "page"), start=1):
            if not writer.place(f"slide {number}", kind="slides"):
                break
            _slide(writer, page, number)
    else:
        _flow(writer, document.text)
    gaps = ""
    if cut:
        gaps = f"only the first {MAX_SHEET_ROWS:,} rows of sheet(s) {', '.join(cut)} were read"
    title = _meta(document, "title")
    if not title and kind == "odt":
        first = next((line for line in writer.lines if line.startswith("# ")), "")
        title = first.removeprefix("# ") or writer.first_text()
    # dc:date is when it was last saved, meta:creation-date when it was made.
    stamped = _meta(document, "date") or _meta(document, "creation-date", _META)
    return writer.result(title or stem, encoding=kind, properties_date=stamped, gaps=gaps)


def _children(node: Any, namespace: str, name: str) -> Iterator[Any]:
    for child in getattr(node, "childNodes", ()):
        if getattr(child, "qname", None) == (namespace, name):
            yield child


def _text(node: Any) -> str:
    """The text of ``node``, with OpenDocument's spaces, tabs and line breaks."""
    parts: list[str] = []

    def walk(element: Any) -> None:
        for child in element.childNodes:
            if child.nodeType == child.TEXT_NODE:
                parts.append(str(child.data))
                continue
            qname = getattr(child, "qname", None)
            if qname == (_TEXT, "s"):
                parts.append(" " * int(child.getAttrNS(_TEXT, "c") or 1))
            elif qname == (_TEXT, "tab"):
                parts.append("\t")
            elif qname == (_TEXT, "line-break"):
                parts.append("\n")
            elif qname in ((_TEXT, "note"), (_PRESENTATION, "notes")):
                continue  # footnotes and speaker notes are written on their own
            else:
                walk(child)

    walk(node)
    return "".join(parts)


def _flow(writer: LineWriter, node: Any, *, bullet: bool = False) -> None:
    """Headings, paragraphs, lists and tables under ``node``, in document order."""
    for child in getattr(node, "childNodes", ()):
        if writer.full:
            return
        qname = getattr(child, "qname", None)
        if qname == (_TEXT, "h"):
            level = child.getAttrNS(_TEXT, "outline-level")
            writer.heading(_text(child), int(level) if str(level or "").isdigit() else 1)
        elif qname == (_TEXT, "p"):
            writer.paragraph(_text(child), bullet=bullet)
        elif qname in ((_TEXT, "list"), (_TEXT, "list-item")):
            _flow(writer, child, bullet=True)
        elif qname == (_TABLE, "table"):
            writer.numbered_table((0, cells) for _number, cells in _table_rows(child, "", []))
        elif qname is not None and qname[0] in (_TEXT, _TABLE, _DRAW):
            _flow(writer, child, bullet=bullet)  # sections, frames, text boxes


def _table_rows(table: Any, name: str, cut: list[str]) -> Iterable[tuple[int, list[str]]]:
    """A table's rows with text and their 1-based row numbers, as the writer takes them; a table
    cut at :data:`MAX_SHEET_ROWS` is named in ``cut``."""
    number = 0
    for row in _rows(table):
        repeat = int(row.getAttrNS(_TABLE, "number-rows-repeated") or 1)
        cells: list[str] = []
        for cell in row.childNodes:
            if getattr(cell, "qname", None) not in (
                (_TABLE, "table-cell"),
                (_TABLE, "covered-table-cell"),
            ):
                continue
            copies = int(cell.getAttrNS(_TABLE, "number-columns-repeated") or 1)
            text = one_line(_text(cell))
            cells.extend([text] * min(copies, _MAX_COLUMNS - len(cells)))
            if len(cells) >= _MAX_COLUMNS:
                break
        if not any(cells):
            number += repeat
            continue
        for _ in range(min(repeat, _MAX_REPEAT)):
            number += 1
            if number > MAX_SHEET_ROWS:
                cut.append(name)
                return
            yield number, cells
        number += max(repeat - _MAX_REPEAT, 0)


def _rows(table: Any) -> Iterator[Any]:
    for child in table.childNodes:
        qname = getattr(child, "qname", None)
        if qname == (_TABLE, "table-row"):
            yield child
        elif qname in (
            (_TABLE, "table-header-rows"),
            (_TABLE, "table-rows"),
            (_TABLE, "table-row-group"),
        ):
            yield from _rows(child)


def _slide(writer: LineWriter, page: Any, number: int) -> None:
    frames = list(_children(page, _DRAW, "frame"))
    title = ""
    for frame in frames:
        if frame.getAttrNS(_PRESENTATION, "class") == "title":
            title = one_line(_text(frame))
    writer.heading(f"Slide {number}: {title}" if title else f"Slide {number}", 2)
    for child in page.childNodes:
        qname = getattr(child, "qname", None)
        if qname == (_DRAW, "frame") and child.getAttrNS(_PRESENTATION, "class") == "title":
            continue
        if qname == (_PRESENTATION, "notes"):
            notes = one_line(_text_of_all(child))
            if notes:
                writer.paragraph(f"Speaker notes: {notes}")
        elif qname is not None:
            _flow(writer, child)


def _text_of_all(node: Any) -> str:
    return " ".join(_text(paragraph) for paragraph in _descendants(node, _TEXT, "p"))


def _descendants(node: Any, namespace: str, name: str) -> Iterator[Any]:
    for child in getattr(node, "childNodes", ()):
        if getattr(child, "qname", None) == (namespace, name):
            yield child
        else:
            yield from _descendants(child, namespace, name)


def _meta(document: Any, name: str, namespace: str = _DC) -> str:
    for element in _descendants(document.meta, namespace, name):
        return one_line(_text(element))
    return ""
