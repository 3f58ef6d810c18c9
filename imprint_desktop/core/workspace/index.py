"""The full-text index of a workspace: incremental updates and BM25-ranked passage search.

An update compares what is on disk with what the index remembers, by size and modification time
only, so an unchanged folder costs one directory walk and no file reads. A file whose size or
time changed is read and hashed: same content (a ``touch``, a copy back) only refreshes its times;
content that vanished from another path is a rename and keeps its passages; anything else is
extracted again.

Work is committed as it goes — quick files in transactions of at most a quarter of a second, and
everything pending before each PDF — so it is kept whatever happens next, and no transaction is
ever open while a PDF is being parsed. PDFs are parsed in a worker process under a time and
memory limit (:mod:`.isolation`). A file that cannot be read or parsed, or that hits a limit, is
recorded as skipped with the reason — reported by every update, listed by
:meth:`WorkspaceIndex.problems` — and tried again only once it changes (size or time, then
content). Stop (a cancel token or event) ends an update at once, even in the middle of a PDF,
keeping what was committed. Files are read with :func:`~.files.read_inside`, which follows no
link.

Search runs on SQLite FTS5 with BM25 ranking (title and section words weigh double). The query is
treated as words, never as FTS syntax, so whatever the model types is safe; "quoted phrases" are
kept.

Any thread may search; updates are serialised by a lock, and each thread has its own connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from imprint_desktop.core.errors import (
    Cancelled,
    DocumentError,
    WorkspaceError,
    WorkspaceIndexError,
)
from imprint_desktop.core.workspace.database import Connections, index_path_for
from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES, Extracted, format_for
from imprint_desktop.core.workspace.files import FileEntry, read_inside, scan
from imprint_desktop.core.workspace.isolation import (
    DEFAULT_LIMITS,
    ExtractionLimits,
    PdfReaderUnavailableError,
    Stop,
    is_cancelled,
)
from imprint_desktop.core.workspace.passages import split_passages
from imprint_desktop.core.workspace.reader import DocumentReader

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
#: The longest the writes of quick files share one transaction (see :class:`_Writes`).
_GROUP_SECONDS = 0.25
#: Search diversity: at most this many passages of one file in one result list.
_PER_FILE = 3
_MAX_QUERY_TERMS = 24
_STOPWORD_TEXT = """a an and are as at be by for from has have in is it its of on or that the
    this to was were what when where which who why how with do does did about into than then there
    these those"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


