"""The passages' vectors: kept in the index database, filled as passages come, searched in memory.

Each passage gets one vector from the workspace's embedder (:mod:`.embedding`), stored as
``float16`` in ``passage_vectors`` beside the passage (512 bytes a passage for the built-in
embedder). A trigger deletes a passage's vector with the passage, so a file removed or read again
drops its vectors with its passages, and nothing else needs to know the table exists. ``meta``
says which embedder made the vectors (``embedder``) and marks every change to them with a new
random ``vectors_generation`` (kept by triggers), so a search can tell cheaply whether what it
holds in memory, or what :mod:`.vector_file` kept beside the database, is still the table: a
random mark, unlike a count, is never given to two states of the table, not even to those of an
index deleted and built again, or put back from a copy.

:func:`fill` embeds the passages that have no vector yet, a batch per transaction, so it is
incremental, kept whatever happens next, and may stop at any batch; a new embedder first drops
the old vectors. :class:`VectorSearch` holds the vectors of one database as one matrix and answers
the passages nearest a query by a matrix product: a brute-force search that needs no extension
loaded into SQLite. A passage's nearness takes in its document's (:data:`DOCUMENT_SHARE`). Past
:data:`TWO_STEP_ROWS` passages the product is taken in two steps (:class:`_Loaded`): the leading
half of each vector picks a shortlist, and the whole vectors rank it. The matrix is read from the
file :mod:`.vector_file` keeps beside the database when that file is of the table as it is, and
from the table otherwise (and the file written again).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from imprint_desktop.core.workspace import vector_file
from imprint_desktop.core.workspace.embedding import Embedder, Vectors, normalized
from imprint_desktop.core.workspace.isolation import Stop, is_cancelled

#: Passages embedded and committed together.
BATCH = 128
#: A passage's nearness to a query is its own cosine similarity blended with its document's (the
#: mean of the document's passage vectors) in this share: a passage of a document that is about
#: the question as a whole ranks above a stray passage that shares a few of its words (measured
#: by ``bench/bench_workspace.py``: paraphrase recall@5 +2 of 30, own words unchanged).
DOCUMENT_SHARE = 0.5
#: Passages past which a search by meaning reads half of each vector first (the leading half,
#: each row scaled to unit length: its cosine similarity to the query's leading half) to keep the
#: :data:`SHORTLIST` nearest by that, and ranks only those by their whole vectors. At 163,000
#: passages of 256 dimensions the pass over all of them reads half as much (16 ms instead of 34
#: under load), and 9,599 of 9,600 passages of the exact nearest 48 were kept over 200 queries
#: (``bench/bench_workspace.py``'s corpus of 30,000 documents); on Flask's documentation (892
#: passages), a shortlist of 20 per passage asked kept every exact nearest, with the built-in
#: embedder and with the sentence encoder alike. A smaller index is read whole.
TWO_STEP_ROWS = 20_000
#: Passages the first step keeps, at least (20 per passage asked for, if that is more).
SHORTLIST = 1000

SCHEMA = """
CREATE TABLE IF NOT EXISTS passage_vectors (
    passage_id INTEGER PRIMARY KEY,   -- passages.id
    vector BLOB NOT NULL              -- float16, unit length
);
-- Every update counts the vectors (are any missing?), and count(*) reads the smallest b-tree of
-- a table: without this index, every page of the vectors (3 ms at 6,000 passages: issue 28).
CREATE INDEX IF NOT EXISTS passage_vectors_ids ON passage_vectors (passage_id);
INSERT OR IGNORE INTO meta (key, value)
    VALUES ('vectors_generation', lower(hex(randomblob(8)))), ('embedder', '');
CREATE TRIGGER IF NOT EXISTS passage_vectors_gone AFTER DELETE ON passages BEGIN
    DELETE FROM passage_vectors WHERE passage_id = old.id;
END;
-- Indexes made before the generation was random counted changes (triggers _ai and _ad).
DROP TRIGGER IF EXISTS passage_vectors_ai;
DROP TRIGGER IF EXISTS passage_vectors_ad;
CREATE TRIGGER IF NOT EXISTS passage_vectors_added AFTER INSERT ON passage_vectors BEGIN
    UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'vectors_generation';
END;
CREATE TRIGGER IF NOT EXISTS passage_vectors_deleted AFTER DELETE ON passage_vectors BEGIN
    UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'vectors_generation';
