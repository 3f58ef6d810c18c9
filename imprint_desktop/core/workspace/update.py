"""One update of the index: what changed on disk since the last, read, parsed and committed.

An update compares what is on disk with what the index remembers, by size and modification time
only, so an unchanged folder costs one directory walk and no file reads. A file whose size or
time changed is read and hashed: same content (a ``touch``, a copy back) only refreshes its times;
content that vanished from another path is a rename and keeps its passages; anything else is
extracted again.

Work is committed as it goes — quick files in transactions of at most a quarter of a second, and
everything pending before each PDF or large file — so it is kept whatever happens next, and no
transaction is ever open while a PDF or a large file is read or parsed; an update that finds
nothing changed writes nothing. PDFs are parsed in a worker process under a time and memory limit
(:mod:`.reader`, :mod:`.isolation`). A file that cannot be read or parsed, or that hits a limit,
is recorded as skipped with the reason — reported by every update, listed by
:meth:`~.index.WorkspaceIndex.problems` — and tried again only once it changes (size or time, then
content). Stop (a cancel token or event) ends an update at once, even in the middle of a PDF,
keeping what was committed. Files are read with :func:`~.files.read_inside`, which follows no
link. How each file is written is :mod:`.records`'.

One update of an index runs at a time, across processes: its caller holds the index's update lock
(:attr:`.database.Connections.updates`) throughout, and says so while it waits for it
(:attr:`IndexProgress.waiting`). Readers see the last commit meanwhile.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from imprint_desktop.core.errors import Cancelled, DocumentError
from imprint_desktop.core.workspace import records
from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES, Extracted
from imprint_desktop.core.workspace.files import FileEntry, read_inside, scan, scan_changed
from imprint_desktop.core.workspace.isolation import PdfReaderUnavailableError, Stop, is_cancelled
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.core.workspace.records import IndexProblem, Known

#: The longest the writes of quick files share one transaction (see :class:`_Writes`).
_GROUP_SECONDS = 0.25
#: A file larger than this is read and parsed with no transaction open, as a PDF is.
_QUICK_BYTES = 1024 * 1024

#: What every view (the terminal, the window) says while an update, or the embedding after it,
#: waits for another process's to end.
WAITING = "waiting for another Imprint to finish indexing"
#: What a search that did not wait for another process's update says of what it searched.
NOT_WAITED = "another Imprint is indexing this folder: the index is searched as it last stood"


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """How far an update is: ``done`` of ``total`` changed files, ``path`` the one being read.
    With ``waiting``, it has not started: another process is updating the index (:data:`WAITING`).
    """

    done: int
    total: int
    path: str
    waiting: bool = False


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What an update did. ``problems`` lists every file the index currently cannot fully use:
    skipped, read without text, or read only in part (:class:`~.records.IndexProblem`)."""

    documents: int
    added: int
    updated: int
    renamed: int
    removed: int
    unchanged: int
    problems: tuple[IndexProblem, ...]
    seconds: float
    cancelled: bool
    #: Passages with a vector, and why there are none when the embedder cannot be loaded
    #: (filled in by :meth:`~.index.WorkspaceIndex.embed`).
    embedded: int = 0
    embedder_problem: str = ""
    #: Another process was updating (or embedding) the index and this update, told not to wait,
    #: left it to that one: the index is as it last committed (:data:`NOT_WAITED`).
    busy: bool = False