_SEARCH = """
SELECT f.path, p.start_line, p.end_line, f.title, p.section, p.page, hit.rank, p.text
FROM (SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?) AS hit
JOIN passages p ON p.id = hit.rowid
JOIN files f ON f.id = p.file_id
ORDER BY hit.rank
"""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked passage; ``score`` is BM25 (higher is better), comparable within one search."""

    path: str
    start_line: int
    end_line: int
    title: str
    section: str
    page: int | None
    score: float
    text: str

    @property
    def location(self) -> str:
        lines = f"lines {self.start_line}-{self.end_line}"
        return lines if self.page is None else f"page {self.page}, {lines}"


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    path: str
    size: int
    title: str
    format: str
    lines: int


@dataclass(frozen=True, slots=True)
class IndexProblem:
    """A file the index skipped, and why (a sentence fragment: "cannot be read: …")."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class IndexProgress:
    done: int
    total: int
    path: str


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What an update did. ``problems`` lists every file the index currently cannot use."""

    documents: int
    added: int
    updated: int
    renamed: int
    removed: int
    unchanged: int
    problems: tuple[IndexProblem, ...]
    seconds: float
    cancelled: bool


@dataclass(frozen=True, slots=True)
class _Known:
    id: int
    size: int
    mtime_ns: int
    digest: str
    title: str


class WorkspaceIndex:
    """The index of the folder ``root``; close it (or use ``with``) when done."""

    def __init__(
        self,
        root: Path,
        *,
        db_path: Path | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        extraction: ExtractionLimits = DEFAULT_LIMITS,
    ) -> None:
        self.root = root.expanduser().resolve()
        if not self.root.is_dir():
            raise WorkspaceError(f"The workspace folder {root} does not exist or is not a folder.")
        self.max_file_bytes = max_file_bytes
        self.extraction = extraction
        self.db_path = db_path or index_path_for(self.root)
        self._connections = Connections(self.db_path, self.root)
        self._update_lock = threading.Lock()

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._connections.close_all()

    # --- updating ------------------------------------------------------------------------------

    def update(
        self,
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: Stop | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the folder; see the module docstring."""
        started = time.perf_counter()
        with self._update_lock, DocumentReader(self.extraction) as reader:
            try:
                writes = _Writes(self._connections.get())
                return self._update(_Run(progress, cancel, reader, writes), started)
            except sqlite3.Error as error:
                raise WorkspaceIndexError(
                    f"The workspace index cannot be updated: {error}"
                ) from error

    def _update(self, run: _Run, started: float) -> IndexReport:
        db = self._connections.get()
        run.known = {
            row[0]: _Known(*row[1:])
            for row in db.execute("SELECT path, id, size, mtime_ns, digest, title FROM files")
        }
        entries = list(
            scan(self.root, max_file_bytes=self.max_file_bytes, skip_suffixes=BINARY_SUFFIXES)
        )
        present = {entry.path for entry in entries}
        run.missing = {path: row for path, row in run.known.items() if path not in present}
        run.missing_by_digest = {
            row.digest: path for path, row in run.missing.items() if row.digest
        }
        todo = [entry for entry in entries if _changed(entry, run.known.get(entry.path))]
        cancelled = False
        try:
            for done, scanned in enumerate(todo):
                if run.progress is not None:
                    run.progress(IndexProgress(done, len(todo), scanned.path))
                if is_cancelled(run.cancel) or not self._index_file(db, run, scanned):
                    cancelled = True
                    break
            with run.writes.group():
                for row in run.missing.values():
                    db.execute("DELETE FROM passages WHERE file_id = ?", (row.id,))
                    db.execute("DELETE FROM files WHERE id = ?", (row.id,))
        finally:
            run.writes.commit()
        if run.progress is not None:
            run.progress(IndexProgress(len(todo), len(todo), ""))
        problems = sorted([*run.unreadable, *self.problems()], key=lambda problem: problem.path)
        documents = db.execute("SELECT count(*) FROM files WHERE status = 'ok'").fetchone()[0]
        return IndexReport(
            documents=int(documents),
            added=run.counts["added"],
            updated=run.counts["updated"],
            renamed=run.counts["renamed"],
            removed=len(run.missing),
            unchanged=len(entries) - len(todo),
            problems=tuple(problems),
            seconds=time.perf_counter() - started,
            cancelled=cancelled,
        )

    def _index_file(self, db: sqlite3.Connection, run: _Run, scanned: FileEntry) -> bool:
        """Read, extract and commit one changed file; False when Stop interrupted it."""
        try:
            data, info = read_inside(self.root, scanned.path, max_bytes=self.max_file_bytes)
        except (DocumentError, OSError) as error:
            reason = str(error) if isinstance(error, DocumentError) else error.strerror
            run.unreadable.append(IndexProblem(scanned.path, f"cannot be read: {reason}"))
            return True
        entry = FileEntry(scanned.path, info.st_size, info.st_mtime_ns)  # what was read
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        old = run.known.get(entry.path)
        if old is not None and old.digest == digest:  # touched, or changed and changed back
            with run.writes.group():
                db.execute(
                    "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                    (entry.size, entry.mtime_ns, old.id),
                )
            return True
        if old is None and digest in run.missing_by_digest:
            old_path = run.missing_by_digest.pop(digest)
            with run.writes.group():
                self._rename(db, old_path, run.missing.pop(old_path), entry)
            run.counts["renamed"] += 1
            return True
        isolated = run.reader.isolated(entry.path)
        if isolated:
            run.writes.commit()  # nothing waits on a file that may never finish
        try:
            document: Extracted | DocumentError = _text(run, entry.path, data)
        except Cancelled:
            return False
        except PdfReaderUnavailableError as error:  # not the file's fault: tried again next time
            run.unreadable.append(IndexProblem(entry.path, str(error)))
            return True
        except DocumentError as error:
            document = error
        with run.writes.group():
            self._store(db, entry, document, digest, old)
        if isolated:
            run.writes.commit()  # a PDF's text is worth its own transaction
        run.counts["updated" if old else "added"] += 1
        return True

    def _store(
        self,
        db: sqlite3.Connection,
        entry: FileEntry,
        document: Extracted | DocumentError,
        digest: str,
        old: _Known | None,
    ) -> None:
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
            )
            self._upsert(db, entry.path, values, old)
            return
        values = (
            entry.size,
            entry.mtime_ns,
            digest,
            fmt,
            document.title,
            len(document.lines),
            "ok",
            "",
        )
        file_id = self._upsert(db, entry.path, values, old)
        db.executemany(
            "INSERT INTO passages (file_id, start_line, end_line, page, section, heading, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    file_id,
                    passage.start_line,
                    passage.end_line,
                    document.page_of(passage.start_line),
                    passage.section,
                    f"{document.title} {passage.section}".strip(),
                    passage.text,
                )
                for passage in split_passages(document.lines, document.page_starts)
            ],
        )

    @staticmethod
    def _upsert(
        db: sqlite3.Connection, path: str, values: tuple[object, ...], old: _Known | None
    ) -> int:
        if old is None:
            cursor = db.execute(
                "INSERT INTO files (size, mtime_ns, digest, format, title, lines, status, note, "
                "path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, path),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid
        db.execute("DELETE FROM passages WHERE file_id = ?", (old.id,))
        db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, digest = ?, format = ?, title = ?, "
            "lines = ?, status = ?, note = ? WHERE id = ?",
            (*values, old.id),
        )
        return old.id

    @staticmethod
    def _rename(db: sqlite3.Connection, old_path: str, old: _Known, entry: FileEntry) -> None:
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

    # --- reading -------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 8) -> list[SearchHit]:
        """The best passages for ``query``, best first; empty when nothing matches."""
        match = fts_query(query)
        if match is None or limit < 1:
            return []
        try:
            connection = self._connections.get()
            rows = connection.execute(_SEARCH, (match, limit * _PER_FILE)).fetchall()
        except sqlite3.Error as error:
            raise WorkspaceIndexError(f"The workspace index cannot be searched: {error}") from error
        hits: list[SearchHit] = []
        per_file: dict[str, int] = {}
        for path, start, end, title, section, page, rank, text in rows:
            if per_file.get(path, 0) >= _PER_FILE:
                continue
            per_file[path] = per_file.get(path, 0) + 1
            hits.append(SearchHit(path, start, end, title, section, page, round(-rank, 4), text))
            if len(hits) == limit:
                break
        return hits

    def problems(self) -> list[IndexProblem]:
        """The files the last updates skipped and why (until they change), by path."""
        rows = self._connections.get().execute(
            "SELECT path, note FROM files WHERE status = 'error' ORDER BY path"
        )
        return [IndexProblem(path, note) for path, note in rows]

    def skipped_reason(self, path: str, size: int, mtime_ns: int) -> str | None:
        """Why the file at ``path`` was skipped, if it was and has not changed since."""
        row = (
            self._connections.get()
            .execute(
                "SELECT note FROM files WHERE path = ? AND status = 'error' AND size = ? "
                "AND mtime_ns = ?",
                (path, size, mtime_ns),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    def documents(self, folder: str = "") -> list[DocumentInfo]:
        """The indexed documents under ``folder`` (workspace-relative; empty for all), by path."""
        prefix = folder.strip("/")
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
        rows = self._connections.get().execute(
            "SELECT path, size, title, format, lines FROM files WHERE status = 'ok' "
            "AND (? = '' OR path LIKE ? ESCAPE '\\') ORDER BY path",
            (prefix, pattern),
        )
        return [DocumentInfo(*row) for row in rows]


@dataclass(slots=True)
class _Run:
    """One update: what it was given, and what it learns from file to file."""

    progress: Callable[[IndexProgress], None] | None
    cancel: Stop | None
    reader: DocumentReader
    writes: _Writes
    known: dict[str, _Known] = field(default_factory=dict)
    missing: dict[str, _Known] = field(default_factory=dict)
    missing_by_digest: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {"added": 0, "updated": 0, "renamed": 0})
    unreadable: list[IndexProblem] = field(default_factory=list)


class _Writes:
    """An update's writes, in short transactions.

    The writes of files read in this process (text, Markdown, HTML: parsed in time proportional to
    their size) share a transaction for at most :data:`_GROUP_SECONDS`, which keeps indexing
    thousands of notes fast. A PDF is committed on its own, and whatever is pending is committed
    before it goes to the worker, so no transaction is ever open while a file that may never finish
    is read, and Stop or a crash loses at most that fraction of a second of work.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._since: float | None = None

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """One file's writes: in the open transaction, or a new one."""
        if self._since is None:
            self._db.execute("BEGIN IMMEDIATE")
            self._since = time.monotonic()
        try:
            yield
        except BaseException:
            self._since = None
            self._db.execute("ROLLBACK")
            raise
        if time.monotonic() - self._since >= _GROUP_SECONDS:
            self.commit()

    def commit(self) -> None:
        if self._since is not None:
            self._since = None
            self._db.execute("COMMIT")


def _text(run: _Run, path: str, data: bytes) -> Extracted:
    """The file's text, read where :class:`DocumentReader` decides. Raises :class:`DocumentError`
    saying why not, also when a parser in this process fails in a way of its own: no document may
    stop the rest. (The worker already answers so for a PDF; anything else it raises is no fault
    of the file's.)"""
    try:
        return run.reader.read(path, data, run.cancel)
    except (DocumentError, Cancelled):
        raise
    except Exception as error:
        if run.reader.isolated(path):
            raise
        raise DocumentError(
            f"cannot be turned into text ({type(error).__name__}: {error})"
        ) from error


def _changed(entry: FileEntry, known: _Known | None) -> bool:
    return known is None or known.size != entry.size or known.mtime_ns != entry.mtime_ns


def fts_query(query: str) -> str | None:
    """``query`` as a safe FTS5 expression: its words (and "phrases") joined with OR.

    OR lets BM25 do the ranking — passages with more of the rarer words come first — so a long
    natural-language question still finds passages that share only a few of its words. Common
    function words are dropped unless nothing else is left.
    """
    phrases = [phrase for phrase in re.findall(r'"([^"]+)"', query) if re.search(r"\w", phrase)]
    words = re.findall(r"\w+", re.sub(r'"[^"]+"', " ", query).lower())
    content = [word for word in words if word not in _STOPWORDS] or words
    terms = list(dict.fromkeys([*phrases, *content]))[:_MAX_QUERY_TERMS]
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
