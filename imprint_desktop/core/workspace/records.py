"""What the index keeps of each file: its row in ``files`` and its rows in ``passages``.

Every statement over those two tables except the ranked search (:mod:`.search`) is here, so the
update (:mod:`.update`) decides what to do with a file and this module says how it is written, and
the index's questions (what is indexed, what was skipped and why) read the same rows. A file's
``status`` is ``ok`` (its passages are searchable; a ``note`` says what part could not be read),
``notext`` (read, but it has no text: a scan without OCR), ``binary`` or ``error`` (skipped,
``note`` saying why); each file keeps its date and, when it looks superseded, why
(:mod:`.dating`). The schema is :mod:`.database`'s.

The functions take the update's connection and write in whatever transaction it has open. Storing
a document takes time in proportion to its passages and pages (each passage's page and place are
found by walking both sorted lists together: :class:`~.formats.text.Locator`), and Stop is checked
between batches of passages.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace import dating
from imprint_desktop.core.workspace.extract import Extracted, format_for
from imprint_desktop.core.workspace.files import FileEntry
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.isolation import Stop, is_cancelled
from imprint_desktop.core.workspace.passages import split_passages

#: Passages written between two looks at Stop.
_BATCH = 1000


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    path: str
    size: int
    title: str
    format: str
    lines: int


@dataclass(frozen=True, slots=True)
class IndexProblem:
    """A file the index could not fully use, and why (a sentence fragment: "cannot be read: …").

    ``kind`` is ``skipped`` (not indexed), ``no_text`` (read, but without text: a scan without
    OCR) or ``partial`` (indexed, but part of it could not be read)."""

    path: str
    reason: str
    kind: str = "skipped"


@dataclass(frozen=True, slots=True)
class Known:
    """What the index remembers of a file: enough to tell whether it changed or moved."""

    id: int
    size: int
    mtime_ns: int
    digest: str
    title: str
    #: Why it was read without text for want of OCR ("" otherwise): read again once OCR is there.
    waits_for_ocr: bool = False


#: How each kind of problem is counted, in this order: in a list of counts, and as a sentence
#: for one file and for several.
_COUNTED = (
    ("skipped", "skipped", "file could not be read", "files could not be read"),
    ("no_text", "without text", "file has no text layer", "files have no text layer"),
    ("partial", "partly read", "file was read only in part", "files were read only in part"),
)


def problem_counts(problems: Sequence[IndexProblem]) -> list[str]:
    """The problems as short counts: "2 skipped", "3 without text", "1 partly read"."""
    kinds = Counter(problem.kind for problem in problems)
    return [f"{kinds[kind]} {words}" for kind, words, *_ in _COUNTED if kinds[kind]]


def problem_summary(problems: Sequence[IndexProblem]) -> str:
    """The problems as a status line: "3 files have no text layer · 2 files could not be read"."""
    kinds = Counter(problem.kind for problem in problems)
    return " · ".join(
        f"{kinds[kind]} {one if kinds[kind] == 1 else several}"
        for kind, _short, one, several in _COUNTED
        if kinds[kind]
    )


# --- what the update writes ---------------------------------------------------------------------


def file_stamps(db: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Every file the index has a row for, by path: its size and modification time, which tell
    whether it changed (an unchanged folder needs nothing more of the index)."""
    return {path: (size, mtime_ns) for path, size, mtime_ns in db.execute(_STAMPS)}


_STAMPS = "SELECT path, size, mtime_ns FROM files"


def waiting_for_ocr(db: sqlite3.Connection) -> set[str]:
    """The files read without text for want of OCR, by path."""
    rows = db.execute("SELECT path, note FROM files WHERE note != ''")
    return {path for path, note in rows if ocr.waits_for_ocr(note)}


def known_files(db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, Known]:
    """What the index remembers of the files at ``paths`` (those it has a row for), by path."""
    known: dict[str, Known] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        rows = db.execute(
            "SELECT path, id, size, mtime_ns, digest, title, note FROM files "
            f"WHERE path IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for path, file_id, size, mtime_ns, digest, title, note in rows:
            known[path] = Known(file_id, size, mtime_ns, digest, title, ocr.waits_for_ocr(note))
    return known


def store(
    db: sqlite3.Connection,
    entry: FileEntry,
    document: Extracted | DocumentError,
    digest: str,
    old: Known | None,
    *,
    cancel: Stop | None = None,
) -> bool:
    """Record ``entry`` as read: its text cut into passages, or the reason it was skipped.

    False when ``cancel`` was set before all was written: then nothing of this file is written
    (what it had written is undone to a savepoint), and the open transaction holds what it held.
    """
    fmt = format_for(entry.path).value
    if isinstance(document, DocumentError):
        reason = str(document)
        values: tuple[object, ...] = (
            entry.size,
            entry.mtime_ns,
            digest,
            fmt,
            PurePosixPath(entry.path).name,
            0,
            "binary" if "binary" in reason else "error",
            reason,
            dating.from_mtime(entry.mtime_ns),
            dating.How.MODIFIED.value,
        )
        _upsert(db, entry.path, values, old)
        return True
    dated = dating.chosen(document.dates, entry.mtime_ns)
    values = (
        entry.size,
        entry.mtime_ns,
        digest,
        fmt,
        document.title,
        len(document.lines),
        "ok" if document.has_text or not document.gaps else "notext",
        document.gaps,
        dated.date,
        dated.how.value,
    )
    db.execute("SAVEPOINT store_file")
    stored = False
    try:
        file_id = _upsert(db, entry.path, values, old)
        rows = _passage_rows(file_id, document)
        while batch := list(itertools.islice(rows, _BATCH)):
            if is_cancelled(cancel):
                return False
            db.executemany(
                "INSERT INTO passages (file_id, start_line, end_line, page, section, heading, "
                "text, place) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                batch,
            )
        stored = True
    finally:
        with contextlib.suppress(sqlite3.Error):  # a failed statement may have ended it already
            if not stored:
                db.execute("ROLLBACK TO store_file")
            db.execute("RELEASE store_file")
    return stored


def _passage_rows(file_id: int, document: Extracted) -> Iterator[tuple[object, ...]]:
    """The rows of a document's passages, in order: their pages and places found in one walk."""
    where = document.locator()
    heading = document.title
    for passage in split_passages(document.lines, document.page_starts):
        yield (
            file_id,
            passage.start_line,
            passage.end_line,
            where.page_of(passage.start_line),
            passage.section,
            f"{heading} {passage.section}".strip(),
            passage.text,
            where.place_of(passage.start_line, passage.end_line),
        )


def _upsert(
    db: sqlite3.Connection, path: str, values: tuple[object, ...], old: Known | None
) -> int:
    if old is None:
        cursor = db.execute(
            "INSERT INTO files (size, mtime_ns, digest, format, title, lines, status, note, "
            "date, dated, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*values, path),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid
    db.execute("DELETE FROM passages WHERE file_id = ?", (old.id,))
    db.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, digest = ?, format = ?, title = ?, "
        "lines = ?, status = ?, note = ?, date = ?, dated = ? WHERE id = ?",
        (*values, old.id),
    )
    return old.id


def touch(db: sqlite3.Connection, old: Known, entry: FileEntry) -> None:
    """Take the new size and time of a file whose content is what the index already holds."""
    db.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, "
        "date = CASE dated WHEN 'modified' THEN ? ELSE date END WHERE id = ?",
        (entry.size, entry.mtime_ns, dating.from_mtime(entry.mtime_ns), old.id),
    )


