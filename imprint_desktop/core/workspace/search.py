"""Ranked passage search: whatever the model types, as words, ranked by BM25.

Search runs on SQLite FTS5 with BM25 ranking (title and section words weigh double: the ``rank``
set in :mod:`.database`'s schema). The query is treated as words, never as FTS syntax, so whatever
the model types is safe; "quoted phrases" are kept. One file gives at most a few passages of a
result list, so one long document cannot crowd out the rest, and a document that looks superseded
(:mod:`.dating`) ranks a little below a current one that matches about as well.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from imprint_desktop.core.workspace.dating import currency

#: Search diversity: at most this many passages of one file in one result list.
_PER_FILE = 3
#: A passage of a document that looks superseded ranks as if it matched this much less well: it
#: is still found, but a current document that matches about as well comes first.
SUPERSEDED_WEIGHT = 0.7
_MAX_QUERY_TERMS = 24
_STOPWORD_TEXT = """a an and are as at be by for from has have in is it its of on or that the
    this to was were what when where which who why how with do does did about into than then there
    these those"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_SEARCH = """
SELECT f.path, p.start_line, p.end_line, f.title, p.section, p.page, hit.rank, p.text,
    f.date, f.dated, f.superseded, p.place
FROM (SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?) AS hit
JOIN passages p ON p.id = hit.rowid
JOIN files f ON f.id = p.file_id
ORDER BY hit.rank
"""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked passage; ``score`` is BM25 (higher is better; times :data:`SUPERSEDED_WEIGHT`
    for a document that looks superseded), comparable within one search.

    ``date`` is its document's date (ISO), ``dated`` how it was found (``stated`` in the document,
    else ``modified`` time), ``superseded`` why the document looks superseded (empty when it looks
    current), ``place`` its named place ("slide 4", "sheet Revenue, rows 2-9") if it has one."""

    path: str
    start_line: int
    end_line: int
    title: str
    section: str
    page: int | None
    score: float
    text: str
    date: str = ""
    dated: str = ""
    superseded: str = ""
    place: str = ""

    @property
    def location(self) -> str:
        lines = f"lines {self.start_line}-{self.end_line}"
        if self.place:
            return f"{self.place}, {lines}"
        return lines if self.page is None else f"page {self.page}, {lines}"

    @property
    def currency(self) -> str:
        """ "dated 2026-02-10", "modified 2025-11-03; looks superseded: …" (see :mod:`.dating`)."""
        return currency(self.date, self.dated, self.superseded)


def fts_query(query: str) -> str | None:
    """``query`` as a safe FTS5 expression: its words (and "phrases") joined with OR.

    OR lets BM25 do the ranking — passages with more of the rarer words come first — so a long
    natural-language question still finds passages that share only a few of its words. Common
    function words are dropped unless nothing else is left.
    """
    phrases = [phrase for phrase in re.findall(r'"([^"]+)"', query) if re.search(r"\w", phrase)]
    words = re.findall(r"\w+", re.sub(r'"[^"]+"', " ", query).lower())
    content = [word for word in words if word not in _STOPWORDS] or words
    terms = list(dict.fromkeys([*phrases, *content]))[:_MAX_QUERY_TERMS]
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _score(rank: float, superseded: str) -> float:
    """BM25 as a score (higher is better), weighed down for a document that looks superseded."""
    return round(-rank * (SUPERSEDED_WEIGHT if superseded else 1.0), 4)


def best_passages(db: sqlite3.Connection, match: str, limit: int) -> list[SearchHit]:
    """The ``limit`` best passages for the FTS expression ``match`` (from :func:`fts_query`),
    best first, at most :data:`_PER_FILE` of one file."""
    rows = db.execute(_SEARCH, (match, limit * _PER_FILE)).fetchall()
    ranked = sorted(
        (
            SearchHit(path, start, end, title, section, page, _score(rank, facts[2]), text, *facts)
            for path, start, end, title, section, page, rank, text, *facts in rows
        ),
        key=lambda hit: -hit.score,
    )
    hits: list[SearchHit] = []
    per_file: dict[str, int] = {}
    for hit in ranked:
        if per_file.get(hit.path, 0) >= _PER_FILE:
            continue
        per_file[hit.path] = per_file.get(hit.path, 0) + 1
        hits.append(hit)
        if len(hits) == limit:
            break
    return hits
