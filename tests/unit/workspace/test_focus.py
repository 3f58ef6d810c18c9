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


ROSTER = (
    "# Principal keepers of the Harwick service\n\nA selection of principal keepers, from the "
    "service's staff books.\n\n| keeper | station | years | note |\n|---|---|---|---|\n"
    "| John Ferris | Gannet Point | 1857-1879 | first principal keeper of the service |\n"
    "| Thomas Orrin | Marrow Head | 1896-1911 | kept the 1903 gale log |\n"
    "| Agnes Ferris | Gannet Point | 1879-1880 | kept the light for a year after her husband's "
    "death |\n"
    "| Margaret Penhallow | Marrow Head | 1962-1991 | last principal keeper of Marrow Head |\n"
)


def test_a_table_cut_around_its_best_row_keeps_a_row_a_line_under_its_header() -> None:
    """A table run together on one line was read as one sentence: by the model, and by the
    grounding, which then found "Thomas Orrin" and "last principal keeper" in one "sentence"."""
    cut = focus(ROSTER, query_terms("last principal keeper Marrow Head"), 330)
    lines = cut.splitlines()
    assert lines[:3] == ["…", "| keeper | station | years | note |", "|---|---|---|---|"]
    assert (
        "| Margaret Penhallow | Marrow Head | 1962-1991 | last principal keeper of Marrow Head |"
        in lines
    )
    assert all(line.startswith("|") for line in lines[1:])


def test_sentences_cut_around_the_best_one_stay_on_one_line() -> None:
    text = "The lamp was lit. " * 10 + "Keepers rowed out to the rock. " + "Fog came down. " * 10
    cut = focus(text, query_terms("keepers rowed"), 80)
    assert "\n" not in cut and "Keepers rowed out to the rock." in cut
