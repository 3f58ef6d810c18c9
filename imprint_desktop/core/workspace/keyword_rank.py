"""The passages that rank best by BM25 for a set of words, without scoring every passage that
shares a common one.

FTS5 computes BM25 for every row its expression matches before it can sort them: a query with one
word found in a fifth of the passages scores that fifth (at 30,000 documents, 30,000 rows and
about 100 ms), while the rows that matter share the query's rarer words. :func:`best_by_words`
gives exactly what ``... MATCH 'a OR b OR c' ORDER BY rank LIMIT n`` gives, cheaper when one word
is much more common than the others:

- BM25 is a sum over the query's words, and FTS5 counts each word's documents over the whole
  index whatever else the expression says. So ``(rare) AND common`` and ``(rare) NOT common``
  score their rows exactly as the whole OR query does, and together they hold every row that has
  one of the rarer words, scored on only those rows.
- A row with none of the rarer words scores less than ``(k1 + 1) × IDF(common)``, the most one
  word can add (:func:`most_added`). When the ``count``-th best row with a rarer word scores at
  least that, no row left out could have been among the best, and the answer is the whole OR
  query's. Otherwise the whole OR query runs.

Ties between rows of equal score may come in another order, as they may from the whole query.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Iterator, Sequence

#: FTS5's BM25 parameter k1: one word adds less than ``(k1 + 1) × IDF`` to a row's score, however
#: often the row has it.
_K1 = 1.2

#: ``rank + 0``, not ``rank``: ordered by ``rank`` itself, FTS5 sorts every matching row in a
#: statement of its own and then looks each one up again; ordered by an expression, SQLite's
#: sorter keeps only the ``LIMIT`` best (the same rows, in about two thirds of the time).
_RANKED = """
SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank + 0 LIMIT ?
"""
#: Matching rows that the whole query scores in a few milliseconds: below this, leaving the most
#: common word out saves less than the two queries that would show it can be left out cost.
FEW_ROWS = 4000
_ROWS_WITH = "SELECT count(*) FROM {table} WHERE {table} MATCH ?"
#: The full-text tables a ranking may read: the words as written, and the words by their stems
#: (:mod:`.database`'s schema).
TABLES = frozenset({"passages_fts", "passages_stems"})


def best_by_words(
    db: sqlite3.Connection, terms: Sequence[str], count: int, table: str = "passages_fts"
) -> list[tuple[int, float]]:
    """(passage id, rank) of the ``count`` best rows of ``table`` (one of :data:`TABLES`) for
    ``terms`` joined by OR, best first (FTS5's ``rank``: lower is better). ``terms`` are FTS5
    strings ("quoted"), as :func:`.search.fts_terms` gives them."""
    if table not in TABLES:
        raise ValueError(f"not a full-text table of the index: {table}")
    if not terms or count < 1:
        return []
    whole = " OR ".join(terms)
    if len(terms) == 1:
        return _ranked(db, table, whole, count)
    with _one_snapshot(db):  # the counts, the bound and the rows of one state of the index
        found = _with_the_rarer_words(db, table, terms, count)
        return _ranked(db, table, whole, count) if found is None else found


def most_added(rows: int, having: int) -> float:
    """What one word found in ``having`` of ``rows`` rows adds to a row's BM25 score stays below:
    FTS5's IDF (never below 1e-6) times ``k1 + 1``."""
    idf = math.log((rows - having + 0.5) / (having + 0.5))
    return (_K1 + 1) * max(idf, 1e-6)


def _with_the_rarer_words(
    db: sqlite3.Connection, table: str, terms: Sequence[str], count: int
) -> list[tuple[int, float]] | None:
    """The best rows when only rows with one of the rarer words can be among them; None when that
    is not shown, or when the most common word is not common enough to make leaving it out pay."""
    rows_with = _ROWS_WITH.format(table=table)
    having = {term: int(db.execute(rows_with, (term,)).fetchone()[0]) for term in terms}
    if sum(having.values()) < FEW_ROWS:
        return None
    common = max(terms, key=lambda term: having[term])
    rarer = [term for term in terms if term != common]
    if having[common] <= sum(having[term] for term in rarer):
        return None  # the rarer words' rows are most of the rows anyway
    # Ids are distinct and positive: there are at most as many rows as the largest id, so the
    # IDF, and the bound made of it, are never underestimated.
    rows = int(db.execute("SELECT max(id) FROM passages").fetchone()[0] or 0)
    rows = max(rows, having[common])  # an index whose words and passages disagree is no crash
    either = " OR ".join(rarer)
    found = _ranked(db, table, f"({either}) AND {common}", count)
    found += _ranked(db, table, f"({either}) NOT {common}", count)
    best = sorted(found, key=lambda row: row[1])[:count]
    if len(best) < count or -best[-1][1] < most_added(rows, having[common]):
        return None
    return best


@contextlib.contextmanager
def _one_snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """The statements inside read one state of the database, whatever an update commits
    meanwhile (a transaction already open is that state)."""
    if db.in_transaction:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def _ranked(db: sqlite3.Connection, table: str, match: str, count: int) -> list[tuple[int, float]]:
    ranked = db.execute(_RANKED.format(table=table), (match, count))
    return [(int(row[0]), float(row[1])) for row in ranked]
