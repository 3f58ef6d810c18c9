"""Which version is current: a document's date, how it was found, and whether it looks superseded.

A document share keeps old versions beside new ones — an archive folder, a draft next to its
final, ``report-2024`` next to ``report-2025`` — and their figures disagree. Every passage carries
its document's date and, when the document looks superseded, why, so the model and the person can
prefer the current one.

* **Date** — the date a document gives itself, found in the first of these ways that gives one
  (:class:`How`, the index's ``dated``, said in words by :func:`currency`):

  1. ``date:`` in a Markdown file's front matter;
  2. a line near its top that says what the date is ("Date: 14 March 2026", "Updated 2026-03",
     "As of February 2026");
  3. a date in its title or the lines right after it ("Meeting of 2 October 2026");
  4. its properties: Office core properties, OpenDocument and EPUB metadata, a PDF's info — except
     the stamps of a library's own template (python-docx's says 2013 for every file it makes);
  5. a date beside a word such as "approved" or "version" further down its top;

  else the file's modification time. A date later than the file's own timestamps (its
  modification time, its properties' date) is a date the document speaks of — a delivery, a
  deadline — not its own: it is taken only when nothing else is stated (:func:`chosen`).
* **Superseded** — its path or title says ``archive``, ``old``, ``superseded``, ``obsolete`` or
  ``deprecated``; it is a draft beside a final of the same name; or a file in the same folder with
  the same name stem (versions, dates, "draft"/"final" and the like set aside) has a later date.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import date as date_type
from pathlib import PurePosixPath

#: Month names and their usual short forms, by month number (also read by the answers' grounding).
MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DATES = (
    # (?!\d) rather than \b, so that an ISO date with a time ("2026-03-14T10:00") is read whole.
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)(?!\d)"), ("y", "m", "d")),
    (re.compile(rf"\b{_YEAR}/(\d\d)/(\d\d)\b"), ("y", "m", "d")),
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? {_MONTH},? {_YEAR}\b", re.IGNORECASE),
        ("d", "M", "y"),
    ),
    (
        re.compile(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? {_YEAR}\b", re.IGNORECASE),
        ("M", "d", "y"),
    ),
    (re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.IGNORECASE), ("M", "y")),
    (re.compile(rf"\b{_YEAR}-(\d\d)\b"), ("y", "m")),
)
_WORDS_OF_DATE = (
    r"date[ds]?|updated|revised|revision|as of|effective|issued|published|version|"
    r"last (?:modified|changed|reviewed|updated)|approved|valid from"
)
#: A line that says what its date is: one of those words first (after any Markdown marks).
_LABEL = re.compile(rf"^[\s#>*_|-]*(?:{_WORDS_OF_DATE})\b", re.IGNORECASE)
#: A line that merely mentions such a word ("as approved by the board") beside a date.
_MENTION = re.compile(rf"\b(?:{_WORDS_OF_DATE})\b", re.IGNORECASE)
#: Lines at the top of a document where it states its own date, how many of them are "near the
#: title", how many more may hold a date of no label, and how much of each line is read.
_HEADER_LINES = 40
_TITLE_LINES = 6
_FIRST_LINES = 12
_LINE_CHARS = 240
_A_YEAR = re.compile(r"(?:19|20)\d\d")
_FRONT_MATTER_KEYS = frozenset(("date", "updated", "lastmod", "last_modified", "modified"))

_SUPERSEDED_WORDS = ("archive", "archived", "superseded", "obsolete", "deprecated", "outdated")
_WORD = re.compile(r"[a-z0-9]+")
_VERSION_TOKENS = re.compile(
    r"^(v\d+|\d+|rev\d*|r\d+|draft|final|current|latest|new|old|copy|updated|revised|version|"
    r"q[1-4]|h[12]|fy\d*|" + "|".join(MONTHS) + r")$"
)


class How(enum.StrEnum):
    """How a document's date was found (the index's ``dated``), the most telling first."""

    FRONT_MATTER = "front_matter"
    LABEL = "label"
    TITLE = "title"
    PROPERTIES = "properties"
    TEXT = "text"
    MODIFIED = "modified"


#: How a date was found, in the words every view uses ("dated 2026-10-02, stated near its title").
HOW_WORDS: dict[str, str] = {
    How.FRONT_MATTER: "from its front matter",
    How.LABEL: "stated at its top",
    How.TITLE: "stated near its title",
    How.PROPERTIES: "from the document's properties",
    How.TEXT: "stated in its text",
    How.MODIFIED: "file modified",
}


@dataclass(frozen=True, slots=True)
class DocumentDate:
    """A date a document gives itself (ISO, ``2026-03-14`` or ``2026-03``) and how it was found."""

    date: str
    how: How


def stated_dates(lines: Sequence[str]) -> tuple[DocumentDate, ...]:
    """The dates the document's text gives itself, at most one found each way, best first."""
    found: dict[How, str] = {}
    front, body = _front_matter(lines)
    if front:
        found[How.FRONT_MATTER] = front
    head = [line[:_LINE_CHARS] for line in lines[body : body + _HEADER_LINES] if line.strip()]
    # A cheap test before the patterns: a line without a year states no date.
    for index, line in enumerate(head):
        if not _A_YEAR.search(line):
            continue
        date = _first_date(line)
        if not date:
            continue
        if _LABEL.search(line):
            how = How.LABEL
        elif index < _TITLE_LINES:
            how = How.TITLE
        elif index < _FIRST_LINES or _MENTION.search(line):
            how = How.TEXT
        else:
            continue
        found.setdefault(how, date)
    return tuple(DocumentDate(found[how], how) for how in How if how in found)


