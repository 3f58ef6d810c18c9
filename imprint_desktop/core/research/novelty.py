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

Memory is bounded: the store keeps at most :data:`MAX_FINGERPRINTS` 8-byte fingerprints (4 MB in
one sorted array, plus the same again in arrival order for forgetting the oldest first: 8 MB).
A reply would have to read far more than fits any context window to reach the bound.

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
    """Fingerprints of everything a reply has seen, bounded (see the module docstring).

    One sorted array answers "seen before?" with a single binary search per batch; new
    fingerprints are inserted in place. The same fingerprints are also kept in arrival order, in
    chunks, so that past the bound the oldest are forgotten first (in batches, down to 90 % of the
    bound, so forgetting is rare).
    """

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
        distinct = ordered[starts]
        positions = np.searchsorted(self._sorted, distinct)
        clipped = np.minimum(positions, max(self._sorted.size - 1, 0))
        if self._sorted.size:
            held = self._sorted[clipped] == distinct
        else:
            held = np.zeros(distinct.size, dtype=bool)
        # Back from distinct values to every fingerprint: group number of each, in input order.
        group = np.empty_like(order)
        group[order] = np.cumsum(starts) - 1
        known = held[group] | _seen_in_earlier_unit(units, order, starts)
        total = np.bincount(units)
        known_count = np.bincount(units, weights=known.astype(np.float64))
        repeated_unit = known_count >= CONTAINED * total
        repeated = np.bincount(unit_owner, weights=repeated_unit, minlength=len(texts))
        all_units = np.bincount(unit_owner, minlength=len(texts))
        fresh = ~held
        self._remember(distinct[fresh], positions[fresh])
        return [
            Novelty(int(count - again), int(again))
            for count, again in zip(all_units.tolist(), repeated.tolist(), strict=True)
        ]

    def _remember(self, fresh: Hashes, positions: npt.NDArray[np.intp]) -> None:
        """Insert sorted fingerprints not held yet; forget the oldest past the bound."""
        if fresh.size == 0:
            return
        self._sorted = np.insert(self._sorted, positions, fresh)
        self._chunks.append(fresh)
        if self._sorted.size > self.max_fingerprints:
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        target = int(self.max_fingerprints * 0.9)
        count = int(self._sorted.size)
        while count > target and len(self._chunks) > 1:
            count -= int(self._chunks.popleft().size)
        if count > target:  # one chunk alone is larger than the bound: keep part of it
            self._chunks.append(self._chunks.pop()[:target])
        self._sorted = np.sort(np.concatenate(list(self._chunks)))


def _seen_in_earlier_unit(
    units: npt.NDArray[np.int64], order: npt.NDArray[np.intp], starts: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Which fingerprints already occurred in an earlier unit of the same batch.

    ``order`` sorts the fingerprints stably and ``starts`` marks where each distinct value begins
    in that order, so the first position of every value is found without another sort.
    """
    group = np.cumsum(starts) - 1
    first = np.empty_like(order)
    first[order] = order[np.flatnonzero(starts)][group]
    earlier: npt.NDArray[np.bool_] = units[first] < units
    return earlier


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
    count = max(total - span, 0)
    shingles = np.zeros(count, dtype=np.uint64)
    for offset, factor in enumerate(_POSITION):
        shingles += word_hashes[offset : offset + count] * np.uint64(factor)
    inside = unit[:count] == unit[span : span + count]
    prints = [shingles[inside]]
    units = [unit[:count][inside]]

    # Units shorter than one shingle get one fingerprint of all their words.
    unit_sizes = np.bincount(unit)
    for short in np.flatnonzero(unit_sizes < SHINGLE_WORDS).tolist():
        value = 0
        for offset, member in enumerate(word_hashes[unit == short].tolist()):
            value = (value + member * _POSITION[offset]) & _MASK
        prints.append(np.array([value], dtype=np.uint64))
        units.append(np.array([short], dtype=np.int64))
    return np.concatenate(prints), np.concatenate(units), unit_owner
