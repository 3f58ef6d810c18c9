"""The index of a workspace: incremental updates, and passage search by words and by meaning.

:class:`WorkspaceIndex` is what the rest of the app holds: it opens the index database of a folder
(:mod:`.database`), brings it up to date (:mod:`.update`, which reads through :mod:`.reader` and
writes through :mod:`.records`), gives the passages vectors (:mod:`.vectors`, with the embedder
``workspace.embedder`` names: :mod:`.embedding`) and answers questions about it: the best passages
for a query (:mod:`.search`), the indexed documents, the files skipped and why (:mod:`.records`).

Any thread, and any process, may search; updates are serialised by a lock, and so is embedding,
by another: the window embeds in the background after an update (:meth:`WorkspaceIndex.embed`)
while the next update and every search go on. A better embedder (``workspace.embedder`` =
``auto``: the sentence encoder) embeds the passages again when asked
(:meth:`WorkspaceIndex.improve`: the window while it is idle, ``imprint workspace index
--embed``), under a third lock, so that neither an update nor the quick embedding ever waits for
it; a search ranks by its vectors what it has embedded (:mod:`.meaning`,
:meth:`WorkspaceIndex.coverage`). Each lock is held across processes too (the files beside the
database: :mod:`.database`, and ``index.sqlite3.better.lock``), so a second process's update or
embedding waits for the first's (saying so through its progress) or, told not to wait, leaves the
work to it; a search never waits, and reads the last committed state. Each thread has its own
connection.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from imprint_desktop.core.errors import EmbedderError, WorkspaceError, WorkspaceIndexError
from imprint_desktop.core.workspace import records, vectors
from imprint_desktop.core.workspace.database import (
    Connections,
    WriterLock,
    explained,
    index_path_for,
)
from imprint_desktop.core.workspace.embedding import (
    Embedder,
    better_embedder_for,
    better_name_for,
    embedder_for,
)
from imprint_desktop.core.workspace.isolation import (
    DEFAULT_LIMITS,
    ExtractionLimits,
    Stop,
    is_cancelled,
)
from imprint_desktop.core.workspace.meaning import Coverage, MeaningSearch
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.core.workspace.records import DocumentInfo, IndexProblem
from imprint_desktop.core.workspace.search import (
    SearchHit,
    SearchMode,
    best_passages,
    candidates,
    fts_terms,
    fuse,
    keyword_scores,
    passages_by_score,
    quotes_words,
)
from imprint_desktop.core.workspace.update import IndexProgress, IndexReport, IndexUpdate
from imprint_desktop.core.workspace.vectors import BETTER, EmbedProgress

log = logging.getLogger(__name__)

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
        self._meaning = MeaningSearch(self.db_path)
        #: The better embedder's name ("" for none), known without loading it; the embedder
        #: itself is loaded when it is first needed: to improve, or to search what it embedded.
        self.better_name = better_name_for(embedder)
        self._better: Embedder | EmbedderError | None = None
        self._improve_lock = threading.Lock()
        #: Held by :meth:`improve`, across processes (see :mod:`.database` for the other two).
        self._improving = WriterLock(self.db_path.with_name(f"{self.db_path.name}.better.lock"))

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database. An update still running in another thread (one whose awaiting task
        was cancelled, told to stop) ends first: its connection is never closed under it."""
        with self._update_lock, self._embed_lock, self._improve_lock:
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
        paths: Collection[str] | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the folder (see :mod:`.update`), and then, with
        ``embed``, give every passage its vector (:meth:`embed`). With ``paths`` (folder-relative,
        in the text form) only what is at or under them is looked at: what a watcher saw change.

        While another process updates the index, this one waits for it to finish (``progress``
        is told: :attr:`IndexProgress.waiting`; ``cancel`` ends the wait) and then updates what is
        left; without ``wait``, it leaves the work to that one (the report says ``busy``)."""
        report = self._update_files(progress, cancel, wait, paths)
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

    def better_embedder(self) -> Embedder | None:
        """The better embedder (:attr:`better_name`), loaded on first use, or None when there is
        none; raises :class:`EmbedderError` (every time) when it cannot be loaded."""
        if not self.better_name:
            return None
        with self._embedder_made:
            if self._better is None:
                try:
                    self._better = better_embedder_for(self._embedder_model)
                except EmbedderError as error:
                    log.warning("%s Search ranks by the built-in embedder.", error)
                    self._better = error
            if isinstance(self._better, EmbedderError):
                raise self._better
            return self._better

    def improve(
        self,
        *,
        progress: Callable[[EmbedProgress], None] | None = None,
        cancel: Stop | None = None,
        wait: bool = False,
    ) -> Improvement:
        """Give every passage a vector from the better embedder too, a small batch at a time
        (:data:`.vectors.BETTER_BATCH`: ``cancel`` is checked between batches, so Stop ends it
        within about a second), each written in its own short transaction and none open while a
        batch is embedded. What it embedded is kept however it ends, a killed process included,
        and the next call goes on from there. Another process improving the index is left to it
        (``busy``), or with ``wait`` waited for. Nothing to do without a better embedder."""
        started = time.perf_counter()
        if not self.better_name:
            return Improvement("", 0, 0, finished=True, seconds=0.0)
        busy, problem, finished = False, "", False
        try:
            with (
                self._improve_lock,
                self._connections.writing(self._improving, wait=wait, cancel=cancel) as held,
            ):
                db = self._connections.get()
                if held:
                    try:
                        better = self.better_embedder()
                        assert better is not None
                        finished = vectors.fill(
                            db,
                            better,
                            BETTER,
                            batch=vectors.BETTER_BATCH,
                            progress=progress,
                            cancel=cancel,
                        )
                    except EmbedderError as error:
                        finished, problem = True, str(error)
                else:
                    finished, busy = not is_cancelled(cancel), not wait
                done, total = vectors.counts(db, BETTER)
        except sqlite3.Error as error:
            self._connections.check_damage(error)
            raise WorkspaceIndexError(
                f"The workspace index cannot be updated: {explained(error)}"
            ) from error
        return Improvement(
            self.better_name,
            done,
            total,
            finished=finished,
            seconds=time.perf_counter() - started,
            busy=busy,
            problem=problem,
        )

    def coverage(self) -> Coverage:
        """Which embedders serve a search by meaning now, and how far the better one is."""
        try:
            db = self._connections.get()
            quick = vectors.embedder_name(db)
            better = vectors.embedder_name(db, BETTER)
            done, total = vectors.counts(db, BETTER) if better else (0, 0)
            if not better:
                total = vectors.counts(db)[1]
        except sqlite3.Error as error:
            raise WorkspaceIndexError(
                f"The workspace index cannot be read: {explained(error)}"
            ) from error
        if better != self.better_name:  # made by another choice: not searched
            done = 0
        return Coverage(quick, self.better_name, done, total)

    def _update_files(
        self,
        progress: Callable[[IndexProgress], None] | None,
        cancel: Stop | None,
        wait: bool,
        paths: Collection[str] | None,
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
                        paths=paths,
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
        embedder still at work) are found by their words meanwhile. When no word of the query, nor
        its stem, is in the documents, a passage found by meaning must be as near as its
        embedder's ``alone_similarity``: made-up words find nothing in any mode."""
        if limit < 1:
            return []
        try:
            db = self._connections.get()
            terms = fts_terms(query)
            if mode is SearchMode.KEYWORD:
                return best_passages(db, terms, limit)
            count = candidates(limit)
            by_words = keyword_scores(db, terms, count)
            by_meaning, weight = self._by_meaning(
                db, query, count, required=mode is SearchMode.MEANING, alone=not by_words
            )
            if mode is SearchMode.MEANING:
                by_words = []
            if mode is SearchMode.HYBRID and quotes_words(query):
                having = {passage for passage, _ in by_words}
                by_meaning = [pair for pair in by_meaning if pair[0] in having]
            return passages_by_score(db, fuse(by_words, by_meaning, weight), limit)
        except sqlite3.Error as error:
            raise WorkspaceIndexError(
                f"The workspace index cannot be searched: {explained(error)}"
            ) from error

    def _by_meaning(
        self, db: sqlite3.Connection, query: str, count: int, *, required: bool, alone: bool
    ) -> tuple[list[tuple[int, float]], float]:
        """The passages nearest ``query`` with their nearness (:func:`.meaning.merged`), nearest
        first, and the weight of that ranking in the fusion: by the better embedder where it has
        embedded them, by the quick one elsewhere (:mod:`.meaning`); ``alone``: no word of the
        query is in the documents."""
        if not query.strip():
            return [], 0.0
        try:
            quick = self.embedder()
            better = self._better_searched(db)
            return self._meaning.nearest(db, query, count, quick, better, alone=alone)
        except EmbedderError:
            if required:
                raise
            return [], 0.0

    def _better_searched(self, db: sqlite3.Connection) -> Embedder | None:
        """The better embedder when its vectors are in the index (it is loaded only then: a
        first search of a new folder never waits for it), else None."""
        if not self.better_name or vectors.embedder_name(db, BETTER) != self.better_name:
            return None
        try:
            return self.better_embedder()
        except EmbedderError:
            return None

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


@dataclass(frozen=True, slots=True)
class Improvement:
    """What :meth:`WorkspaceIndex.improve` did: the better ``embedder``'s vectors now cover
    ``done`` of ``total`` passages; ``finished`` unless Stop came first; ``busy`` when another
    process improves the index; ``problem`` when the embedder could not be loaded."""

    embedder: str
    done: int
    total: int
    finished: bool
    seconds: float
    busy: bool = False
    problem: str = ""
