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
:data:`TWO_STEP_ROWS` passages the product is taken in two steps (:class:`LoadedVectors`): the
leading half of each vector picks a shortlist, and the whole vectors rank it. The matrix is read
from the file :mod:`.vector_file` keeps beside the database when that file is of the table as it
is, and from the table otherwise (and the file written again).

An index holds two such sets (:class:`VectorSet`), each in its own table with its own two ``meta``
keys: :data:`QUICK`, made as passages are indexed by the embedder that keeps pace with indexing,
and :data:`BETTER`, made in the background by a slower and better one (the sentence encoder under
``workspace.embedder`` = ``auto``), a small batch at a time, under its own lock
(:attr:`.index.WorkspaceIndex`'s ``better.lock``), so that the quick set never waits for it.
:mod:`.meaning` ranks by both. Who writes each: the holder of its lock, in short transactions;
a reader sees the last committed batch.
"""

from __future__ import annotations

import sqlite3
import threading
import time
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
#: Passages the better set is given at a time: one encoder batch (about a second on one core
#: here), so that Stop, checked between batches, ends the background embedding that soon.
BETTER_BATCH = 16
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
#: A search reads a set of vectors again whenever it changed if reading it took at most this long
#: (a few thousand passages); a longer read is done again only after :data:`RELOAD_SHARE` times
#: its time (see :class:`VectorSearch`).
FRESH_SECONDS = 0.02
RELOAD_SHARE = 20

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
-- The better set. Dropped whenever this schema is applied: that is when the index is built
-- again (new passage ids; the database drops only the tables it knows) or made current.
DROP TABLE IF EXISTS passage_vectors_better;
CREATE TABLE passage_vectors_better (
    passage_id INTEGER PRIMARY KEY,   -- passages.id
    vector BLOB NOT NULL              -- float16, unit length
);
CREATE INDEX passage_vectors_better_ids ON passage_vectors_better (passage_id);
INSERT OR REPLACE INTO meta (key, value)
    VALUES ('better_generation', lower(hex(randomblob(8)))), ('better_embedder', '');
CREATE TRIGGER IF NOT EXISTS passage_vectors_better_gone AFTER DELETE ON passages BEGIN
    DELETE FROM passage_vectors_better WHERE passage_id = old.id;
END;
CREATE TRIGGER passage_vectors_better_added AFTER INSERT ON passage_vectors_better BEGIN
    UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'better_generation';
END;
CREATE TRIGGER passage_vectors_better_deleted AFTER DELETE ON passage_vectors_better BEGIN
    UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'better_generation';
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
        ("table", "passage_vectors_better"),
        ("index", "passage_vectors_better_ids"),
        ("trigger", "passage_vectors_better_gone"),
        ("trigger", "passage_vectors_better_added"),
        ("trigger", "passage_vectors_better_deleted"),
    }
)
_META_KEYS = ("vectors_generation", "embedder", "better_generation", "better_embedder")
_DROPPED = frozenset({("trigger", "passage_vectors_ai"), ("trigger", "passage_vectors_ad")})


@dataclass(frozen=True, slots=True)
class VectorSet:
    """One set of passage vectors: its table, the ``meta`` keys naming its embedder and its
    generation, and the name of the file kept beside the database (:mod:`.vector_file`)."""

    table: str
    embedder_key: str
    generation_key: str
    kept_suffix: str

    @property
    def pending(self) -> str:
        """The passages after an id that have no vector in this set, by id, at most so many."""
        return (
            f"SELECT p.id, p.heading, p.text FROM passages p LEFT JOIN {self.table} v "
            "ON v.passage_id = p.id WHERE v.passage_id IS NULL AND p.id > ? ORDER BY p.id LIMIT ?"
        )


#: The vectors every passage gets as it is indexed, from the embedder that keeps pace.
QUICK = VectorSet("passage_vectors", "embedder", "vectors_generation", "vectors")
#: The vectors a better embedder gives the passages in the background.
BETTER = VectorSet(
    "passage_vectors_better", "better_embedder", "better_generation", "better.vectors"
)


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


def counts(db: sqlite3.Connection, vector_set: VectorSet = QUICK) -> tuple[int, int]:
    """Passages with a vector of ``vector_set``, and passages in all."""
    embedded = db.execute(f"SELECT count(*) FROM {vector_set.table}").fetchone()[0]
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
    marks = ", ".join(f"'{key}'" for key in _META_KEYS)
    keys = db.execute(f"SELECT count(*) FROM meta WHERE key IN ({marks})").fetchone()[0]
    return made >= _MADE and not _DROPPED & made and keys == len(_META_KEYS)


def embedder_name(db: sqlite3.Connection, vector_set: VectorSet = QUICK) -> str:
    """The name of the embedder that made the vectors of ``vector_set`` ("" for none yet)."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (vector_set.embedder_key,)).fetchone()
    return "" if row is None else str(row[0])


def fill(
    db: sqlite3.Connection,
    embedder: Embedder,
    vector_set: VectorSet = QUICK,
    *,
    batch: int | None = None,
    progress: Callable[[EmbedProgress], None] | None = None,
    cancel: Stop | None = None,
) -> bool:
    """Give every passage a vector of ``vector_set`` from ``embedder``, ``batch`` passages at a
    time (:data:`BATCH` unless told); False when ``cancel`` (checked between batches) stopped it
    first.

    Runs outside any transaction of the caller's; each batch is its own, and no transaction is
    open while a batch is embedded. The caller holds the lock of ``vector_set`` (for
    :data:`QUICK`, :attr:`.database.Connections.embedding`), so no other process or thread fills
    it meanwhile; an update may (a passage deleted since it was read gets no vector, one added
    behind the walk is found by the second), and so may the other set's filler. A batch is written
    only while the set is still ``embedder``'s: the set emptied meanwhile (the index built again)
    takes none of a batch embedded before."""
    table, key = vector_set.table, vector_set.embedder_key
    if embedder_name(db, vector_set) != embedder.name:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"DELETE FROM {table}")
            db.execute("UPDATE meta SET value = ? WHERE key = ?", (embedder.name, key))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    done, total = counts(db, vector_set)
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
        rows = db.execute(vector_set.pending, (after, batch or BATCH)).fetchall()
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
                f"INSERT OR IGNORE INTO {table} (passage_id, vector) "
                "SELECT id, ? FROM passages WHERE id = ? "
                "AND (SELECT value FROM meta WHERE key = ?) = ?",
                [(stored[at].tobytes(), row[0], key, embedder.name) for at, row in enumerate(rows)],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        done += len(rows)
        total = max(total, done)


