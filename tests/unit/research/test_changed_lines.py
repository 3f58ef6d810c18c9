"""A short changed line at a changed address is no new evidence (issue 42, item 4).

Twelve search-results pages, each at a new address, the same three results rotated under a new
"generated" time and one short line that changes (the word searched for, a request id, a visitor
count): only the first page is new. The control pages each add a fact of their own and every one
of them is new. The pages are cut into evidence as ``fetch_url`` cuts them.
"""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.ledger import EvidenceLedger
from imprint_desktop.core.research.novelty import EvidenceStore
from imprint_desktop.core.tools.tool import EvidenceItem
from imprint_desktop.core.workspace.extract import split_lines
from imprint_desktop.core.workspace.html import html_page
from imprint_desktop.core.workspace.passages import split_passages
from tests.support.serp_pages import CHANGED_LINES, FACTS, WORDS, serp_page


def fetched(n: int, html: str) -> list[EvidenceItem]:
    """Page ``n`` as ``fetch_url`` makes evidence of it."""
    _title, text = html_page(html, main_only=True)
    url = f"http://127.0.0.1:8123/serp?q={WORDS[n]}"
    passages = split_passages(split_lines(text))
    return [EvidenceItem(url, f"part {i}", p.text) for i, p in enumerate(passages, start=1)]


def new_per_page(line_of: str, *, facts: bool = False) -> list[int]:
    ledger = EvidenceLedger()
    pages = [
        serp_page(n, CHANGED_LINES[line_of](n), fact=FACTS[n] if facts else "")
        for n in range(len(WORDS))
    ]
    return [len(ledger.record(fetched(n, page)).new) for n, page in enumerate(pages)]


@pytest.mark.parametrize("line_of", sorted(CHANGED_LINES))
def test_a_page_whose_only_change_is_a_short_line_is_new_once(line_of: str) -> None:
    assert new_per_page(line_of) == [1] + [0] * 11


@pytest.mark.parametrize("line_of", sorted(CHANGED_LINES))
def test_the_same_pages_with_a_new_fact_each_are_new_every_time(line_of: str) -> None:
    assert new_per_page(line_of, facts=True) == [1] * 12


def test_a_short_line_changed_in_one_word_is_repeated_at_any_length_up_to_the_bound() -> None:
    store = EvidenceStore()
    for words in range(3, 13):
        line = " ".join(f"w{words}x{index}" for index in range(words))
        assert store.add(line).is_new
        assert not store.add(f"{line.rsplit(' ', 1)[0]} changed").is_new, words
        assert not store.add(f"changed {line.split(' ', 1)[1]}").is_new, words


def test_two_changed_words_or_a_changed_length_are_new() -> None:
    store = EvidenceStore()
    store.add("You searched for: lamp")
    assert store.add("You searched for: lamp room").is_new
    assert store.add("We searched for: fog").is_new
    store.add("Open daily.")
    assert store.add("Open weekly.").is_new, "two words: one changed is half of them"


def test_a_uuid_is_one_word_that_changes_nothing() -> None:
    store = EvidenceStore()
    store.add("Request id 550e8400-e29b-41d4-a716-446655440000 served by node seven")
    assert not store.add(
        "Request id 0b5e1c2d-7f3a-4e9b-8c6d-2a1f0e9d8c7b served by node seven"
    ).is_new
    assert store.add("Request id for the harbour logbook scan, served by node seven").is_new
