"""The index database: its schema, who may write it, and one SQLite connection per thread.

The index is a cache of the workspace, so it lives in Imprint's data directory (never inside the
person's folder), one database per workspace, and a database that is corrupt or from an older
extractor or schema is simply rebuilt: that is how the schema migrates (version 2 added each
file's date and superseded reason, the ``notext`` status, and each passage's named place; version
3 the passages' words by their stems, ``passages_stems``).

Several processes may hold one index at once (the window, ``imprint workspace index``, ``search``
and ``ask``), so who writes it is settled across processes by two lock files beside it
(:class:`WriterLock`, through ``filelock``: ``flock`` on POSIX, ``msvcrt.locking`` on Windows):

* ``index.sqlite3.lock`` — held by an update of the files (:mod:`.update`) for the whole of it,
  and by whoever creates, migrates or rebuilds the schema;
* ``index.sqlite3.embed.lock`` — held by the embedding of passages (:func:`.vectors.fill`) for the
  whole of it, and also by whoever creates or rebuilds the schema (taken second, always).

So two updates, or two embeddings, never run at once, and an update and an embedding (which
write different rows) run side by side, each in short transactions (SQLite's own write lock takes
them in turn; :data:`BUSY_SECONDS` bounds that wait). A reader takes no lock: in WAL mode it sees
the last committed state, whatever a writer does meanwhile, so a search never waits on an update,
and opening an index that is up to date only reads.

An index is thrown away and built again only when SQLite says the file is damaged
(``SQLITE_CORRUPT``, ``SQLITE_NOTADB``), and only under both locks, after looking again: a busy or
locked database (``SQLITE_BUSY``, ``SQLITE_LOCKED``), a full disk or a read-only file is an error
(:class:`~imprint_desktop.core.errors.WorkspaceIndexError`), never a reason to delete the index
another process is writing. A process whose connections were opened on a file since replaced
opens new ones when it next writes (:meth:`Connections.writing`).

SQLite connections must not be used by two threads at once. Each thread gets its own (created on
first use; ``check_same_thread=False`` only so that :meth:`Connections.close_all` may close them
from the thread that owns the index); none is ever shared.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock

from imprint_desktop.core import paths
from imprint_desktop.core.errors import WorkspaceIndexError
from imprint_desktop.core.workspace import vectors
from imprint_desktop.core.workspace.extract import EXTRACTOR_VERSION
from imprint_desktop.core.workspace.files import name_text
from imprint_desktop.core.workspace.isolation import Stop, is_cancelled

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
_VERSION = f"{SCHEMA_VERSION}.{EXTRACTOR_VERSION}"

#: The longest a statement waits for another connection's write transaction (SQLite's busy
#: timeout) before it fails with "database is locked". Imprint's writers take turns by their locks
#: first and keep each transaction short (a quarter of a second, a batch of vectors), so this is
#: waited in full only on a program outside Imprint that holds the database.
BUSY_SECONDS = 30.0
#: How often a writer that may be stopped (or may find it need not wait) tries a lock again.
POLL_SECONDS = 0.05
#: The tables of every schema this index has had (dropped when it is built again).
_TABLES = ("passage_vectors", "passages_stems", "passages_fts", "passages", "files", "meta")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    digest TEXT NOT NULL,
    format TEXT NOT NULL,
    title TEXT NOT NULL,
    lines INTEGER NOT NULL,
    status TEXT NOT NULL,       -- ok | notext | binary | error
    note TEXT NOT NULL,         -- why skipped, or what of an ok file could not be read
    date TEXT NOT NULL DEFAULT '',        -- ISO; stated in the document, else modified time
    dated TEXT NOT NULL DEFAULT '',       -- how it was found: dating.How
    superseded TEXT NOT NULL DEFAULT ''   -- why it looks superseded; empty when current
);
CREATE INDEX files_digest ON files (digest);
CREATE TABLE passages (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    page INTEGER,
    section TEXT NOT NULL,
    heading TEXT NOT NULL,      -- document title and section: ranked a little above body text
    text TEXT NOT NULL,
    place TEXT NOT NULL DEFAULT ''  -- "slide 4", "sheet Revenue, rows 2-9"; empty without places
);
CREATE INDEX passages_file ON passages (file_id);
CREATE VIRTUAL TABLE passages_fts USING fts5 (
    text, heading, content='passages', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO passages_fts (passages_fts, rank) VALUES ('rank', 'bm25(1.0, 2.0)');
-- The same words by their stems ("russets", "picked" as "russet", "pick"): English endings
-- (FTS5's Porter stemmer), searched beside the exact words (see keyword_rank).
CREATE VIRTUAL TABLE passages_stems USING fts5 (
    text, heading, content='passages', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO passages_stems (passages_stems, rank) VALUES ('rank', 'bm25(1.0, 2.0)');
CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
    INSERT INTO passages_stems (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
    INSERT INTO passages_stems (passages_stems, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
END;
CREATE TRIGGER passages_au AFTER UPDATE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
    INSERT INTO passages_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
    INSERT INTO passages_stems (passages_stems, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
    INSERT INTO passages_stems (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
"""


