"""Search by meaning over an index's two sets of vectors: which embedder ranks which passages.

Every passage gets a vector from the quick embedder as it is indexed (:data:`.vectors.QUICK`: the
built-in one under ``workspace.embedder`` = ``auto``), and, later, one from the better embedder
(:data:`.vectors.BETTER`: the sentence encoder), which embeds them in the background while the
window is idle. A search by meaning ranks by the quick embedder alone until the better one has
embedded :data:`TAKES_OVER` of the passages; from then on:

* the better embedder's nearest among the passages it has embedded, and the quick embedder's
  nearest among the others (never a passage twice, never one passage by both);
* each list keeps what its own embedder counts as near: at least its floor
  (:attr:`~.embedding.Embedder.min_similarity`) and :data:`NEAREST_SHARE` of its nearest one;
* the two lists are merged by each passage's nearness on its own list's scale (how far above its
  embedder's floor it lies against its list's nearest: the embedders' similarities are not on one
  scale, the encoder's unrelated passages score 0.1, the built-in's 0.15);
* the ranking's weight in the fusion with the words' moves from the quick embedder's to the
  better one's in proportion to the passages the better one covers.

Once it covers the index, the search is exactly what choosing the better embedder alone gives.

Why wait for :data:`TAKES_OVER` rather than mix from the first batch: each list's nearest counts
as much as the other's, so while the better embedder covers a part of the index, a passage it
ranks first beside the query stands level with the quick embedder's first, however much nearer
one of them is; a small covered part puts its best, relevant or not, at the top. Measured by
``bench/bench_workspace.py --coverage`` (Flask corpus; recall@5 hybrid, paraphrases / held-out
paraphrases, 30 each, then how often the engine's own first search held the answer): the built-in
alone 22 / 23 (19 / 18); with the encoder over the first 25 %, 50 % and 75 % of the passages (the
order it embeds them), mixing from the first batch finds 22 / 22 (19 / 18), 24 / 22 (17 / 19) and
23 / 25 (18 / 19), waiting 22 / 23 (19 / 18) each time; at 91 % both 26 / 25 (18 / 19), at 100 %
26 / 25 (19 / 20). Mixing gains as much as it loses until most passages are covered (and is
noise-sized at 30 questions), so the simpler guarantee is kept: search is never worse than the
built-in embedder's while the encoder is at work, and the encoder is not even loaded for it. At
90 % a folder where a few files were added since ranks by the encoder, and by the built-in
embedder only what it has not embedded yet.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from imprint_desktop.core.workspace import vector_file
from imprint_desktop.core.workspace.embedding import Embedder
from imprint_desktop.core.workspace.vectors import BETTER, QUICK, LoadedVectors, VectorSearch

#: A search by meaning keeps the passages at least this share as near to the query as the
#: nearest one of their list (and above its embedder's own floor): a short query that one passage
#: matches well does not bring along the passages that share a stray token with it. Measured by
#: ``bench/bench_workspace.py``: recall unchanged.
NEAREST_SHARE = 0.5
#: The share of the passages the better embedder must have embedded before it ranks them (and the
#: quick one only the rest); below it the quick embedder ranks them all (see the module's
#: docstring for why). ``bench/bench_workspace.py --coverage`` measures it against 0.
TAKES_OVER = 0.9


def _made_up(rng: random.Random) -> str:
    """A word of no language: consonant-vowel syllables ending in a consonant."""
    syllables = rng.randint(2, 4)
    word = "".join(
        rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(syllables)
    )
    return word + rng.choice("kqxtz")


#: Made-up words and pairs of them, always the same, against which a search by meaning with no
#: word in the documents is measured (:meth:`MeaningSearch._alone_floor`).
PROBES = tuple(
    " ".join(_made_up(rng) for _ in range(1 + number % 2))
    for rng in [random.Random(1857)]
    for number in range(24)
)
#: How much nearer than the nearest made-up word a passage found by meaning alone must be.
PROBE_MARGIN = 0.005


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which embedders serve a search by meaning: ``quick`` every passage, and ``better`` (when
    there is one) ``better_done`` of the ``total`` passages, which it ranks instead."""

    quick: str
    better: str
    better_done: int
    total: int

    @property
    def served_by(self) -> str:
        """The embedder whose ranking a search by meaning takes: the better one once it covers
        :data:`TAKES_OVER` of the passages (the quick one ranks the rest)."""
        return self.better if self._taken_over else self.quick

    @property
    def _taken_over(self) -> bool:
        return bool(self.better) and self.better_done >= max(1, TAKES_OVER * self.total)

    def describe(self) -> str:
        """In words: "all-minilm-l6-v2 for 850 of 892 passages, wordllama-… for the rest"."""
        if not self.better or self.better_done == 0 or self.total == 0:
            return self.quick or "none"
        if self.better_done >= self.total:
            return self.better
        if self._taken_over:
            return (
                f"{self.better} for {self.better_done:,} of {self.total:,} passages, "
                f"{self.quick} for the rest"
            )
        return (
            f"{self.quick} ({self.better} has embedded {self.better_done:,} of "
            f"{self.total:,} passages, and ranks them from {TAKES_OVER:.0%})"
        )


