"""Ranked passage search: whatever the model types, as words ranked by BM25, fused with meaning.

Search runs on SQLite FTS5 with BM25 ranking (title and section words weigh double: the ``rank``
set in :mod:`.database`'s schema); :mod:`.keyword_rank` finds the best rows without scoring those
it can show could not be among them. The query is treated as words, never as FTS syntax, so whatever
the model types is safe; "quoted phrases" are kept. One file gives at most a few passages of a
result list, so one long document cannot crowd out the rest, and a document that looks superseded
(:mod:`.dating`) ranks a little below a current one that matches about as well.

Words are matched as written and by their stems ("russets" finds "Russet", "picked" finds
"picking": FTS5's Porter stemmer, English endings); a stem-only match counts
:data:`STEM_WEIGHT` of an exact one, so the exact word still ranks first (:func:`keyword_scores`).
A row that shares only words found in more than half the passages scores about 0 in BM25: where
other rows match the query's rarer words, it did not match, and is left out (:data:`MATCHED`)
rather than ranked as if it had.

A hybrid search (the default everywhere) ranks the passages twice — by their words (BM25) and by
what they mean (the vectors of :mod:`.vectors`) — and fuses the two by their scores
(:func:`fuse`): each half's scores are scaled so that its best match is 1 (BM25 by its best, a
similarity by how far above the embedder's floor it is), the meaning half weighed by its
embedder's ``fusion_weight``, and a passage's score is the sum. Measured against reciprocal-rank
fusion on every question set of the benches (Flask's own words, paraphrases, translations and
held-out paraphrases; the railway, utility and document-share questions), with both embedders:
recall@5 159 against 153 of 172 with the built-in embedder, 163 against 161 with the sentence
encoder, and the three passages before the model as often or more. Rank fusion gave a row that
one half ranked 40th nearly the credit of one it ranked 2nd, so what one half found first was
pushed out by the other half's also-rans; scores keep "clearly better" meaning better.
"""

from __future__ import annotations

