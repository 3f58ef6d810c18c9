"""The index database: its schema, and one SQLite connection per thread.

The index is a cache of the workspace, so it lives in Imprint's data directory (never inside the
person's folder), one database per workspace, and a database that is corrupt or from an older
extractor or schema is simply rebuilt: that is how the schema migrates (version 2 added each
file's date and superseded reason, the ``notext`` status, and each passage's named place). WAL
mode lets the loop thread search while an update writes.

SQLite connections must not be used by two threads at once. Each thread gets its own (created on
first use; ``check_same_thread=False`` only so that :meth:`Connections.close_all` may close them
from the thread that owns the index); none is ever shared.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import threading
from pathlib import Path

from imprint_desktop.core import paths
from imprint_desktop.core.errors import WorkspaceIndexError
from imprint_desktop.core.workspace import vectors
from imprint_desktop.core.workspace.extract import EXTRACTOR_VERSION

SCHEMA_VERSION = 2
_VERSION = f"{SCHEMA_VERSION}.{EXTRACTOR_VERSION}"

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
    dated TEXT NOT NULL DEFAULT '',       -- stated | modified
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
CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
END;
CREATE TRIGGER passages_au AFTER UPDATE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
    INSERT INTO passages_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
"""


def index_path_for(root: Path) -> Path:
    """Where the index of the workspace at ``root`` lives: one folder per resolved path."""
    resolved = root.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", resolved.name)[:40].strip("-") or "workspace"
    return paths.data_dir() / "workspaces" / f"{name}-{digest}" / "index.sqlite3"


class Connections:
    """One connection per thread to the database at ``path``, created with the schema if needed."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        self._root = root
        self._lock = threading.Lock()
        self._by_thread: dict[int, sqlite3.Connection] = {}
        self._closed = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._prepare()
        except (OSError, sqlite3.Error) as error:
            raise WorkspaceIndexError(f"The index at {path} cannot be created: {error}") from error

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

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            connections = list(self._by_thread.values())
            self._by_thread.clear()
        for connection in connections:
            connection.close()

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=30, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA temp_store = MEMORY")
        return connection

    def _prepare(self) -> None:
        """Create the schema, or rebuild it when the file is corrupt or from another version."""
        try:
            self._prepare_once()
        except sqlite3.DatabaseError:
            # An index is a cache: a damaged one is thrown away and built again.
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").unlink()
            self._prepare_once()

    def _prepare_once(self) -> None:
        connection = self._open()
        try:
            version = None
            with contextlib.suppress(sqlite3.OperationalError):
                row = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
                version = row[0] if row else None
            if version == _VERSION:
                _migrate(connection, rebuilt=False)
                return
            for table in ("passages_fts", "passages", "files", "meta"):
                connection.execute(f"DROP TABLE IF EXISTS {table}")
            connection.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
            connection.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?), ('root', ?)",
                (_VERSION, str(self._root)),
            )
            _migrate(connection, rebuilt=True)
        finally:
            connection.close()


def _migrate(connection: sqlite3.Connection, *, rebuilt: bool) -> None:
    """Add the tables kept beside the passages to an index of this version, new (``rebuilt``,
    when what it held before is thrown away too) or not (when it keeps its passages): the
    passages' vectors (:mod:`.vectors`)."""
    if rebuilt:
        connection.execute("DROP TABLE IF EXISTS passage_vectors")
    connection.executescript(f"BEGIN IMMEDIATE; {vectors.SCHEMA} COMMIT;")
