"""A document as the index sees it: titled lines, with the pages and named places they fall in.

Every format ends up as an :class:`Extracted`, so passages, line ranges and ``read_document`` agree
on what "line 12" means whatever the file was. A reader builds one with :class:`LineWriter`, which
writes structure the way the passage splitter reads it: headings as Markdown headings (a passage
never crosses one, and carries it as its section), table rows as one line each with their header
("Region: North; Q1: 1 200"), and named places — a slide, a sheet, a chapter — so a citation can say
"slide 4" or "sheet Revenue, rows 2-9".

A writer also bounds what a document may make, whatever its size on disk: a few hundred bytes of
spreadsheet can ask for millions of repeated cells. It takes at most ``max_chars`` characters of
text (:data:`MAX_CHARS` unless the reader says otherwise: ``workspace.max_text_mb``), at most
:data:`MAX_LINES` lines and :data:`MAX_PARTS` pages, slides, sheets or chapters; past any of them it
takes nothing more, says why in its ``cut``, and the readers stop generating (they check
:attr:`LineWriter.full`). The cut becomes part of the document's ``gaps``, so the file is reported
as read only in part.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from imprint_desktop.core.workspace import dating

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\u00a0]+")

#: The most text one document may give (characters, a line break counted as one), unless the reader
#: is told otherwise (``workspace.max_text_mb``).
MAX_CHARS = 16 * 2**20
#: The most lines kept of one document, however short: each line held costs memory of its own.
MAX_LINES = 1_000_000
#: The most pages, slides, sheets or chapters read of one document ...
MAX_PARTS = 10_000
#: ... and the longest name kept of one ("sheet Revenue").
MAX_NAME = 200


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

    ``dates`` are the dates the document gives itself, best first, each with how it was found
    (:func:`~..dating.stated_dates`, its properties); empty when it gives none. ``gaps`` says, as
    a sentence fragment, what could not be read ("pages 2-5 have no text layer"); with no text at
    all it is why.
    """

    title: str
    lines: tuple[str, ...]
    page_starts: tuple[int, ...] = ()  # 1-based line numbers; empty when there are no pages
    encoding: str = "utf-8"
    places: tuple[Place, ...] = ()
    dates: tuple[dating.DocumentDate, ...] = ()
    gaps: str = ""

    @property
    def date(self) -> str:
        """The best date the document gives itself (ISO), "" if none: what :func:`~..dating.chosen`
        takes unless it lies after the file's own timestamps."""
        return self.dates[0].date if self.dates else ""

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
        return "" if found is None else _place_name(found, first, last)

    @property
    def has_text(self) -> bool:
        return any(line.strip() for line in self.lines)

    def locator(self) -> Locator:
        """:meth:`page_of` and :meth:`place_of` for lines asked in order, in linear time."""
        return Locator(self)


class Locator:
    """Pages and places of a document's lines asked in increasing order (as passages come): each
    of the sorted lists is walked once in all, so finding the page and place of every passage
    takes time in proportion to passages plus pages, never their product. Asked about an earlier
    line, it starts again from the top."""

    def __init__(self, document: Extracted) -> None:
        self._document = document
        self._line = 0
        self._pages = 0  # page starts at or before the last line asked about
        self._places = 0  # places starting at or before it

    def _walk(self, line: int) -> None:
        if line < self._line:
            self._pages = self._places = 0
        self._line = line
        starts, places = self._document.page_starts, self._document.places
        while self._pages < len(starts) and starts[self._pages] <= line:
            self._pages += 1
        while self._places < len(places) and places[self._places].start <= line:
            self._places += 1

    def page_of(self, line: int) -> int | None:
        """As :meth:`Extracted.page_of`."""
        self._walk(line)
        return self._pages or None

    def place_of(self, first: int, last: int) -> str:
        """As :meth:`Extracted.place_of`."""
        self._walk(first)
        if not self._places:
            return ""
        return _place_name(self._document.places[self._places - 1], first, last)