import enum
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imprint_desktop.core.workspace.dating import currency
from imprint_desktop.core.workspace.keyword_rank import best_by_words
from imprint_desktop.core.workspace.query_words import function_words

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


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked passage; ``score`` (higher is better) is comparable within one search only: BM25
    in a keyword search (times :data:`SUPERSEDED_WEIGHT` for a document that looks superseded),
    the fused score (:func:`fuse`) in the others.

    ``date`` is its document's date (ISO), ``dated`` how it was found (:class:`.dating.How`: near
    its title, labelled, in its front matter or properties, in its text, else its ``modified``
    time), ``superseded`` why the document looks superseded (empty when it looks
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
        """ "dated 2026-10-02, stated near its title", "modified 2025-11-03; looks superseded: …"
        (see :mod:`.dating`)."""
        return currency(self.date, self.dated, self.superseded)


def fts_terms(query: str) -> list[str]:
    """``query``'s words (and "phrases") as safe FTS5 strings, each once.

    Searched joined with OR (:func:`fts_query`), which lets BM25 do the ranking — passages with
    more of the rarer words come first — so a long natural-language question still finds passages
    that share only a few of its words. Common function words, and those of the language the
    query is written in (:func:`.query_words.function_words`: a question searched as written), are
    dropped unless nothing else is left.
    """
    phrases = [phrase for phrase in re.findall(r'"([^"]+)"', query) if re.search(r"\w", phrase)]
    words = re.findall(r"\w+", re.sub(r'"[^"]+"', " ", query).lower())
    stop = _STOPWORDS | function_words(words)
    content = [word for word in words if word not in stop] or words
    terms = list(dict.fromkeys([*phrases, *content]))[:_MAX_QUERY_TERMS]
    return ['"' + term.replace('"', '""') + '"' for term in terms]


def fts_query(query: str) -> str | None:
    """``query`` as a safe FTS5 expression: its :func:`fts_terms` joined with OR; None when it has
    no words."""
    return " OR ".join(fts_terms(query)) or None


def _currency_weight(superseded: str) -> float:
    """A document that looks superseded ranks a little below a current one that matches about
    as well, in every ranking."""
    return SUPERSEDED_WEIGHT if superseded else 1.0


def per_file(limit: int) -> int:
    """At most this many passages of one file in a result of ``limit``: :data:`_PER_FILE`, and
    fewer in a short result — one each in up to four passages, so that the engine's three
    passages before a small model come from three documents. Measured on the Flask paraphrases
    (``bench/bench_workspace.py``): three documents hold the answering one 25 and 23 times of 30
    (own and held-out wordings, with the sentence encoder) where two documents held it 22 and 22,
    19 and 21 times against 19 and 18 with the built-in embedder; where a fact sits in the
    passages before the model, on the railway, utility and document-share questions, as often.
    Five passages come from three documents at least, eight from three."""
    return max(1, min(_PER_FILE, (limit - 1) // 2))


def _best_first(ranked: list[SearchHit], limit: int) -> list[SearchHit]:
    """``ranked`` best first, at most ``limit``, at most :func:`per_file` of one file."""
    hits: list[SearchHit] = []
    per_file_cap = per_file(limit)
    per_file_count: dict[str, int] = {}
    for hit in sorted(ranked, key=lambda hit: -hit.score):
        if per_file_count.get(hit.path, 0) >= per_file_cap:
            continue
        per_file_count[hit.path] = per_file_count.get(hit.path, 0) + 1
        hits.append(hit)
        if len(hits) == limit:
            break
    return hits


def best_passages(db: sqlite3.Connection, terms: Sequence[str], limit: int) -> list[SearchHit]:
    """The ``limit`` best passages by their words for ``terms`` (from :func:`fts_terms`; scored
    by :func:`keyword_scores`), best first, at most :func:`per_file` of one file."""
    ranked = keyword_scores(db, terms, limit * _PER_FILE)
    rows = _passages(db, [passage for passage, _ in ranked])
    hits = []
    for passage, matched in ranked:
        row = rows.get(passage)
        if row is not None:
            path, start, end, title, section, page, text, *facts = row
            score = round(matched * _currency_weight(facts[2]), 4)
            hits.append(SearchHit(path, start, end, title, section, page, score, text, *facts))
    return _best_first(hits, limit)


#: A stem-only match ("russets" for "Russet") counts this share of an exact match's BM25.
#: Measured on the benches' question sets: the words half alone put the answering document among
#: its three passages for 145 questions of 172 with stems at full weight, 143 at half, 141
#: without; fused, the weight changed one or two either way. Half keeps the exact word first.
STEM_WEIGHT = 0.5
#: A row scoring less than this by its words did not match when another did: it shares only words
#: that more than half the passages hold, which FTS5's BM25 scores about 0 (an IDF of 1e-6 a word).
MATCHED = 1e-3


def keyword_scores(
    db: sqlite3.Connection, terms: Sequence[str], count: int
) -> list[tuple[int, float]]:
    """(passage id, score) of the ``count`` best passages by their words, best first: BM25 of the
    words as written plus :data:`STEM_WEIGHT` of BM25 of their stems. Rows that did not match
    while others did (:data:`MATCHED`) are left out."""
    scores = {passage: -rank for passage, rank in best_by_words(db, terms, count)}
    for passage, rank in best_by_words(db, terms, count, "passages_stems"):
        scores[passage] = scores.get(passage, 0.0) + STEM_WEIGHT * -rank
    ranked = sorted(scores.items(), key=lambda item: -item[1])[:count]
    if ranked and ranked[0][1] >= MATCHED:
        # Some passage holds a word that tells passages apart: those that hold only words most
        # passages have did not match. (When none does, as in a small folder about one thing,
        # the common words are all there is, and they rank.)
        ranked = [(passage, score) for passage, score in ranked if score >= MATCHED]
    return ranked


class SearchMode(enum.StrEnum):
    """What a search ranks by: words, meaning, or both fused (the default)."""

    KEYWORD = "keyword"
    MEANING = "meaning"
    HYBRID = "hybrid"


_PASSAGES = """
SELECT p.id, f.path, p.start_line, p.end_line, f.title, p.section, p.page, p.text,
    f.date, f.dated, f.superseded, p.place
FROM passages p JOIN files f ON f.id = p.file_id WHERE p.id IN ({marks})
"""


def candidates(limit: int) -> int:
    """How many passages each ranking offers the fusion for a result of ``limit``."""
    return max(limit * _PER_FILE * 2, 30)


def quotes_words(query: str) -> bool:
    """Whether ``query`` holds a "quoted phrase": the person wants those words, so meaning may
    reorder the passages that have them but adds none."""
    return any(re.search(r"\w", phrase) for phrase in re.findall(r'"([^"]+)"', query))


def fuse(
    by_words: Sequence[tuple[int, float]],
    by_meaning: Sequence[tuple[int, float]],
    meaning_weight: float,
) -> list[tuple[int, float]]:
    """Passage ids with their fused scores, best first (ties: first seen first).

    ``by_words`` are (id, score) by :func:`keyword_scores`, best first, scaled here by the best;
    ``by_meaning`` (id, nearness) of the passages that passed their embedder's floor, nearness
    already on the same scale: 1 for the nearest, 0 at the embedder's floor
    (:func:`.meaning.merged`). The meaning half is weighed by ``meaning_weight``. What neither
    half matched gets nothing."""
    scores: dict[int, float] = {}
    if by_words:
        best = by_words[0][1]
        for passage, score in by_words:
            scores[passage] = score / best
    for passage, nearness in by_meaning:
        scores[passage] = scores.get(passage, 0.0) + meaning_weight * nearness
    return sorted(scores.items(), key=lambda item: -item[1])


def passages_by_score(
    db: sqlite3.Connection, scored: Sequence[tuple[int, float]], limit: int
) -> list[SearchHit]:
    """The passages of ``scored`` (id, score; best first) as hits: at most ``limit``, at most
    :func:`per_file` of one file."""
    scored = scored[: limit * _PER_FILE * 4]
    if not scored or limit < 1:
        return []
    rows = _passages(db, [passage for passage, _ in scored])
    ranked: list[SearchHit] = []
    for passage, score in scored:
        row = rows.get(passage)
        if row is None:  # deleted since it was ranked
            continue
        path, start, end, title, section, page, text, *facts = row
        weighed = round(score * _currency_weight(facts[2]), 6)
        ranked.append(SearchHit(path, start, end, title, section, page, weighed, text, *facts))
    return _best_first(ranked, limit)


def _passages(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """The rows of the passages ``ids`` (those not deleted since), by id: path, start and end
    line, title, section, page, text, date, dated, superseded, place."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {row[0]: row[1:] for row in db.execute(_PASSAGES.format(marks=marks), list(ids))}
