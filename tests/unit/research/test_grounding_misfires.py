"""Right answers and open questions the grounding must leave alone (found in the window)."""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.grounding import PassageText, ground, unmentioned

TOWER = PassageText(
    2,
    "## The tower\n\n- Lit: 1 November 1857.\n- Engineer: Elias Brandt.\n"
    "- Tower: round granite tower, 31 metres tall, painted white with one red band.\n",
    "stations/gannet-point.md",
    "Gannet Point lighthouse",
)
SEQUENCE = PassageText(
    3,
    "## The building sequence\n\n| year | work |\n|---|---|\n"
    "| 1854 | Old Quay harbour light, a cast-iron lantern on the quay wall |\n"
    "| 1857 | Gannet Point lighthouse lit on 1 November |\n"
    "| 1863 | Carrick Spit light, a screw-pile structure on the sand spit |\n",
    "history/founding-1852.md",
    "Founding",
)
ENGINEER = PassageText(
    1,
    "## The first engineer\n\nThe commissioners appointed **Elias Brandt** as engineer in October "
    "1852. Brandt had trained on\ncanal works and had never built a lighthouse; his first report "
    "argued for three lights.\n",
    "history/founding-1852.md",
)
GRANITE = PassageText(1, "Granite from the Dunmore quarry was shipped by barge.\n", "alpha.md")


def test_a_right_date_is_not_said_to_be_of_something_else_by_a_row_that_splits_it() -> None:
    """A table row that holds more of the question's words writes the same date in two cells
    ("| 1857 | … lit on 1 November |"): no other date than the answer's."""
    checked = ground(
        "When was the Gannet Point light first lit, and who built it?",
        "Gannet Point was first lit on **1 November 1857**. Its engineer was Elias Brandt.",
        (ENGINEER, TOWER, SEQUENCE),
    ).grounding
    assert [claim.note for claim in checked.flagged] == []
    assert checked.verdict == "supported"


@pytest.mark.parametrize(
    "question",
    ["Anything unusual?", "Tell me two things", "What should I read first?", "Summarize this."],
)
def test_an_open_question_naming_nothing_is_never_not_found(question: str) -> None:
    assert unmentioned(question, (GRANITE,)) == ()


def test_a_question_naming_what_no_passage_holds_is_not_found() -> None:
    assert unmentioned("What is the capital of Australia?", (GRANITE,)) != ()


def test_a_which_question_is_answered_by_a_common_noun_too() -> None:
    quokka = PassageText(1, "A quokka was seen near the pier once.\n", "deep/gamma.md", "Gamma")
    checked = ground("Which animal was seen?", "A quokka was seen [1].", (quokka,)).grounding
    assert checked.flagged == () and checked.verdict == "supported"
    # One that names nothing of its own still gives no answer.
    empty = ground("Which animal was seen?", "An animal was seen.", (quokka,)).grounding
    assert [claim.note for claim in empty.flagged] != []


def test_a_markdown_table_row_is_quoted_with_its_header_and_never_the_header_alone() -> None:
    """Issue 41, item 13: sources quoted "| year | work | |---|---|" raw, a header without a row."""
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.research import sources

    found = (ev.SourceView(3, "history/founding-1852.md", "lines 23-30", "Founding", cited=False),)
    quoted = sources.snippets(found, {3: SEQUENCE.text}, "In which year was Gannet Point lit?")
    assert quoted[3] == "year: 1857; work: Gannet Point lighthouse lit on 1 November"
    # A question in the header's own words still gets a row, not the header and its rule.
    about_the_table = sources.snippets(found, {3: SEQUENCE.text}, "Which work came in which year?")
    assert "---" not in about_the_table[3] and about_the_table[3].startswith("year: ")


MARL = PassageText(
    9,
    "Marl Lane treatment works can treat up to 24 megalitres a day. The raw water main from "
    "the reservoir is 11.2 km long.\n",
    "operations/marl-lane.md",
)


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (
            "Marl Lane can treat 11.2 km a day.",
            "the answer gives 11.2 km, a length, where the question asks for megalitres",
        ),
        ("It can treat 24 Ml/d.", None),
        ("Marl Lane can treat up to 24 megalitres a day [9].", None),
    ],
)
def test_a_value_in_a_unit_of_another_measure_is_no_answer(answer: str, note: str | None) -> None:
    """Found on the held-back set: "11.2 km" stood unflagged for megalitres a day."""
    checked = ground("How many megalitres a day can Marl Lane treat?", answer, (MARL,)).grounding
    assert [claim.note for claim in checked.flagged] == ([note] if note else [])


def test_a_value_in_another_unit_of_the_same_measure_is_not_flagged_for_it() -> None:
    gauge = PassageText(10, "The track gauge is 610 mm (2 ft).\n", "engineering/track.md")
    checked = ground("What is the gauge of the track in metres?", "It is 0.61 m.", (gauge,))
    assert not any("a length" in claim.note for claim in checked.grounding.flagged)


def test_a_table_cut_onto_one_line_by_the_search_is_quoted_by_its_row_too() -> None:
    """The search tool's result is cut around what matched, on one line: "…| year | work |
    |---|---| | 1854 | … |" was quoted raw under a cited source in the window."""
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.research import sources

    flat = "…" + " ".join(SEQUENCE.text.split("\n\n", 1)[1].split())
    assert "\n" not in flat
    found = (ev.SourceView(3, "history/founding-1852.md", "lines 23-30", "Founding", cited=True),)
    quoted = sources.snippets(found, {3: flat}, "Why does the Carrick Spit light stand on piles?")
    assert (
        quoted[3] == "year: 1863; work: Carrick Spit light, a screw-pile structure on the sand spit"
    )


def test_a_cited_table_cut_onto_one_line_is_quoted_by_its_row() -> None:
    """The grounding reads a table the search cut onto one line as one sentence; the cited
    source quotes its matching row with the header rather than the whole line."""
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.research import sources

    flat = "…" + " ".join(SEQUENCE.text.split("\n\n", 1)[1].split())
    evidence = (ev.EvidenceItemView(2, "history/founding-1852.md", "lines 23-34", flat[:400]),)
    _, cited, _ = sources.grounded(
        "Why does the Carrick Spit light stand on piles?",
        "The Carrick Spit light is a screw-pile structure on the sand spit [2].",
        evidence,
        {2: evidence[0]},
        {2: flat},
    )
    assert [source.excerpt for source in cited] == [
        "year: 1863; work: Carrick Spit light, a screw-pile structure on the sand spit"
    ]