def ranked(dates: Iterable[DocumentDate]) -> tuple[DocumentDate, ...]:
    """``dates`` best first (in :class:`How`'s order), one found each way."""
    order = list(How)
    kept: dict[How, DocumentDate] = {}
    for date in dates:
        kept.setdefault(date.how, date)
    return tuple(sorted(kept.values(), key=lambda date: order.index(date.how)))


def chosen(dates: Sequence[DocumentDate], mtime_ns: int) -> DocumentDate:
    """The document's date: the best of ``dates`` that is not later than the file's own
    timestamps, else the best of them, else its modification time (``mtime_ns``).

    "Later" is a later month: a memo dated a few days after it was saved, or a time zone apart
    from the file system's clock, is no date of the future.
    """
    modified = from_mtime(mtime_ns)
    own = max([modified, *(date.date for date in dates if date.how is How.PROPERTIES)])
    for date in dates:
        if date.date[:7] <= own[:7]:
            return date
    return dates[0] if dates else DocumentDate(modified, How.MODIFIED)


def properties_date(value: object) -> str:
    """The date (ISO) of a property as a library gives it — a ``datetime``, an ISO string
    ("2026-10-05T09:30:00Z") or a PDF date ("D:20261005093000+01'00'") — or ""."""
    if isinstance(value, datetime | date_type):
        return value.strftime("%Y-%m-%d")
    if not isinstance(value, str):
        return ""
    pdf = _PDF_DATE.match(value.strip())
    if pdf is not None:
        year, month, day = pdf.groups()
        if 1 <= int(month or "1") <= 12 and 1 <= int(day or "1") <= 31:
            return "-".join(part for part in (year, month, day) if part)
        return ""
    return _first_date(value[:_LINE_CHARS])


_PDF_DATE = re.compile(r"^D:((?:19|20)\d\d)(\d\d)?(\d\d)?")


def normalized(text: str) -> str:
    """A date in any of the forms above (or ISO with a time) as ISO, or "" if there is none."""
    return _first_date(text)


def _front_matter(lines: Sequence[str]) -> tuple[str, int]:
    """The date in the document's front matter ("" if none) and the index of its first line after
    the front matter (0 when it has none)."""
    if not lines or lines[0].strip() != "---":
        return "", 0
    date = ""
    for number, line in enumerate(lines[1:_HEADER_LINES], start=1):
        if line.strip() in ("---", "..."):
            return date, number + 1
        key, _, value = line.partition(":")
        if not date and key.strip().lower() in _FRONT_MATTER_KEYS:
            date = _first_date(value[:_LINE_CHARS])
    return "", 0  # not front matter after all: a rule under nothing