def rename(db: sqlite3.Connection, old_path: str, old: Known, entry: FileEntry) -> None:
    """Move a file's record to its new path; its passages stay, no extraction needed."""
    db.execute(
        "UPDATE files SET path = ?, size = ?, mtime_ns = ? WHERE id = ?",
        (entry.path, entry.size, entry.mtime_ns, old.id),
    )
    new_stem = PurePosixPath(entry.path).stem
    if old.title == PurePosixPath(old_path).stem and old.title != new_stem:
        # The title came from the file name, so it follows the file.
        db.execute("UPDATE files SET title = ? WHERE id = ?", (new_stem, old.id))
        db.execute(
            "UPDATE passages SET heading = trim(? || ' ' || section) WHERE file_id = ?",
            (new_stem, old.id),
        )


def remove(db: sqlite3.Connection, old: Known) -> None:
    """Forget a file that is gone, with its passages."""
    db.execute("DELETE FROM passages WHERE file_id = ?", (old.id,))
    db.execute("DELETE FROM files WHERE id = ?", (old.id,))


# --- what the index answers -----------------------------------------------------------------------


def currency_of(db: sqlite3.Connection, path: str) -> str:
    """How the indexed document at ``path`` stands (:func:`.dating.currency`), "" if unknown."""
    row = db.execute(
        "SELECT date, dated, superseded FROM files WHERE path = ? AND status = 'ok'", (path,)
    ).fetchone()
    return "" if row is None else dating.currency(*row)


def document_count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM files WHERE status = 'ok'").fetchone()[0])


def mark_superseded(db: sqlite3.Connection, near: Callable[[str], bool] | None = None) -> None:
    """Work out again which documents look superseded (:func:`.dating.superseded`): a file added,
    changed or removed can change the answer for its siblings. With ``near``, only the documents
    whose path it accepts are looked at: the folders where files changed (siblings are judged
    within their folder)."""
    rows = db.execute(
        "SELECT path, title, date, mtime_ns, superseded FROM files WHERE status = 'ok'"
    ).fetchall()
    if near is not None:
        rows = [row for row in rows if near(row[0])]
    found = dating.superseded(dating.Dated(*row[:4]) for row in rows)
    changes = [
        (found.get(path, ""), path) for path, *_rest, was in rows if found.get(path, "") != was
    ]
    db.executemany("UPDATE files SET superseded = ? WHERE path = ?", changes)


_PROBLEM_KINDS = {"error": "skipped", "notext": "no_text", "ok": "partial"}


def problems(db: sqlite3.Connection) -> list[IndexProblem]:
    """The files the updates skipped, found without text, or read in part, and why (until they
    change), by path."""
    rows = db.execute(
        "SELECT path, note, status FROM files WHERE status IN ('error', 'notext') "
        "OR (status = 'ok' AND note != '') ORDER BY path"
    )
    return [IndexProblem(path, note, _PROBLEM_KINDS[status]) for path, note, status in rows]


def skipped_reason(db: sqlite3.Connection, path: str, size: int, mtime_ns: int) -> str | None:
    """Why the file at ``path`` was skipped, if it was and has not changed since."""
    row = db.execute(
        "SELECT note FROM files WHERE path = ? AND status = 'error' AND size = ? AND mtime_ns = ?",
        (path, size, mtime_ns),
    ).fetchone()
    return None if row is None else str(row[0])


def documents(db: sqlite3.Connection, folder: str) -> list[DocumentInfo]:
    """The indexed documents under ``folder`` (workspace-relative; empty for all), by path."""
    prefix = folder.strip("/")
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    rows = db.execute(
        "SELECT path, size, title, format, lines FROM files WHERE status = 'ok' "
        "AND (? = '' OR path LIKE ? ESCAPE '\\') ORDER BY path",
        (prefix, pattern),
    )
    return [DocumentInfo(*row) for row in rows]