class MeaningSearch:
    """The passages nearest a query over the two sets of one index database's vectors."""

    def __init__(self, db_path: Path) -> None:
        self._quick = VectorSearch(vector_file.path_for(db_path, QUICK.kept_suffix), QUICK)
        self._better = VectorSearch(vector_file.path_for(db_path, BETTER.kept_suffix), BETTER)
        #: Each embedder's floor for the set of vectors it was measured on (held, so that a set
        #: loaded anew is never taken for it).
        self._floors: dict[str, tuple[LoadedVectors, float]] = {}
        self._floors_lock = threading.Lock()

    def _alone_floor(self, embedder: Embedder, loaded: LoadedVectors) -> float:
        """The floor of a search by meaning when no word of the query is in the documents: just
        above the nearest that made-up words (:data:`PROBES`) come to this set of vectors, never
        above the embedder's own calibration (``alone_similarity``) nor below its floor. Measured
        once per set of vectors (a set that changes is loaded anew)."""
        with self._floors_lock:
            measured = self._floors.get(embedder.name)
        if measured is not None and measured[0] is loaded:
            return measured[1]
        nearest = [loaded.nearest(embedder.embed_query(probe), 1) for probe in PROBES]
        made_up = max((found[0][1] for found in nearest if found), default=0.0)
        floor = max(embedder.min_similarity, min(embedder.alone_similarity, made_up + PROBE_MARGIN))
        with self._floors_lock:
            self._floors[embedder.name] = (loaded, floor)
        return floor

    def nearest(
        self,
        db: sqlite3.Connection,
        query: str,
        count: int,
        quick: Embedder,
        better: Embedder | None,
        *,
        alone: bool = False,
    ) -> tuple[list[tuple[int, float]], float]:
        """Up to ``count`` passage ids nearest ``query`` with their nearness (:func:`merged`),
        nearest first, and the ranking's weight in the fusion (see the module's docstring).
        ``better`` is None when there is no better embedder, or its set holds nothing yet.
        ``alone``: no word of the query is in the documents, so each embedder's floor is its
        :attr:`~.embedding.Embedder.alone_similarity`. Raises
        :class:`~imprint_desktop.core.errors.EmbedderError` when an embedder cannot embed."""
        lists: list[tuple[list[tuple[int, float]], float]] = []
        quick_set = self._quick.loaded(db, quick.name)
        covered = np.zeros(0, dtype=np.int64)
        share = 0.0
        if better is not None:
            better_set = self._better.loaded(db, better.name)
            share = min(1.0, len(better_set.ids) / max(len(quick_set.ids), 1))
            if not len(better_set.ids) or share < TAKES_OVER:
                share = 0.0  # the quick embedder alone, as if there were no better one yet
            else:
                covered = np.sort(better_set.ids)
                vector = better.embed_query(query)
                if vector.any():
                    floor = (
                        self._alone_floor(better, better_set) if alone else better.min_similarity
                    )
                    lists.append((better_set.nearest(vector, count), floor))
        if share < 1.0:
            vector = quick.embed_query(query)
            if vector.any():
                floor = self._alone_floor(quick, quick_set) if alone else quick.min_similarity
                lists.append((quick_set.nearest(vector, count, covered), floor))
        weight = quick.fusion_weight
        if better is not None and share:
            weight = share * better.fusion_weight + (1 - share) * quick.fusion_weight
        return merged(lists, count), weight


def merged(
    lists: list[tuple[list[tuple[int, float]], float]], count: int
) -> list[tuple[int, float]]:
    """Rankings of different embedders, each (pairs of passage id and similarity, nearest first;
    the embedder's floor), as one list of (passage id, nearness), nearest first: what each keeps
    (its floor, :data:`NEAREST_SHARE` of its nearest), its nearness how far above the floor it
    lies against its own list's nearest (1 for the nearest, 0 at the floor: the scale
    :func:`~.search.fuse` adds to the words'); at most ``count``."""
    ranked: list[tuple[float, int, int]] = []
    for order, (nearest, floor) in enumerate(lists):
        if not nearest or nearest[0][1] <= 0:
            continue
        top = nearest[0][1]
        kept = max(floor, NEAREST_SHARE * top)
        span = max(top - floor, 1e-9)
        ranked.extend(
            ((score - floor) / span, order, passage) for passage, score in nearest if score >= kept
        )
    ranked.sort(key=lambda item: (-item[0], item[1]))
    return [(passage, nearness) for nearness, _, passage in ranked[:count]]
