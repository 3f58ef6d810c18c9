"""What a passage says, sentence by sentence, and how a passage sentence is quoted.

A passage is cut into :class:`Unit` s — sentences, list items and table rows (a row is one unit,
so its label and its value stay together) — each with the heading, title and file name it
stands under, which say what it is about.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from imprint_desktop.core.research.grounding.words import WORD, stems_of

#: A quote longer than this is cut around what it is quoted for; a table row gets twice as much.
QUOTE_CHARS = 240


@dataclass(frozen=True, slots=True)
class PassageText:
    """One numbered passage of a reply, as grounding reads it."""

    id: int
    text: str
    source: str = ""
    title: str = ""
    #: Why its document looks superseded ("archive/… : its folder says "archive""), or "".
    superseded: str = ""


CELL = re.compile(r"(?:^|;\s+)(?P<label>[^:;]{1,60}):\s+(?P<value>[^;]*)")
_SENTENCE_END = re.compile(r"(?<![ (][A-Z]\.)(?<=[.!?])\s+(?=[\"“(\[A-Z0-9£$€])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
CITE = re.compile(r"\s*\[\d{1,6}(?:\s*(?:,|;|-|–|and)\s*\d{1,6})*\]")


@dataclass(frozen=True, slots=True)
class Unit:
    """A sentence, list item or table row of a passage, with what it stands under."""

    passage: int
    text: str
    context: str  # heading, title and file name: what the passage is about
    row: bool
    order: int
    header: bool = False  # a table's header row: what its rows' cells are, no value of its own
    columns: str = ""  # a row's table header ("Orchard | Main variety | Trees"), when known

    def cells(self) -> list[tuple[str, str]]:
        """A row's cells, each with its column's name ("Orchard", "Long Meadow"): read as
        "Orchard: Long Meadow; Main variety: Bramley", or as "Long Meadow | Bramley" under its
        header; none for a sentence or a row whose columns are not known."""
        if not self.row:
            return []
        if labelled := self._labelled():
            return labelled
        names = [cell.strip() for cell in self.columns.strip("| ").split(" | ")]
        values = [cell.strip() for cell in self.text.strip("| ").split(" | ")]
        return list(zip(names, values, strict=True)) if len(names) == len(values) > 1 else []

    def said(self) -> str:
        """What the unit says: a row read as "Section: Central; Training hours 2024: 1,486"
        says its cells' values, not its columns' names (a year in a column's name dates no
        cell); anything else its text."""
        labelled = self._labelled() if self.row else []
        return " ; ".join(value for _, value in labelled) if labelled else self.text

    def _labelled(self) -> list[tuple[str, str]]:
        """The cells of a row read as "label: value; …" (none when fewer than two)."""
        cells = [(c.group("label").strip(), c.group("value")) for c in CELL.finditer(self.text)]
        return [(label, value.strip()) for label, value in cells] if len(cells) >= 2 else []

    @property
    def words(self) -> set[str]:
        return stems_of(self.text)

    @property
    def about(self) -> set[str]:
        return stems_of(self.text) | stems_of(self.context)


def _is_row(line: str) -> bool:
    stripped = line.strip()
    if stripped.startswith("|") and stripped.count("|") >= 3:
        return True
    return len(CELL.findall(stripped)) >= 2 or stripped.count(" | ") >= 2


def units_of(passage: PassageText, first: int) -> list[Unit]:
    """The sentences, list items and table rows of ``passage``: rows and list items are units
    whole; a paragraph's wrapped lines are joined before it is cut into sentences. A CSV file's
    lines are rows, each cell with its column's header when the passage holds it."""
    source_words = " ".join(re.split(r"[/\\_.-]+", passage.source))
    if (rows := _delimited_units(passage, first, source_words)) is not None:
        return rows
    heading = ""
    columns = ""  # a table's header row, which says what its rows' cells are
    out: list[Unit] = []
    paragraph: list[str] = []

    def add(text: str, *, row: bool) -> None:
        text = " ".join(text.split())
        if text:
            context = f"{heading} {columns if row else ''} {passage.title} {source_words}"
            kept = " ".join(columns.split()) if row else ""
            out.append(Unit(passage.id, text, context, row, first + len(out), columns=kept))

    def flush() -> None:
        if paragraph:
            for sentence in _SENTENCE_END.split(" ".join(paragraph)):
                add(sentence, row=False)
            paragraph.clear()

    lines = _unflattened(passage.text)
    for at, line in enumerate(lines):
        stripped = line.strip()
        head = _HEADING.match(line)
        bare = head is None and _bare_heading(lines, at, paragraph)
        if not stripped or re.fullmatch(r"[|:\-\s=~^*#+`]+", stripped):
            flush()
            if "-" in stripped and "|" in stripped and out and out[-1].row:
                columns = out[-1].text  # the row above a table's rule is its header
                out[-1] = dataclasses.replace(out[-1], header=True)
            elif not stripped:
                columns = ""
        elif bare and ": " in stripped:
            flush()
            add(stripped, row=False)  # a line of its own, "Date: 2026-05-30": no heading
        elif (
            head
            or bare
            or (
                stripped.upper() == stripped
                and sum(c.isalpha() for c in stripped) > 3
                and len(WORD.findall(stripped)) >= 2
            )
        ):
            flush()  # a heading, or a line in capitals that stands as one
            heading = head.group(1) if head else stripped
            add(heading, row=False)
        elif _is_row(stripped):
            flush()
            if out and out[-1].row and _names_cells_of(out[-1].text, stripped):
                columns = out[-1].text  # a header row above rows read as "Section: Central; …"
                out[-1] = dataclasses.replace(out[-1], header=True)
            add(stripped.strip("| "), row=True)
        elif LIST_ITEM.match(line):
            flush()
            paragraph.append(LIST_ITEM.sub("", line, count=1))
        else:
            paragraph.append(stripped)
    flush()
    return out