class VectorSearch:
    """The nearest passages to a query vector, over one set of one database's vectors held in
    memory.

    The matrix is read again only when the table changed (its generation) or another embedder
    made it; any thread may search, and one reload serves them all. With ``kept`` (a path:
    :func:`.vector_file.path_for` the database), it is read from that file when the file is of
    the table as it is, and the file is written whenever the matrix is read from the table.

    A set filled in the background changes every second or so; reading it all again for each
    search would cost a large index more than the search. So a reload that took longer than
    :data:`FRESH_SECONDS` is not done again until :data:`RELOAD_SHARE` times as long has passed:
    meanwhile a search uses the set as it was (:mod:`.meaning` ranks what it lacks by the other).
    """

    def __init__(self, kept: Path | None = None, vector_set: VectorSet = QUICK) -> None:
        self._kept = kept
        self._set = vector_set
        self._lock = threading.Lock()
        self._key: tuple[str, str] | None = None
        self._loaded = LoadedVectors.of(_NONE)
        self._next_reload = 0.0

    def nearest(
        self,
        db: sqlite3.Connection,
        embedder_name: str,
        query: Vectors,
        count: int,
        *,
        leaving_out: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """Up to ``count`` (passage id, cosine similarity) pairs, nearest first, none of them in
        ``leaving_out`` (sorted passage ids); empty when the stored vectors are another
        embedder's (being replaced) or there are none."""
        return self.loaded(db, embedder_name).nearest(query, count, leaving_out)

    def loaded(self, db: sqlite3.Connection, embedder_name: str) -> LoadedVectors:
        """The vectors as a search uses them now (see the class's docstring)."""
        rows = dict(
            db.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?)",
                (self._set.embedder_key, self._set.generation_key),
            ).fetchall()
        )
        key = (
            str(rows.get(self._set.embedder_key, "")),
            str(rows.get(self._set.generation_key, "")),
        )
        with self._lock:
            if key != self._key and (
                key[0] != (self._key or ("",))[0] or time.monotonic() >= self._next_reload
            ):
                began = time.monotonic()
                self._load(db, key, embedder_name)
                took = time.monotonic() - began
                self._next_reload = began + (RELOAD_SHARE * took if took > FRESH_SECONDS else 0)
            return self._loaded

    def _load(self, db: sqlite3.Connection, key: tuple[str, str], embedder_name: str) -> None:
        if key[0] != embedder_name:
            kept = _NONE
        else:
            found = None if self._kept is None else vector_file.read(self._kept, key)
            if found is None:
                key, kept = _from_table(db, key[0], self._set)
                if self._kept is not None:
                    vector_file.write(self._kept, key, kept)
            else:
                kept = found
        self._loaded = LoadedVectors.of(kept)
        self._key = key


@dataclass(frozen=True, slots=True)
class LoadedVectors:
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
    def of(cls, kept: vector_file.Kept) -> LoadedVectors:
        document_of = np.cumsum(_run_starts(kept.files), dtype=np.int64) - 1
        if len(kept.ids) <= TWO_STEP_ROWS:
            matrix = kept.rows.astype(np.float32)
            return cls(kept.ids, matrix, None, None, kept.documents, document_of)
        half = kept.rows.shape[1] // 2
        leading = normalized(kept.rows[:, :half].astype(np.float32))
        # A copy: the rows read from a kept file are a view of all of it, freed once not needed.
        return cls(kept.ids, None, kept.rows.copy(), leading, kept.documents, document_of)

    def nearest(
        self, query: Vectors, count: int, leaving_out: npt.NDArray[np.int64] | None = None
    ) -> list[tuple[int, float]]:
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
        if leaving_out is not None and len(leaving_out):
            scores = np.where(_within(ids, leaving_out), -np.inf, scores)
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(ids[at]), float(scores[at])) for at in best if scores[at] > -np.inf]

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


def _within(ids: npt.NDArray[np.int64], sorted_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which of ``ids`` are among ``sorted_ids`` (ascending): a binary search each."""
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    found: npt.NDArray[np.bool_] = sorted_ids[at] == ids
    return found


def _run_starts(files: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which rows start a run of equal ``files``: each document's passages are one run of rows."""
    return np.concatenate(([True], files[1:] != files[:-1]))


def _from_table(
    db: sqlite3.Connection, embedder: str, vector_set: VectorSet
) -> tuple[tuple[str, str], vector_file.Kept]:
    """The vectors of ``vector_set`` by file, with their documents' (the mean of each file's
    passage vectors, unit length), and the state (embedder, generation) they are of."""
    db.execute("BEGIN")  # the key and the rows from one snapshot
    try:
        generation = db.execute(
            "SELECT value FROM meta WHERE key = ?", (vector_set.generation_key,)
        ).fetchone()[0]
        rows = db.execute(
            f"SELECT v.passage_id, v.vector, p.file_id FROM {vector_set.table} v "
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
