"""How much of a message reaches the transcript's layout: bounded, so no message can freeze it.

Qt lays out a Markdown table, a long unbreakable run of characters and every link with work that
grows faster than their size: a 36 KB table took seconds to lay out (and again on every resize),
5,000 rows of 50 cells minutes, a 2 MB line without spaces longer still. So before a message is
parsed, :func:`bounded` cuts what it holds to sizes whose layout is quick:

* every run of characters without white space to :data:`RUN_CHARS`;
* every table to :data:`TABLE_ROWS` rows and the message's tables to :data:`TABLE_CELLS` cells in
  all, each cell to :data:`CELL_CHARS` characters;
* then the message to :data:`MESSAGE_CHARS` characters (which also bounds the number of links).

Only the first :data:`SCAN_CHARS` characters are read for this (a table that goes on past them
has its rows counted at the speed of a string search): a message of megabytes is bounded in
milliseconds.

Where something was cut the text says so, with the app's link to the whole message
(:class:`~.full_message.FullMessage` shows it: tables in a table view, text in a plain viewer,
both laid out only where they are seen). The work is done by searches that run at the speed of
the regular-expression engine, not by a loop over lines. Text in, text out: the rules
are read and tested without a widget.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: Of one message, the most Markdown laid out in the transcript.
MESSAGE_CHARS = 40_000
#: The longest run of characters without white space laid out (longer ones are cut with "…").
RUN_CHARS = 400
#: The most rows of one table, and the most cells of all a message's tables, laid out.
TABLE_ROWS = 50
TABLE_CELLS = 1_000
#: The most characters of one table cell laid out.
CELL_CHARS = 200
#: The most of a message looked at (what lies beyond is shown by "Show all"; only the rows of a
#: table that goes on past it are counted).
SCAN_CHARS = 200_000

#: A line that opens or closes a code fence (in a block quote too).
_FENCE = re.compile(r"^[ \t>]*(```|~~~)", re.MULTILINE)
#: A table's first two lines: a header line with a pipe, then a delimiter row of pipes, colons,
#: blanks and at least one dash. Possessive, so no line is read more than twice.
_HEAD = re.compile(r"^(?=[^\n]*\|)[^\n]*+\n([ \t>|:]*+-[ \t>|:-]*+)$", re.MULTILINE)
#: A blank line (in a block quote too): where a table ends.
_BLANK = re.compile(r"\n[ \t>]*(?:\n|$)")
#: What stands before a line's content in a block quote (``> > ``) or a list item's indent.
_CONTAINER = re.compile(r"^(?:[ \t]*>)*[ \t]*")
#: A run of characters without white space longer than RUN_CHARS, matched from its start only
#: and possessively: each run is read once.
_LONG_RUN = re.compile(rf"(?<!\S)\S{{{RUN_CHARS + 1}}}\S*+")


@dataclass(frozen=True, slots=True)
class Table:
    """A GitHub-style table found in a message: its header cells and its rows as written."""

    header: tuple[str, ...]
    rows: tuple[str, ...]  # each row as written; :meth:`row_cells` splits one

    def row_cells(self, row: int) -> tuple[str, ...]:
        return cells(self.rows[row])


@dataclass(frozen=True, slots=True)
class Bounded:
    """A message's Markdown as the transcript lays it out, and whether anything was left out."""

    markdown: str
    cut: bool


@dataclass(frozen=True, slots=True)
class _Span:
    """Where one table is in a text: its header line, its delimiter row, and its end."""

    start: int  # the header line
    rows: int  # where the first row starts (after the delimiter row's line break)
    end: int  # the end of its last row (before the blank line that ends it)


def cells(row: str) -> tuple[str, ...]:
    """The cells of a table row: split at pipes that are not escaped, outer pipes dropped."""
    text = _CONTAINER.sub("", row, count=1).strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    found: list[str] = []
    start = 0
    index = 0
    while True:
        index = text.find("|", index)
        if index < 0:
            break
        if index == 0 or text[index - 1] != "\\":
            found.append(text[start:index].strip())
            start = index + 1
        index += 1
    found.append(text[start:].strip())
    return tuple(found)


def _spans(text: str) -> Iterator[_Span]:
    """The tables of ``text``, outside code fences, in order."""
    position = 0
    fenced = False  # whether ``position`` is inside a code fence
    while True:
        match = _HEAD.search(text, position)
        if match is None:
            return
        fenced ^= bool(_FENCE.subn("", text[position : match.start()])[1] % 2)  # C speed
        position = match.end()
        if fenced:
            continue
        rows = min(match.end() + 1, len(text))
        blank = _BLANK.search(text, match.end())
        end = blank.start() if blank is not None else len(text)
        fence = _FENCE.search(text, match.end(), end)
        if fence is not None:  # a fence ends the table too (and opens a code block)
            end = max(fence.start() - 1, match.end())
        yield _Span(match.start(), rows, max(end, match.end()))
        position = max(end, position)