#: The most words a line of its own without a stop may have to stand as a heading.
_HEADING_WORDS = 5


def _bare_heading(lines: Sequence[str], at: int, paragraph: Sequence[str]) -> bool:
    """Whether line ``at`` of ``lines`` is a heading written without Markdown, as a PDF's or a
    text file's lines are ("Battery" between "Date: 2026-05-30" and "In field trials …"): a
    few words without a stop, after a paragraph's end, before a line that opens a sentence."""
    stripped = lines[at].strip()
    if not stripped or stripped[-1] in ".!?,;-–" or len(WORD.findall(stripped)) > _HEADING_WORDS:
        return False
    if _is_row(stripped) or "|" in stripped or LIST_ITEM.match(lines[at]):
        return False
    if paragraph and paragraph[-1].rstrip()[-1:] not in (".", "!", "?", ":"):
        return False  # a wrapped line of the sentence before it
    after = next((line.strip() for line in lines[at + 1 :] if line.strip()), "")
    return bool(after) and (after[0].isupper() or after[0].isdigit())


def _delimited_units(passage: PassageText, first: int, source_words: str) -> list[Unit] | None:
    """A CSV (or TSV) file's passage cut into its rows; None for any other passage, or one read
    already into "Region: North; Q1: 1200"."""
    delimiter = "\t" if passage.source.lower().endswith(".tsv") else ","
    opening = next((line for line in passage.text.splitlines() if line.strip()), "")
    if (
        not passage.source.lower().endswith((".csv", ".tsv"))
        or opening.count(delimiter) < 2
        or "; " in opening
    ):
        return None
    context = f"{passage.title} {source_words}"
    rows = _delimited_rows(passage.text, delimiter)
    return [Unit(passage.id, row, context, True, first + at) for at, row in enumerate(rows) if row]


def _names_cells_of(header: str, row: str) -> bool:
    """Whether ``header`` ("Section | Operational members | …") names the cells of ``row``, a
    row written with its column's name in each cell ("Section: Central; Operational members:
    18; …"), as Word and spreadsheet tables are read."""
    first = header.split(" | ", maxsplit=1)[0].strip()
    return " | " in header and bool(first) and row.startswith(f"{first}: ")


#: A Markdown table's rule within a line, and the space between two rows put on one line.
FLAT_RULE = re.compile(r"\|\s*:?-{3,}:?\s*\|")
ROW_BREAK = re.compile(r"\|\s+\|(?=\s*[^\s|])")
_PROSE_AFTER = re.compile(r"^(.*\|)\s+([A-Z][^|]{30,}[.!?]\s.*|[A-Z][^|]{30,}[.!?])$")


def _unflattened(text: str) -> list[str]:
    """The lines of ``text``, a table a search cut onto one line ("| Scheme | £m | |---|---| |
    Wath End … | 3.9 | | Rudd Lane … | 0.7 |", or rows without their header: "…| Thomas
    Orrin | … | | Margaret Penhallow | … |") back on a line a row."""
    lines: list[str] = []
    for line in text.splitlines():
        flat_rows = line.lstrip("…").startswith("|") and len(ROW_BREAK.findall(line)) >= 2
        if FLAT_RULE.search(line) or flat_rows:
            line = line.lstrip("…")  # noqa: PLW2901 - its rows, without the cut's mark
            for row in ROW_BREAK.sub("|\n|", line).splitlines():
                # Prose after the table's last row is no cell of it.
                after = _PROSE_AFTER.match(row)
                lines += [after.group(1), after.group(2)] if after else [row]
        else:
            lines.append(line)
    return lines


def _delimited_rows(text: str, delimiter: str) -> list[str]:
    """The lines of a CSV (or TSV) passage as rows a person reads alone: "station: Gannet Point;
    lit: 1857; …" when its first line is a header (no cell of it a number), else its cells."""
    lines = [cells for cells in csv.reader(text.splitlines(), delimiter=delimiter) if cells]
    if not lines:
        return []
    header = [cell.strip() for cell in lines[0]]
    if any(re.search(r"\d", cell) and not re.search(r"[a-z]", cell, re.I) for cell in header):
        header = []
    rows = []
    for cells in lines[1:] if header else lines:
        values = [cell.strip() for cell in cells]
        if header and len(values) == len(header):
            rows.append(
                "; ".join(
                    f"{name}: {value}" for name, value in zip(header, values, strict=True) if value
                )
            )
        else:
            rows.append(" | ".join(value for value in values if value))
    return rows


def clauses_of(text: str) -> list[tuple[int, str]]:
    """``text`` cut at semicolons, ", " and " and ", each part with where it starts."""
    parts: list[tuple[int, str]] = []
    start = 0
    for match in re.finditer(r";\s+|,\s+|\s+and\s+|\s+while\s+|\s+whereas\s+", text):
        parts.append((start, text[start : match.start()]))
        start = match.end()
    parts.append((start, text[start:]))
    return parts


# --- quoting --------------------------------------------------------------------------------------


def quote(text: str, around: Iterable[str], limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (and its marks "…") only around what it
    is quoted for (``around``, e.g. the number it supports): never cut before the value."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    parts = [part for part in around if part and part in flat]
    if not parts:
        return flat[: limit - 1].rstrip() + "…"
    first = min(flat.find(part) for part in parts)
    last = max(flat.find(part) + len(part) for part in parts)
    start = max(0, min(first - limit // 3, last - limit))
    end = min(len(flat), start + limit)
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")
