"""A document as the index sees it: titled lines, with the pages and named places they fall in.

Every format ends up as an :class:`Extracted`, so passages, line ranges and ``read_document`` agree
on what "line 12" means whatever the file was. A reader builds one with :class:`LineWriter`, which
writes structure the way the passage splitter reads it: headings as Markdown headings (a passage
never crosses one, and carries it as its section), table rows as one line each with their header
("Region: North; Q1: 1 200"), and named places — a slide, a sheet, a chapter — so a citation can say
"slide 4" or "sheet Revenue, rows 2-9".
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\u00a0]+")


@dataclass(frozen=True, slots=True)
class Place:
    """A named part of a document (``slide 4``, ``sheet Revenue``, ``chapter 3``) from ``start``.

    ``rows`` gives, for a sheet, the spreadsheet row number of each line from ``start`` on (0 for
    a line that is no row, such as the sheet's heading), so a passage can be cited by its rows.
    """

    start: int  # 1-based first line
    name: str
    rows: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document as text: its title, its lines, and where its pages and places start.

    ``date`` is a date the document states about itself (ISO ``2026-03-14``, or ``2026-03`` when
    it names only a month), empty when it states none. ``gaps`` says, as a sentence fragment, what
    could not be read ("pages 2-5 have no text layer"); with no text at all it is why.
    """

    title: str
    lines: tuple[str, ...]
    page_starts: tuple[int, ...] = ()  # 1-based line numbers; empty when there are no pages
    encoding: str = "utf-8"
    places: tuple[Place, ...] = ()
    date: str = ""
    gaps: str = ""

    def page_of(self, line: int) -> int | None:
        """The 1-based page holding ``line``, or None for documents without pages."""
        page = None
        for number, start in enumerate(self.page_starts, start=1):
            if start > line:
                break
            page = number
        return page

    def place_of(self, first: int, last: int) -> str:
        """The named place holding lines ``first``-``last``: "slide 4", "sheet Revenue, rows
        2-9"; empty for documents without places."""
        found: Place | None = None
        for place in self.places:
            if place.start > first:
                break
            found = place
        if found is None:
            return ""
        if not found.rows:
            return found.name
        span = found.rows[max(first - found.start, 0) : max(last - found.start + 1, 0)]
        numbers = [row for row in span if row > 0]
        if not numbers:
            return found.name
        low, high = min(numbers), max(numbers)
        return f"{found.name}, row {low}" if low == high else f"{found.name}, rows {low}-{high}"

    @property
    def has_text(self) -> bool:
        return any(line.strip() for line in self.lines)


def decode(data: bytes) -> tuple[str, str]:
    """``data`` as text and the encoding used; never fails (Latin-1 takes any byte)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace"), "utf-8"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace"), "utf-16"
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1"), "latin-1"


def split_lines(text: str) -> tuple[str, ...]:
    """Lines as an editor counts them: only CR, LF and CRLF end a line; control characters go."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROL.sub("", text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(line.rstrip() for line in lines)


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces."""
    return _SPACES.sub(" ", " ".join(split_lines(text))).strip()


class LineWriter:
    """Builds an :class:`Extracted` paragraph by paragraph, keeping pages and places."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.page_starts: list[int] = []
        self.places: list[Place] = []
        self._rows: list[int] | None = None  # the open sheet's row numbers, line by line

    def _blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self._add("", 0)

    def _add(self, line: str, row: int) -> None:
        self.lines.append(line)
        if self._rows is not None:
            self._rows.append(row)

    def heading(self, text: str, level: int = 1) -> None:
        text = one_line(text)
        if text:
            self._blank()
            self._add(f"{'#' * min(max(level, 1), 6)} {text}", 0)
            self._add("", 0)

    def paragraph(self, text: str, *, bullet: bool = False) -> None:
        """One paragraph; its own line breaks are kept as lines."""
        body = [line.strip() for line in split_lines(text) if line.strip()]
        if not body:
            return
        if bullet:
            body[0] = f"- {body[0]}"
        else:
            self._blank()
        for line in body:
            self._add(_SPACES.sub(" ", line), 0)
        if not bullet:
            self._add("", 0)

    def table(
        self, rows: Sequence[Sequence[str]], numbers: Sequence[int] = (), *, merges: bool = False
    ) -> None:
        """A table as lines, one a row, each cell named by its column's header.

        The first row with text is the header. ``numbers`` are the rows' own numbers (a sheet's
        row numbers), kept for citations when the writer is inside a sheet. ``merges`` says the
        reader repeats a merged cell in every column it spans (a word processor's tables): such a
        repeat is kept once.
        """
        keep = _merged if merges else list
        cleaned = [[one_line(cell) for cell in row] for row in rows]
        numbered = [
            (numbers[index] if index < len(numbers) else 0, row)
            for index, row in enumerate(cleaned)
            if any(row)
        ]
        if not numbered:
            return
        self._blank()
        (header_number, header), body = numbered[0], numbered[1:]
        width = max(len(row) for _, row in numbered)
        names = [*header, *[""] * (width - len(header))]
        labelled = sum(bool(name) for name in names) >= max(1, width // 2) and len(numbered) > 1
        if labelled:
            self._add(" | ".join(name for name in names if name), header_number)
        else:
            body = numbered
        for number, row in body:
            if labelled:
                cells = [
                    f"{names[index] or f'column {index + 1}'}: {cell}"
                    for index, cell in enumerate(keep(row))
                    if cell
                ]
                self._add("; ".join(cells), number)
            else:
                self._add(" | ".join(cell for cell in keep(row) if cell), number)
        self._add("", 0)

    def page(self) -> None:
        """The next line starts a new page."""
        self.page_starts.append(len(self.lines) + 1)

    def place(self, name: str, *, sheet: bool = False) -> None:
        """The next line starts the place called ``name``; a sheet keeps row numbers."""
        self._close_place()
        self._blank()
        self._rows = [] if sheet else None
        self.places.append(Place(len(self.lines) + 1, name))

    def _close_place(self) -> None:
        if self._rows is not None and self.places:
            last = self.places[-1]
            self.places[-1] = Place(last.start, last.name, tuple(self._rows))
        self._rows = None

    def result(self, title: str, *, encoding: str, date: str = "", gaps: str = "") -> Extracted:
        self._close_place()
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        return Extracted(
            title,
            tuple(self.lines),
            tuple(self.page_starts),
            encoding,
            tuple(self.places),
            date,
            gaps,
        )

    def first_text(self) -> str:
        """The first line with text, without heading marks: a title when nothing better is known."""
        line = next((line for line in self.lines if line.strip()), "")
        return line.lstrip("#- ").strip()[:120]


def _merged(row: Sequence[str]) -> list[str]:
    """A row with merged cells (repeated by the readers) kept once: blank where repeated."""
    return [cell if index == 0 or cell != row[index - 1] else "" for index, cell in enumerate(row)]