def index_path_for(root: Path) -> Path:
    """Where the index of the workspace at ``root`` lives: one folder per resolved path."""
    resolved = root.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", resolved.name)[:40].strip("-") or "workspace"
    return paths.data_dir() / "workspaces" / f"{name}-{digest}" / "index.sqlite3"


class WriterLock:
    """One writer at a time across processes and threads: an exclusive lock on the file at ``path``.

    Each :meth:`held` opens the file anew, so two holders in one process exclude each other as two
    processes do. The operating system releases the lock when its process ends, however it ends:
    a crash never leaves an index locked. The file is kept (its content means nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def held(
        self,
        *,
        wait: bool = True,
        cancel: Stop | None = None,
        waiting: Callable[[], None] | None = None,
        needless: Callable[[], bool] | None = None,
    ) -> Iterator[bool]:
        """Hold the lock for the ``with`` block, which is given True; or False, without it, when
        another holder has it and this one did not ``wait``, was stopped (``cancel``) while
        waiting, or found while waiting that it need not wait any longer (``needless``, polled).
        ``waiting`` is called once, when this holder starts to wait."""
        lock = filelock.FileLock(self.path, timeout=-1)
        try:
            lock.acquire(blocking=False)
        except filelock.Timeout:
            if not wait:
                yield False
                return
            if waiting is not None:
                waiting()
            if not self._wait(lock, cancel, needless):
                yield False
                return
        try:
            yield True
        finally:
            lock.release()

    @staticmethod
    def _wait(
        lock: filelock.FileLock, cancel: Stop | None, needless: Callable[[], bool] | None
    ) -> bool:
        if cancel is None and needless is None:
            lock.acquire(poll_interval=POLL_SECONDS)
            return True
        while not is_cancelled(cancel):
            if needless is not None and needless():
                return False
            try:
                lock.acquire(timeout=POLL_SECONDS, poll_interval=POLL_SECONDS / 5)
            except filelock.Timeout:
                continue
            return True
        return False


class _State(enum.Enum):
    """How the database file stands, read without writing."""

    CURRENT = "current"
    VECTORS = "vectors"  # this version's tables, the vectors' from before (migrated in place)
    STALE = "stale"  # new, or another version's: built again
    CORRUPT = "corrupt"  # damaged: deleted and built again


class Connections:
    """One connection per thread to the database at ``path``, created with the schema if needed,
    and the two locks its writers take (see the module's docstring)."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        self._root = root
        #: Held by an update of the files, and with :attr:`embedding` to make the schema.
        self.updates = WriterLock(path.with_name(f"{path.name}.lock"))
        #: Held by the embedding of passages.
        self.embedding = WriterLock(path.with_name(f"{path.name}.embed.lock"))
        self._lock = threading.Lock()
        self._by_thread: dict[int, sqlite3.Connection] = {}
        self._retired: list[sqlite3.Connection] = []
        self._closed = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._prepare()
            self._identity = _identity(path)
        except (OSError, sqlite3.Error) as error:
            raise WorkspaceIndexError(
                f"The index at {path} cannot be opened: {explained(error)}"
            ) from error

    def get(self) -> sqlite3.Connection:
        """This thread's connection."""
        ident = threading.get_ident()
        with self._lock:
            if self._closed:
                raise WorkspaceIndexError("The workspace index has been closed.")
            connection = self._by_thread.get(ident)
            if connection is None:
                connection = self._open()
                self._by_thread[ident] = connection
            return connection

    @contextlib.contextmanager
    def writing(
        self,
        lock: WriterLock,
        *,
        wait: bool = True,
        cancel: Stop | None = None,
        waiting: Callable[[], None] | None = None,
    ) -> Iterator[bool]:
        """Hold ``lock`` (:attr:`updates` or :attr:`embedding`) as :meth:`WriterLock.held` does;
        once held, connections to a file another process has since replaced (found damaged and
        built again) are left for new ones, so nothing is written into a deleted file."""
        with lock.held(wait=wait, cancel=cancel, waiting=waiting) as held:
            if held:
                self._renew_if_replaced()
            yield held

    def check_damage(self, error: sqlite3.Error) -> None:
        """After ``error``, raised while the index was read or written: when SQLite said the file
        is damaged, check all of it (``PRAGMA quick_check``) under both locks, and build it again
        if the check fails too. Call it holding neither lock."""
        if not corrupt(error):
            return
        try:
            with self.updates.held(), self.embedding.held():
                self._prepare_held(check=True)
            self._renew_if_replaced()
        except (OSError, sqlite3.Error):
            log.warning("the index at %s could not be checked", self.path, exc_info=True)

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            connections = [*self._by_thread.values(), *self._retired]
            self._by_thread.clear()
            self._retired.clear()
        for connection in connections:
            connection.close()

    def _renew_if_replaced(self) -> None:
        identity = _identity(self.path)
        with self._lock:
            if identity == self._identity:
                return
            log.info("the index at %s was built again by another process", self.path)
            self._identity = identity
            # Another thread may be reading through its old connection: it is closed with the rest.
            self._retired.extend(self._by_thread.values())
            self._by_thread.clear()

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            _write_ahead(connection)
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA temp_store = MEMORY")
        except BaseException:
            connection.close()
            raise
        return connection

    def _prepare(self) -> None:
        """Make the schema current: nothing to do (and nothing written) when it is; otherwise under
        both locks, looking again once they are held, and waiting no longer than it takes another
        process to make it current."""
        if self._state() is _State.CURRENT:
            return

        def needless() -> bool:
            return self._state() is _State.CURRENT

        with self.updates.held(needless=needless) as updating:
            if not updating:
                return
            with self.embedding.held(needless=needless) as embedding:
                if embedding:
                    self._prepare_held()

    def _state(self) -> _State:
        try:
            connection = self._open()
        except sqlite3.DatabaseError as error:
            if corrupt(error):
                return _State.CORRUPT
            raise
        try:
            if (
                connection.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
                ).fetchone()
                is None
            ):
                return _State.STALE
            row = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if row is None or row[0] != _VERSION:
                return _State.STALE
            return _State.CURRENT if vectors.schema_current(connection) else _State.VECTORS
        except sqlite3.DatabaseError as error:
            if corrupt(error):
                return _State.CORRUPT
            raise
        finally:
            connection.close()

    def _prepare_held(self, *, check: bool = False) -> None:
        state = self._state()
        if state is _State.CURRENT and check and not self._checks():
            state = _State.CORRUPT
        if state is _State.CURRENT:
            return
        if state is _State.CORRUPT:
            # An index is a cache: a damaged one is thrown away and built again.
            log.warning("The index at %s is damaged; it is built again.", self.path)
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").unlink()
        connection = self._open()
        try:
            if state is _State.VECTORS:
                connection.executescript(f"BEGIN IMMEDIATE; {vectors.SCHEMA} COMMIT;")
                return
            # One transaction: a reader sees no index, or the whole of this one.
            drops = "".join(f"DROP TABLE IF EXISTS {table};" for table in _TABLES)
            connection.executescript(f"BEGIN IMMEDIATE; {drops} {_SCHEMA} {vectors.SCHEMA}")
            connection.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?), ('root', ?)",
                (_VERSION, name_text(str(self._root))),  # a name SQLite can hold
            )
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()

    def _checks(self) -> bool:
        """Whether every page of the database passes SQLite's ``quick_check``."""
        try:
            connection = self._open()
            try:
                return connection.execute("PRAGMA quick_check").fetchall() == [("ok",)]
            finally:
                connection.close()
        except sqlite3.DatabaseError as error:
            if corrupt(error):
                return False
            raise


def corrupt(error: sqlite3.Error) -> bool:
    """Whether SQLite said the file is damaged or not a database (not busy, locked, full, …)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _write_ahead(connection: sqlite3.Connection) -> None:
    """Put the database in WAL mode (a no-op once it is). SQLite answers "database is locked" at
    once, without its busy handler, when another process is making the same new file WAL at the
    same moment (two ``imprint workspace index`` started together on a new folder): asked again
    every :data:`POLL_SECONDS` for up to :data:`BUSY_SECONDS`."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as error:
            code = getattr(error, "sqlite_errorcode", None) or 0
            if code & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(POLL_SECONDS)
        else:
            return


def explained(error: sqlite3.Error | OSError) -> str:
    """``error`` in a sentence a person can act on: a database another program holds says so."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return (
            f"another program has held it for writing for more than {BUSY_SECONDS:g} s "
            f"({error}); try again once it is done"
        )
    if isinstance(error, sqlite3.Error) and corrupt(error):
        return f"{error}; the damaged index is built again"
    return str(error)


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino
