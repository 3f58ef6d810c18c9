"""Evidence novelty: what counts as new, and what only looks new."""

from __future__ import annotations

import random
import re

import pytest

from imprint_desktop.core.research import novelty
from imprint_desktop.core.research.novelty import (
    CONTAINED,
    SHINGLE_WORDS,
    UNIT_WORDS,
    VARIANT_MIN_WORDS,
    VARIANT_WORDS,
    EvidenceStore,
    normalize,
)

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


def test_long_words_that_differ_only_in_the_middle_are_different() -> None:
    store = EvidenceStore()
    for length in (12, 16, 17, 40):  # two overlapping loads, and the polynomial past 16 bytes
        words = [f"a{index:02d}" + "x" * (length - 4) + "b" for index in range(8)]
        store.add(" ".join(words))
        changed = [word[: length // 2] + "y" + word[length // 2 + 1 :] for word in words]
        assert store.add(" ".join(changed)).is_new, length


def test_unicode_spaces_and_control_characters_separate_words() -> None:
    store = EvidenceStore()
    store.add("The museum is open daily from spring to autumn.")
    assert not store.add("The\u00a0museum is\u3000open\u2009daily from\tspring to\x00autumn").is_new
    assert not store.add("the museum\x01is open\x02daily from spring to autumn").is_new


def test_a_text_longer_than_one_batch_is_judged_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(novelty, "_BATCH_CHARS", 300)
    long_text = "\n\n".join([PARAGRAPH, OTHER, "Keepers rowed out to the light every week."])
    assert len(long_text) > 300
    store = EvidenceStore()
    first, short = store.add_many([long_text, "Fog came in from the east."])
    # One verdict per text; the slice boundary cut one of the paragraphs into two units.
    assert first.new_units == 4 and first.repeated_units == 0
    assert short.new_units == 1
    other, again = store.add_many(["Something else entirely, said nobody.", long_text])
    assert other.is_new
    assert (again.new_units, again.repeated_units) == (0, 4)


def _reference_units(text: str) -> list[list[str]]:
    """Units of ``text`` by the rules in the module docstring, in plain Python."""
    units: list[list[str]] = []
    for paragraph in re.split(r"\n[ \t\r\f\v]*\n", text):
        pieces: list[str] = []
        for line in paragraph.split("\n"):
            marker = re.match(r"[^\S\n]*(?:[-*+•]|[0-9]{1,3}[.)])[^\S\n]+", line)
            if marker or not pieces:
                pieces.append(line[marker.end() :] if marker else line)
            else:
                pieces[-1] += "\n" + line
        for piece in pieces:
            words = [word for word in re.split(r"[\x00-\x20]+", normalize(piece)) if word]
            if not words:
                continue
            full, tail = divmod(len(words), UNIT_WORDS)
            windows = max(full + (tail >= UNIT_WORDS // 4), 1)
            for window in range(windows):
                end = (window + 1) * UNIT_WORDS if window < windows - 1 else len(words)
                units.append(words[window * UNIT_WORDS : end])
    return units


def _reference_shingles(words: list[str]) -> list[tuple[str, ...]]:
    if len(words) < SHINGLE_WORDS:
        return [tuple(words)]
    return [tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)]


def _reference_left_out(words: list[str]) -> list[tuple[object, ...]]:
    """A short unit with each of its words left out in turn (a changed line, issue 42)."""
    if not VARIANT_MIN_WORDS <= len(words) <= VARIANT_WORDS:
        return []
    return [
        ("left out", place, *words[:place], None, *words[place + 1 :])
        for place in range(len(words))
    ]


class _ReferenceStore:
    """The same judgement with exact sets of word tuples: slow, obviously right, unbounded."""

    def __init__(self) -> None:
        self.seen: set[tuple[object, ...]] = set()

    def add_many(self, texts: list[str]) -> list[tuple[int, int]]:
        verdicts = []
        batch_seen: set[tuple[object, ...]] = set()
        for text in texts:
            new = repeated = 0
            for unit in _reference_units(text):
                shingles = _reference_shingles(unit)
                known = sum(s in self.seen or s in batch_seen for s in shingles)
                left_out = _reference_left_out(unit)
                changed_line = any(v in self.seen or v in batch_seen for v in left_out)
                if known >= CONTAINED * len(shingles) or changed_line:
                    repeated += 1
                else:
                    new += 1
                batch_seen.update(shingles)
                batch_seen.update(left_out)
            verdicts.append((new, repeated))
        self.seen |= batch_seen
        return verdicts


def test_the_vectorized_store_agrees_with_a_plain_reference() -> None:
    rng = random.Random(11)
    vocabulary = [f"w{index}" for index in range(40)] + [
        "Ünïcode", "naïve", "x" * 20, "keeper's", "2026-11-30T10:00:00Z", "10:30 pm", "1938",
        "- ", "* ", "12. ", "• ", "\n", "\n\n", "\r\n", "\t", "   ", "!!!", "a\u00a0b", "§",
        "internationalization", "internationalisation", "abcdefghij", "abcdefghik",
    ]  # fmt: skip
    for _ in range(400):
        store, reference = EvidenceStore(), _ReferenceStore()
        pool: list[str] = []
        for _ in range(4):
            texts = []
            for _ in range(rng.randint(1, 4)):
                if pool and rng.random() < 0.3:
                    texts.append(rng.choice(pool))  # the same text again, for repeats
                else:
                    length = rng.choice([0, 3, 8, 30, 120])
                    texts.append(" ".join(rng.choice(vocabulary) for _ in range(length)))
            pool += texts
            got = [(v.new_units, v.repeated_units) for v in store.add_many(texts)]
            assert got == reference.add_many(texts), texts


def test_evidence_as_text_says_how_each_document_stands() -> None:
    """The fallback and section results show a passage's date and superseded mark, as the
    search result did, so an answer written from them can prefer the current document."""
    from imprint_desktop.core.research.ledger import EvidenceLedger
    from imprint_desktop.core.tools.tool import EvidenceItem

    ledger = EvidenceLedger()
    ledger.record(
        [
            EvidenceItem(
                "brief.docx", "lines 5-7", "The price is 56,000.", "Brief", "dated 2026-02"
            ),
            EvidenceItem("notes.md", "lines 1-2", "Nothing about prices here at all."),
        ]
    )
    text = ledger.as_text()
    assert "[1] brief.docx, lines 5-7 (dated 2026-02):\nThe price is 56,000." in text
    assert "[2] notes.md, lines 1-2:\n" in text


def test_listed_documents_that_differ_in_one_word_are_each_new() -> None:
    """Found replaying a real trace (tests/data/traces/server-share-00): "Budget (230 bytes)" of
    finance/budget-2026.md was judged a repeat of "Budget (219 bytes)" of budget-2025.md, a
    short line changed in one word; the same document listed again is still a repeat."""
    from imprint_desktop.core.research.ledger import LISTING, EvidenceLedger
    from imprint_desktop.core.tools.tool import EvidenceItem

    ledger = EvidenceLedger()
    first = ledger.record([EvidenceItem("finance/budget-2025.md", LISTING, "Budget (219 bytes)")])
    second = ledger.record([EvidenceItem("finance/budget-2026.md", LISTING, "Budget (230 bytes)")])
    again = ledger.record([EvidenceItem("finance/budget-2026.md", LISTING, "Budget (230 bytes)")])
    assert (len(first.new), len(second.new), len(again.new)) == (1, 1, 0)


def test_two_documents_alike_but_for_their_figures_are_each_new() -> None:
    """A year's report beside last year's, in the same words with other figures: two places,
    not one read again (a page's address with a changed number is one place)."""
    from imprint_desktop.core.research.ledger import EvidenceLedger
    from imprint_desktop.core.tools.tool import EvidenceItem

    text = "Leakage averaged {} megalitres a day, against a target of {}."
    ledger = EvidenceLedger()
    first = ledger.record([EvidenceItem("reports/2023.md", "lines 4-5", text.format(41, 43))])
    second = ledger.record([EvidenceItem("reports/2024.md", "lines 4-5", text.format(39, 42))])
    page, counter = "https://example.org/stats?visit={}", "The stats page has had {} visits."
    third = ledger.record([EvidenceItem(page.format(1), "page", counter.format(1017))])
    fourth = ledger.record([EvidenceItem(page.format(2), "page", counter.format(1018))])
    assert [len(judged.new) for judged in (first, second, third, fourth)] == [1, 1, 1, 0]
