"""The index of a workspace: incremental updates, and passage search by words and by meaning.

:class:`WorkspaceIndex` is what the rest of the app holds: it opens the index database of a folder
(:mod:`.database`), brings it up to date (:mod:`.update`, which reads through :mod:`.reader` and
writes through :mod:`.records`), gives the passages vectors (:mod:`.vectors`, with the embedder
``workspace.embedder`` names: :mod:`.embedding`) and answers questions about it: the best passages
for a query (:mod:`.search`), the indexed documents, the files skipped and why (:mod:`.records`).

Any thread, and any process, may search; updates are serialised by a lock, and so is embedding,
by another: the window embeds in the background after an update (:meth:`WorkspaceIndex.embed`)
while the next update and every search go on. Each lock is held across processes too (the files
beside the database: :mod:`.database`), so a second process's update or embedding waits for the
first's (saying so through its progress) or, told not to wait, leaves the work to it; a search
never waits, and reads the last committed state. Each thread has its own connection.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from imprint_desktop.core.errors import EmbedderError, WorkspaceError, WorkspaceIndexError
from imprint_desktop.core.workspace import records, vector_file, vectors
from imprint_desktop.core.workspace.database import Connections, explained, index_path_for
from imprint_desktop.core.workspace.embedding import Embedder, embedder_for
from imprint_desktop.core.workspace.isolation import (
    DEFAULT_LIMITS,
    ExtractionLimits,
    Stop,
    is_cancelled,
)
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.core.workspace.records import DocumentInfo, IndexProblem
from imprint_desktop.core.workspace.search import (
    SearchHit,
    SearchMode,
    best_passages,
    candidates,
    fts_terms,
    fuse,
    keyword_ranking,
    passages_by_score,
    quotes_words,
)
from imprint_desktop.core.workspace.update import IndexProgress, IndexReport, IndexUpdate
from imprint_desktop.core.workspace.vectors import EmbedProgress, VectorSearch

log = logging.getLogger(__name__)

#: A search by meaning keeps the passages at least this share as near to the query as the
#: nearest one (and above the embedder's own floor): a short query that one passage matches well
#: does not bring along the passages that share a stray token with it. Measured by
#: ``bench/bench_workspace.py``: recall unchanged.
NEAREST_SHARE = 0.5

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
        embedder: Path | None = None,
    ) -> None:
        self.root = root.expanduser().resolve()
        if not self.root.is_dir():
            raise WorkspaceError(f"The workspace folder {root} does not exist or is not a folder.")
        self.max_file_bytes = max_file_bytes
        self.extraction = extraction
        self.db_path = db_path or index_path_for(self.root)
        self._connections = Connections(self.db_path, self.root)
        self._update_lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._embedder_model = embedder
        self._embedder: Embedder | EmbedderError | None = None
        self._embedder_made = threading.Lock()
        self._vectors = VectorSearch(vector_file.path_for(self.db_path))

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database. An update still running in another thread (one whose awaiting task
        was cancelled, told to stop) ends first: its connection is never closed under it."""
        with self._update_lock, self._embed_lock:
            self._connections.close_all()
        embedder, self._embedder = self._embedder, None
        close = getattr(embedder, "close", None)
        if close is not None:
            close()

    def update(
        self,
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: Stop | None = None,
        embed: bool = True,
        embed_progress: Callable[[EmbedProgress], None] | None = None,
        wait: bool = True,
    ) -> IndexReport:
        """Bring the index up to date with the folder (see :mod:`.update`), and then, with
        ``embed``, give every passage its vector (:meth:`embed`).

        While another process updates the index, this one waits for it to finish (``progress``
        is told: :attr:`IndexProgress.waiting`; ``cancel`` ends the wait) and then updates what is
        left; without ``wait``, it leaves the work to that one (the report says ``busy``)."""
        report = self._update_files(progress, cancel, wait)
        if not embed or report.cancelled or report.busy:
            return report
        return self.embed(report, progress=embed_progress, cancel=cancel, wait=wait)

    def embed(
        self,
        report: IndexReport | None = None,
        *,
        progress: Callable[[EmbedProgress], None] | None = None,
        cancel: Stop | None = None,
        wait: bool = True,
    ) -> IndexReport:
        """Give every passage without one a vector from the chosen embedder, a batch at a time
        (see :func:`.vectors.fill`); ``report`` (an update's) is returned with what embedding did.
        An embedder that cannot be loaded leaves search to words, and says why in the report.
        Another process embedding the index is waited for, or without ``wait`` left to it, as
        :meth:`update` does."""
        started = time.perf_counter()

        def waiting() -> None:
            if progress is not None:
                progress(EmbedProgress(0, 0, waiting=True))

        busy, problem = False, ""
        try:
            with (
                self._embed_lock,
                self._connections.writing(
                    self._connections.embedding, wait=wait, cancel=cancel, waiting=waiting
                ) as held,
            ):
                db = self._connections.get()
                if held:
                    try:
                        finished = vectors.fill(
                            db, self.embedder(), progress=progress, cancel=cancel
                        )
                    except EmbedderError as error:
                        finished, problem = True, str(error)
                else:
                    finished, busy = not is_cancelled(cancel), not wait
                embedded, _ = vectors.counts(db)
                documents = records.document_count(db)
        except sqlite3.Error as error:
            self._connections.check_damage(error)
            raise WorkspaceIndexError(
                f"The workspace index cannot be updated: {explained(error)}"
            ) from error
        seconds = time.perf_counter() - started
        if report is None:
            return IndexReport(
                documents=documents,
                added=0,
                updated=0,
                renamed=0,
                removed=0,
                unchanged=0,
                problems=(),
                seconds=seconds,
                cancelled=not finished,
                embedded=embedded,
                embedder_problem=problem,
                busy=busy,
            )
        return dataclasses.replace(
            report,
            seconds=report.seconds + seconds,
            cancelled=not finished,
            embedded=embedded,
            embedder_problem=problem,
            busy=busy,
        )

    def embedder(self) -> Embedder:
        """The embedder ``workspace.embedder`` names, loaded on first use; raises
        :class:`EmbedderError` (every time, without trying again) when it cannot be loaded."""
        with self._embedder_made:
            if self._embedder is None:
                try:
                    self._embedder = embedder_for(self._embedder_model)
                except EmbedderError as error:
                    log.warning("%s Search uses words only.", error)
                    self._embedder = error
            if isinstance(self._embedder, EmbedderError):
                raise self._embedder
            return self._embedder

    def _update_files(
        self, progress: Callable[[IndexProgress], None] | None, cancel: Stop | None, wait: bool
    ) -> IndexReport:
        started = time.perf_counter()

        def waiting() -> None:
            if progress is not None:
                progress(IndexProgress(0, 0, "", waiting=True))

        try:
            with (
                self._update_lock,
                self._connections.writing(
                    self._connections.updates, wait=wait, cancel=cancel, waiting=waiting
                ) as held,
            ):
                if not held:
                    return self._as_it_stands(started, cancelled=wait)
                with DocumentReader(self.extraction) as reader:
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
            self._connections.check_damage(error)
            raise WorkspaceIndexError(
                f"The workspace index cannot be updated: {explained(error)}"
            ) from error

    def _as_it_stands(self, started: float, *, cancelled: bool) -> IndexReport:
        """The report of an update that did not run: stopped while it waited for another
        process's (``cancelled``), or left to that one (``busy``)."""
        db = self._connections.get()
        return IndexReport(
            documents=records.document_count(db),
            added=0,
            updated=0,
            renamed=0,
            removed=0,
            unchanged=0,
            problems=tuple(records.problems(db)),
            seconds=time.perf_counter() - started,
            cancelled=cancelled,
            busy=not cancelled,
        )

    def search(
        self, query: str, limit: int = 8, mode: SearchMode = SearchMode.HYBRID
    ) -> list[SearchHit]:
        """The best passages for ``query``, best first; empty when nothing matches.

        A hybrid search whose embedder cannot be loaded ranks by words alone; a search by meaning
        alone raises :class:`EmbedderError` then. Passages not embedded yet (an update or a new
        embedder still at work) are found by their words meanwhile."""
        if limit < 1:
            return []
        try:
            db = self._connections.get()
            terms = fts_terms(query) if mode is not SearchMode.MEANING else []
            if mode is SearchMode.KEYWORD:
                return best_passages(db, terms, limit)
            count = candidates(limit)
            by_words = keyword_ranking(db, terms, count)
            by_meaning, weight = self._by_meaning(
                db, query, count, required=mode is SearchMode.MEANING
            )
            if mode is SearchMode.HYBRID and quotes_words(query):
                having = set(by_words)
                by_meaning = [passage for passage in by_meaning if passage in having]
            return passages_by_score(db, fuse([by_words, by_meaning], [1.0, weight]), limit)
        except sqlite3.Error as error:
            raise WorkspaceIndexError(
                f"The workspace index cannot be searched: {explained(error)}"
            ) from error

    def _by_meaning(
        self, db: sqlite3.Connection, query: str, count: int, *, required: bool
    ) -> tuple[list[int], float]:
        """The passages nearest ``query``, nearest first, and the weight of that ranking in the
        fusion (the embedder's)."""
        if not query.strip():
            return [], 0.0
        try:
            embedder = self.embedder()
            vector = embedder.embed_query(query)
        except EmbedderError:
            if required:
                raise
            return [], 0.0
        nearest = self._vectors.nearest(db, embedder.name, vector, count) if vector.any() else []
        if not nearest:
            return [], embedder.fusion_weight
        floor = max(embedder.min_similarity, NEAREST_SHARE * nearest[0][1])
        return [passage for passage, score in nearest if score >= floor], embedder.fusion_weight

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