def tables(markdown: str, limit: int) -> list[Table]:
    """The first ``limit`` tables of ``markdown``, whole (what "Show all" shows as tables)."""
    return [
        Table(
            cells(markdown[span.start : span.rows].split("\n", 1)[0]),
            tuple(markdown[span.rows : span.end].split("\n")) if span.end > span.rows else (),
        )
        for span in itertools.islice(_spans(markdown), limit)
    ]


def _short_cells(row: str) -> str:
    if len(row) <= CELL_CHARS:
        return row
    prefix = _CONTAINER.match(row)
    shortened = (
        cell if len(cell) <= CELL_CHARS else cell[: CELL_CHARS - 1] + "…" for cell in cells(row)
    )
    return f"{prefix.group(0) if prefix else ''}| {' | '.join(shortened)} |"


def _kept_rows(text: str, span: _Span, keep: int) -> int:
    """Where the first ``keep`` rows of the table at ``span`` end."""
    end = span.rows
    for _ in range(keep):
        if end >= span.end:
            return span.end
        found = text.find("\n", end, span.end)
        end = span.end if found < 0 else found + 1
    return min(end, span.end)


def _open_fence(text: str) -> str | None:
    """The fence (```` ``` ```` or ``~~~``) left open at the end of ``text``, if any."""
    opened: str | None = None
    for match in _FENCE.finditer(text):
        opened = None if opened else match.group(1)
    return opened


def _at_line_end(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at the end of a line where one is near."""
    end = text.rfind("\n", 0, limit)
    return text[: end if end > limit // 2 else limit]


def _rows_after(markdown: str, start: int) -> int:
    """How many more rows a table that goes on past ``start`` has (up to its blank line)."""
    blank = _BLANK.search(markdown, start)
    return markdown.count("\n", start, blank.start() if blank is not None else len(markdown))


def _bounded_tables(text: str, more: str, rows_beyond: Callable[[], int]) -> tuple[str, bool]:
    """``text`` with every table cut (see the module docstring), up to a little more than
    :data:`MESSAGE_CHARS` of it, and whether a table was cut. A table that reaches the end of
    ``text`` has ``rows_beyond()`` more rows past it."""
    out: list[str] = []
    length = 0
    done = 0
    cells_left = TABLE_CELLS
    cut = False
    for span in _spans(text):
        if length + span.start - done > MESSAGE_CHARS:
            break  # the rest is cut anyway
        out.append(text[done : span.start])
        length += span.start - done
        head = text[span.start : span.rows].rstrip("\n").split("\n")
        columns = max(1, len(cells(head[0])))
        rows = text.count("\n", span.rows, span.end) + (1 if span.end > span.rows else 0)
        if span.end == len(text):
            rows += rows_beyond()
        keep = max(0, min(rows, TABLE_ROWS, cells_left // columns - 1))
        cells_left = max(0, cells_left - columns * (keep + 1))
        kept = text[span.start : _kept_rows(text, span, keep)].rstrip("\n").split("\n")
        if any(len(line) > CELL_CHARS for line in kept):
            kept = [*map(_short_cells, kept[:1]), kept[1], *map(_short_cells, kept[2:])]
        table = "\n".join(kept)
        if keep < rows:
            hidden = rows - keep
            noun = "row" if hidden == 1 else "rows"
            table += f"\n\n*The table has {hidden:,} more {noun}.* {more}\n"
            cut = True
        out.append(table)
        length += len(table)
        done = span.end
    out.append(text[done : done + max(0, MESSAGE_CHARS - length) + 1])  # more is cut anyway
    return "".join(out), cut


def bounded(markdown: str, more: str) -> Bounded:
    """``markdown`` cut as the module docstring says; ``more`` (a Markdown link to the whole
    message) follows every place something was left out."""
    head = markdown
    if len(markdown) > SCAN_CHARS:
        head = _at_line_end(markdown, SCAN_CHARS)

    def rows_beyond() -> int:
        return _rows_after(markdown, len(head)) if len(head) < len(markdown) else 0

    text, runs = _LONG_RUN.subn(_cut_run, head)
    text, tables_cut = _bounded_tables(text, more, rows_beyond)
    cut = runs > 0 or len(head) < len(markdown)
    if len(text) > MESSAGE_CHARS:
        text, cut = _at_line_end(text, MESSAGE_CHARS), True
    if cut:
        fence = _open_fence(text)
        closing = f"\n{fence}" if fence else ""
        text = f"{text}{closing}\n\n*Some of this message is not shown here.* {more}"
    return Bounded(text, cut or tables_cut)


def _cut_run(match: re.Match[str]) -> str:
    return match.group(0)[: RUN_CHARS - 1] + "…"
