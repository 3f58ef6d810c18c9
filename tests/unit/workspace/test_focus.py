"""Long passages are cut around what the query matched, not from their start."""

from __future__ import annotations

from imprint_desktop.core.workspace.passages import focus, query_terms

TEXT = (
    "# Curlew\n\nCurlew was delivered in December 1878 and hauled the opening train. She was worn "
    "out by 1931 and withdrawn, and spent forty years in a shed at the wharf. The preservation "
    "society restored her to working order in 1972, and she now runs on gala days.\n"
    "Merlin is the workhorse of the line."
)


def test_a_short_passage_is_kept_whole() -> None:
    assert focus(TEXT, query_terms("Curlew restored"), 10_000) == TEXT


def test_a_long_passage_keeps_the_sentence_that_matches_best() -> None:
    cut = focus(TEXT, query_terms("When was Curlew restored to working order?"), 120)
    assert "restored her to working order in 1972" in cut
    assert cut.startswith("…") and len(cut) <= 120


def test_words_are_matched_by_their_stem() -> None:
    cut = focus(TEXT, query_terms("restoration of the engine"), 110)
    assert "restored her" in cut


def test_without_a_match_the_start_is_kept() -> None:
    cut = focus(TEXT, query_terms("zeppelin"), 60)
    assert cut.startswith("# Curlew") and cut.endswith("…") and len(cut) <= 60