def _first_date(text: str) -> str:
    best: tuple[int, str] | None = None
    for pattern, order in _DATES:
        match = pattern.search(text)
        if match is None:
            continue
        parts = dict(zip(order, match.groups(), strict=True))
        year = int(parts["y"])
        month = MONTHS[parts["M"].lower().rstrip(".")] if "M" in parts else int(parts["m"])
        if not 1 <= month <= 12:
            continue
        value = f"{year:04d}-{month:02d}"
        if "d" in parts:
            day = int(parts["d"])
            if not 1 <= day <= 31:
                continue
            value += f"-{day:02d}"
        if best is None or match.start() < best[0]:
            best = (match.start(), value)
    return "" if best is None else best[1]


def from_mtime(mtime_ns: int) -> str:
    return datetime.fromtimestamp(mtime_ns / 1e9, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class Dated:
    """What :func:`superseded` needs of one indexed document."""

    path: str
    title: str
    date: str
    mtime_ns: int


def superseded(documents: Iterable[Dated]) -> dict[str, str]:
    """Why each document that looks superseded does (a sentence fragment), by path."""
    found: dict[str, str] = {}
    groups: dict[tuple[str, str], list[Dated]] = {}
    for document in documents:
        path = PurePosixPath(document.path)
        reason = _flagged(path, document.title)
        if reason:
            found[document.path] = reason
        groups.setdefault((str(path.parent), _stem_key(path.stem)), []).append(document)
    for (_folder, key), members in groups.items():
        if len(members) < 2 or not key:
            continue
        newest = max(
            members, key=lambda doc: (_name_year(doc), doc.date, _is_final(doc), doc.mtime_ns)
        )
        for member in members:
            if member is newest or member.path in found:
                continue
            if _is_draft(member) and _is_final(newest):
                found[member.path] = f"a draft; the final is {newest.path}"
            elif member.date < newest.date or _name_year(member) < _name_year(newest):
                found[member.path] = f"{newest.path} is a newer version ({newest.date})"
    return found


def _flagged(path: PurePosixPath, title: str) -> str:
    """Why the path or title says the document is not current, or ""."""
    folders = [_WORD.findall(part.lower()) for part in path.parts[:-1]]
    stem = _WORD.findall(path.stem.lower())
    for words, where in ((stem, "name"), *((words, "folder") for words in folders)):
        flagged = next((word for word in _SUPERSEDED_WORDS if word in words), None)
        if flagged is not None:
            return f'its {where} says "{flagged}"'
    # "old" only as a folder, or at the end of a name ("budget-old"): "old-quay" is a place.
    if any("old" in words for words in folders) or stem[-1:] == ["old"]:
        return 'its path says "old"'
    words = _WORD.findall(title.lower())
    flagged = next((word for word in _SUPERSEDED_WORDS if word in words), None)
    return f'its title says "{flagged}"' if flagged is not None else ""


def _name_year(document: Dated) -> int:
    """The latest year a document's file name gives ("annual-report-2023" is 2023), 0 if none:
    of a series named by year, the later year's edition is the newer, whatever the dates say (a
    date that is only the file's timestamp says nothing of which edition is later)."""
    years = [
        int(y) for y in re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", PurePosixPath(document.path).stem)
    ]
    return max(years, default=0)


def _stem_key(stem: str) -> str:
    words = [word for word in _WORD.findall(stem.lower()) if not _VERSION_TOKENS.match(word)]
    return " ".join(words)


def _is_draft(document: Dated) -> bool:
    return "draft" in _WORD.findall(PurePosixPath(document.path).stem.lower())


def _is_final(document: Dated) -> bool:
    return not _is_draft(document)


#: What opens why a document looks superseded in its currency (:func:`currency`).
SUPERSEDED_MARK = "looks superseded: "


def currency(date: str, dated: str, superseded: str) -> str:
    """How a passage's document stands, in the words every view uses: "dated 2026-02-10, stated
    near its title", "modified 2025-11-03", with "; looks superseded: …" when it does."""
    if not date:
        return f"{SUPERSEDED_MARK}{superseded}" if superseded else ""
    if dated == How.MODIFIED:
        text = f"modified {date}"
    else:
        how = HOW_WORDS.get(dated)
        text = f"dated {date}, {how}" if how else f"dated {date}"
    return f"{text}; {SUPERSEDED_MARK}{superseded}" if superseded else text