END;
"""

#: What :data:`SCHEMA` leaves in ``sqlite_master``, and what it drops: an index that has these
#: (and the two ``meta`` rows) needs nothing written to open it.
_MADE = frozenset(
    {
        ("table", "passage_vectors"),
        ("index", "passage_vectors_ids"),
        ("trigger", "passage_vectors_gone"),
        ("trigger", "passage_vectors_added"),
        ("trigger", "passage_vectors_deleted"),
    }
)
_DROPPED = frozenset({("trigger", "passage_vectors_ai"), ("trigger", "passage_vectors_ad")})

_PENDING = """
SELECT p.id, p.heading, p.text FROM passages p
LEFT JOIN passage_vectors v ON v.passage_id = p.id
WHERE v.passage_id IS NULL AND p.id > ? ORDER BY p.id LIMIT ?
"""


@dataclass(frozen=True, slots=True)
class EmbedProgress:
    """How far :func:`fill` is: passages with a vector of ``total`` passages. With ``waiting``,
    it has not started: another process is embedding the index (:data:`.update.WAITING`)."""

    done: int
    total: int
    waiting: bool = False


def passage_text(heading: str, text: str) -> str:
    """What is embedded of a passage: its document title and section, then its text."""
    return f"{heading}\n{text}" if heading else text


def counts(db: sqlite3.Connection) -> tuple[int, int]:
    """Passages with a vector, and passages in all."""
    embedded = db.execute("SELECT count(*) FROM passage_vectors").fetchone()[0]
    total = db.execute("SELECT count(*) FROM passages").fetchone()[0]
    return int(embedded), int(total)


def schema_current(db: sqlite3.Connection) -> bool:
    """Whether :data:`SCHEMA` has nothing to add to (or drop from) the database ``db``: read
    only, so that opening an index that is up to date writes nothing (and waits on no writer)."""
    made = {
        (str(kind), str(name))
        for kind, name in db.execute(
            "SELECT type, name FROM sqlite_master WHERE name LIKE 'passage_vectors%'"
        )
    }
    keys = db.execute(
        "SELECT count(*) FROM meta WHERE key IN ('vectors_generation', 'embedder')"
    ).fetchone()[0]
    return made >= _MADE and not _DROPPED & made and keys == 2


def embedder_name(db: sqlite3.Connection) -> str:
    row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return "" if row is None else str(row[0])


def fill(
    db: sqlite3.Connection,
    embedder: Embedder,
    *,
    progress: Callable[[EmbedProgress], None] | None = None,
    cancel: Stop | None = None,
) -> bool:
    """Give every passage a vector from ``embedder``; False when ``cancel`` stopped it first.

    Runs outside any transaction of the caller's; each batch is its own, and no transaction is
    open while a batch is embedded. The caller holds the index's embedding lock
    (:attr:`.database.Connections.embedding`), so no other process or thread embeds it meanwhile;
    an update may (a passage deleted since it was read gets no vector, one added behind the walk
    is found by the second)."""
    if embedder_name(db) != embedder.name:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM passage_vectors")
            db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (embedder.name,))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    done, total = counts(db)
    if done == total:  # a vector is never without its passage: none is missing one
        if progress is not None:
            progress(EmbedProgress(done, total))
        return not is_cancelled(cancel)
    after = 0  # the passages are walked in id order, once, and then once more for any added
    rewound = False  # behind the walk meanwhile (an id freed at the end is given again)
    while True:
        if progress is not None:
            progress(EmbedProgress(done, total))
        if is_cancelled(cancel):
            return False
        rows = db.execute(_PENDING, (after, BATCH)).fetchall()
        if not rows:
            if rewound or after == 0:
                return True
            after, rewound = 0, True
            continue
        after = rows[-1][0]
        vectors = embedder.embed([passage_text(heading, text) for _, heading, text in rows])
        stored = vectors.astype(np.float16)
        db.execute("BEGIN IMMEDIATE")
        try:
            # A passage deleted since it was read (the file changed) gets no vector.
            db.executemany(
                "INSERT INTO passage_vectors (passage_id, vector) "
                "SELECT id, ? FROM passages WHERE id = ?",
                [(stored[at].tobytes(), row[0]) for at, row in enumerate(rows)],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        done += len(rows)
        total = max(total, done)


class VectorSearch:
    """The nearest passages to a query vector, over one database's vectors held in memory.

    The matrix is read again only when the table changed (``vectors_generation``) or another
    embedder made it; any thread may search, and one reload serves them all. With ``kept`` (a
    path: :func:`.vector_file.path_for` the database), it is read from that file when the file
    is of the table as it is, and the file is written whenever the matrix is read from the table.
    """

    def __init__(self, kept: Path | None = None) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._key: tuple[str, str] | None = None
        self._loaded = _Loaded.of(_NONE)

    def nearest(
        self, db: sqlite3.Connection, embedder_name: str, query: Vectors, count: int
    ) -> list[tuple[int, float]]:
        """Up to ``count`` (passage id, cosine similarity) pairs, nearest first; empty when the
        stored vectors are another embedder's (being replaced) or there are none."""
        return self._current(db, embedder_name).nearest(query, count)

    def _current(self, db: sqlite3.Connection, embedder_name: str) -> _Loaded:
        rows = dict(
            db.execute(
                "SELECT key, value FROM meta WHERE key IN ('embedder', 'vectors_generation')"
            ).fetchall()
        )
        key = (str(rows.get("embedder", "")), str(rows.get("vectors_generation", "")))
        with self._lock:
            if key != self._key:
                self._load(db, key, embedder_name)
            return self._loaded

    def _load(self, db: sqlite3.Connection, key: tuple[str, str], embedder_name: str) -> None:
        if key[0] != embedder_name:
            kept = _NONE
        else:
            found = None if self._kept is None else vector_file.read(self._kept, key)
            if found is None:
                key, kept = _from_table(db, key[0])
                if self._kept is not None:
                    vector_file.write(self._kept, key, kept)
            else:
                kept = found
        self._loaded = _Loaded.of(kept)
        self._key = key


