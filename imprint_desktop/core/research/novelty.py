"""Is this evidence new? Fingerprints of normalized text, kept for the whole reply.

A research round is *progress* when it adds at least one piece of evidence that is not
substantially contained in what the reply has already seen (DESIGN §1). To make "the same" robust:

* Text is **normalized**: lower case, punctuation and white space folded away, and anything that
  looks like a timestamp (ISO dates and times, clock times, Unix epochs) replaced by one token, so a
  page that only changed its "fetched at" line is not new.
* Text is cut into **units**: paragraphs, each list item on its own (so reordering a list changes
  nothing), and long paragraphs in windows of :data:`UNIT_WORDS` words.
* Each unit becomes a set of **word shingles** (:data:`SHINGLE_WORDS` consecutive words, hashed;
  the store keeps 40 bits of each). A unit is *repeated* when at least :data:`CONTAINED` of its
  shingles were seen before, in any order, from any tool, round or worker. Result order, scores
  and the query that found a passage are never fingerprinted, so they cannot make old evidence
  look new.
* A **short line changed in one word** is repeated too: a unit of :data:`VARIANT_WORDS` words or
  fewer (at least :data:`VARIANT_MIN_WORDS`) whose words, but one, are those of a unit seen
  before, in the same places ("You searched for: fog" after "You searched for: lamp", "Visitors
  today: 1038" after "Visitors today: 1037"). Containment cannot see it: one changed word is a
  fifth of such a line's words and every shingle it has. Each such unit is also kept as one
  fingerprint per word, with that word left out. A UUID is one word ("uuid"), so "Request id
  <uuid>" changes nothing at all.

Speed: every tool result passes through here, so nothing runs per word in Python. The texts of a
batch are normalized as one string (a few C-level passes: ``lower``, one regex, ``translate``),
encoded to UTF-8 and cut into words with numpy. A word's hash is built from its bytes: words of up
to 16 bytes (nearly all of them) from two overlapping 8-byte loads and the length, longer words
from a polynomial over all their bytes; both are finished with a 64-bit mixer. Shingles combine
five word hashes with one odd multiplier per position, modulo 2**64. ``bench/bench_engine.py``
measures the throughput.

Memory is bounded: the store keeps at most :data:`MAX_FINGERPRINTS` 8-byte fingerprints (4 MB in
sorted arrays, plus the same again in arrival order for forgetting the oldest first) and a 1 MB
presence map: 9 MB in all (:data:`MAX_BYTES`). Merging sorted arrays and forgetting briefly need
a copy of what they merge on top of that (``bench/bench_engine.py`` prints the traced peak).
A reply would have to read far more than fits any context window to reach the bound.

Novelty is a heuristic for deciding when research stalls, not a judgement of truth: a new shingle
is taken for a seen one with a chance of at most one in two million (40 bits against a full store),
far below what could tip a unit's 80 %, and a tool result written to collide on purpose could make
itself look old, which only brings the patience stop a round nearer.
"""

from __future__ import annotations

import re
import string
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SHINGLE_WORDS = 5
CONTAINED = 0.8
UNIT_WORDS = 80
#: The longest unit (in words) that one changed word does not make new; past it, containment
#: judges alone. Two-word units ("open daily", "open weekly") differ in half their words.
VARIANT_WORDS = 12
VARIANT_MIN_WORDS = 3
MAX_FINGERPRINTS = 500_000
# One byte per slot of the presence map, addressed by the top _PRESENCE_BITS of a fingerprint.
_PRESENCE_BITS = 20
MAX_BYTES = MAX_FINGERPRINTS * 8 * 2 + (1 << _PRESENCE_BITS)

Hashes = npt.NDArray[np.uint64]
Indices = npt.NDArray[np.int64]

_MASK = (1 << 64) - 1
# One odd multiplier per shingle position, so "a b" and "b a" hash apart.
_POSITION = np.array(
    [(0x9E3779B97F4A7C15 * (2 * k + 1)) & _MASK for k in range(SHINGLE_WORDS)], dtype=np.uint64
)

