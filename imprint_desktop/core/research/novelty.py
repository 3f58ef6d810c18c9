"""Is this evidence new? Fingerprints of normalized text, kept for the whole reply.

A research round is *progress* when it adds at least one piece of evidence that is not
substantially contained in what the reply has already seen (DESIGN §1). To make "the same" robust:

* Text is **normalized**: lower case, punctuation and white space folded away, and anything that
  looks like a timestamp (ISO dates and times, clock times, Unix epochs) replaced by one token, so a
  page that only changed its "fetched at" line is not new.
* Text is cut into **units**: paragraphs, each list item on its own (so reordering a list changes
  nothing), and long paragraphs in windows of :data:`UNIT_WORDS` words.
* Each unit becomes a set of **word shingles** (:data:`SHINGLE_WORDS` consecutive words, hashed to
  64 bits). A unit is *repeated* when at least :data:`CONTAINED` of its shingles were seen before,
  in any order, from any tool, round or worker. Result order, scores and the query that found a
  passage are never fingerprinted, so they cannot make old evidence look new.

Words are hashed once (Python caches a string's hash) and shingles are combined from those word
hashes with numpy, modulo 2**64, so the per-shingle work runs in C; that is what makes it fast
enough to run on every tool result (``bench/bench_engine.py`` measures it). ``hash`` of a string
differs between processes, which is fine: fingerprints live only as long as the reply.

Memory is bounded: the store keeps at most :data:`MAX_FINGERPRINTS` 8-byte fingerprints (8 MB of
sorted array, plus the same again in chunks for forgetting in order). Past the bound, the oldest
fingerprints are forgotten first; a reply would have to read far more than fits any context window
to get there.

Novelty is a heuristic for deciding when research stalls, not a judgement of truth.
"""

from __future__ import annotations

import re
import string
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

SHINGLE_WORDS = 5
CONTAINED = 0.8
UNIT_WORDS = 80
MAX_FINGERPRINTS = 500_000

Hashes = npt.NDArray[np.uint64]

_MASK = (1 << 64) - 1
# One odd multiplier per shingle position, so "a b" and "b a" hash apart.
_POSITION = [(0x9E3779B97F4A7C15 * (2 * k + 1)) & _MASK for k in range(SHINGLE_WORDS)]

# A digit first lets the regex engine skip quickly to candidates.
_TIMESTAMP = re.compile(
    r"[0-9](?<![^\W_][0-9])"
    r"(?:[0-9]{3}-[0-9]{2}-[0-9]{2}(?:[t ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
    r"(?:z|[+-][0-9]{2}:?[0-9]{2})?)?"
    r"|[0-9]?:[0-9]{2}(?::[0-9]{2})?(?:\s?[ap]\.?m\b\.?)?"
    r"|[0-9]{9}(?:[0-9]{3})?)(?![0-9])"
)
# A line that starts a list item; the literal newline first keeps the scan fast.
_LIST_LINE = re.compile(r"\n[ \t]*(?:[-*+•]|[0-9]{1,3}[.)])[ \t]")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|[0-9]{1,3}[.)])\s+")
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")
# Punctuation becomes a space (str.translate runs at C speed); \x01 is reserved as the separator.
_FOLD = str.maketrans(dict.fromkeys(string.punctuation + "“”‘’«»–—…·•", " "))
_SEPARATOR = "\x01"


@dataclass(frozen=True)
class Novelty:
    """How many units of a text were new and how many were seen before."""

    new_units: int
    repeated_units: int

    @property
    def is_new(self) -> bool:
        return self.new_units > 0