class IndexUpdate:
    """One pass over the folder at ``root``: what it was given, and what it learns from file to
    file. :meth:`run` it once, on the thread whose connection ``db`` is."""

    def __init__(
        self,
        db: sqlite3.Connection,
        root: Path,
        *,
        max_file_bytes: int,
        reader: DocumentReader,
        progress: Callable[[IndexProgress], None] | None,
        cancel: Stop | None,
        paths: Collection[str] | None = None,
    ) -> None:
        self._db = db
        self._paths = None if paths is None else frozenset(paths)
        self._parents: set[str] | None = None  # the folders the changed paths are in (_near)
        self._root = root
        self._max_file_bytes = max_file_bytes
        self._reader = reader
        self._progress = progress
        self._cancel = cancel
        self._writes = _Writes(db)
        self._known: dict[str, Known] = {}
        self._missing: dict[str, Known] = {}
        self._missing_by_digest: dict[str, str] = {}
        self._counts = {"added": 0, "updated": 0, "renamed": 0}
        self._unreadable: list[IndexProblem] = []
        self._again: set[str] = set()

    def run(self, started: float) -> IndexReport:
        """Bring the index up to date; ``started`` is when the caller asked (``perf_counter``)."""
        db = self._db
        stamps = records.file_stamps(db)
        if self._paths is None:
            found = scan(
                self._root, max_file_bytes=self._max_file_bytes, skip_suffixes=BINARY_SUFFIXES
            )
        else:  # only what is at or under the paths that changed; the rest stays as it is
            changed = self._paths
            stamps = {path: stamp for path, stamp in stamps.items() if _under(path, changed)}
            found = scan_changed(
                self._root,
                changed,
                max_file_bytes=self._max_file_bytes,
                skip_suffixes=BINARY_SUFFIXES,
            )
        entries: list[FileEntry] = []
        for entry in found:
            if entry.skipped:  # never read (too large): reported with the reason scan gives
                self._unreadable.append(IndexProblem(entry.path, entry.skipped))
            else:
                entries.append(entry)
        present = {entry.path for entry in entries}
        missing = [path for path in stamps if path not in present]
        # A scan read without OCR is read again once OCR is on and tesseract is there.
        waiting = records.waiting_for_ocr(db)
        self._again = waiting if waiting and self._reader.ocr_ready else set()
        todo = [
            entry
            for entry in entries
            if entry.path in self._again or (entry.size, entry.mtime_ns) != stamps.get(entry.path)
        ]
        # What the index remembers is needed only of the files that changed or went away.
        self._known = records.known_files(db, [*(entry.path for entry in todo), *missing])
        self._missing = {path: self._known[path] for path in missing}
        self._missing_by_digest = {
            row.digest: path for path, row in self._missing.items() if row.digest
        }
        cancelled = False
        try:
            for done, scanned in enumerate(todo):
                if self._progress is not None:
                    self._progress(IndexProgress(done, len(todo), scanned.path))
                if is_cancelled(self._cancel) or not self._index_file(scanned):
                    cancelled = True
                    break
            if todo or self._missing:  # (nothing changed: nothing written, no write lock taken)
                with self._writes.group():
                    for row in self._missing.values():
                        records.remove(db, row)
                    records.mark_superseded(db, None if self._paths is None else self._near)
        finally:
            self._writes.commit()
        if self._progress is not None:
            self._progress(IndexProgress(len(todo), len(todo), ""))
        problems = sorted(
            [*self._unreadable, *records.problems(db)], key=lambda problem: problem.path
        )
        return IndexReport(
            documents=records.document_count(db),
            added=self._counts["added"],
            updated=self._counts["updated"],
            renamed=self._counts["renamed"],
            removed=len(self._missing),
            unchanged=len(entries) - len(todo),
            problems=tuple(problems),
            seconds=time.perf_counter() - started,
            cancelled=cancelled,
        )

    def _near(self, path: str) -> bool:
        """Is ``path`` in a folder where something changed (its siblings' standing may too)?"""
        changed = self._paths or frozenset()
        if self._parents is None:
            self._parents = {item.rpartition("/")[0] for item in changed} | changed
        return path[: max(path.rfind("/"), 0)] in self._parents or _under(path, changed)

    def _index_file(self, scanned: FileEntry) -> bool:
        """Read, extract and commit one changed file; False when Stop interrupted it."""
        db = self._db
        isolated = self._reader.isolated(scanned.path)
        if isolated or scanned.size > _QUICK_BYTES:
            self._writes.commit()  # nothing waits on a file that may be slow to read or parse
        try:
            data, info = read_inside(self._root, scanned.path, max_bytes=self._max_file_bytes)
        except (DocumentError, OSError) as error:
            reason = str(error) if isinstance(error, DocumentError) else error.strerror
            self._unreadable.append(IndexProblem(scanned.path, f"cannot be read: {reason}"))
            return True
        entry = FileEntry(scanned.path, info.st_size, info.st_mtime_ns)  # what was read
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        old = self._known.get(entry.path)
        if old is not None and old.digest == digest and entry.path not in self._again:
            # touched, or changed and changed back
            with self._writes.group():
                records.touch(db, old, entry)
            return True
        if old is None and digest in self._missing_by_digest:
            old_path = self._missing_by_digest.pop(digest)
            with self._writes.group():
                records.rename(db, old_path, self._missing.pop(old_path), entry)
            self._counts["renamed"] += 1
            return True
        if len(data) > _QUICK_BYTES:
            self._writes.commit()  # it grew since the scan
        try:
            document: Extracted | DocumentError = self._text(entry.path, data)
        except Cancelled:
            return False
        except PdfReaderUnavailableError as error:  # not the file's fault: tried again next time
            self._unreadable.append(IndexProblem(entry.path, str(error)))
            return True
        except DocumentError as error:
            document = error
        with self._writes.group():
            stored = records.store(db, entry, document, digest, old, cancel=self._cancel)
        if isolated:
            self._writes.commit()  # a PDF's text is worth its own transaction
        if stored:
            self._counts["updated" if old else "added"] += 1
        return stored  # False: Stop came while its passages were written, and none was kept

    def _text(self, path: str, data: bytes) -> Extracted:
        """The file's text, read where :class:`DocumentReader` decides. Raises
        :class:`DocumentError` saying why not, also when a parser in this process fails in a way of
        its own: no document may stop the rest. (The worker already answers so for a PDF;
        anything else it raises is no fault of the file's.)"""
        try:
            return self._reader.read(path, data, self._cancel)
        except (DocumentError, Cancelled):
            raise
        except Exception as error:
            if self._reader.isolated(path):
                raise
            raise DocumentError(
                f"cannot be turned into text ({type(error).__name__}: {error})"
            ) from error


def _under(path: str, changed: frozenset[str]) -> bool:
    """Is ``path`` one of ``changed``, or inside a folder that is?"""
    if path in changed:
        return True
    cut = path.rfind("/")
    while cut > 0:
        if path[:cut] in changed:
            return True
        cut = path.rfind("/", 0, cut)
    return False


class _Writes:
    """An update's writes, in short transactions.

    The writes of small files read in this process (text, Markdown, HTML up to
    :data:`_QUICK_BYTES`: parsed in time proportional to their size) share a transaction for at
    most :data:`_GROUP_SECONDS`, which keeps indexing thousands of notes fast. A PDF is committed
    on its own, and whatever is pending is committed before it goes to the worker and before a
    large file is read, so no transaction is ever open while a file that may be slow or never
    finish is read: the embedding, which writes between them, waits a fraction of a second at
    most, and Stop or a crash loses at most that fraction of a second of work.
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