def _place_name(place: Place, first: int, last: int) -> str:
    if not place.rows:
        return place.name
    span = place.rows[max(first - place.start, 0) : max(last - place.start + 1, 0)]
    numbers = [row for row in span if row > 0]
    if not numbers:
        return place.name
    low, high = min(numbers), max(numbers)
    return f"{place.name}, row {low}" if low == high else f"{place.name}, rows {low}-{high}"


def text_size(count: int) -> str:
    """A number of characters as a person reads it: "16 MB", "2,000 characters"."""
    if count >= 2**20 and count % 2**20 == 0:
        return f"{count // 2**20:,} MB"
    return f"{count:,} characters"


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
    """Builds an :class:`Extracted` paragraph by paragraph, keeping pages and places, and taking
    at most ``max_chars`` of text (see the module's docstring)."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self.lines: list[str] = []
        self.page_starts: list[int] = []
        self.places: list[Place] = []
        self._rows: list[int] | None = None  # the open sheet's row numbers, line by line
        self._max_chars = max_chars
        self._room = max_chars
        #: Why the rest of the document was not taken ("" while it all fits).
        self.cut = ""
        self._overflowed = False  # a table's rows ran past the bound

    @property
    def full(self) -> bool:
        """Whether the writer takes no more: a reader stops reading."""
        return bool(self.cut)

    @property
    def room(self) -> int:
        """Characters of text the writer still takes."""
        return self._room

    def stop(self, why: str) -> None:
        """Take nothing more, because ``why`` (the first reason given is kept)."""
        self.cut = self.cut or why

    def _over(self) -> None:
        self.stop(
            f"it holds more text than the {text_size(self._max_chars)} one document may give "
            "(workspace.max_text_mb), so only its beginning was read"
        )

    def _blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self._add("", 0)

    def _add(self, line: str, row: int) -> None:
        if self.cut:
            return
        if len(self.lines) >= MAX_LINES:
            self.stop(f"only its first {MAX_LINES:,} lines were read")
            return
        over = len(line) + 1 > self._room
        if over:  # the line that passes the bound is kept up to it
            line = line[: self._room - 1]
        self._room -= len(line) + 1
        self.lines.append(line)
        if self._rows is not None:
            self._rows.append(row)
        if over:
            self._over()

    def text(self, lines: Iterable[str]) -> None:
        """Lines as they are (already split by :func:`split_lines`), up to the writer's bounds."""
        for line in lines:
            self._add(line, 0)
            if self.cut:
                return

    def heading(self, text: str, level: int = 1) -> None:
        text = one_line(text[: self._room + 1])
        if text:
            self._blank()
            self._add(f"{'#' * min(max(level, 1), 6)} {text}", 0)
            self._add("", 0)

    def paragraph(self, text: str, *, bullet: bool = False) -> None:
        """One paragraph; its own line breaks are kept as lines."""
        if self.cut:
            return
        if len(text) > self._room:  # never clean more than could be kept
            text = text[: self._room + 1]
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
        self,
        rows: Iterable[Iterable[str]],
        numbers: Sequence[int] = (),
        *,
        merges: bool = False,
    ) -> None:
        """A table as lines, one a row, each cell named by its column's header.

        The first row with text is the header, when at least half the columns of it and the
        next row have a name. ``numbers`` are the rows' own numbers (a sheet's row numbers), kept
        for citations when the writer is inside a sheet. ``merges`` says the reader repeats a
        merged cell in every column it spans (a word processor's tables): such a repeat is kept
        once. ``rows`` may be a generator: it is read only as far as the writer takes text.
        """
        self.numbered_table(
            (
                (numbers[index] if index < len(numbers) else 0, row)
                for index, row in enumerate(rows)
            ),
            merges=merges,
        )

    def numbered_table(
        self, rows: Iterable[tuple[int, Iterable[str]]], *, merges: bool = False
    ) -> None:
        """:meth:`table` for rows given with their numbers."""
        try:
            self._table(rows, merges=merges)
        finally:
            if self._overflowed:  # the rows ran past the bound, though the last line fitted
                self._overflowed = False
                self._over()

    def _table(self, rows: Iterable[tuple[int, Iterable[str]]], *, merges: bool) -> None:
        keep = _merged if merges else list
        filled = self._filled(rows)
        first = next(filled, None)
        if first is None:
            return
        second = next(filled, None)
        self._blank()
        header_number, header = first
        width = max(len(header), len(second[1]) if second is not None else 0)
        labelled = second is not None and sum(bool(name) for name in header) >= max(1, width // 2)
        body: Iterator[tuple[int, list[str]]]
        if labelled:
            assert second is not None
            self._add(" | ".join(name for name in header if name), header_number)
            body = chain((second,), filled)
        else:
            body = chain((first,), () if second is None else (second,), filled)
        for number, row in body:
            if labelled:
                cells = [
                    f"{(header[index] if index < len(header) else '') or f'column {index + 1}'}: "
                    f"{cell}"
                    for index, cell in enumerate(keep(row))
                    if cell
                ]
                self._add("; ".join(cells), number)
            else:
                self._add(" | ".join(cell for cell in keep(row) if cell), number)
            if self.cut:
                return
        self._add("", 0)

    def _filled(self, rows: Iterable[tuple[int, Iterable[str]]]) -> Iterator[tuple[int, list[str]]]:
        """The rows with text, their cells cleaned, never more of them than the writer takes."""
        for number, cells in rows:
            if self.cut:
                return
            row: list[str] = []
            size = 0
            for cell in cells:
                text = one_line(cell[: self._room + 1])
                row.append(text)
                size += len(text) + 2
                if size > self._room:  # this row passes the bound: it is the last one taken
                    self._overflowed = True
                    yield number, row
                    return
            if any(row):
                yield number, row

    def page(self) -> bool:
        """The next line starts a new page; False, and nothing more taken, past the last page
        a document may have."""
        if not self._part(len(self.page_starts), "pages"):
            return False
        self.page_starts.append(len(self.lines) + 1)
        return True

    def place(self, name: str, *, sheet: bool = False, kind: str = "parts") -> bool:
        """The next line starts the place called ``name``, one of the document's ``kind``
        ("slides", "sheets"); a sheet keeps row numbers. False past the last a document may
        have."""
        if not self._part(len(self.places), kind):
            return False
        self._close_place()
        self._blank()
        self._rows = [] if sheet else None
        self.places.append(Place(len(self.lines) + 1, one_line(name[:MAX_NAME])))
        return True

    def _part(self, count: int, kind: str) -> bool:
        if count >= MAX_PARTS:
            self.stop(f"only its first {MAX_PARTS:,} {kind} were read")
        return not self.cut

    def _close_place(self) -> None:
        if self._rows is not None and self.places:
            last = self.places[-1]
            self.places[-1] = Place(last.start, last.name, tuple(self._rows))
        self._rows = None

    def result(
        self,
        title: str,
        *,
        encoding: str,
        properties_date: object = None,
        page_header: str = "",
        gaps: str = "",
    ) -> Extracted:
        """The document; ``gaps`` (what the reader could not read) with the writer's own cut,
        ``properties_date`` the date its properties give, as its library gives it
        (:func:`~..dating.properties_date`), and ``page_header`` the text at the top of its pages,
        whose date is one stated near its title wherever the header's lines fall."""
        dates: list[dating.DocumentDate] = []
        headed = dating.normalized(page_header[:1000])
        if headed:
            dates.append(dating.DocumentDate(headed, dating.How.TITLE))
        stamped = dating.properties_date(properties_date)
        if stamped:
            dates.append(dating.DocumentDate(stamped, dating.How.PROPERTIES))
        self._close_place()
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        return Extracted(
            title[:1000],
            tuple(self.lines),
            tuple(self.page_starts),
            encoding,
            tuple(self.places),
            tuple(dates),
            "; ".join(part for part in (gaps, self.cut) if part),
        )

    def first_text(self) -> str:
        """The first line with text, without heading marks: a title when nothing better is known."""
        line = next((line for line in self.lines if line.strip()), "")
        return line.lstrip("#- ").strip()[:120]


def _merged(row: Sequence[str]) -> list[str]:
    """A row with merged cells (repeated by the readers) kept once: blank where repeated."""
    return [cell if index == 0 or cell != row[index - 1] else "" for index, cell in enumerate(row)]
