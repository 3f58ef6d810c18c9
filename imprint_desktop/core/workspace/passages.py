"""Cutting a document's lines into passages: the unit that is indexed, ranked and cited.

A passage is a run of whole lines — one paragraph, a few short paragraphs, or a window of a long one
— so a hit can be cited as ``path, lines a–b`` and opened at that place. Passages never cross a
heading or a PDF page, and carry the heading they sit under (their *section*), which helps both
ranking and the person reading a citation. Sizes aim at a few hundred characters: big enough to hold
a fact with its context, small enough that a handful fit in one tool result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

#: A passage grows by whole paragraphs up to about this size ...
TARGET_CHARS = 700
#: ... and a paragraph longer than this is cut into windows of lines.
MAX_CHARS = 1500
MAX_LINES = 40

_UNDERLINE = re.compile(r"^([=\-~^*#+`'\":._])\1{2,}\s*$")


#: Sentence ends and line breaks: where a long passage may be cut around what matched.
_UNITS = re.compile(r"(?<=[.!?;:])\s+|\n+")
_STEM = 5  # words compared by their first letters: "restored" finds "restore", "restoration"


def atx_heading(line: str, indent: int = 3) -> str | None:
    """The text of ``line`` if it is a Markdown ATX heading (``## Title ##``), else None.

    Read with string methods, each part of the line looked at once: every line of every document
    passes here, and a regular expression for "text, then optional spaces and closing marks" tried
    all the ways of sharing a run of spaces between its parts (``# a`` + a few thousand spaces +
    ``b`` took minutes). A closing run of ``#`` counts only after a space (``# C#`` is "C#").
    """
    stripped = line.lstrip()
    if not stripped.startswith("#") or len(line) - len(stripped) > indent:
        return None
    rest = stripped.lstrip("#")
    if len(stripped) - len(rest) > 6 or not rest[:1].isspace():
        return None
    text = rest.strip()
    unclosed = text.rstrip("#")
    if not unclosed or unclosed[-1].isspace():
        text = unclosed.rstrip()
    return text or None


def query_terms(query: str) -> frozenset[str]:
    """The query's words as a passage is matched against them (short words left out)."""
    return frozenset(word[:_STEM] for word in re.findall(r"\w+", query.lower()) if len(word) > 2)


def term_weights(terms: frozenset[str], texts: Sequence[str]) -> dict[str, float]:
    """How much each of ``terms`` tells, over the sentences and lines of ``texts``: a word found
    in few of them ("range") weighs more than one found in most (the name of the place every
    passage is about)."""
    units = [
        {word[:_STEM] for word in re.findall(r"\w+", unit.lower())}
        for text in texts
        for unit in _UNITS.split(text)
        if unit.strip()
    ]
    count = max(1, len(units))
    return {term: math.log(1 + count / (1 + sum(term in unit for unit in units))) for term in terms}


def _score(
    unit: str, terms: frozenset[str], weights: Mapping[str, float] | None
) -> tuple[float, float]:
    """How well ``unit`` matches: with ``weights``, the rarest word it holds first (the word a
    question asks about is rarer than the name every sentence repeats), then all of them."""
    found = {word[:_STEM] for word in re.findall(r"\w+", unit.lower())} & terms
    if not weights:
        return float(len(found)), 0.0
    held = [weights.get(term, 1.0) for term in found]
    return (max(held, default=0.0), sum(held))


def focus(
    text: str, terms: frozenset[str], limit: int, weights: Mapping[str, float] | None = None
) -> str:
    """``text`` cut to ``limit`` characters around the part that matches the query best.

    A passage too long for its share of the result keeps the sentence or line holding most of
    the query's words (by ``weights``, where given: see :func:`term_weights`), and its neighbours
    as far as they fit; the start of a passage is often a heading or an introduction, and the fact
    asked about further down.
    """
    if len(text) <= limit:
        return text
    units, breaks = _units_and_breaks(text)
    if len(units) < 2 or not terms:
        return _cut(text, limit)

    def score(unit: str) -> tuple[float, float]:
        return _score(unit, terms, weights)

    best = max(range(len(units)), key=lambda index: (score(units[index]), -index))
    if score(units[best])[0] == 0:
        return _cut(text, limit)
    first = last = best
    size = len(units[best])
    while True:  # grow around the best unit, after it first (a fact reads on), while it fits
        grown = False
        for index in (last + 1, first - 1):
            if 0 <= index < len(units) and size + 1 + len(units[index]) <= limit - 2:
                size += 1 + len(units[index])
                first, last = min(first, index), max(last, index)
                grown = True
        if not grown:
            break
    # Lines stay lines: a table's rows cut around the best one are still rows, one a line,
    # under the table's header when it fits (what each cell is).
    joined = units[first] + "".join(breaks[i] + units[i] for i in range(first + 1, last + 1))
    head = _table_head(units, first)
    if head and size + len(head) + 1 <= limit - 2:
        joined = f"{head}\n{joined}"
    body = _cut(joined, limit - 2)
    return (
        ("…\n" if first > 0 and body.startswith("|") else "…" if first > 0 else "")
        + body
        + ("…" if last < len(units) - 1 and not body.endswith("…") else "")
    )


def _table_head(units: list[str], first: int) -> str:
    """The header row and rule of the Markdown table whose row ``units[first]`` is, when they
    stand before it; "" otherwise."""
    if not units[first].startswith("|"):
        return ""
    for at in range(first - 1, 0, -1):
        if not units[at].startswith("|"):
            return ""
        if TABLE_RULE.match(units[at]):
            return f"{units[at - 1]}\n{units[at]}" if units[at - 1].startswith("|") else ""
    return ""


#: A Markdown table's rule under its header: "|---|:---:|".
TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")


def _units_and_breaks(text: str) -> tuple[list[str], list[str]]:
    """The sentences and lines of ``text`` (:data:`_UNITS`), and what joins each to the one
    before it: a line break where the text had one, else a space."""
    units: list[str] = []
    breaks: list[str] = []
    start, gap = 0, ""
    for match in [*_UNITS.finditer(text), None]:
        end = len(text) if match is None else match.start()
        unit = text[start:end].strip()
        if unit:
            units.append(unit)
            breaks.append("\n" if "\n" in gap else " ")
            gap = ""
        if match is not None:
            gap += match.group()
            start = match.end()
    return units, breaks


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ending in "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut).rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Passage:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    section: str
    text: str


@dataclass(slots=True)
class _Block:
    start: int  # 0-based index of the first line
    end: int  # 0-based index after the last line
    heading: str | None  # the heading this block *is*, if it is one
    chars: int


def split_passages(lines: Sequence[str], page_starts: Sequence[int] = ()) -> list[Passage]:
    """The passages of a document given as lines (``page_starts`` are 1-based line numbers)."""
    passages: list[Passage] = []
    section = ""
    group: list[_Block] = []

    def emit() -> None:
        if group:
            start, end = group[0].start, group[-1].end
            text = "\n".join(lines[start:end]).strip()
            if len(text) <= 2 * MAX_CHARS:
                chunks = [text]
            else:  # a single enormous line (minified data, a log without breaks): cut by characters
                chunks = [text[at : at + MAX_CHARS] for at in range(0, len(text), MAX_CHARS)]
            passages.extend(Passage(start + 1, end, section, chunk) for chunk in chunks if chunk)
            group.clear()

    page_breaks = frozenset(line - 1 for line in page_starts)
    for block in _blocks(lines, page_breaks):
        if block.heading is not None or block.start in page_breaks:
            emit()
            if block.heading is not None:
                section = block.heading
        size = sum(item.chars for item in group)
        only_heading = len(group) == 1 and group[0].heading is not None
        if group and size + block.chars > TARGET_CHARS and not only_heading:
            emit()
        group.append(block)
        if block.chars >= TARGET_CHARS:
            emit()
    emit()
    return passages


def _blocks(lines: Sequence[str], page_breaks: frozenset[int]) -> Iterator[_Block]:
    """Paragraphs (runs of non-blank lines), with headings on their own and long runs windowed."""
    index, count = 0, len(lines)
    while index < count:
        if not lines[index].strip():
            index += 1
            continue
        start = index
        heading = _heading_at(lines, index)
        if heading is not None:
            width = 2 if atx_heading(lines[index]) is None else 1
            yield _Block(start, start + width, heading, len(lines[index]))
            index += width
            continue
        chars = 0
        while index < count and lines[index].strip():
            if index > start and (index in page_breaks or _heading_at(lines, index) is not None):
                break
            line_chars = len(lines[index]) + 1
            if index > start and (chars + line_chars > MAX_CHARS or index - start >= MAX_LINES):
                yield _Block(start, index, None, chars)
                start, chars = index, 0
            chars += line_chars
            index += 1
        yield _Block(start, index, None, chars)


def _heading_at(lines: Sequence[str], index: int) -> str | None:
    """The heading text if line ``index`` starts a Markdown (ATX or setext) or RST heading."""
    line = lines[index]
    heading = atx_heading(line)
    if heading is not None:
        return heading
    if index + 1 < len(lines) and line.strip() and len(line.strip()) <= 120:
        following = lines[index + 1].strip()
        if _UNDERLINE.match(following) and len(following) >= min(len(line.strip()), 3):
            if index > 0 and lines[index - 1].strip():
                return None  # a line of dashes under a paragraph's last line: a rule, not a title
            return line.strip()
    return None
