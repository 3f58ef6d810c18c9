"""The built-in embedder's tokens of each word, kept on disk: a search need not load a tokenizer.

The built-in embedder (:class:`~.embedding.StaticEmbedder`) sums the vectors of a word's tokens,
and a word's tokens are the same wherever it stands: what the tokenizer said of a word stays true
for as long as the tokenizer is the same. Loading the tokenizer takes longer than a whole search
(a seventh of a second, holding the GIL), so every word tokenized is written here — a small SQLite
database in Imprint's data folder, shared by every workspace — and a later process looks its words
up here first: a search whose words the indexed documents use (indexing wrote them) loads no
tokenizer at all (``imprint workspace search``, issue 28).

It is a cache, never trusted past what it can check: it names the tokenizer it was made with
(``tokenizer``: the embedder and the tokenizer file's size and modification time) and is emptied
when that changes; a database that cannot be read is deleted and made again; an entry that does
not parse is taken as unknown. When it cannot be opened or written, words are tokenized each time,
as they would be without it.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, tokens TEXT NOT NULL) WITHOUT ROWID;
"""
#: Words looked up in one query (SQLite's limit on parameters is far above).
_CHUNK = 500
#: The most words kept (some tens of megabytes); then the database starts again, empty, as the
#: embedder's memory does: a folder of logs or tables can hold millions of distinct "words".
LIMIT = 500_000


class WordTokens:
    """Each word's token ids as the tokenizer ``tokenizer`` gave them, in the database at ``path``.

    Not thread-safe: its owner (the embedder) calls it under its own lock.
    """

    def __init__(self, path: Path, tokenizer: str) -> None:
        self.path = path
        self._tokenizer = tokenizer
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open()
        except (OSError, sqlite3.OperationalError) as error:  # busy, read-only, no folder
            log.info("word tokens are not kept on disk (%s): %s", path, error)
        except sqlite3.DatabaseError:
            # Not a database, or damaged: a cache is thrown away and made again.
            self._remove()
            try:
                self._db = self._open()
            except (OSError, sqlite3.Error) as error:
                log.info("word tokens are not kept on disk (%s): %s", path, error)

    def known(self, words: Sequence[str]) -> dict[str, tuple[int, ...]]:
        """The tokens of those ``words`` that are kept."""
        found: dict[str, tuple[int, ...]] = {}
        if self._db is None:
            return found
        try:
            for start in range(0, len(words), _CHUNK):
                chunk = words[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT word, tokens FROM words WHERE word IN ({marks})"
                for word, tokens in self._db.execute(query, chunk):
                    parsed = _parsed(tokens)
                    if parsed is not None:
                        found[word] = parsed
        except sqlite3.Error as error:
            self._off(error)
        return found

    def remember(self, tokens: Mapping[str, Sequence[int]]) -> None:
        """Keep ``tokens`` (word: token ids) for later processes; a database that is busy or
        cannot be written is left as it is."""
        if self._db is None or not tokens:
            return
        rows = [(word, " ".join(map(str, ids))) for word, ids in tokens.items()]
        db = self._db
        try:
            with db:
                before = db.total_changes
                db.executemany("INSERT OR REPLACE INTO words VALUES (?, ?)", rows)
                added = db.total_changes - before
                db.execute(
                    "INSERT INTO meta VALUES ('words', ?) ON CONFLICT (key) DO UPDATE "
                    "SET value = CAST(value AS INTEGER) + excluded.value",
                    (added,),
                )
                kept = db.execute("SELECT value FROM meta WHERE key = 'words'").fetchone()[0]
                if int(kept) > LIMIT:
                    db.execute("DELETE FROM words")
                    db.execute("DELETE FROM meta WHERE key IN ('words', 'vocabulary')")
        except sqlite3.OperationalError as error:  # busy, read-only, full: skip this time
            log.debug("word tokens not kept: %s", error)
        except sqlite3.Error as error:
            self._off(error)

    @property
    def holds_vocabulary(self) -> bool:
        """Whether the words that are whole tokens of the tokenizer are kept
        (:meth:`remember_vocabulary`): a search with common words of any document finds them."""
        if self._db is None:
            return True  # nothing to add them to
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'vocabulary'").fetchone()
        except sqlite3.Error as error:
            self._off(error)
            return True
        return row is not None

    def remember_vocabulary(self, tokens: Mapping[str, Sequence[int]]) -> None:
        """Keep ``tokens`` as :meth:`remember` does, and that the vocabulary is kept."""
        self.remember(tokens)
        if self._db is None:
            return
        try:
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('vocabulary', '1')")
        except sqlite3.Error as error:
            log.debug("word tokens not kept: %s", error)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A short wait: another process writing its words must not hold up a search.
        db = sqlite3.connect(self.path, timeout=0.2, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
            if row is None or row[0] != self._tokenizer:
                with db:  # made by another tokenizer (or new): start empty
                    db.execute("DELETE FROM words")
                    db.execute("DELETE FROM meta WHERE key IN ('words', 'vocabulary')")
                    db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('tokenizer', ?)", (self._tokenizer,)
                    )
        except BaseException:
            db.close()
            raise
        return db

    def _off(self, error: sqlite3.Error) -> None:
        log.info("word tokens are not kept on disk any more (%s): %s", self.path, error)
        self.close()

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(f"{self.path}{suffix}").unlink()


def _parsed(tokens: object) -> tuple[int, ...] | None:
    """A kept entry's token ids, or None when it is not a list of ids."""
    if not isinstance(tokens, str):
        return None
    try:
        ids = tuple(int(token) for token in tokens.split())
    except ValueError:
        return None
    return ids if ids and all(token >= 0 for token in ids) else None