@dataclass(frozen=True, slots=True)
class _Loaded:
    """One state of an index's vectors, ready for queries: the whole rows as ``float32``, or, past
    :data:`TWO_STEP_ROWS`, the rows as stored (``float16``) and their leading halves (unit length,
    ``float32``), which take as much memory as the whole rows would."""

    ids: npt.NDArray[np.int64]
    #: The whole rows as ``float32`` (one step), or None (two steps).
    matrix: Vectors | None
    #: The rows as stored (two steps), or None (one step).
    stored: npt.NDArray[np.float16] | None
    #: The leading half of each row, scaled to unit length (two steps), or None (one step).
    leading: Vectors | None
    documents: Vectors
    #: Each row's document: its row in ``documents``.
    document_of: npt.NDArray[np.int64]

    @classmethod
    def of(cls, kept: vector_file.Kept) -> _Loaded:
        document_of = np.cumsum(_run_starts(kept.files), dtype=np.int64) - 1
        if len(kept.ids) <= TWO_STEP_ROWS:
            matrix = kept.rows.astype(np.float32)
            return cls(kept.ids, matrix, None, None, kept.documents, document_of)
        half = kept.rows.shape[1] // 2
        leading = normalized(kept.rows[:, :half].astype(np.float32))
        # A copy: the rows read from a kept file are a view of all of it, freed once not needed.
        return cls(kept.ids, None, kept.rows.copy(), leading, kept.documents, document_of)

    def nearest(self, query: Vectors, count: int) -> list[tuple[int, float]]:
        if not len(self.ids) or self.documents.shape[1] != query.shape[0]:
            return []
        count = min(count, len(self.ids))
        # einsum, not the BLAS product: multi-threaded BLAS slows a hundredfold when llama.cpp
        # or other work holds the cores, and one thread is fast enough here.
        by_document = np.einsum("ij,j->i", self.documents, query)[self.document_of]
        if self.matrix is not None:
            ids = self.ids
            scores = self._blend(np.einsum("ij,j->i", self.matrix, query), by_document)
        else:
            assert self.leading is not None and self.stored is not None
            head = query[: self.leading.shape[1]]
            norm = float(np.linalg.norm(head))
            rough = np.einsum("ij,j->i", self.leading, head / norm if norm else head)
            rough = self._blend(rough, by_document)
            keep = min(max(SHORTLIST, 20 * count), len(self.ids))
            rows = np.argpartition(-rough, keep - 1)[:keep]
            whole = np.einsum("ij,j->i", self.stored[rows].astype(np.float32), query)
            scores = self._blend(whole, by_document[rows])
            ids = self.ids[rows]
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(ids[at]), float(scores[at])) for at in best]

    @staticmethod
    def _blend(passages: Vectors, documents: Vectors) -> Vectors:
        """A passage's nearness blended with its document's (:data:`DOCUMENT_SHARE`)."""
        blended: Vectors = (1 - DOCUMENT_SHARE) * passages + DOCUMENT_SHARE * documents
        return blended


_NONE = vector_file.Kept(
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros((0, 0), dtype=np.float16),
    np.zeros((0, 0), dtype=np.float32),
)


def _run_starts(files: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which rows start a run of equal ``files``: each document's passages are one run of rows."""
    return np.concatenate(([True], files[1:] != files[:-1]))


def _from_table(db: sqlite3.Connection, embedder: str) -> tuple[tuple[str, str], vector_file.Kept]:
    """The vectors in the table by file, with their documents' (the mean of each file's passage
    vectors, unit length), and the state (embedder, generation) they are of."""
    db.execute("BEGIN")  # the key and the rows from one snapshot
    try:
        generation = db.execute(
            "SELECT value FROM meta WHERE key = 'vectors_generation'"
        ).fetchone()[0]
        rows = db.execute(
            "SELECT v.passage_id, v.vector, p.file_id FROM passage_vectors v "
            "JOIN passages p ON p.id = v.passage_id ORDER BY p.file_id"
        ).fetchall()
    finally:
        db.execute("COMMIT")
    key = (embedder, str(generation))
    if not rows:
        return key, _NONE
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    files = np.fromiter((row[2] for row in rows), dtype=np.int64, count=len(rows))
    stored = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float16)
    stored = stored.reshape(len(rows), -1)
    starts = np.flatnonzero(_run_starts(files))
    documents = normalized(np.add.reduceat(stored.astype(np.float32), starts, axis=0))
    return key, vector_file.Kept(ids, files, stored, documents)