class EvidenceStore:
    """Fingerprints of everything a reply has seen, bounded (see the module docstring)."""

    def __init__(self, max_fingerprints: int = MAX_FINGERPRINTS) -> None:
        self.max_fingerprints = max_fingerprints
        self._sorted: Hashes = np.empty(0, dtype=np.uint64)
        self._chunks: deque[Hashes] = deque()

    def __len__(self) -> int:
        """Fingerprints held now (never more than ``max_fingerprints`` after :meth:`add`)."""
        return int(self._sorted.size)

    @property
    def nbytes(self) -> int:
        return int(self._sorted.nbytes + sum(chunk.nbytes for chunk in self._chunks))

    def add(self, text: str) -> Novelty:
        """Judge one text against what was seen, then remember it."""
        return self.add_many([text])[0]

    def add_many(self, texts: Sequence[str]) -> list[Novelty]:
        """Judge several texts in one pass (earlier texts count as seen for later ones)."""
        pieces, owners = _pieces(texts)
        prints, units, unit_owner = _fingerprint(pieces, owners)
        if prints.size == 0:
            return [Novelty(0, 0) for _ in texts]
        order = np.argsort(prints, kind="stable")
        ordered = prints[order]
        starts = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        known = self._known(prints, units, order, starts)
        total = np.bincount(units)
        known_count = np.bincount(units, weights=known.astype(np.float64))
        repeated_unit = known_count >= CONTAINED * total
        repeated = np.bincount(unit_owner, weights=repeated_unit, minlength=len(texts))
        all_units = np.bincount(unit_owner, minlength=len(texts))
        self._remember(ordered[starts])
        return [
            Novelty(int(count - again), int(again))
            for count, again in zip(all_units.tolist(), repeated.tolist(), strict=True)
        ]

    def _known(
        self,
        prints: Hashes,
        units: npt.NDArray[np.int64],
        order: npt.NDArray[np.intp],
        starts: npt.NDArray[np.bool_],
    ) -> npt.NDArray[np.bool_]:
        """Which fingerprints were seen before: in the store, or in an earlier unit of this batch.

        ``order`` sorts ``prints`` stably and ``starts`` marks where each distinct value begins in
        that order, so the first position of every value is found without another sort.
        """
        if self._sorted.size:
            where = np.searchsorted(self._sorted, prints)
            where[where == self._sorted.size] = 0
            in_store = self._sorted[where] == prints
        else:
            in_store = np.zeros(prints.size, dtype=bool)
        group = np.cumsum(starts) - 1
        first = np.empty_like(order)
        first[order] = order[np.flatnonzero(starts)][group]
        earlier = units[first] < units
        known: npt.NDArray[np.bool_] = in_store | earlier
        return known

    def _remember(self, distinct: Hashes) -> None:
        """Add sorted, distinct fingerprints; forget the oldest past the bound."""
        fresh = np.setdiff1d(distinct, self._sorted, assume_unique=True)
        if fresh.size == 0:
            return
        self._chunks.append(fresh)
        self._sorted = np.union1d(self._sorted, fresh)
        while self._sorted.size > self.max_fingerprints and len(self._chunks) > 1:
            self._sorted = np.setdiff1d(self._sorted, self._chunks.popleft(), assume_unique=True)
        if self._sorted.size > self.max_fingerprints:  # one chunk larger than the whole bound
            self._sorted = self._sorted[-self.max_fingerprints :]
            self._chunks = deque([self._sorted.copy()])


def normalize(text: str) -> str:
    """``text`` lower-cased, timestamps replaced by a token, punctuation folded to spaces."""
    return _TIMESTAMP.sub(" timestamp ", text.lower()).translate(_FOLD)


def _pieces(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """Paragraphs and list items of every text, with the index of the text each came from."""
    pieces: list[str] = []
    owners: list[int] = []
    for index, text in enumerate(texts):
        paragraphs = _BLANK_LINES.split(text.replace(_SEPARATOR, " "))
        if _LIST_ITEM.match(text) or _LIST_LINE.search(text):
            paragraphs = [item for paragraph in paragraphs for item in _list_items(paragraph)]
        pieces += paragraphs
        owners += [index] * len(paragraphs)
    return pieces, owners


def _list_items(paragraph: str) -> list[str]:
    items: list[str] = []
    for line in paragraph.splitlines():
        if _LIST_ITEM.match(line) or not items:
            items.append(_LIST_ITEM.sub("", line))
        else:
            items[-1] += " " + line
    return items


def _fingerprint(
    pieces: list[str], owners: list[int]
) -> tuple[Hashes, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Shingle fingerprints of all pieces, their unit numbers, and the text owning each unit."""
    split = [piece.split() for piece in normalize(_SEPARATOR.join(pieces)).split(_SEPARATOR)]
    counts = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
    total = int(counts.sum())
    if total == 0:
        empty = np.empty(0, dtype=np.int64)
        return np.empty(0, dtype=np.uint64), empty, empty
    # str hashes are cached on the strings and computed in C: the cheapest word hash there is.
    words = chain.from_iterable(split)
    word_hashes = np.fromiter(map(hash, words), dtype=np.int64, count=total).view(np.uint64)

    # Which piece each word is in, and its place within the piece.
    piece = np.repeat(np.arange(len(split), dtype=np.int64), counts)
    first_word = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(counts)[:-1]))
    place = np.arange(total, dtype=np.int64) - first_word[piece]
    size = counts[piece]
    # Windows of UNIT_WORDS words; a short tail joins the window before it.
    window = place // UNIT_WORDS
    last_full = np.maximum(size // UNIT_WORDS - 1, 0)
    short_tail = (size % UNIT_WORDS < UNIT_WORDS // 4) & (window > last_full)
    window = np.where(short_tail, last_full, window)
    # Units numbered in word order: a new unit wherever the piece or the window changes.
    key = piece * (1 << 32) + window
    unit = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(key[1:] != key[:-1])))
    unit_first_word = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    unit_owner = np.asarray(owners, dtype=np.int64)[piece[unit_first_word]]

    span = SHINGLE_WORDS - 1
    shingles = np.zeros(max(total - span, 0), dtype=np.uint64)
    for offset, factor in enumerate(_POSITION):
        shingles += word_hashes[offset : total - span + offset] * np.uint64(factor)
    inside = unit[: total - span] == unit[span:]
    prints = [shingles[inside]]
    units = [unit[: total - span][inside]]

    # Units shorter than one shingle get one fingerprint of all their words.
    unit_sizes = np.bincount(unit)
    for short in np.flatnonzero(unit_sizes < SHINGLE_WORDS).tolist():
        value = 0
        for offset, member in enumerate(word_hashes[unit == short].tolist()):
            value = (value + member * _POSITION[offset]) & _MASK
        prints.append(np.array([value], dtype=np.uint64))
        units.append(np.array([short], dtype=np.int64))
    return np.concatenate(prints), np.concatenate(units), unit_owner