# One odd multiplier per word place of a short unit, for its fingerprints with one word left out,
# and the value that stands for the word left out.
_VARIANT_POSITION = np.array(
    [(0xD6E8FEB86659FD93 * (2 * k + 1)) & _MASK for k in range(VARIANT_WORDS)], dtype=np.uint64
)
_LEFT_OUT = np.uint64(0x2545F4914F6CDD1D)
# Fingerprints with a word left out live apart from shingles: their unit's length is mixed in
# with this factor, then the whole is mixed once more.
_VARIANT_LENGTH = np.uint64(0x9FB21C651E98DF25)
_UUID = re.compile(
    r"(?<![0-9a-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-z])"
)
# Its middle, which starts with a literal the regex engine skips to at C speed; a UUID regex that
# starts with a class of letters tries at every letter a to f, several times slower than the rest
# of normalizing.
_UUID_MIDDLE = re.compile(r"-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-")

# A digit first lets the regex engine skip quickly to candidates.
_TIMESTAMP = re.compile(
    r"[0-9](?<![^\W_][0-9])"
    r"(?:[0-9]{3}-[0-9]{2}-[0-9]{2}(?:[t ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
    r"(?:z|[+-][0-9]{2}:?[0-9]{2})?)?"
    r"|[0-9]?:[0-9]{2}(?::[0-9]{2})?(?:\s?[ap]\.?m\b\.?)?"
    r"|[0-9]{9}(?:[0-9]{3})?)(?![0-9])"
)
# Control characters separate the batch: _TEXT between texts, _PIECE between units of a text.
# Every piece starts on a new line, so the list-marker pattern can begin with a literal newline,
# which lets the regex engine skip to candidates at C speed.
_PIECE = "\x01"
_TEXT = "\x02"
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")
# A list marker at the start of a line: the item becomes a piece of its own.
_LIST_MARKER = re.compile(r"\n[^\S\n]*(?:[-*+•]|[0-9]{1,3}[.)])[^\S\n]+")
# Punctuation and Unicode spaces become ASCII spaces (str.translate runs at C speed); control
# characters in the input become spaces too, so the separators above stay unambiguous.
_FOLD = str.maketrans(
    dict.fromkeys(
        string.punctuation
        + "“”‘’«»–—…·•"
        + "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
        + "\u200b\u2028\u2029\u202f\u205f\u3000\x85",
        " ",
    )
)
_CONTROL = str.maketrans(dict.fromkeys("\x00\x01\x02", " "))
# Word bytes are those above the ASCII space; every byte at or below it separates words.
_SPACE = 0x20
_LENGTH_FACTOR = np.uint64(0x9E3779B97F4A7C15)
_SECOND_FACTOR = np.uint64(0xC2B2AE3D27D4EB4F)
_BYTE_FACTOR = 0x100000001B3
# _KEEP[n] keeps the low n bytes of a little-endian 8-byte load.
_KEEP = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [_MASK], dtype=np.uint64)
# Within a batch, a fingerprint and its unit number share one sortable 64-bit key: the high 40 bits
# of the fingerprint (all the store keeps) and 24 bits of unit number.
_UNIT_BITS = np.uint64((1 << 24) - 1)
_PRINT_BITS = ~_UNIT_BITS
_BATCH_CHARS = 1 << 22
_PRESENCE_SHIFT = np.uint64(64 - _PRESENCE_BITS)


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

    "Seen before?" is answered first by a presence map (most new fingerprints stop there), then
    by binary searches in a few sorted arrays, each at most half the size of the one before: new
    fingerprints arrive as a small array, and the last two are merged while the last is at least
    half the size of the one before it, so every fingerprint is merged about log2(n) times and a
    round costs little however much the reply has read. The same fingerprints are kept in arrival
    order, in chunks, so that past the bound the oldest are forgotten first (in batches, down to
    90 % of the bound, so forgetting is rare).
    """

    def __init__(self, max_fingerprints: int = MAX_FINGERPRINTS) -> None:
        self.max_fingerprints = max_fingerprints
        self._levels: list[Hashes] = []
        self._chunks: deque[Hashes] = deque()
        # True where some held fingerprint has those top bits: most new fingerprints are found
        # absent here, with one memory read, and never reach the binary searches.
        self._present = np.zeros(1 << _PRESENCE_BITS, dtype=np.bool_)

    def __len__(self) -> int:
        """Fingerprints held now (never more than ``max_fingerprints`` after :meth:`add`)."""
        return sum(int(level.size) for level in self._levels)

    @property
    def nbytes(self) -> int:
        held = sum(level.nbytes for level in self._levels) + self._present.nbytes
        return int(held + sum(chunk.nbytes for chunk in self._chunks))

    def add(self, text: str) -> Novelty:
        """Judge one text against what was seen, then remember it."""
        return self.add_many([text])[0]

    def add_many(self, texts: Sequence[str]) -> list[Novelty]:
        """Judge several texts in one pass (earlier texts count as seen for later ones)."""
        batches = _batches(texts)
        if len(batches) == 1:
            return self._judge(texts)
        new = [0] * len(texts)
        repeated = [0] * len(texts)
        for owners, parts in batches:
            for owner, verdict in zip(owners, self._judge(parts), strict=True):
                new[owner] += verdict.new_units
                repeated[owner] += verdict.repeated_units
        return [Novelty(count, again) for count, again in zip(new, repeated, strict=True)]

    def _judge(self, texts: Sequence[str]) -> list[Novelty]:
        prints, units, unit_owner, variants, variant_units = _fingerprint(texts)
        if prints.size == 0:
            return [Novelty(0, 0) for _ in texts]
        known, key_units, fresh = self._seen(prints, units)
        total = np.bincount(key_units)
        known_count = np.bincount(key_units, weights=known, minlength=total.size)
        repeated_unit = known_count >= CONTAINED * total
        if variants.size:
            # A short unit is a changed line of one seen before when any of its fingerprints
            # with one word left out was seen.
            variant_known, variant_key_units, variant_fresh = self._seen(variants, variant_units)
            changed_line = np.bincount(
                variant_key_units, weights=variant_known, minlength=total.size
            )
            repeated_unit |= changed_line[: total.size] > 0
            fresh = _merge(fresh, variant_fresh)  # fingerprints of two kinds: apart
        repeated = np.bincount(unit_owner, weights=repeated_unit, minlength=len(texts))
        all_units = np.bincount(unit_owner, minlength=len(texts))
        self._remember(fresh)
        return [
            Novelty(int(count - again), int(again))
            for count, again in zip(all_units.tolist(), repeated.tolist(), strict=True)
        ]

    def _seen(
        self, prints: Hashes, units: Indices
    ) -> tuple[npt.NDArray[np.bool_], Indices, Hashes]:
        """For each of ``prints`` (of ``units``), in an order of their own: whether it was seen
        (held, or in an earlier unit of the batch), and its unit; and the sorted, distinct
        fingerprints not held yet."""
        # One sort of (fingerprint, unit) keys groups equal fingerprints with the earliest unit
        # first, which answers "seen in an earlier unit of this batch?" without an argsort.
        keys = (prints & _PRINT_BITS) | units.view(np.uint64)
        keys.sort()
        values = keys & _PRINT_BITS
        key_units = (keys & _UNIT_BITS).view(np.int64)
        starts = np.empty(keys.size, dtype=bool)
        starts[0] = True
        np.not_equal(values[1:], values[:-1], out=starts[1:])
        first_of_group = np.flatnonzero(starts)
        distinct = values[first_of_group]
        held = self._holds(distinct)
        group = np.cumsum(starts) - 1
        known = held[group] | (key_units > key_units[first_of_group][group])
        return known, key_units, distinct[~held]

    def _holds(self, distinct: Hashes) -> npt.NDArray[np.bool_]:
        """Which of the sorted, distinct fingerprints ``distinct`` the store holds."""
        maybe = np.flatnonzero(self._present[distinct >> _PRESENCE_SHIFT])
        held = np.zeros(distinct.size, dtype=bool)
        if maybe.size:
            candidates = distinct[maybe]
            found = np.zeros(candidates.size, dtype=bool)
            for level in self._levels:
                found |= _contains(level, candidates)
            held[maybe] = found
        return held

    def _remember(self, fresh: Hashes) -> None:
        """Keep sorted fingerprints not held yet; forget the oldest past the bound."""
        if fresh.size == 0:
            return
        self._chunks.append(fresh)
        self._present[fresh >> _PRESENCE_SHIFT] = True
        self._levels.append(fresh)
        while len(self._levels) > 1 and self._levels[-1].size * 2 >= self._levels[-2].size:
            last = self._levels.pop()
            self._levels[-1] = _merge(self._levels[-1], last)
        if len(self) > self.max_fingerprints:
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        target = int(self.max_fingerprints * 0.9)
        count = len(self)
        while count > target and len(self._chunks) > 1:
            count -= int(self._chunks.popleft().size)
        if count > target:  # one chunk alone is larger than the bound: keep part of it
            self._chunks.append(self._chunks.pop()[:target])
        self._levels = [np.sort(np.concatenate(list(self._chunks)))]
        self._present[:] = False
        self._present[self._levels[0] >> _PRESENCE_SHIFT] = True


def _batches(texts: Sequence[str]) -> list[tuple[list[int], list[str]]]:
    """``texts`` in consecutive batches whose unit numbers fit in :data:`_UNIT_BITS`.

    Each batch comes with the index of the text each of its parts belongs to. Normalizing never
    makes more words than there were characters, and a unit has at least one word, so a batch of
    at most :data:`_BATCH_CHARS` characters has fewer units than the unit bits can number. A longer
    text is judged in slices cut at white space, whose units all count for it (a paragraph that a
    slice boundary cuts becomes two units).
    """
    if sum(map(len, texts)) <= _BATCH_CHARS:
        return [(list(range(len(texts))), list(texts))]
    batches: list[tuple[list[int], list[str]]] = [([], [])]
    size = 0
    for index, text in enumerate(texts):
        for part in _slices(text):
            if size + len(part) > _BATCH_CHARS and batches[-1][1]:
                batches.append(([], []))
                size = 0
            batches[-1][0].append(index)
            batches[-1][1].append(part)
            size += len(part)
    return batches


def _slices(text: str) -> list[str]:
    """``text`` cut at white space into parts of at most :data:`_BATCH_CHARS` characters."""
    parts: list[str] = []
    while len(text) > _BATCH_CHARS:
        cut = max(text.rfind("\n", 0, _BATCH_CHARS), text.rfind(" ", 0, _BATCH_CHARS))
        cut = cut if cut > 0 else _BATCH_CHARS
        parts.append(text[:cut])
        text = text[cut:]
    parts.append(text)
    return parts


def _merge(first: Hashes, second: Hashes) -> Hashes:
    """One sorted array of two sorted ones (the stable sort finds the two runs and merges them)."""
    merged: Hashes = np.sort(np.concatenate((first, second)), kind="stable")
    return merged


def _contains(haystack: Hashes, needles: Hashes) -> npt.NDArray[np.bool_]:
    """Which of ``needles`` are in the sorted ``haystack``."""
    if haystack.size == 0:
        return np.zeros(needles.size, dtype=bool)
    positions = np.searchsorted(haystack, needles)
    np.minimum(positions, haystack.size - 1, out=positions)
    found: npt.NDArray[np.bool_] = haystack[positions] == needles
    return found


def normalize(text: str) -> str:
    """``text`` lower-cased, UUIDs and timestamps replaced by a token each, punctuation folded to
    spaces."""
    lowered = _without_uuids(text.lower())
    return _TIMESTAMP.sub(" timestamp ", lowered).translate(_FOLD)


def _without_uuids(text: str) -> str:
    """``text`` (lower case) with every UUID replaced by one token."""
    parts: list[str] = []
    done = 0
    for middle in _UUID_MIDDLE.finditer(text):
        start = middle.start() - 8
        found = _UUID.match(text, start) if start >= done else None
        if found is not None:
            parts += (text[done:start], " uuid ")
            done = found.end()
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _batch(texts: Sequence[str]) -> str:
    """All texts normalized as one string, with _TEXT between texts and _PIECE between units.

    Pieces are paragraphs, and list items with the lines that continue them.
    """
    joined = "\n" + f"{_TEXT}\n".join(texts)
    if joined.count(_TEXT) != len(texts) - 1 or _PIECE in joined or "\x00" in joined:
        joined = "\n" + f"{_TEXT}\n".join(text.translate(_CONTROL) for text in texts)
    joined = _BLANK_LINES.sub(f"\n{_PIECE}\n", joined)
    joined = _LIST_MARKER.sub(f"\n{_PIECE}", joined)
    return normalize(joined)


def _fingerprint(texts: Sequence[str]) -> tuple[Hashes, Indices, Indices, Hashes, Indices]:
    """Shingle fingerprints of a batch, the unit of each, the text owning each unit, and the
    fingerprints of short units with one word left out, with the unit of each."""
    # Eight zero bytes after the text let every word be read in 8-byte loads (see _words).
    padded = np.frombuffer(_batch(texts).encode() + bytes(8), dtype=np.uint8)
    data = padded[:-8]
    starts, word_hashes = _words(padded)
    empty = np.empty(0, dtype=np.int64)
    if starts.size == 0:
        return np.empty(0, dtype=np.uint64), empty, empty, np.empty(0, dtype=np.uint64), empty

    # Pieces end at separators; texts at the _TEXT separators only. Everything about pieces and
    # units is worked out per piece (thousands), and only then spread over the words (many more).
    total = int(starts.size)
    separators = np.flatnonzero(data <= ord(_TEXT))
    pieces = separators.size + 1
    size = np.empty(pieces, dtype=np.int64)
    size[:-1] = np.searchsorted(starts, separators)
    size[-1] = total
    size[1:] -= size[:-1].copy()
    piece_owner = np.zeros(pieces, dtype=np.int64)
    np.cumsum(data[separators] == ord(_TEXT), out=piece_owner[1:])
    # Windows of UNIT_WORDS words; a short tail joins the window before it.
    full, tail = np.divmod(size, UNIT_WORDS)
    windows = np.where(size == 0, 0, np.maximum(full + (tail >= UNIT_WORDS // 4), 1))
    last = np.cumsum(windows) - 1
    unit_size = np.full(int(last[-1]) + 1, UNIT_WORDS, dtype=np.int64)
    filled = windows > 0
    unit_size[last[filled]] = (size - UNIT_WORDS * (windows - 1))[filled]
    unit_owner = np.repeat(piece_owner, windows)
    unit = np.repeat(np.arange(unit_size.size), unit_size)

    span = SHINGLE_WORDS - 1
    count = max(total - span, 0)
    shingles = np.zeros(count, dtype=np.uint64)
    for offset, factor in enumerate(_POSITION):
        shingles += word_hashes[offset : offset + count] * factor
    inside = unit[:count] == unit[span : span + count]

    unit_first_word = np.cumsum(unit_size) - unit_size
    place = np.arange(total) - unit_first_word[unit]
    variants, variant_units = _left_out(word_hashes, unit, unit_size, place)
    # Units shorter than one shingle get one fingerprint of all their words.
    is_short = unit_size < SHINGLE_WORDS
    if not is_short.any():
        return shingles[inside], unit[:count][inside], unit_owner, variants, variant_units
    short_units = np.flatnonzero(is_short)
    in_short = is_short[unit]
    terms = word_hashes[in_short] * _POSITION[place[in_short]]
    short_prints = np.add.reduceat(
        terms, np.cumsum(unit_size[short_units]) - unit_size[short_units]
    )
    return (
        np.concatenate((shingles[inside], short_prints)),
        np.concatenate((unit[:count][inside], short_units)),
        unit_owner,
        variants,
        variant_units,
    )


def _left_out(
    word_hashes: Hashes, unit: Indices, unit_size: Indices, place: Indices
) -> tuple[Hashes, Indices]:
    """For every word of a unit of :data:`VARIANT_MIN_WORDS` to :data:`VARIANT_WORDS` words, the
    fingerprint of its unit with that word left out (and the unit's length), and its unit."""
    eligible = (unit_size >= VARIANT_MIN_WORDS) & (unit_size <= VARIANT_WORDS)
    if not eligible.any():
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    in_eligible = eligible[unit]
    words = word_hashes[in_eligible]
    places = place[in_eligible]
    owners = unit[in_eligible]
    terms = words * _VARIANT_POSITION[places]
    sizes = unit_size[eligible]
    whole = np.add.reduceat(terms, np.cumsum(sizes) - sizes)
    # Units are numbered in order, so the eligible units' words come unit by unit.
    whole_of_word = np.repeat(whole, sizes)
    lengths = np.repeat(sizes, sizes).astype(np.uint64)
    left_out = whole_of_word - terms + _LEFT_OUT * _VARIANT_POSITION[places]
    return _mix(left_out ^ lengths * _VARIANT_LENGTH), owners


def _words(padded: npt.NDArray[np.uint8]) -> tuple[Indices, Hashes]:
    """Where each word of ``padded`` (text, then eight zero bytes) starts, and its 64-bit hash."""
    size = padded.size - 8
    inside = np.zeros(size + 2, dtype=np.bool_)
    np.greater(padded[:size], _SPACE, out=inside[1:-1])
    # Word starts and ends alternate among the places where "inside a word" changes.
    changes = np.flatnonzero(inside[1:] != inside[:-1])
    starts = changes[0::2]
    lengths = changes[1::2] - starts
    if starts.size == 0:
        return starts, np.empty(0, dtype=np.uint64)
    # Eight-byte little-endian loads at any byte offset: a view with a one-byte stride.
    loads = np.ndarray((size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    head = loads[starts] & _KEEP[np.minimum(lengths, 8)]
    hashes = head ^ lengths.astype(np.uint64) * _LENGTH_FACTOR
    # Words of 9 to 16 bytes: a second load ending at the word's last byte covers the rest.
    over_8 = np.flatnonzero(lengths > 8)
    if over_8.size:
        tail = loads[starts[over_8] + lengths[over_8] - 8]
        hashes[over_8] = _mix(hashes[over_8]) ^ tail * _SECOND_FACTOR
    over_16 = np.flatnonzero(lengths > 16)
    if over_16.size:
        hashes[over_16] ^= _mix(_polynomial(padded, starts[over_16], lengths[over_16]))
    return starts, _mix(hashes)


def _polynomial(data: npt.NDArray[np.uint8], starts: Indices, lengths: Indices) -> Hashes:
    """A hash of all the bytes of each word (for the rare words longer than two loads)."""
    offsets = np.cumsum(lengths) - lengths
    place = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths)
    values = data[np.repeat(starts, lengths) + place].astype(np.uint64)
    powers = np.cumprod(np.full(int(lengths.max()), _BYTE_FACTOR, dtype=np.uint64))
    hashed: Hashes = np.add.reduceat(values * powers[place], offsets)
    return hashed


def _mix(values: Hashes) -> Hashes:
    """A 64-bit finalizer (xor-shift and multiply), so every input bit moves every output bit."""
    values = values ^ (values >> np.uint64(30))
    values *= np.uint64(0xBF58476D1CE4E5B9)
    values ^= values >> np.uint64(27)
    values *= np.uint64(0x94D049BB133111EB)
    values ^= values >> np.uint64(31)
    return values
