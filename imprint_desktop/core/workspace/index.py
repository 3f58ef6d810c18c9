"""The full-text index of a workspace: incremental updates and BM25-ranked passage search.

:class:`WorkspaceIndex` is what the rest of the app holds: it opens the index database of a folder
(:mod:`.database`), brings it up to date (:mod:`.update`, which reads through :mod:`.reader` and
writes through :mod:`.records`) and answers questions about it: the best passages for a query
(:mod:`.search`), the indexed documents, the files skipped and why (:mod:`.records`).

Any thread may search; updates are serialised by a lock, and each thread has its own connection.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from imprint_desktop.core.errors import WorkspaceError, WorkspaceIndexError
from imprint_desktop.core.workspace import records
from imprint_desktop.core.workspace.database import Connections, index_path_for
from imprint_desktop.core.workspace.isolation import DEFAULT_LIMITS, ExtractionLimits, Stop
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.core.workspace.records import DocumentInfo, IndexProblem
from imprint_desktop.core.workspace.search import SearchHit, best_passages, fts_query
from imprint_desktop.core.workspace.update import IndexProgress, IndexReport, IndexUpdate

#: The settings' default (``workspace.max_file_mb``), for an index opened without settings (see
#: :data:`~.workspace.DEFAULT_NOTES_FOLDER`).
DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024


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
        """Close the database. An update still running in another thread (one whose awaiting task
        was cancelled, told to stop) ends first: its connection is never closed under it."""
        with self._update_lock:
            self._connections.close_all()

    def update(
        self,
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: Stop | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the folder; see :mod:`.update`."""
        started = time.perf_counter()
        with self._update_lock, DocumentReader(self.extraction) as reader:
            try:
                update = IndexUpdate(
                    self._connections.get(),
                    self.root,
                    max_file_bytes=self.max_file_bytes,
                    reader=reader,
                    progress=progress,
                    cancel=cancel,
                )
                return update.run(started)
            except sqlite3.Error as error:
                raise WorkspaceIndexError(
                    f"The workspace index cannot be updated: {error}"
                ) from error

    def search(self, query: str, limit: int = 8) -> list[SearchHit]:
        """The best passages for ``query``, best first; empty when nothing matches."""
        match = fts_query(query)
        if match is None or limit < 1:
            return []
        try:
            return best_passages(self._connections.get(), match, limit)
        except sqlite3.Error as error:
            raise WorkspaceIndexError(f"The workspace index cannot be searched: {error}") from error

    def problems(self) -> list[IndexProblem]:
        """The files the last updates skipped and why (until they change), by path."""
        return records.problems(self._connections.get())

    def skipped_reason(self, path: str, size: int, mtime_ns: int) -> str | None:
        """Why the file at ``path`` was skipped, if it was and has not changed since."""
        return records.skipped_reason(self._connections.get(), path, size, mtime_ns)

    def currency(self, path: str) -> str:
        """How the indexed document at ``path`` stands: "dated 2026-02-10; looks superseded: …"
        (empty when it is not indexed)."""
        return records.currency_of(self._connections.get(), path)

    def documents(self, folder: str = "") -> list[DocumentInfo]:
        """The indexed documents under ``folder`` (workspace-relative; empty for all), by path."""
        return records.documents(self._connections.get(), folder)
