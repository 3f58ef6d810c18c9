"""Evidence novelty: what counts as new, and what only looks new."""

from __future__ import annotations

import random

from imprint_desktop.core.research.novelty import EvidenceStore, normalize

PARAGRAPH = (
    "The Harbour Light at Greyness Point was first lit in 1862 and converted to electric "
    "operation in 1938, when the keepers' cottages were turned into a small museum."
)
OTHER = (
    "Fog signals along the northern coast used compressed air sirens until the 1970s, after "
    "which electronic emitters with a range of two nautical miles replaced them."
)


def test_new_then_repeated() -> None:
    store = EvidenceStore()
    assert store.add(PARAGRAPH).is_new
    assert not store.add(PARAGRAPH).is_new


def test_case_space_and_punctuation_do_not_make_new_evidence() -> None:
    store = EvidenceStore()
    store.add(PARAGRAPH)
    shouted = PARAGRAPH.upper().replace(",", " ;").replace(" ", "   ")
    assert not store.add(shouted).is_new


def test_timestamps_do_not_make_new_evidence() -> None:
    store = EvidenceStore()
    store.add(f"Fetched 2026-11-30T10:00:00Z at 10:00. {PARAGRAPH}")
    assert not store.add(f"Fetched 2026-12-01T08:13:59+01:00 at 08:13 pm. {PARAGRAPH}").is_new
    assert not store.add(f"Retrieved 1764500000. {PARAGRAPH}").is_new


def test_years_are_facts_not_timestamps() -> None:
    assert normalize("Lit in 1938, at 10:30.").split() == ["lit", "in", "1938", "at", "timestamp"]


def test_list_order_does_not_make_new_evidence() -> None:
    store = EvidenceStore()
    items = [f"- {sentence}" for sentence in (PARAGRAPH, OTHER, "Keepers rowed out weekly.")]
    store.add("\n".join(items))
    assert not store.add("\n".join(reversed(items))).is_new


def test_a_genuinely_new_paragraph_is_new_among_known_ones() -> None:
    store = EvidenceStore()
    store.add(PARAGRAPH)
    assert store.add(f"{PARAGRAPH}\n\n{OTHER}").is_new
    novelty = store.add(f"{OTHER}\n\n{PARAGRAPH}")
    assert (novelty.new_units, novelty.repeated_units) == (0, 2)


def test_a_small_edit_of_a_long_passage_is_not_new() -> None:
    store = EvidenceStore()
    store.add(PARAGRAPH + " " + OTHER)
    assert not store.add(PARAGRAPH + " " + OTHER.replace("two", "three")).is_new


def test_duplicates_within_one_batch_count_once() -> None:
    store = EvidenceStore()
    first, second = store.add_many([PARAGRAPH, PARAGRAPH])
    assert first.is_new and not second.is_new


def test_short_texts_and_empty_texts() -> None:
    store = EvidenceStore()
    for words in ("one", "one two", "one two three", "one two three four", "a b c d e"):
        assert store.add(words).is_new and not store.add(words.upper()).is_new
    assert store.add("Open daily.").is_new
    assert not store.add("open daily").is_new
    empty = store.add("  \n\n !!! ")
    assert (empty.new_units, empty.repeated_units) == (0, 0)


def test_memory_is_bounded_and_oldest_is_forgotten_first() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{index}" for index in range(5000)]
    store = EvidenceStore(max_fingerprints=2000)
    first = " ".join(rng.choice(vocabulary) for _ in range(300))
    store.add(first)
    for _ in range(50):
        store.add(" ".join(rng.choice(vocabulary) for _ in range(300)))
        assert len(store) <= 2000
    assert store.add(first).is_new, "forgotten past the bound"
