"""Which version is current: a document's date, and whether it looks superseded.

A document share keeps old versions beside new ones — an archive folder, a draft next to its
final, ``report-2024`` next to ``report-2025`` — and their figures disagree. Every passage carries
its document's date and, when the document looks superseded, why, so the model and the person can
prefer the current one.

* **Date** — a date the document states near its top ("Date: 14 March 2026", "Updated 2026-03",
  "as of February 2026"), else the file's modification time. Office and PDF metadata dates are not
  used: generators stamp their own (python-docx's template says 2013), and they say when a file
  was made, not what it is about.
* **Superseded** — its path or title says ``archive``, ``old``, ``superseded``, ``obsolete`` or
  ``deprecated``; it is a draft beside a final of the same name; or a file in the same folder with
  the same name stem (versions, dates, "draft"/"final" and the like set aside) has a later date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
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
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b"), ("y", "m", "d")),
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
_STATED = re.compile(
    r"\b(date[ds]?|updated|revised|revision|as of|effective|issued|published|version|"
    r"last (?:modified|changed|reviewed)|approved|valid from)\b",
    re.IGNORECASE,
)
#: Lines at the top of a document where it states its own date, and how much of each is read.
_HEADER_LINES = 40
_FIRST_LINES = 12
_LINE_CHARS = 240
_A_YEAR = re.compile(r"(?:19|20)\d\d")

_SUPERSEDED_WORDS = ("archive", "archived", "superseded", "obsolete", "deprecated", "outdated")
_WORD = re.compile(r"[a-z0-9]+")
_VERSION_TOKENS = re.compile(
    r"^(v\d+|\d+|rev\d*|r\d+|draft|final|current|latest|new|old|copy|updated|revised|version|"
    r"q[1-4]|h[12]|fy\d*|" + "|".join(MONTHS) + r")$"
)


def stated_date(lines: Sequence[str]) -> str:
    """The date the document states near its top (ISO, ``2026-03-14`` or ``2026-03``), or ""."""
    head = [line[:_LINE_CHARS] for line in lines[:_HEADER_LINES] if line.strip()]
    # A cheap test before the patterns: a line without a year states no date.
    candidates = [(index, line) for index, line in enumerate(head) if _A_YEAR.search(line)]
    for _index, line in candidates:
        if _STATED.search(line):
            found = _first_date(line)
            if found:
                return found
    for index, line in candidates:
        if index < _FIRST_LINES:
            found = _first_date(line)
            if found:
                return found
    return ""


def normalized(text: str) -> str:
    """A date in any of the forms above (or ISO with a time) as ISO, or "" if there is none."""
    return _first_date(text)


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
        newest = max(members, key=lambda doc: (doc.date, _is_final(doc), doc.mtime_ns))
        for member in members:
            if member is newest or member.path in found:
                continue
            if _is_draft(member) and _is_final(newest):
                found[member.path] = f"a draft; the final is {newest.path}"
            elif member.date < newest.date:
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


def _stem_key(stem: str) -> str:
    words = [word for word in _WORD.findall(stem.lower()) if not _VERSION_TOKENS.match(word)]
    return " ".join(words)


def _is_draft(document: Dated) -> bool:
    return "draft" in _WORD.findall(PurePosixPath(document.path).stem.lower())


def _is_final(document: Dated) -> bool:
    return not _is_draft(document)


def currency(date: str, dated: str, superseded: str) -> str:
    """How a passage's document stands, in the words every view uses: "dated 2026-02-10",
    "modified 2025-11-03", with "; looks superseded: …" when it does."""
    if not date:
        return f"looks superseded: {superseded}" if superseded else ""
    text = f"{'modified' if dated == 'modified' else 'dated'} {date}"
    return f"{text}; looks superseded: {superseded}" if superseded else text
